"""Image references in an ``/imagine`` prompt, read and written in the provider's syntax.

Midjourney's syntax, which genbot assumes the provider reads (docs/provider.md#references):
image URLs at the start of the prompt are *image prompts*; ``--sref`` takes style references
(image URLs, or style codes: a number or ``random``), ``--cref`` character references and
``--oref`` an object reference; ``--iw`` (0–3), ``--sw`` (0–1000) and ``--cw`` (0–100) weigh
image prompts, style and character references.

Images sent with a command are named by their position on text platforms: ``#2`` is the second
image (``--sref #2``; a bare ``#1`` is an image prompt), and an image no word names is an image
prompt. Discord's attachment options name the role instead (``style1``: a style reference).
:func:`read_references` finds every reference and checks the weights and counts, each problem
a :class:`CommandError` whose text is a sentence for the user; :meth:`ReadPrompt.written` puts
the prompt back together with the references' URLs: image URLs first, then the text, then the
parameters.
"""

from __future__ import annotations

import math
import re
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass
from typing import Literal

from bot.kernel.errors import CommandError
from bot.kernel.i18n import N_, _, format_number, ngettext

Role = Literal["image", "style", "character", "object"]
MAX_REFERENCES = 5
"""Reference images per prompt, every role together."""
ROLE_FLAGS: dict[str, Role] = {"--sref": "style", "--cref": "character", "--oref": "object"}
FLAG_OF: dict[Role, str] = {role: flag for flag, role in ROLE_FLAGS.items()}
_WEIGHED_NONE: dict[Role, str] = {
    "image": N_("{flag} weighs image prompts, and this prompt has none."),
    "style": N_("{flag} weighs style references (--sref), and this prompt has none."),
    "character": N_("{flag} weighs character references (--cref), and this prompt has none."),
    "object": N_("{flag} weighs object references (--oref), and this prompt has none."),
}
ROLE_DESCRIPTIONS: dict[Role, str] = {
    "image": N_("An image prompt (at most 5 in all)"),
    "style": N_("A style reference (--sref) (at most 5 in all)"),
    "character": N_("A character reference (--cref) (at most 5 in all)"),
    "object": N_("An object reference (--oref) (at most 5 in all)"),
}
"""The descriptions of ``/imagine``'s attachment options; "5" is :data:`MAX_REFERENCES`
(whole texts, so Discord's translator finds them in the catalog)."""
REFERENCE_OPTIONS: dict[str, Role] = {
    "image1": "image",
    "image2": "image",
    "image3": "image",
    "style1": "style",
    "style2": "style",
    "character1": "character",
    "character2": "character",
    "object": "object",
}
"""``/imagine``'s attachment options (Discord), each name a role."""
UPLOAD_PREFIX = "upload"
"""Images sent with a text command are ``upload1``, ``upload2``… (named ``#1``, ``#2``)."""


@dataclass(frozen=True)
class Weight:
    """A weight flag: the role it weighs and its documented range."""

    flag: str
    role: Role
    low: float
    high: float


WEIGHTS: tuple[Weight, ...] = (
    Weight("--iw", "image", 0, 3),
    Weight("--sw", "style", 0, 1000),
    Weight("--cw", "character", 0, 100),
)
RESERVED_FLAGS = frozenset(
    name.removeprefix("--") for name in (*ROLE_FLAGS, *(w.flag for w in WEIGHTS))
)
"""The flags this syntax reads (saved options may not take these names)."""

_URL = re.compile(r"https?://\S+", re.IGNORECASE)
_UPLOAD = re.compile(r"#([1-9][0-9]?)")
_STYLE_CODE = re.compile(r"[0-9]{1,12}|random", re.IGNORECASE)


@dataclass(frozen=True)
class Reference:
    """One reference: its role and where the image is — a URL, or the key of an image sent
    with the command (``upload2``, or a Discord option name such as ``style1``)."""

    role: Role
    source: str

    @property
    def is_url(self) -> bool:
        """Whether the source is a URL (else an image sent with the command)."""
        return _URL.fullmatch(self.source) is not None


