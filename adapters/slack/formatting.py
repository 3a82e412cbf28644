"""genbot's outbound messages and forms as Slack Block Kit, made safe to post.

Model text (``OutMessage.from_model``) goes into a ``markdown`` block (standard Markdown, 12,000
characters) with every ping token broken; genbot's own text goes into ``mrkdwn`` sections, fully
escaped, so only the mentions genbot adds itself (``mention_user_id``, and the users and
channels its text names, :class:`~bot.kernel.Mention`, drawn as ``<@U…>`` and ``<#C…>``) can
notify anyone. The top-level ``text`` (notifications, screen readers) is the escaped mrkdwn
form, truncated.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from typing import Any

from adapters.text import truncate
from bot.kernel import (
    BAD_ACTION,
    GOOD_ACTION,
    Button,
    ButtonRows,
    Mention,
    Modal,
    ModalField,
    OutMessage,
    Place,
    _,
    draw_mentions,
)

MARKDOWN_BLOCK_MAX = 12000
MODEL_TEXT_MAX = MARKDOWN_BLOCK_MAX - 100
"""What the core may put in one message: the markdown block's 12,000 characters less room for
the zero-width spaces :func:`neutralise_markdown` inserts."""
SECTION_TEXT_MAX = 3000
FALLBACK_TEXT_MAX = 3000
MESSAGE_BLOCKS_MAX = 50
ACTIONS_ELEMENTS_MAX = 25
BUTTON_TEXT_MAX = 75
ACTION_ID_MAX = 255
MODAL_TITLE_MAX = 24
OPTION_TEXT_MAX = 75
SELECT_OPTIONS_MAX = 100
INPUT_LABEL_MAX = 2000
PLACEHOLDER_MAX = 150
INPUT_HINT_MAX = 2000
INPUT_MAX_LENGTH = 3000
EMPTY_FALLBACK = "genbot"
ALT_TEXT_MAX = 2000
OVERFLOW_OPTIONS_MAX = 5
MENU_ACTION_ID = "gb:menu:"
"""The action id of a message's overflow menu (its chosen option's value is the custom id)."""

ZWSP = "\u200b"
# "<", "@", "!" and "#" also as the HTML entities a Markdown renderer decodes.
_LESS_THAN = r"<|&lt;|&#0*60;|&#x0*3c;"
_AT = r"@|&#0*64;|&#x0*40;|&commat;"
_SIGIL = r"[@!#]|&#0*(?:64|33|35);|&#x0*(?:40|21|23);|&(?:commat|excl|num);"
_TOKEN_OPENER = re.compile(rf"({_LESS_THAN})(?={_SIGIL})", re.IGNORECASE)
_PLAIN_BROADCAST = re.compile(
    rf"(?<![\w\u200b])({_AT})(?=(?:everyone|here|channel)\b)", re.IGNORECASE
)
_FENCE = re.compile(r"(```.*?(?:```|$))", re.DOTALL)
_INLINE_CODE = re.compile(r"(`[^`\n]+`)")
_HEADING = re.compile(r"^#{1,6}\s+(.+?)\s*#*\s*$", re.MULTILINE)
_BULLET = re.compile(r"^(\s*)[-*+]\s+", re.MULTILINE)
_LINK = re.compile(r"\[([^\]\n]+)\]\((https?://[^)\s]+)\)")
_BOLD = re.compile(r"\*\*(.+?)\*\*|__(.+?)__")
_ITALIC = re.compile(r"(?<![*\w])\*(?![\s*])(.+?)(?<![\s*])\*(?![*\w])")
_STRIKE = re.compile(r"~~(.+?)~~")
_BOLD_MARK = "\x00"


def escape_mrkdwn(text: str) -> str:
    """Escape Slack's control characters so text shows literally and never forms a token."""
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


def neutralise_markdown(text: str) -> str:
    """Break ``<!everyone>``, ``<@U…>``, ``<!subteam^…>``, ``<#C…>`` and plain ``@here``-style
    broadcasts (any letter case; ``<`` and ``@`` also written as HTML entities such as
    ``&lt;`` or ``&#60;``) in standard Markdown with a zero-width space, so the text reads the
    same and pings nobody."""
    text = _TOKEN_OPENER.sub(lambda m: m.group(1) + ZWSP, text)
    return _PLAIN_BROADCAST.sub(lambda m: m.group(1) + ZWSP, text)


