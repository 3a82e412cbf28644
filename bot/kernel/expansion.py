"""What a prompt stands for before it is read: saved options, the suffix, permutations.

``--neon`` (a user's saved option, ``/prefer option set neon --style raw``) is replaced by its
text, word for word — URLs, weights and ``::`` untouched — and the user's ``/prefer suffix`` is
appended, less the options the prompt sets itself (:func:`with_suffix`); only then is the text
parsed and validated (:mod:`bot.kernel.command_text`), so a saved option that became invalid is
refused like any typed option (and named: :func:`name_the_saved`). A ``--word`` that is neither
an option of the command, nor a Midjourney parameter (:data:`PROMPT_PARAMETERS`), nor a saved
option is refused with the names the user has. Then ``{red, blue} fox`` expands into one prompt
per combination (:func:`permutations`; groups multiply, nest, and ``\\,`` is a literal comma),
each distinct prompt once, capped. None of this reaches the provider: it is genbot's own syntax
(docs/provider.md#prompt-syntax).
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Final

from bot.kernel.command_names import written
from bot.kernel.command_text import check_text, parse_command_text, permuted_aspect
from bot.kernel.commands import COMMANDS_BY_NAME, MAX_REPEAT, CommandSpec
from bot.kernel.errors import CommandError
from bot.kernel.events import ButtonPress, Command, ModalSubmit
from bot.kernel.i18n import _, ngettext
from bot.kernel.outbound import PROMPT_FORMS

PROMPT_PARAMETERS = frozenset(
    {
        "ar", "aspect", "c", "chaos", "cref", "cw", "draft", "exp", "fast", "iw", "niji",
        "no", "oref", "ow", "p", "personalize", "profile", "q", "quality", "r", "raw",
        "relax", "repeat", "s", "sameseed", "seed", "sref", "stop", "style", "stylize", "sv",
        "sw", "tile", "turbo", "uplight", "upbeta", "upanime", "v", "version", "video", "w",
        "weird", "hd", "test", "testp", "creative", "motion", "loop", "bs", "end",
    }
)  # fmt: skip
"""The Midjourney parameters a prompt may carry (the provider reads them; genbot passes them
on): never saved options' names, never refused as unknown."""
PARAMETER_ALIASES = {
    "aspect": "ar", "version": "v", "niji": "v", "chaos": "c", "stylize": "s", "quality": "q",
    "weird": "w", "repeat": "r", "personalize": "p",
}  # fmt: skip
"""Midjourney parameters spelled another way that set the same thing, by the spelling
:func:`with_suffix` compares them under (``--niji`` chooses the model as ``--v`` does)."""
NAME_RE = re.compile(r"[a-z][a-z0-9_-]{0,31}")
"""A saved option's name: lower case, a letter first, at most 32 letters, digits, ``_``, ``-``."""
_FLAG_RE = re.compile(r"(?<!\S)(?:--|—)([A-Za-z][\w\-]*)(?=\s|$)")
_PIECE_RE = re.compile(r"(?<!\S)(?:--|—)[A-Za-z][\w\-]*(?=[\s=]|$)")
_QUOTED_RE = re.compile(r"\"[^\"]*\"|“[^”]*”")
_ASPECT_FLAG_RE = re.compile(r"(?<!\S)(?:--|—)(ar|aspect)(?=[\s=,{}]|$)", re.IGNORECASE)
_LITERAL_RE = re.compile(r"[\\{}]")
_REPEAT_RE = re.compile(r"(?<!\S)(?:--|—)(?:repeat|r)(?:\s+|=)(\S+)(?=\s|$)", re.IGNORECASE)


@dataclass(frozen=True)
class Spliced:
    """A text with the user's saved options put in: ``used`` names them with their texts, in
    the order they appear."""

    text: str
    used: tuple[tuple[str, str], ...] = ()


def command_flags(spec: CommandSpec) -> frozenset[str]:
    """Every flag ``spec`` reads itself, without dashes (``ar``, ``fast``…)."""
    flags = [f for o in spec.options for f in (*o.flags, *(v for v, __ in o.flag_values))]
    return frozenset(flag.removeprefix("--").lower() for flag in flags)


