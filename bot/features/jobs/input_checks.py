"""Checks genbot applies to image prompts and attachments before anything reaches the provider.

Prompts (unless ``skip_prompt_check``): only what is malformed — a ``--v`` / ``--version`` that
is not a version number, an ``--ar`` / ``--aspect`` that is not ``W:H`` (the same rule as the
``aspect_ratio`` option), a ``--seed`` / ``--sameseed`` that is not a whole number from 0 to
:data:`~bot.kernel.MAX_SEED` (the API documentation names no range for a prompt's seed, so it is
the one ``/diffusion``'s seed has), a flag that takes a value without one (``--no`` at the end).
Which versions, ratios and lengths the provider accepts the API documentation does not say, so
the rest is left to the provider and its refusal shown (docs/provider.md#prompt-check).
Attachments: an image type (by content type, else by file name) and at most ``[limits]
max_upload_bytes``.
"""

from __future__ import annotations

import mimetypes
import re

from bot.kernel import (
    MAX_SEED,
    Attachment,
    CommandError,
    _,
    format_bytes,
    parse_aspect_ratio,
)

_VERSION = re.compile(r"\d+(?:\.\d+)?")
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


def _flag_values(prompt: str, names: tuple[str, ...]) -> list[str]:
    words = prompt.split()
    return [words[i + 1] for i, word in enumerate(words[:-1]) if word.lower() in names]


def check_prompt(prompt: str) -> None:
    """Raise :class:`CommandError` when ``prompt`` is malformed (see the module docstring)."""
    for value in _flag_values(prompt, ("--v", "--version")):
        if not _VERSION.fullmatch(value):
            raise CommandError(
                _("--v must be a version number, like --v 6 (got {value}).", value=repr(value))
            )
    for value in _flag_values(prompt, ("--ar", "--aspect")):
        parse_aspect_ratio(value, "--ar")
    for flag in ("--seed", "--sameseed"):
        for value in _flag_values(prompt, (flag,)):
            if not (value.isascii() and value.isdigit()) or int(value) > MAX_SEED:
                raise CommandError(
                    _(
                        "{label} must be a whole number from 0 to {most} (got {value}).",
                        label=flag,
                        most=MAX_SEED,
                        value=repr(value),
                    )
                )
    words = prompt.split()
    for index, word in enumerate(words):
        if word.lower() in VALUED_FLAGS and (
            index + 1 == len(words) or words[index + 1].startswith(("--", "—"))
        ):
            raise CommandError(
                _(
                    "{flag} needs a value after it, like {example}.",
                    flag=word,
                    example=VALUED_FLAGS[word.lower()],
                )
            )


def check_attachment(attachment: Attachment, max_bytes: int) -> None:
    """Raise :class:`CommandError` for a file that is not an image or is too large."""
    # Translators: what an error calls a file that came without a name ("That file is too large").
    name = attachment.filename or _("That file")
    kind = attachment.content_type or mimetypes.guess_type(attachment.filename)[0]
    if kind is not None and not kind.lower().startswith("image/"):
        raise CommandError(
            _(
                "{name} is not an image ({kind}); attach a PNG, JPEG or WebP.",
                name=name,
                kind=kind,
            )
        )
    if attachment.size is not None and attachment.size > max_bytes:
        raise CommandError(
            _(
                "{name} is too large ({size}); images may be at most {most}.",
                name=name,
                size=format_bytes(attachment.size),
                most=format_bytes(max_bytes),
            )
        )
