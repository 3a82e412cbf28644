"""Text-only commands, Midjourney style, and option validation against ``bot/kernel/commands.py``.

``a fox in the snow --ar 16:9 --fast --v 6`` parses into ``{"prompt": "a fox in the snow --v 6",
"aspect_ratio": "16:9", "process_mode": "fast"}`` for ``/imagine``. Flags take one word or a
quoted value (``--neg "blurry, dark"``); a yes/no flag alone means yes (``--remix``), and
may be followed by ``true`` or ``false``; the prose options in ``PROSE_OPTIONS`` take every word
up to the next flag (``--no cars, trees``). ``—ar`` (an em dash, as phones type ``--``) works too,
and so does ``--ar=16:9``; an em-dash word that is not a known flag is plain text. A quoted
word is never a flag (``"--verbose"``). Every problem is a :class:`CommandError` whose text is
a short sentence for the user, naming the option as the user gave it (``--ar``, ``The prompt``,
or the option's name).
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

from bot.api.errors import InvalidRequest
from bot.api.validation import check_http_url
from bot.kernel.command_names import CommandNames, command_names
from bot.kernel.commands import (
    COMMANDS,
    COMMANDS_BY_NAME,
    EVERY_CHAT_MODEL,
    CommandSpec,
    Offered,
    Option,
    command,
)
from bot.kernel.errors import CommandError
from bot.kernel.events import OptionValue
from bot.kernel.i18n import DEFAULT_LANGUAGE, N_, _, format_number, language

ASPECT_SIDE_MAX = 9999
"""Largest number on either side of an aspect ratio (``W:H``)."""
PROSE_OPTIONS = frozenset({"negative_prompt", "system", "system_prompt"})
"""String options whose unquoted text flag takes every word up to the next flag."""

_TRUE = frozenset({"true", "yes", "on", "1"})
_FALSE = frozenset({"false", "no", "off", "0"})
_QUOTES = {'"': '"', "“": "”", "'": "'"}
_FLAG_RE = re.compile(r"(?:--|—)([A-Za-z][\w\-]*)(?:=(.*))?", re.DOTALL)
_TOKEN_RE = re.compile(r"\S+")
_ASPECT_RE = re.compile(r"\s*(\d+)\s*:\s*(\d+)\s*")
_CONTROL_RE = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f]")
_BIDI_RE = re.compile(r"[\u202a-\u202e\u2066-\u2069]")
_INVISIBLE_RE = re.compile(r"[\s\u00ad\u180e\u200b-\u200f\u2060-\u2064\ufeff]*")
_PARAMETER_RE = re.compile(r"(?<!\S)(?:--|—)[A-Za-z]")
_CONTROL_NAMES = {0x00: "NUL", 0x07: "BEL", 0x08: "BS", 0x1B: "ESC", 0x7F: "DEL"}
_FREE_TEXT_LABELS = {
    # Translators: how an error names what a command takes as plain text, e.g. "the prompt
    # was given twice", "/imagine needs the prompt".
    "prompt": N_("the prompt"),
    "text": N_("the text"),
    "user": N_("the user"),
    "value": N_("the value"),
    "entry": N_("the entry"),
    "command": N_("the command"),
    "url": N_("the url"),
    "job_id": N_("the job id"),
}


@dataclass(frozen=True)
class _Flag:
    option: Option
    preset: str | None


def _flag_table(spec: CommandSpec) -> dict[str, _Flag]:
    table: dict[str, _Flag] = {}
    for option in spec.options:
        for flag in option.flags:
            table[flag.lower()] = _Flag(option, None)
        for flag, value in option.flag_values:
            table[flag.lower()] = _Flag(option, value)
    return table


def _flag_list(spec: CommandSpec) -> str:
    spellings: list[str] = []
    for option in spec.options:
        names = [*option.flags, *(f for f, __ in option.flag_values if f not in option.flags)]
        if names:
            spellings.append(" / ".join(names))
    return ", ".join(spellings)


def _read_value(text: str, start: int) -> tuple[str, int, bool] | None:
    """The value word or quoted string after ``start``: ``(value, end, was_quoted)``."""
    token = _TOKEN_RE.search(text, start)
    if token is None or _FLAG_RE.fullmatch(token.group()):
        return None
    close = _QUOTES.get(token.group()[0])
    if close is not None:
        end = text.find(close, token.start() + 1)
        while end != -1 and end + 1 < len(text) and not text[end + 1].isspace():
            end = text.find(close, end + 1)
        if end != -1:
            return text[token.start() + 1 : end], end + 1, True
    return token.group(), token.end(), False


def _read_prose(text: str, start: int) -> tuple[str, int, bool] | None:
    """A quoted string, or every word up to the next flag."""
    first = _read_value(text, start)
    if first is None or first[2]:
        return first
    end = start
    for token in _TOKEN_RE.finditer(text, start):
        if _FLAG_RE.fullmatch(token.group()):
            break
        end = token.end()
    return text[start:end].strip(), end, False


def parse_command_text(spec: CommandSpec, text: str) -> dict[str, str]:
    """Split ``text`` into raw option values (strings) for ``spec``; see the module docstring.

    The words left over go to ``spec.free_text``. Unknown flags stay in that text when
    ``spec.keeps_unknown_flags``, else they are an error naming the valid flags.
    """
    table = _flag_table(spec)
    values: dict[str, str] = {}
    given: dict[str, str] = {}
    spent: list[tuple[int, int]] = []
    position = 0
    while (token := _TOKEN_RE.search(text, position)) is not None:
        position = token.end()
        flag_match = _FLAG_RE.fullmatch(token.group())
        if flag_match is None:
            continue
        spelled = "--" + flag_match.group(1).lower()
        flag = table.get(spelled)
        if flag is None:
            if spec.keeps_unknown_flags or token.group().startswith("—"):
                continue
            if not (valid := _flag_list(spec)):
                raise CommandError(
                    _(
                        "/{command} has no option {flag}. Valid options: none.",
                        command=_display_name(spec),
                        flag=spelled,
                    )
                )
            raise CommandError(
                _(
                    "/{command} has no option {flag}. Valid options: {options}.",
                    command=_display_name(spec),
                    flag=spelled,
                    options=valid,
                )
            )
        option = flag.option
        if option.name in values:
            first = given[option.name]
            if first == spelled:
                raise CommandError(_("{flag} was given twice.", flag=spelled))
            raise CommandError(
                # Translators: {option} is the option's name in English, like "aspect ratio".
                _(
                    "{first} and {second} conflict: both set the {option}; give only one.",
                    first=first,
                    second=spelled,
                    option=option.name.replace("_", " "),
                )
            )
        given[option.name] = spelled
        inline = flag_match.group(2)
        if inline is not None:
            value, end = inline, token.end()
        elif flag.preset is not None or option.type == "boolean":
            value, end = flag.preset or "true", token.end()
            if option.type == "boolean":
                following = _read_value(text, token.end())
                if following is not None and following[0].lower() in _TRUE | _FALSE:
                    value, end, __ = following
        else:
            reader = _read_prose if option.name in PROSE_OPTIONS else _read_value
            found = reader(text, token.end())
            if found is None:
                about = _(option.description)
                if language() == DEFAULT_LANGUAGE:
                    about = about[:1].lower() + about[1:]
                # Translators: {about} is the option's description ("What to avoid").
                raise CommandError(_("{flag} needs a value: {about}.", flag=spelled, about=about))
            value, end, __ = found
        values[option.name] = value
        spent.append((token.start(), end))
        position = end
    free = _leftover(text, spent)
    if free:
        if spec.free_text is None:
            if not (valid := _flag_list(spec)):
                raise CommandError(
                    _(
                        "/{command} takes no free text (got {text}). Options: none.",
                        command=_display_name(spec),
                        text=repr(free),
                    )
                )
            raise CommandError(
                _(
                    "/{command} takes no free text (got {text}). Options: {options}.",
                    command=_display_name(spec),
                    text=repr(free),
                    options=valid,
                )
            )
        if spec.free_text in values:
            raise CommandError(
                _("{flag} was given twice.", flag=_label(spec, spec.free_text, True))
            )
        values[spec.free_text] = free
    return values


def _leftover(text: str, spent: list[tuple[int, int]]) -> str:
    pieces: list[str] = []
    last = 0
    for start, end in spent:
        pieces.append(text[last:start].strip())
        last = end
    pieces.append(text[last:].strip())
    return " ".join(piece for piece in pieces if piece)


def _display_name(spec: CommandSpec) -> str:
    return spec.name.replace(".", " ")


def _label(spec: CommandSpec, name: str, text_style: bool) -> str:
    """How a sentence about option ``name`` begins: ``--ar`` (a text command's flag), ``The
    prompt`` (what a text command takes as plain text), else the option's name."""
    option = spec.option(name)
    if text_style and name == spec.free_text:
        phrase = _free_text(name)
        return phrase[:1].upper() + phrase[1:]
    if text_style and option is not None and option.flags:
        return option.flags[0]
    return name


def _free_text(name: str) -> str:
    """What a command takes as plain text, within a sentence: ``the prompt``."""
    label = _FREE_TEXT_LABELS.get(name)
    return _(label) if label is not None else name.replace("_", " ")


def _number(value: float) -> str:
    return str(int(value)) if float(value).is_integer() else str(value)


def _convert(option: Option, label: str, value: OptionValue) -> OptionValue:
    kind = option.type
    if kind == "string":
        return check_text(str(value), label).strip()
    if kind == "boolean":
        if isinstance(value, bool):
            return value
        word = str(value).strip().lower()
        if word in _TRUE | _FALSE:
            return word in _TRUE
        raise CommandError(
            _("{label} must be true or false (got {value}).", label=label, value=repr(value))
        )
    if isinstance(value, bool):
        raise CommandError(
            _("{label} must be a number (got {value}).", label=label, value=repr(value))
        )
    try:
        number = float(value)
    except ValueError:
        if kind == "integer":
            raise CommandError(
                _("{label} must be a whole number (got {value}).", label=label, value=repr(value))
            ) from None
        raise CommandError(
            _("{label} must be a number (got {value}).", label=label, value=repr(value))
        ) from None
    if not math.isfinite(number):
        raise CommandError(
            _("{label} must be a finite number (got {value}).", label=label, value=repr(value))
        )
    if kind == "integer":
        if not number.is_integer():
            raise CommandError(
                _("{label} must be a whole number (got {value}).", label=label, value=repr(value))
            )
        return int(number)
    return number


def check_text(text: str, label: str) -> str:
    """``text`` when it is plain text; :class:`CommandError` naming the problem when it holds
    a control character (tabs and line breaks are fine), a bidirectional control (which makes
    text read other than it is), or nothing but invisible characters."""
    if (control := _CONTROL_RE.search(text)) is not None:
        code = ord(control.group())
        if (name := _CONTROL_NAMES.get(code)) is None:
            raise CommandError(
                _(
                    "{label} contains a control character (U+{code}); remove it.",
                    label=label,
                    code=format(code, "04X"),
                )
            )
        # Translators: {name} is a control character's ASCII name (NUL, ESC, DEL).
        raise CommandError(
            _(
                "{label} contains {name} (U+{code}); remove it.",
                label=label,
                name=name,
                code=format(code, "04X"),
            )
        )
    if (bidi := _BIDI_RE.search(text)) is not None:
        raise CommandError(
            _(
                "{label} contains a bidirectional override (U+{code}), which "
                "makes text read differently from what it is; remove it.",
                label=label,
                code=format(ord(bidi.group()), "04X"),
            )
        )
    if text and _INVISIBLE_RE.fullmatch(text) and not text.isspace():
        raise CommandError(
            _(
                "{label} has only invisible characters (zero-width spaces and the like); "
                "write it in visible text.",
                label=label,
            )
        )
    return text


def _check(spec: CommandSpec, option: Option, label: str, value: OptionValue) -> OptionValue:
    if option.choices:
        by_lower = {choice.lower(): choice for choice in option.choices}
        choice = by_lower.get(str(value).lower())
        if choice is None:
            allowed = ", ".join(option.choices)
            raise CommandError(
                _(
                    "{label} must be one of {choices} (got {value}).",
                    label=label,
                    choices=allowed,
                    value=repr(value),
                )
            )
        return choice
    if option.name == "aspect_ratio":
        return parse_aspect_ratio(str(value), label)
    if option.name == "url":
        return _http_link(str(value), label)
    if isinstance(value, int | float) and not isinstance(value, bool):
        if option.min_value is not None and value < option.min_value:
            raise CommandError(
                _(
                    "{label} must be at least {least} (got {value}).",
                    label=label,
                    least=format_number(option.min_value, grouping=False),
                    value=_number(value),
                )
            )
        if option.max_value is not None and value > option.max_value:
            raise CommandError(
                _(
                    "{label} must be at most {most} (got {value}).",
                    label=label,
                    most=format_number(option.max_value, grouping=False),
                    value=_number(value),
                )
            )
    return value


def _http_link(text: str, label: str) -> str:
    """``text`` when it is an http(s) link, by the provider client's rule
    (:func:`bot.api.validation.check_http_url`), refused naming the option as the user gave it
    before any request is built."""
    try:
        return check_http_url(label, text)
    except InvalidRequest:
        raise CommandError(
            _(
                "{label} must be an http or https link (got {value}).",
                label=label,
                value=repr(text),
            )
        ) from None


def _check_prompt(prompt: str, label: str) -> None:
    """Refuse, as :func:`check_text` refuses invisible text, a prompt whose Midjourney
    parameters travel in it (``--v 6``, ``--no cars``: from its first ``--flag`` on, as the
    provider reads them) and whose text before them is only invisible characters (a
    zero-width space and ``--v 6`` is refused as the zero-width space alone is)."""
    found = _PARAMETER_RE.search(prompt)
    if found is not None:
        check_text(prompt[: found.start()], label)


def parse_aspect_ratio(text: str, label: str = "aspect_ratio") -> str:
    """``W:H`` with positive whole numbers up to ``ASPECT_SIDE_MAX``; returns it normalised
    (``16 : 9`` → ``16:9``). Which ratios the provider accepts is its to say
    (docs/provider.md#prompt-check). ``{16:9, 1:1}`` is refused saying why
    (:func:`permuted_aspect`)."""
    if "{" in text or "}" in text:
        raise CommandError(permuted_aspect(label))
    match = _ASPECT_RE.fullmatch(text)
    if match is None:
        raise CommandError(
            _(
                "{label} must look like 16:9 (two whole numbers; got {value}).",
                label=label,
                value=repr(text),
            )
        )
    width, height = int(match.group(1)), int(match.group(2))
    if width == 0 or height == 0:
        raise CommandError(
            _(
                "{label} must use numbers above zero, like 16:9 (got {value}).",
                label=label,
                value=repr(text),
            )
        )
    if max(width, height) > ASPECT_SIDE_MAX:
        raise CommandError(
            _(
                "{label} numbers must be at most {most} (got {value}).",
                label=label,
                most=ASPECT_SIDE_MAX,
                value=repr(text),
            )
        )
    return f"{width}:{height}"


def permuted_aspect(label: str) -> str:
    """Why an aspect ratio among ``{…}`` choices is refused: a command's jobs share one aspect
    ratio (genbot sends it as the request's ``aspect_ratio``, prices and previews the jobs by it,
    and their follow-ups inherit it)."""
    return _(
        "{label} cannot vary with {{…}} choices: the jobs of one command share one aspect ratio. "
        "Give one ratio (like {label} 16:9) outside the braces, and run the command again for "
        "another.",
        label=label,
    )


def validate_options(
    spec: CommandSpec,
    options: Mapping[str, OptionValue],
    *,
    attachments: Iterable[str] = (),
    text_style: bool = False,
    files_later: bool = False,
) -> dict[str, OptionValue]:
    """Typed, checked option values: types converted, choices matched (case-insensitively, to
    their canonical spelling), bounds, aspect ratios and links (``url``) checked, a prompt that
    keeps its Midjourney parameters refused when only invisible text comes before them,
    required options present.

    ``attachments`` names the attachment options the user supplied. ``text_style`` names
    options by their flag (``--ar``) in messages, for text commands; otherwise by their name.
    Empty strings count as absent. ``files_later``: required attachments may be missing (a
    form will ask for them).
    """
    result: dict[str, OptionValue] = {}
    for name, raw in options.items():
        option = spec.option(name)
        if option is None:
            raise CommandError(
                _(
                    "/{command} has no option {option}.",
                    command=_display_name(spec),
                    option=repr(name),
                )
            )
        label = _label(spec, name, text_style)
        if option.type == "attachment":
            raise CommandError(_("{label} must be an attached file.", label=label))
        value = _convert(option, label, raw)
        if value == "":
            continue
        if name == "prompt" and spec.keeps_unknown_flags:
            _check_prompt(str(value), label)
        result[name] = _check(spec, option, label, value)
    supplied = set(attachments)
    for option in spec.options:
        present = option.name in supplied if option.type == "attachment" else option.name in result
        if option.type == "attachment" and files_later:
            continue
        if option.required and not present:
            raise CommandError(_missing(spec, option, text_style))
    return result


def _missing(spec: CommandSpec, option: Option, text_style: bool) -> str:
    command = _display_name(spec)
    if option.type == "attachment":
        if spec.examples:
            return _(
                "/{command} needs {option} (attach a file). For example: {example}",
                command=command,
                option=option.name,
                example=_(spec.examples[0]),
            )
        return _("/{command} needs {option} (attach a file).", command=command, option=option.name)
    if option.name == spec.free_text:
        label = _free_text(option.name)
    else:
        label = _label(spec, option.name, text_style)
    if spec.examples:
        return _(
            "/{command} needs {option}. For example: {example}",
            command=command,
            option=label,
            example=_(spec.examples[0]),
        )
    return _("/{command} needs {option}.", command=command, option=label)


def resolve_command(text: str) -> tuple[CommandSpec, str]:
    """The command a text names and the rest of the text: ``/diffusion txt2img a fox`` →
    (``diffusion.txt2img``, ``a fox``); the slash is optional. Every platform whose commands
    arrive as text routes them here. :class:`CommandError` for an empty, unknown or incomplete
    command (naming the choices)."""
    named = text.strip().removeprefix("/")
    head, rest = _first_word(named) if named[:1].strip() else ("", "")
    name = head.lower()
    if not name:
        raise CommandError(_("Empty command: type a command name after '/', for example /help."))
    members = [spec.name.partition(".")[2] for spec in COMMANDS if spec.name.startswith(f"{name}.")]
    if members:
        sub, rest = _first_word(rest)
        choices = ", ".join(members)
        example = next((_(e) for c in COMMANDS for e in c.examples
                        if e.startswith(f"/{name} ")), None)  # fmt: skip
        if not sub:
            if example is None:
                raise CommandError(
                    _("/{command} needs a subcommand: {choices}.", command=name, choices=choices)
                )
            raise CommandError(
                _(
                    "/{command} needs a subcommand: {choices}. For example: {example}",
                    command=name,
                    choices=choices,
                    example=example,
                )
            )
        if f"{name}.{sub.lower()}" not in COMMANDS_BY_NAME:
            if example is None:
                raise CommandError(
                    _(
                        "Unknown subcommand '/{command} {sub}'; use one of: {choices}.",
                        command=name,
                        sub=sub,
                        choices=choices,
                    )
                )
            raise CommandError(
                _(
                    "Unknown subcommand '/{command} {sub}'; use one of: {choices}. "
                    "For example: {example}",
                    command=name,
                    sub=sub,
                    choices=choices,
                    example=example,
                )
            )
        return COMMANDS_BY_NAME[f"{name}.{sub.lower()}"], rest
    if name not in COMMANDS_BY_NAME:
        raise CommandError(
            _("Unknown command '/{command}'. Type /help to see what genbot can do.", command=head)
        )
    return COMMANDS_BY_NAME[name], rest


def _first_word(text: str) -> tuple[str, str]:
    words = text.split(None, 1)
    if not words:
        return "", ""
    return words[0], words[1].strip() if len(words) > 1 else ""


def _option_help(
    spec: CommandSpec, option: Option, offered: Mapping[Offered, Sequence[str]]
) -> str:
    spellings = [f"`{f}`" for f in option.flags]
    spellings += [f"`{f}`" for f, __ in option.flag_values if f not in option.flags]
    if option.name == spec.free_text:
        # Translators: in /help, how an option is written: as the text after the command.
        spellings.insert(0, _("(the text)"))
    if option.type == "attachment":
        spellings.append(
            _("(Discord: attach an image)") if spec.numbered_uploads else _("(attach a file)")
        )
    # Translators: in /help, an option that only Discord's slash command form takes.
    how = " / ".join(spellings) if spellings else _("(slash option only)")
    details = [_(option.description)]
    if option.required:
        # Translators: in /help, an option that must be given.
        details.append(_("required"))
    if option.choices:
        # Translators: in /help, the values an option takes ("one of relax, fast, turbo").
        details.append(_("one of {choices}", choices=", ".join(option.choices)))
    elif option.autocomplete is not None:
        known = offered.get(option.autocomplete, ())
        details.append(
            # Translators: in /help, the models genbot knows for an option.
            _("known: {values}", values=", ".join(f"`{k}`" for k in known))
            if known
            else _("none known yet")
        )
    return f"  • `{option.name}` {how}: " + "; ".join(details)


def _numbered_help(spec: CommandSpec) -> str:
    """How text platforms send a numbered-uploads command's images."""
    last = spec.numbered_uploads
    return "  • " + _(
        "images on Slack and the playground: up to {last} (attach them; on Slack share "
        "them in the channel first), named `#1`…`#{last}` in the text (`--sref #2`); an image "
        "no word names is an image prompt",
        last=last,
    )


def help_specs(name: str | None = None) -> tuple[CommandSpec, ...]:
    """The commands ``/help name`` is about: every one, one (``imagine``, ``diffusion txt2img``)
    or a group's (``diffusion``); :class:`CommandError` naming the choices for anything else."""
    if not name or not name.strip():
        return COMMANDS
    wanted = " ".join(name.strip().lstrip("/").lower().split()).replace(" ", ".")
    found = tuple(s for s in COMMANDS if s.name == wanted or s.name.startswith(f"{wanted}."))
    if not found:
        names = ", ".join(sorted({s.name.split(".")[0] for s in COMMANDS}))
        raise CommandError(
            _(
                "There is no command /{command}; genbot has {names}.",
                command=name.strip().lstrip("/"),
                names=names,
            )
        )
    return found


def help_text(
    name: str | None = None,
    offered: Mapping[Offered, Sequence[str]] | None = None,
) -> str:
    """Help for every command (or those :func:`help_specs` finds for ``name``): options with
    their flags, the values genbot knows for autocompleted ones (``offered``, see
    :func:`bot.kernel.commands.offered`), and examples, with commands named as the platform of
    the event being handled names them (:mod:`bot.kernel.command_names`).

    Markdown with inline code; Slack callers run it through ``markdown_to_mrkdwn``.
    """
    specs = help_specs(name)
    lists = offered if offered is not None else EVERY_CHAT_MODEL
    names = command_names()
    blocks: list[str] = []
    if not name:
        blocks.append(
            _(
                "**genbot commands** — on text-only platforms write options as flags after the "
                "text, e.g. `a fox in the snow --ar 16:9 --fast`; quote values with spaces, and "
                'quote text that only looks like a flag (`"--verbose"`). {help} shows one '
                "command or group.",
                help=_example(_("/help diffusion"), command("help"), names),
            )
        )
    for spec in specs:
        heading = names.mention(spec.name) or f"**{names.typed(spec.name)}**"
        lines = [f"{heading} — {_(spec.description)}"]
        lines += [_option_help(spec, option, lists) for option in spec.options]
        if spec.numbered_uploads:
            lines.append(_numbered_help(spec))
        lines += [
            # Translators: in /help, before an example of a command ("e.g. `/imagine a fox`").
            "  " + _("e.g. {example}", example=_example(_(example), spec, names))
            for example in spec.examples
        ]
        blocks.append("\n".join(lines))
    return "\n\n".join(blocks)


def _example(example: str, spec: CommandSpec, names: CommandNames) -> str:
    """An example of ``spec`` as the platform names it (:meth:`CommandNames.written`)."""
    catalogue = f"/{_display_name(spec)}"
    rest = example[len(catalogue) :]
    if not example.startswith(catalogue) or rest[:1] not in ("", " "):
        return f"`{example}`"
    return names.written(spec.name, rest.strip())


def mentioned_user(text: str) -> str:
    """The user id ``text`` names: a mention (``<@123>``, ``<@!123>``, ``<@U1|name>``) or a bare
    id; ``""`` when it names none (empty, or several words)."""
    user = text.strip().removeprefix("<@").removesuffix(">").split("|")[0].lstrip("!")
    return "" if " " in user else user