def name_problem(name: str, spec: CommandSpec) -> str | None:
    """Why ``name`` cannot be a saved option's for ``spec``'s prompts, or None."""
    if NAME_RE.fullmatch(name) is None:
        return _(
            "{name} cannot name a saved option: use a lower-case letter, then up to 31 "
            "letters, digits, - or _ (like neon or my-style).",
            name=repr(name),
        )
    if name in command_flags(spec) or name in PROMPT_PARAMETERS:
        return _("--{name} is a parameter already; pick another name for your option.", name=name)
    return None


def splice(text: str, saved: Mapping[str, str], spec: CommandSpec) -> Spliced:
    """``text`` with each ``--name`` of ``saved`` replaced by its text (once: a saved text is
    not expanded again); :class:`CommandError` for a ``--word`` that is neither ``spec``'s
    option, a Midjourney parameter nor a saved option. Quoted text is left alone."""
    known = command_flags(spec) | PROMPT_PARAMETERS
    pieces: list[str] = []
    used: list[tuple[str, str]] = []
    last = 0
    for match in _unquoted(_FLAG_RE, text):
        name = match.group(1).lower()
        if name in known:
            continue
        if name not in saved:
            raise CommandError(_unknown(name, saved))
        pieces += [text[last : match.start()], saved[name]]
        used.append((name, saved[name]))
        last = match.end()
    pieces.append(text[last:])
    return Spliced(" ".join(" ".join(pieces).split()) if used else text, tuple(used))


def _unquoted(pattern: re.Pattern[str], text: str) -> Iterator[re.Match[str]]:
    """``pattern``'s matches in ``text`` outside quotes (a quoted ``"--word"`` is prompt text)."""
    quoted = [match.span() for match in _QUOTED_RE.finditer(text)]
    for match in pattern.finditer(text):
        if not any(start <= match.start() < end for start, end in quoted):
            yield match


def _unknown(name: str, saved: Mapping[str, str]) -> str:
    have = ", ".join(f"--{n}" for n in sorted(saved))
    if not have:
        return _(
            "--{name} is not one of your saved options (you have none yet; see {list}) nor a "
            "parameter genbot knows. Save it with {set} <options>, or quote it if it is part of "
            "the prompt.",
            name=name,
            list=written("prefer.option", "list"),
            set=written("prefer.option", f"set {name}"),
        )
    return _(
        "--{name} is not one of your saved options (yours are {saved}; see {list}) nor a "
        "parameter genbot knows. Save it with {set} <options>, or quote it if it is part of "
        "the prompt.",
        name=name,
        saved=have,
        list=written("prefer.option", "list"),
        set=written("prefer.option", f"set {name}"),
    )


@dataclass(frozen=True)
class _Reading:
    """What a text sets as ``spec`` parses it: its options (by name: ``aspect_ratio`` for
    ``--ar`` and ``--aspect``), its Midjourney parameters (by :data:`PARAMETER_ALIASES`'
    spelling: ``v`` for ``--v``, ``--version``) and its free text (parameters included)."""

    options: frozenset[str]
    parameters: frozenset[str]
    free: str

    @classmethod
    def of(cls, text: str, spec: CommandSpec) -> _Reading:
        """``text`` read; :class:`CommandError` where ``spec``'s parser refuses it."""
        values = parse_command_text(spec, text)
        free = values.pop(spec.free_text, "") if spec.free_text else ""
        parameters = {
            PARAMETER_ALIASES.get(name, name)
            for match in _unquoted(_FLAG_RE, free)
            if (name := match.group(1).lower()) in PROMPT_PARAMETERS
        }
        return cls(frozenset(values), frozenset(parameters), free)

    @property
    def sets(self) -> frozenset[str]:
        """Its options and parameters together."""
        return self.options | self.parameters