def markdown_to_mrkdwn(text: str) -> str:
    """Standard Markdown (as models and the core write it) as escaped Slack mrkdwn, its
    mentions drawn (:func:`native_mention`)."""
    parts = _FENCE.split(text)
    out: list[str] = []
    for index, part in enumerate(parts):
        if index % 2:
            out.append(_fence_to_mrkdwn(part))
        else:
            out.append(_prose_to_mrkdwn(part))
    return draw_mentions("".join(out), native_mention)


def _fence_to_mrkdwn(fence: str) -> str:
    body = fence[3:]
    body = body[:-3] if body.endswith("```") else body
    first, newline, rest = body.partition("\n")
    if newline and re.fullmatch(r"[\w+#.-]*", first.strip()):
        body = rest
    return "```" + escape_mrkdwn(body.strip("\n")) + "```"


def _prose_to_mrkdwn(text: str) -> str:
    pieces = _INLINE_CODE.split(text)
    out: list[str] = []
    for index, piece in enumerate(pieces):
        if index % 2:
            out.append(escape_mrkdwn(piece))
            continue
        piece = escape_mrkdwn(piece)
        piece = _HEADING.sub(lambda m: f"{_BOLD_MARK}{m.group(1)}{_BOLD_MARK}", piece)
        piece = _BULLET.sub(lambda m: f"{m.group(1)}• ", piece)
        piece = _LINK.sub(lambda m: f"<{m.group(2)}|{m.group(1)}>", piece)
        piece = _BOLD.sub(lambda m: f"{_BOLD_MARK}{m.group(1) or m.group(2)}{_BOLD_MARK}", piece)
        piece = _ITALIC.sub(lambda m: f"_{m.group(1)}_", piece)
        piece = _STRIKE.sub(lambda m: f"~{m.group(1)}~", piece)
        out.append(piece.replace(_BOLD_MARK, "*"))
    return "".join(out)


def split_text(text: str, limit: int) -> list[str]:
    """Escaped mrkdwn in pieces of at most ``limit`` characters, cut at line ends where
    possible. (Not :func:`bot.kernel.text.split_text`: that one reopens code blocks with a
    ```` ```lang ```` line, while mrkdwn fences here are inline, ```` ```code``` ````, and
    Slack would show the tag as code.)"""
    pieces: list[str] = []
    rest = text
    while len(rest) > limit:
        cut = rest.rfind("\n", 0, limit + 1)
        cut = cut if cut > 0 else limit
        pieces.append(rest[:cut])
        rest = rest[cut:].lstrip("\n")
    if rest:
        pieces.append(rest)
    return pieces


def mention(user_id: str) -> str:
    return f"<@{user_id}>" if re.fullmatch(r"[UW][A-Z0-9]+", user_id) else ""


def native_mention(named: Mention) -> str:
    """Slack's own mention of a user (``<@U1>``) or a channel (``<#C1>``); an id Slack would
    not read as one stays as it is, escaped."""
    if named.kind == "user":
        return mention(named.id) or escape_mrkdwn(named.id)
    channel = re.fullmatch(r"[CGD][A-Z0-9]+", named.id)
    return f"<#{named.id}>" if channel else escape_mrkdwn(named.id)


def message_blocks(message: OutMessage, file_ids: Sequence[str] = ()) -> list[dict[str, Any]]:
    """The blocks of ``message``: text, then an image block per Slack file in ``file_ids``
    (its images, uploaded), then one actions block per row of buttons; the buttons that go in a
    menu (:attr:`bot.kernel.Button.menu_text`: ℹ️) are one overflow menu, ending the last row."""
    blocks: list[dict[str, Any]] = []
    tag = mention(message.mention_user_id or "")
    if message.from_model:
        if tag:
            blocks.append(_section(tag))
        text = neutralise_markdown(message.text)
        if text.strip():
            blocks.append({"type": "markdown", "text": truncate(text, MARKDOWN_BLOCK_MAX)})
    else:
        mrkdwn = markdown_to_mrkdwn(message.text)
        mrkdwn = f"{tag} {mrkdwn}".strip() if tag else mrkdwn
        if mrkdwn.strip():
            blocks += [_section(piece) for piece in split_text(mrkdwn, SECTION_TEXT_MAX)]
    rows = button_blocks(message.buttons)
    images = [_image(f, message.text) for f in file_ids]
    room = MESSAGE_BLOCKS_MAX - len(rows) - len(images)
    return blocks[:room] + images + rows


