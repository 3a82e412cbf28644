"""Checks genbot applies to image prompts and attachments before anything reaches the provider.

Prompts (unless ``skip_prompt_check``): at most ``MAX_PROMPT_CHARS`` characters, a ``--v`` /
``--version`` among the documented model versions, a valid ``--ar`` / ``--aspect`` (the
same rule as the ``aspect_ratio`` option), a ``--seed`` from 0 to ``MAX_SEED``, and a value
after every flag that takes one (``--no`` at the end is refused). Attachments: an image type
(by content type, else by file name) and at most ``[limits] max_upload_bytes``.
"""

from __future__ import annotations

import mimetypes

from bot.commands import MAX_SEED
from bot.events import Attachment
from bot.forms import PROMPT_FIELD, FormError
from bot.parsing import CommandError, parse_aspect_ratio

MODEL_VERSIONS = ("4", "5", "5.1", "5.2", "6")
VALUED_FLAGS = {
    "--no": "--no cars, trees",
    "--seed": "--seed 1234",
    "--sameseed": "--sameseed 1234",
    "--ar": "--ar 16:9",
    "--aspect": "--aspect 16:9",
    "--v": "--v 6",
    "--version": "--version 6",
    "--chaos": "--chaos 20",
    "--c": "--c 20",
    "--stylize": "--stylize 250",
    "--s": "--s 250",
    "--quality": "--quality 1",
    "--q": "--q 1",
    "--iw": "--iw 1.5",
    "--stop": "--stop 80",
    "--weird": "--weird 250",
}
"""Prompt flags that take a value, with an example of each."""
MAX_PROMPT_CHARS = 6000


def _flag_values(prompt: str, names: tuple[str, ...]) -> list[str]:
    words = prompt.split()
    return [words[i + 1] for i, word in enumerate(words[:-1]) if word.lower() in names]


def check_prompt(prompt: str) -> None:
    """Raise :class:`CommandError` when the provider's prompt check would refuse ``prompt``."""
    if len(prompt) > MAX_PROMPT_CHARS:
        raise CommandError(
            f"The prompt is {len(prompt)} characters long; the limit is {MAX_PROMPT_CHARS}."
        )
    for value in _flag_values(prompt, ("--v", "--version")):
        version = value[:-2] if value.endswith(".0") else value
        if version not in MODEL_VERSIONS:
            raise CommandError(
                f"--v {value} is not a model version; use one of {', '.join(MODEL_VERSIONS)}."
            )
    for value in _flag_values(prompt, ("--ar", "--aspect")):
        parse_aspect_ratio(value, "--ar")
    for flag in ("--seed", "--sameseed"):
        for value in _flag_values(prompt, (flag,)):
            if not value.isdigit() or int(value) > MAX_SEED:
                raise CommandError(
                    f"{flag} must be a whole number from 0 to {MAX_SEED} (got {value!r})."
                )
    words = prompt.split()
    for index, word in enumerate(words):
        if word.lower() in VALUED_FLAGS and (
            index + 1 == len(words) or words[index + 1].startswith(("--", "—"))
        ):
            raise CommandError(f"{word} needs a value after it, like {VALUED_FLAGS[word.lower()]}.")


def check_form_prompt(prompt: str) -> None:
    """:func:`check_prompt` for a form's prompt field (the error comes back beside it)."""
    try:
        check_prompt(prompt)
    except CommandError as error:
        raise FormError(PROMPT_FIELD, str(error)) from None


def check_attachment(attachment: Attachment, max_bytes: int) -> None:
    """Raise :class:`CommandError` for a file that is not an image or is too large."""
    name = attachment.filename or "That file"
    kind = attachment.content_type or mimetypes.guess_type(attachment.filename)[0]
    if kind is not None and not kind.lower().startswith("image/"):
        raise CommandError(f"{name} is not an image ({kind}); attach a PNG, JPEG or WebP.")
    if attachment.size is not None and attachment.size > max_bytes:
        raise CommandError(
            f"{name} is too large ({_size(attachment.size)}); images may be at most "
            f"{_size(max_bytes)}."
        )


def _size(count: int) -> str:
    if count >= 1024 * 1024:
        return f"{count / (1024 * 1024):.3g} MiB"
    return f"{count / 1024:.3g} KiB"