@dataclass(frozen=True)
class ReadPrompt:
    """A prompt with its references read out: the references in order, the rest of the text,
    style codes (``--sref 1234``) and the weights given (flag, value as written)."""

    references: tuple[Reference, ...]
    text: str
    style_codes: tuple[str, ...] = ()
    weights: tuple[tuple[str, str], ...] = ()

    @property
    def attached(self) -> tuple[str, ...]:
        """The keys of the images sent with the command that the references use, each once,
        in order."""
        keys = (ref.source for ref in self.references if not ref.is_url)
        return tuple(dict.fromkeys(keys))

    def written(self, urls: Mapping[str, str] | None = None) -> str:
        """The prompt in the provider's syntax, each image sent with the command replaced by
        its URL in ``urls`` (by key): image URLs, the text, then ``--sref``, ``--cref``,
        ``--oref`` and the weights."""
        where = urls or {}

        def url(ref: Reference) -> str:
            return ref.source if ref.is_url else where[ref.source]

        images = [url(ref) for ref in self.references if ref.role == "image"]
        params: list[str] = []
        for flag, role in ROLE_FLAGS.items():
            values = [url(ref) for ref in self.references if ref.role == role]
            if role == "style":
                values += self.style_codes
            if values:
                params.append(" ".join((flag, *values)))
        params += [f"{flag} {value}" for flag, value in self.weights]
        return " ".join(part for part in (*images, self.text, *params) if part)


def upload_key(number: int) -> str:
    """The key of the ``number``-th image sent with a text command."""
    return f"{UPLOAD_PREFIX}{number}"


def read_references(
    prompt: str,
    *,
    uploads: int = 0,
    attached: Sequence[Reference] = (),
    named_elsewhere: Collection[str] = (),
) -> ReadPrompt:
    """``prompt``'s references (see the module docstring). ``uploads``: how many images came
    with a text command (``#N`` names one; those no word names are image prompts);
    ``attached``: references whose role the platform gave (Discord's options), after those of
    the text; ``named_elsewhere``: the keys of images another prompt of the same command names
    (``{#1, #2} fox`` is two prompts, each naming one image): such an image is used where it is
    named, not added to this prompt as an image prompt — which images no word names is decided
    across the whole command (:func:`named_uploads`). :class:`CommandError` names what is
    wrong."""
    words = prompt.split()
    references: list[Reference] = []
    codes: list[str] = []
    weights: dict[str, str] = {}
    rest: list[str] = []
    leading = True
    index = 0
    while index < len(words):
        word = words[index]
        flag = _flag(word)
        index += 1
        if flag in ROLE_FLAGS:
            role = ROLE_FLAGS[flag]
            taken = 0
            while index < len(words):
                following = words[index]
                if role == "style" and _STYLE_CODE.fullmatch(following):
                    codes.append(following)
                elif _URL.fullmatch(following):
                    references.append(Reference(role, following))
                elif (key := _upload(following, uploads, strict=True)) is not None:
                    references.append(Reference(role, key))
                else:
                    break
                taken += 1
                index += 1
            if not taken:
                raise CommandError(_needs_image(flag))
            leading = False
            continue
        weight = next((w for w in WEIGHTS if w.flag == flag), None)
        if weight is not None:
            if weight.flag in weights:
                raise CommandError(_("{flag} was given twice.", flag=weight.flag))
            value = words[index] if index < len(words) else None
            weights[weight.flag] = _checked_weight(weight, value)
            index += 1
            leading = False
            continue
        upload = _upload(word, uploads, strict=uploads > 0)
        if upload is not None or (leading and _URL.fullmatch(word)):
            references.append(Reference("image", upload or word))
            continue
        leading = False
        rest.append(word)
    named = {ref.source for ref in references}
    named = {*named, *named_elsewhere}
    unnamed = [upload_key(n) for n in range(1, uploads + 1) if upload_key(n) not in named]
    references += [Reference("image", key) for key in unnamed]
    references += attached
    read = ReadPrompt(tuple(references), " ".join(rest), tuple(codes), tuple(weights.items()))
    _check(read)
    return read