def with_suffix(text: str, suffix: str, spec: CommandSpec, given: Iterable[str] = ()) -> str:
    """``text`` with the user's suffix appended, less each option or parameter of the suffix
    that ``text`` sets itself or that ``given`` names (options typed apart from the prompt):
    what the user typed wins, as in Midjourney (``a cat --v 7`` with the suffix ``--v 5.2
    --ar 16:9`` is ``a cat --v 7 --ar 16:9``). Nothing is appended to a text the parser refuses
    or whose prompt is empty or invisible: it is refused as the user typed it."""
    if not suffix.strip():
        return text
    try:
        typed = _Reading.of(text, spec)
        check_text(typed.free, "")
    except CommandError:
        return text
    if not typed.free.strip():
        return text
    taken = typed.sets | set(given)
    starts = [match.start() for match in _unquoted(_PIECE_RE, suffix)]
    kept: list[str] = []
    for start, end in zip([0, *starts], [*starts, len(suffix)], strict=True):
        piece = suffix[start:end].strip()
        try:
            reading = _Reading.of(piece, spec)
        except CommandError:
            kept.append(piece)
            continue
        if not reading.sets & taken:
            kept.append(piece)
        elif not reading.parameters:
            kept.append(reading.free)
    added = " ".join(" ".join(kept).split())
    return f"{text.rstrip()} {added}" if added else text


def name_the_saved(error: CommandError, used: Sequence[tuple[str, str]]) -> CommandError:
    """``error`` (a validation's) saying which saved options went into the text refused."""
    if not used:
        return error
    named = ", ".join(f"--{name} (`{text}`)" for name, text in used)
    return CommandError(
        _(
            "{error} Your saved option {named} was put in; change it with {set}.",
            error=error,
            named=named,
            set=written("prefer.option", "set"),
        )
    )


# Permutations --------------------------------------------------------------------------------


@dataclass(frozen=True)
class Expansion:
    """What a prompt expands into (:func:`expansion`): ``prompts`` in order, each repeated as
    asked, and how many combinations were ``dropped`` as duplicates of an earlier one."""

    prompts: tuple[str, ...]
    dropped: int = 0


@dataclass(frozen=True)
class _Alternatives:
    choices: tuple[tuple[_Part, ...], ...]


_Part = str | _Alternatives


def _parse(text: str, start: int, nested: bool) -> tuple[tuple[tuple[_Part, ...], ...], int]:
    """Alternatives (split at top-level commas when ``nested``) up to the closing brace."""
    choices: list[tuple[_Part, ...]] = []
    parts: list[_Part] = []
    chars: list[str] = []
    index = start
    while index < len(text):
        char = text[index]
        if char == "\\" and index + 1 < len(text) and text[index + 1] in ",{}\\":
            chars.append(text[index + 1])
            index += 2
            continue
        if char == "{":
            parts.append("".join(chars))
            chars = []
            inner, index = _parse(text, index + 1, True)
            parts.append(_Alternatives(inner))
            continue
        if nested and char == ",":
            choices.append((*parts, "".join(chars)))
            parts, chars = [], []
            index += 1
            continue
        if char == "}":
            if not nested:
                raise CommandError(_("The prompt has a } without its {: write \\} for a brace."))
            choices.append((*parts, "".join(chars)))
            return tuple(choices), index + 1
        chars.append(char)
        index += 1
    if nested:
        raise CommandError(_("The prompt has a { that is never closed: {red, blue} fox."))
    return ((*parts, "".join(chars)),), index


def _count(parts: Sequence[_Part]) -> int:
    return math.prod(
        sum(_count(choice) for choice in part.choices) if isinstance(part, _Alternatives) else 1
        for part in parts
    )


def _expand(parts: Sequence[_Part]) -> list[str]:
    texts = [""]
    for part in parts:
        if isinstance(part, _Alternatives):
            options = [text for choice in part.choices for text in _expand(choice)]
            texts = [f"{head}{option.strip()}" for head in texts for option in options]
        else:
            texts = [head + part for head in texts]
    return texts


def _depth(prompt: str, end: int) -> int:
    """How many ``{`` groups are open at ``end`` in ``prompt`` (``\\`` escapes skipped)."""
    depth = 0
    index = 0
    while index < end:
        char = prompt[index]
        if char == "\\":
            index += 2
            continue
        depth += 1 if char == "{" else -1 if char == "}" and depth else 0
        index += 1
    return depth