def fallback_text(message: OutMessage) -> str:
    """The top-level ``text``: escaped mrkdwn of the message, never empty."""
    tag = mention(message.mention_user_id or "")
    text = markdown_to_mrkdwn(message.text)
    text = f"{tag} {text}".strip() if tag else text.strip()
    if not text:
        labels = [b.label for row in message.buttons for b in row]
        text = " · ".join(labels) if labels else EMPTY_FALLBACK
    return truncate(text, FALLBACK_TEXT_MAX)


def plain_notice(text: str) -> str:
    """genbot's own text (an ephemeral notice) as safe mrkdwn, truncated for the ``text``
    field; :func:`notice_blocks` carries the whole of a longer one."""
    return truncate(markdown_to_mrkdwn(text), FALLBACK_TEXT_MAX) or EMPTY_FALLBACK


def notice_blocks(text: str) -> list[dict[str, Any]]:
    """Sections showing a notice too long for the ``text`` field (``/genbot help``) whole;
    empty when :func:`plain_notice` already holds all of it."""
    mrkdwn = markdown_to_mrkdwn(text)
    if len(mrkdwn) <= FALLBACK_TEXT_MAX:
        return []
    return [_section(piece) for piece in split_text(mrkdwn, SECTION_TEXT_MAX)][:MESSAGE_BLOCKS_MAX]


def _image(file_id: str, alt_text: str) -> dict[str, Any]:
    alt = truncate(alt_text.strip(), ALT_TEXT_MAX) or "image"
    return {"type": "image", "slack_file": {"id": file_id}, "alt_text": alt}


def _section(text: str) -> dict[str, Any]:
    return {"type": "section", "text": {"type": "mrkdwn", "text": text}}


def button_blocks(buttons: ButtonRows) -> list[dict[str, Any]]:
    """One actions block per row of ``buttons``; a row's 👍/👎 pair under a chat answer
    (:data:`~bot.kernel.GOOD_ACTION`, :data:`~bot.kernel.BAD_ACTION`) is Slack's own
    ``feedback_buttons`` element, in a ``context_actions`` block after the row's other buttons.
    Buttons with a menu text are the options of one overflow menu at the end of the last row.
    Slack has no disabled buttons: a disabled one is left out."""
    blocks: list[dict[str, Any]] = []
    menu = [b for row in buttons for b in row if not b.disabled and b.menu_text is not None]
    for index, row in enumerate(buttons):
        pressable = tuple(b for b in row if not b.disabled and b.menu_text is None)
        good = next((b for b in pressable if b.action == GOOD_ACTION), None)
        bad = next((b for b in pressable if b.action == BAD_ACTION), None)
        pair = (good, bad) if good is not None and bad is not None else None
        others = tuple(b for b in pressable if pair is None or b not in pair)
        if others:
            blocks.append(_actions(index, others))
        if pair is not None:
            blocks.append(_feedback(index, *pair))
    if menu:
        overflow = _overflow(menu[:OVERFLOW_OPTIONS_MAX])
        last = blocks[-1] if blocks else None
        if last and last["type"] == "actions" and len(last["elements"]) < ACTIONS_ELEMENTS_MAX:
            last["elements"].append(overflow)
        else:
            blocks.append({"type": "actions", "block_id": "gb_menu", "elements": [overflow]})
    return blocks


def _feedback(index: int, good: Button, bad: Button) -> dict[str, Any]:
    """Slack's ``feedback_buttons``: one action id (the 👍's), the press's ``value`` says
    which was pressed (each button's custom id)."""

    def half(button: Button) -> dict[str, Any]:
        text = truncate(button.label, BUTTON_TEXT_MAX)
        return {"text": {"type": "plain_text", "text": text}, "value": button.custom_id}

    element = {
        "type": "feedback_buttons",
        "action_id": good.custom_id,
        "positive_button": half(good),
        "negative_button": half(bad),
    }
    return {"type": "context_actions", "block_id": f"gb_feedback_{index}", "elements": [element]}


def _actions(index: int, row: tuple[Button, ...]) -> dict[str, Any]:
    return {
        "type": "actions",
        "block_id": f"gb_row_{index}",
        "elements": [_button(b) for b in row[:ACTIONS_ELEMENTS_MAX]],
    }