def named_uploads(prompts: Sequence[str], uploads: int) -> frozenset[str]:
    """The keys of the images sent with a command that some of its ``prompts`` (what its
    ``{…}`` choices expand into) name; :class:`CommandError` for a prompt that is refused."""
    keys = [upload_key(number) for number in range(1, uploads + 1)]
    named: set[str] = set()
    for prompt in prompts:
        read = read_references(prompt, uploads=uploads, named_elsewhere=keys)
        named.update(read.attached)
    return frozenset(named)


def _flag(word: str) -> str:
    """``word`` as a flag's spelling (``—sref``, as phones type it, is ``--sref``)."""
    lowered = word.lower()
    return "--" + lowered[1:] if lowered.startswith("—") else lowered


def _upload(word: str, uploads: int, *, strict: bool) -> str | None:
    """The key of the image ``#N`` names (None when ``word`` is no ``#N``, or names none and
    not ``strict``: then it is plain text, "#1 fan")."""
    match = _UPLOAD.fullmatch(word)
    if match is None:
        return None
    number = int(match.group(1))
    if number > uploads:
        if not strict:
            return None
        if not uploads:
            raise CommandError(
                _(
                    "{word} names image {number} sent with the command, but none came with it: "
                    "attach the images (on Slack, share them in the channel first), then name "
                    "them #1, #2…",
                    word=word,
                    number=number,
                )
            )
        raise CommandError(
            ngettext(
                "{word} names image {number} sent with the command, but only {n} came with it: "
                "attach the images (on Slack, share them in the channel first), then name them "
                "#1, #2…",
                "{word} names image {number} sent with the command, but only {n} came with it: "
                "attach the images (on Slack, share them in the channel first), then name them "
                "#1, #2…",
                uploads,
                word=word,
                number=number,
            )
        )
    return upload_key(number)


def _needs_image(flag: str) -> str:
    if flag == "--sref":
        return _(
            "{flag} needs an image: an https link, #N for the Nth image you attached "
            "or a style code.",
            flag=flag,
        )
    return _("{flag} needs an image: an https link, #N for the Nth image you attached.", flag=flag)


def _checked_weight(weight: Weight, value: str | None) -> str:
    """``value`` of ``weight`` when it is a number in its range."""
    low = format_number(weight.low, grouping=False)
    high = format_number(weight.high, grouping=False)
    if value is None or value.startswith(("--", "—")):
        raise CommandError(
            _(
                "{flag} needs a number from {low} to {high}, like {flag} 1.",
                flag=weight.flag,
                low=low,
                high=high,
            )
        )
    try:
        number = float(value)
    except ValueError:
        number = math.nan
    if not math.isfinite(number):
        raise CommandError(
            _(
                "{flag} must be a number from {low} to {high} (got {value}).",
                flag=weight.flag,
                low=low,
                high=high,
                value=repr(value),
            )
        )
    if not weight.low <= number <= weight.high:
        raise CommandError(
            _(
                "{flag} must be from {low} to {high} (got {value}).",
                flag=weight.flag,
                low=low,
                high=high,
                value=value,
            )
        )
    return value


def _check(read: ReadPrompt) -> None:
    """Counts: at most :data:`MAX_REFERENCES`, one object reference, and no weight without
    what it weighs."""
    count = len(read.references)
    if count > MAX_REFERENCES:
        raise CommandError(
            _(
                "A prompt takes at most {most} reference images (image prompts, --sref, "
                "--cref and --oref together); this one has {count}.",
                most=MAX_REFERENCES,
                count=count,
            )
        )
    objects = sum(1 for ref in read.references if ref.role == "object")
    if objects > 1:
        raise CommandError(_("--oref takes one image (got {count}).", count=objects))
    given = {flag for flag, __ in read.weights}
    for weight in WEIGHTS:
        if weight.flag not in given:
            continue
        present = any(ref.role == weight.role for ref in read.references)
        if weight.role == "style" and read.style_codes:
            present = True
        if not present:
            raise CommandError(_(_WEIGHED_NONE[weight.role], flag=weight.flag))