def refuse_permuted_aspect(prompt: str) -> None:
    """:class:`CommandError` when ``prompt`` puts its aspect ratio among ``{…}`` choices
    (``--ar {16:9, 1:1}``, or ``{a fox --ar 16:9, a cat}``): the jobs of one command share one
    aspect ratio, so genbot refuses it on every platform (rather than read it as options on one
    and as prompt text on another), saying so (:func:`bot.kernel.command_text.permuted_aspect`)."""
    for match in _ASPECT_FLAG_RE.finditer(prompt):
        value = prompt[match.end() :].lstrip().removeprefix("=").lstrip()
        if _depth(prompt, match.start()) or value.startswith("{"):
            raise CommandError(permuted_aspect(f"--{match.group(1).lower()}"))


def permutation_count(prompt: str) -> int:
    """How many prompts ``prompt`` expands into (:func:`permutations`), without making them."""
    if not any(char in prompt for char in "{}\\"):
        return 1
    (parts,), __ = _parse(prompt, 0, False)
    return _count(parts)


def permutations(prompt: str, cap: int, repeat: int = 1) -> list[str]:
    """The distinct prompts ``prompt`` expands into, each ``repeat`` times in a row
    (``{red, blue} fox`` → ``red fox``, ``blue fox``): :func:`expansion`'s prompts."""
    return list(expansion(prompt, cap, repeat).prompts)


def expansion(prompt: str, cap: int, repeat: int = 1) -> Expansion:
    """The prompts ``prompt`` expands into, each ``repeat`` times in a row; combinations that
    read the same once their spaces are normalised (``{, } cat``, ``{a, a}``) are kept once, the
    first time, and counted in ``dropped``. :class:`CommandError` explaining the cap when the
    distinct prompts times ``repeat`` are more than ``cap`` (or the combinations are more than
    :data:`MOST_EXPANDED`, which are not made), or naming a brace out of place or an aspect
    ratio among the choices (:func:`refuse_permuted_aspect`)."""
    refuse_permuted_aspect(prompt)
    count = permutation_count(prompt)
    if count == 1 and not any(char in prompt for char in "{}\\"):
        if repeat > cap:
            raise CommandError(_too_many(repeat, 1, repeat, cap))
        return Expansion((prompt,) * repeat)
    if count > MOST_EXPANDED:
        raise CommandError(_too_many(count * repeat, count, repeat, cap))
    (parts,), __ = _parse(prompt, 0, False)
    distinct = dict.fromkeys(" ".join(text.split()) for text in _expand(parts))
    if len(distinct) * repeat > cap:
        raise CommandError(_too_many(len(distinct) * repeat, len(distinct), repeat, cap))
    prompts = tuple(text for text in distinct for __ in range(repeat))
    return Expansion(prompts, count - len(distinct))


MOST_EXPANDED: Final = 1000
"""The most combinations :func:`expansion` makes to find the duplicates among them; a prompt
with more is refused by their count, above any ``[limits] max_jobs_per_command`` (at most 100)."""


def _too_many(total: int, count: int, repeat: int, cap: int) -> str:
    """Why ``total`` jobs (``count`` prompts, each ``repeat`` times) are more than ``cap``."""
    if repeat > 1 and count > 1:
        return ngettext(
            "This would start {n} job ({count} prompts × --repeat {repeat}); genbot starts at "
            "most {cap} jobs for one command ([limits] max_jobs_per_command), so each stays a "
            "choice you can follow. Use fewer {{…}} choices or a smaller --repeat.",
            "This would start {n} jobs ({count} prompts × --repeat {repeat}); genbot starts at "
            "most {cap} jobs for one command ([limits] max_jobs_per_command), so each stays a "
            "choice you can follow. Use fewer {{…}} choices or a smaller --repeat.",
            total,
            count=count,
            repeat=repeat,
            cap=cap,
        )
    if repeat > 1:
        return ngettext(
            "This would start {n} job (--repeat {repeat}); genbot starts at most {cap} jobs "
            "for one command ([limits] max_jobs_per_command), so each stays a choice you can "
            "follow. Use a smaller --repeat.",
            "This would start {n} jobs (--repeat {repeat}); genbot starts at most {cap} jobs "
            "for one command ([limits] max_jobs_per_command), so each stays a choice you can "
            "follow. Use a smaller --repeat.",
            total,
            repeat=repeat,
            cap=cap,
        )
    return ngettext(
        "This would start {n} job ({count} prompts); genbot starts at most {cap} jobs for one "
        "command ([limits] max_jobs_per_command), so each stays a choice you can follow. "
        "Use fewer {{…}} choices.",
        "This would start {n} jobs ({count} prompts); genbot starts at most {cap} jobs for one "
        "command ([limits] max_jobs_per_command), so each stays a choice you can follow. "
        "Use fewer {{…}} choices.",
        total,
        count=count,
        cap=cap,
    )