def _button(button: Button) -> dict[str, Any]:
    custom_id = button.custom_id
    if len(custom_id) > ACTION_ID_MAX:
        raise ValueError(f"action id longer than {ACTION_ID_MAX} characters: {custom_id!r}")
    element: dict[str, Any] = {
        "type": "button",
        "text": {
            "type": "plain_text",
            "text": truncate(button.label, BUTTON_TEXT_MAX),
            "emoji": True,
        },
        "action_id": custom_id,
        "value": custom_id,
    }
    style = {"primary": "primary", "success": "primary", "danger": "danger"}.get(button.style)
    if style:
        element["style"] = style
    return element


def _overflow(items: Sequence[Button]) -> dict[str, Any]:
    options = [
        {"text": _plain(truncate(b.menu_text or b.label, OPTION_TEXT_MAX)), "value": b.custom_id}
        for b in items
    ]
    return {"type": "overflow", "action_id": MENU_ACTION_ID, "options": options}


def _modal_input(field: ModalField) -> dict[str, Any]:
    if field.kind == "select" and field.choices:
        options = [
            {"text": _plain(truncate(c.label, OPTION_TEXT_MAX)), "value": c.value}
            for c in field.choices[:SELECT_OPTIONS_MAX]
        ]
        element: dict[str, Any] = {
            "type": "static_select",
            "action_id": field.id,
            "options": options,
        }
        chosen = [option for option in options if option["value"] == field.default]
        if chosen:
            element["initial_option"] = chosen[0]
        if field.placeholder:
            element["placeholder"] = _plain(truncate(field.placeholder, PLACEHOLDER_MAX))
        return element
    max_length = max(1, min(field.max_length, INPUT_MAX_LENGTH))
    element = {
        "type": "plain_text_input",
        "action_id": field.id,
        "multiline": field.multiline,
        "max_length": max_length,
    }
    if field.default:
        element["initial_value"] = field.default[:max_length]
    if field.placeholder:
        element["placeholder"] = _plain(truncate(field.placeholder, PLACEHOLDER_MAX))
    return element


def modal_view(modal: Modal, place: Place, preview_file: str = "") -> dict[str, Any]:
    """A Slack modal for ``modal`` (its notice on top, then the Slack file ``preview_file``
    showing :attr:`Modal.preview` if given, selects as static selects, a field's error as its
    hint); where it was opened travels in ``private_metadata``."""
    blocks: list[dict[str, Any]] = []
    if modal.notice:
        notice = truncate(modal.notice, SECTION_TEXT_MAX)
        blocks.append({"type": "section", "text": {"type": "mrkdwn", "text": notice}})
    if preview_file:
        # Translators: the description of a form's preview image; {form} is the form's title.
        blocks.append(_image(preview_file, _("{form}: what you chose", form=modal.title)))
    for field in modal.fields:
        block: dict[str, Any] = {
            "type": "input",
            "block_id": field.id,
            "optional": not field.required,
            "label": _plain(truncate(field.label, INPUT_LABEL_MAX)),
            "element": _modal_input(field),
        }
        if error := modal.error_of(field.id):
            block["hint"] = _plain(truncate(f"⚠️ {error}", INPUT_HINT_MAX))
        blocks.append(block)
    return {
        "type": "modal",
        "callback_id": modal.custom_id,
        "title": _plain(truncate(modal.title, MODAL_TITLE_MAX)),
        "submit": _plain(_("Submit")),
        "close": _plain(_("Cancel")),
        "private_metadata": encode_place(place),
        "blocks": blocks,
    }


def encode_place(place: Place) -> str:
    return json.dumps(
        {"w": place.workspace_id, "c": place.channel_id, "t": place.thread_id, "d": place.is_dm}
    )


def decode_place(metadata: str, fallback_workspace: str) -> Place | None:
    """The place stored by :func:`encode_place`; ``None`` for foreign metadata."""
    try:
        data = json.loads(metadata)
        return Place(
            "slack",
            str(data.get("w") or fallback_workspace),
            str(data["c"]),
            data.get("t"),
            bool(data.get("d")),
        )
    except (ValueError, KeyError, TypeError, AttributeError):
        return None


def _plain(text: str) -> dict[str, Any]:
    return {"type": "plain_text", "text": text, "emoji": True}
