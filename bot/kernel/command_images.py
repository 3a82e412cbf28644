"""Which images a command typed as text works on (Slack's slash commands, the playground).

The image options of a command (:class:`~bot.kernel.commands.Option` of type ``attachment``) are
filled in order: by the https links in the command's text (taken out of the text), else by the
files uploaded with it (the playground), else — where a platform's slash commands carry no
files (Slack) — by the images the same user shared in the same place in the last
``RECENT_FILES_SECONDS``, oldest first: up to five for ``/blend``, otherwise the newest image(s)
the command requires. ``/describe`` with a link keeps the link in its text (its flow reads it
there). ``/imagine`` (numbered uploads) keeps its links in its prompt (they are references in
the provider's syntax) and takes the images its text names (``#2``): uploaded with it, or on
Slack the newest ones its user shared. Adapters only translate what the platform has into
:class:`~bot.kernel.events.Attachment`; what counts as an image and which option it fills is
decided here.
"""

from __future__ import annotations

import re
from collections.abc import Awaitable, Callable, Mapping, Sequence
from typing import TypeVar

from bot.kernel.commands import CommandSpec, command
from bot.kernel.errors import CommandError
from bot.kernel.events import Attachment
from bot.kernel.i18n import _, ngettext
from bot.kernel.media import is_image
from bot.kernel.references import upload_key

T = TypeVar("T")

RECENT_FILES_SECONDS = 15 * 60
"""How far back a command looks for images its user shared (platforms without files on
commands)."""

_LINK = re.compile(r"<?(https?://[^\s|>]*[^\s|>.,;:!?)\]'\"])(?:\|[^>]*)?>?")
"""An https link, bare or in the ``<url|label>`` form chat platforms send; a bare link's
trailing punctuation (the end of a sentence, a closing bracket) is not part of it."""

_UPLOAD_WORD = re.compile(r"(?<!\S)#([1-9][0-9]?)(?!\S)")
"""``#2``: an image sent with a command, by its number."""

RecentFiles = Callable[[], Awaitable[Sequence[Attachment] | None]]
"""The files the command's user shared in its place within ``RECENT_FILES_SECONDS``, newest
first; ``None`` when the platform cannot tell (genbot cannot read the place)."""


def usage_name(spec: CommandSpec) -> str:
    """How a user types the command: ``/diffusion txt2img``."""
    return "/" + spec.name.replace(".", " ")


def image_options(spec: CommandSpec) -> tuple[str, ...]:
    """The names of ``spec``'s image options, in the order images fill them."""
    return tuple(
        option.name
        for option in spec.options
        if option.type == "attachment" and not option.documents
    )


def file_options(spec: CommandSpec) -> tuple[str, ...]:
    """The names of every option of ``spec`` that takes a file (images, then documents)."""
    return tuple(option.name for option in spec.options if option.type == "attachment")


def upload_slots(spec: CommandSpec) -> tuple[str, ...]:
    """Where the files sent with a text command go, in order: numbered uploads, else the
    command's file options (images, then documents)."""
    if spec.numbered_uploads:
        return tuple(upload_key(n) for n in range(1, spec.numbered_uploads + 1))
    return file_options(spec)


def required_images(spec: CommandSpec) -> int:
    """How many of ``spec``'s image options are required."""
    return sum(
        1
        for option in spec.options
        if option.type == "attachment" and option.required and not option.documents
    )


def assign_images(spec: CommandSpec, images: Sequence[T]) -> dict[str, T]:
    """``images`` in order onto the command's file options (``/blend``: image1..image5,
    ``/describe``: image, img2img/controlnet: init_image first, ``/chat``: file), or numbered
    (``/imagine``: upload1…, see :attr:`CommandSpec.numbered_uploads`). :class:`CommandError`
    when there are more than the command takes."""
    slots = upload_slots(spec)
    if len(images) > len(slots):
        usage = usage_name(spec)
        if not slots:
            raise CommandError(
                _(
                    "{usage} does not take images; remove the attachment and try again.",
                    usage=usage,
                )
            )
        if len(slots) == 1:
            raise CommandError(
                _(
                    "{usage} takes one image; you attached {attached}.",
                    usage=usage,
                    attached=len(images),
                )
            )
        raise CommandError(
            ngettext(
                "{usage} takes at most {n} image; you attached {attached}.",
                "{usage} takes at most {n} images; you attached {attached}.",
                len(slots),
                usage=usage,
                attached=len(images),
            )
        )
    return dict(zip(slots, images, strict=False))


def links_in(text: str) -> list[str]:
    """The https links in ``text``, in order."""
    return [match.group(1) for match in _LINK.finditer(text)]


def without_links(text: str) -> str:
    """``text`` with its links taken out."""
    return re.sub(r"\s{2,}", " ", _LINK.sub("", text)).strip()


def link_attachment(url: str) -> Attachment:
    """A linked image as an attachment named after the link's last path segment."""
    name = url.split("?", 1)[0].rstrip("/").rsplit("/", 1)[-1] or "image"
    return Attachment(filename=name, url=url)


async def command_images(
    name: str, text: str, recent_files: RecentFiles
) -> tuple[Mapping[str, Attachment], str]:
    """The images command ``name`` works on and its text without the links that named them
    (see the module docstring). :class:`CommandError` says what the user must do when the
    command needs images it cannot find."""
    try:
        spec = command(name)
    except KeyError:
        return {}, text
    if spec.numbered_uploads:
        return await _named_uploads(spec, text, recent_files), text
    slots = image_options(spec)
    links = links_in(text)
    if not slots or (name == "describe" and links):
        return {}, text
    if links:
        return dict(zip(slots, map(link_attachment, links), strict=False)), without_links(text)
    needed = max(required_images(spec), 1)
    wanted = len(slots) if name == "blend" else needed
    files = await recent_files()
    if files is None:
        raise CommandError(
            _(
                "genbot cannot read this conversation to find your images: invite it with "
                "`/invite @genbot` (or paste https links after the command)."
            )
        )
    shared = [file for file in files if is_image(file)][:wanted]
    if len(shared) < needed:
        if needed == 1:
            raise CommandError(
                _(
                    "`{usage}` needs an image: share an image in this channel first "
                    "(or paste https links after the command), then run it again.",
                    usage=usage_name(spec),
                )
            )
        raise CommandError(
            ngettext(
                "`{usage}` needs {n} image: share {n} image in this channel first "
                "(or paste https links after the command), then run it again.",
                "`{usage}` needs {n} images: share {n} images in this channel first "
                "(or paste https links after the command), then run it again.",
                needed,
                usage=usage_name(spec),
            )
        )
    return dict(zip(slots, reversed(shared), strict=False)), text


async def _named_uploads(
    spec: CommandSpec, text: str, recent_files: RecentFiles
) -> dict[str, Attachment]:
    """The images a numbered command's text names (``#2``) among those its user shared lately,
    numbered in the order they were shared (the newest that many); none when it names none,
    so an image shared for something else is never taken."""
    named = [int(match.group(1)) for match in _UPLOAD_WORD.finditer(text)]
    if not named:
        return {}
    files = await recent_files()
    if files is None:
        raise CommandError(
            _(
                "genbot cannot read this conversation to find your images: invite it with "
                "`/invite @genbot` (or paste https links in the prompt)."
            )
        )
    shared = [file for file in files if is_image(file)][: min(max(named), spec.numbered_uploads)]
    return dict(zip(upload_slots(spec), reversed(shared), strict=False))