def written_literally(text: str) -> str:
    """``text`` with its ``\\``, ``{`` and ``}`` escaped, so that :func:`expansion` reads it
    back as it is: a job's stored prompt (already expanded) put in a form to edit."""
    return _LITERAL_RE.sub(r"\\\g<0>", text)


def expands_prompt(event: Command | ModalSubmit | ButtonPress) -> bool:
    """Whether the ``prompt`` ``event`` carries is expanded before it is sent (its ``{…}``
    choices and escapes read): a command that :attr:`~bot.kernel.CommandSpec.expands`
    (``/imagine``) and a form of :data:`~bot.kernel.outbound.PROMPT_FORMS`; not a press,
    which sends its stored prompt as it is, nor ``/chat``, ``/diffusion`` or their forms."""
    if isinstance(event, Command):
        spec = COMMANDS_BY_NAME.get(event.name)
        return spec is not None and spec.expands
    return isinstance(event, ModalSubmit) and event.action in PROMPT_FORMS


def sent_prompts(prompt: str) -> tuple[str, ...]:
    """The distinct prompts a typed ``prompt`` that is expanded (:func:`expands_prompt`) is
    sent as, its ``{…}`` choices and escapes read and ``--repeat`` taken out (``a {blood}bath``
    is sent as ``a bloodbath``, ``\\{x\\}`` as ``{x}``): what moderation screens of it. The
    prompt itself when it has no choices, or when they cannot be read (the command is refused
    for them before any call)."""
    if not any(char in prompt for char in "{}\\"):
        return (prompt,)
    try:
        rest, __ = take_repeat(prompt)
        prompts = expansion(rest, MOST_EXPANDED).prompts
    except CommandError:
        return (prompt,)
    return tuple(dict.fromkeys(prompts))


def take_repeat(prompt: str) -> tuple[str, int | None]:
    """``--repeat N`` written in a prompt (where a platform's typed options leave it: Discord's
    prompt), taken out of it: the prompt without it and N (None when it has none);
    :class:`CommandError` for an N that is not 1 to :data:`MAX_REPEAT`."""
    found = _REPEAT_RE.search(prompt)
    if found is None:
        return prompt, None
    word = found.group(1)
    if not word.isdigit() or not 1 <= int(word) <= MAX_REPEAT:
        raise CommandError(
            _(
                "--repeat must be a whole number from 1 to {most} (got {value}).",
                most=MAX_REPEAT,
                value=repr(word),
            )
        )
    rest = f"{prompt[: found.start()]} {prompt[found.end() :]}"
    return " ".join(rest.split()), int(word)


CHOICE_LENGTH = 100
"""The longest value a platform's picker takes (Discord's autocomplete)."""


def completions(current: str, names: Sequence[str], limit: int = 25) -> list[str]:
    """What a picker offers for a prompt being typed: when its last word starts ``--``, the
    prompt completed with each saved option's name it begins (at most ``limit``, none longer
    than :data:`CHOICE_LENGTH`); else nothing."""
    head, _, last = current.rpartition(" ")
    if not last.startswith(("--", "—")):
        return []
    typed = last.lstrip("-—").lower()
    lead = f"{head} " if head else ""
    found = [f"{lead}--{name}" for name in sorted(names) if name.startswith(typed)]
    return [text for text in found if len(text) <= CHOICE_LENGTH][:limit]
