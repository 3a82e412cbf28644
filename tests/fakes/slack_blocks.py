"""Block Kit checks the fake Slack applies, with Slack's documented limits.

Each check returns the problems it found (empty when the payload is valid), worded like the
``errors`` list Slack attaches to an ``invalid_blocks`` / ``invalid_arguments`` answer.
"""

from __future__ import annotations

from typing import Any

MESSAGE_BLOCKS_MAX = 50
MODAL_BLOCKS_MAX = 100
SECTION_TEXT_MAX = 3000
MARKDOWN_TOTAL_MAX = 12000
HEADER_TEXT_MAX = 150
ACTIONS_ELEMENTS_MAX = 25
BUTTON_TEXT_MAX = 75
ACTION_ID_MAX = 255
BLOCK_ID_MAX = 255
BUTTON_VALUE_MAX = 2000
MODAL_TITLE_MAX = 24
INPUT_LABEL_MAX = 2000
PLACEHOLDER_MAX = 150
INPUT_MAX_LENGTH = 3000
PRIVATE_METADATA_MAX = 3000
CALLBACK_ID_MAX = 255
SELECT_OPTIONS_MAX = 100
OPTION_TEXT_MAX = 75
OPTION_VALUE_MAX = 150
OVERFLOW_OPTIONS_MAX = 5

CONTEXT_ACTIONS_ELEMENTS_MAX = 5
ICONS = frozenset({"trash"})
"""The icons of ``icon_button`` the fake knows (Slack's documented example)."""

MESSAGE_BLOCK_TYPES = {
    "actions",
    "context",
    "context_actions",
    "divider",
    "file",
    "header",
    "image",
    "markdown",
    "rich_text",
    "section",
}


def message_block_errors(blocks: Any) -> list[str]:
    """Problems with the ``blocks`` of a message."""
    if not isinstance(blocks, list):
        return ["blocks must be an array"]
    errors: list[str] = []
    if len(blocks) > MESSAGE_BLOCKS_MAX:
        errors.append(f"no more than {MESSAGE_BLOCKS_MAX} items allowed [json-pointer:/blocks]")
    markdown_total = 0
    action_ids: set[str] = set()
    block_ids: set[str] = set()
    for index, block in enumerate(blocks):
        where = f"[json-pointer:/blocks/{index}]"
        if not isinstance(block, dict) or block.get("type") not in MESSAGE_BLOCK_TYPES:
            errors.append(f"unsupported block type {where}")
            continue
        errors += _block_id_errors(block, block_ids, where)
        kind = block["type"]
        if kind == "markdown":
            text = block.get("text")
            if not isinstance(text, str) or not text:
                errors.append(f"markdown block needs text {where}")
            else:
                markdown_total += len(text)
        elif kind == "section":
            errors += _text_errors(block.get("text"), SECTION_TEXT_MAX, where + "/text")
        elif kind == "header":
            errors += _text_errors(block.get("text"), HEADER_TEXT_MAX, where + "/text", plain=True)
        elif kind == "actions":
            errors += _actions_errors(block.get("elements"), action_ids, where)
        elif kind == "context_actions":
            errors += _context_actions_errors(block.get("elements"), action_ids, where)
        elif kind == "context":
            elements = block.get("elements")
            if not isinstance(elements, list) or not 1 <= len(elements) <= 10:
                errors.append(f"context needs 1 to 10 elements {where}")
    if markdown_total > MARKDOWN_TOTAL_MAX:
        errors.append(f"markdown blocks exceed {MARKDOWN_TOTAL_MAX} characters in total")
    return errors


def view_errors(view: Any) -> list[str]:
    """Problems with a modal ``view`` given to ``views.open``."""
    if not isinstance(view, dict):
        return ["view must be an object"]
    errors: list[str] = []
    if view.get("type") != "modal":
        errors.append("view type must be modal")
    errors += _text_errors(view.get("title"), MODAL_TITLE_MAX, "/title", plain=True)
    for key in ("submit", "close"):
        if key in view:
            errors += _text_errors(view[key], MODAL_TITLE_MAX, f"/{key}", plain=True)
    if len(str(view.get("callback_id", ""))) > CALLBACK_ID_MAX:
        errors.append("callback_id too long")
    if len(str(view.get("private_metadata", ""))) > PRIVATE_METADATA_MAX:
        errors.append("private_metadata too long")
    blocks = view.get("blocks")
    if not isinstance(blocks, list) or not 1 <= len(blocks) <= MODAL_BLOCKS_MAX:
        return [*errors, f"a modal needs 1 to {MODAL_BLOCKS_MAX} blocks"]
    block_ids: set[str] = set()
    for index, block in enumerate(blocks):
        where = f"[json-pointer:/view/blocks/{index}]"
        if not isinstance(block, dict):
            errors.append(f"block must be an object {where}")
            continue
        errors += _block_id_errors(block, block_ids, where)
        if block.get("type") == "input":
            errors += _input_errors(block, where)
        elif block.get("type") == "section":
            errors += _text_errors(block.get("text"), SECTION_TEXT_MAX, where + "/text")
    return errors


def _block_id_errors(block: dict[str, Any], seen: set[str], where: str) -> list[str]:
    block_id = block.get("block_id")
    if block_id is None:
        return []
    if not isinstance(block_id, str) or not 1 <= len(block_id) <= BLOCK_ID_MAX:
        return [f"invalid block_id {where}"]
    if block_id in seen:
        return [f"duplicate block_id {block_id!r} {where}"]
    seen.add(block_id)
    return []


def _text_errors(text: Any, limit: int, where: str, *, plain: bool = False) -> list[str]:
    if not isinstance(text, dict):
        return [f"missing text object {where}"]
    allowed = {"plain_text"} if plain else {"plain_text", "mrkdwn"}
    if text.get("type") not in allowed:
        return [f"text type must be one of {sorted(allowed)} {where}"]
    value = text.get("text")
    if not isinstance(value, str) or not 1 <= len(value) <= limit:
        return [f"text must be 1 to {limit} characters {where}"]
    return []


def _actions_errors(elements: Any, action_ids: set[str], where: str) -> list[str]:
    if not isinstance(elements, list) or not 1 <= len(elements) <= ACTIONS_ELEMENTS_MAX:
        return [f"actions need 1 to {ACTIONS_ELEMENTS_MAX} elements {where}"]
    errors: list[str] = []
    for index, element in enumerate(elements):
        at = f"{where}/elements/{index}"
        if isinstance(element, dict) and element.get("type") == "overflow":
            errors += _overflow_errors(element, action_ids, at)
            continue
        if not isinstance(element, dict) or element.get("type") != "button":
            errors.append(f"only buttons and overflow menus are modelled {at}")
            continue
        errors += _text_errors(element.get("text"), BUTTON_TEXT_MAX, at + "/text", plain=True)
        errors += _action_id_errors(element, action_ids, at)
        if len(str(element.get("value", ""))) > BUTTON_VALUE_MAX:
            errors.append(f"value longer than {BUTTON_VALUE_MAX} {at}")
        if element.get("style") not in (None, "primary", "danger"):
            errors.append(f"style must be primary or danger {at}")
    return errors


def _action_id_errors(element: dict[str, Any], action_ids: set[str], where: str) -> list[str]:
    action_id = element.get("action_id")
    if not isinstance(action_id, str) or not 1 <= len(action_id) <= ACTION_ID_MAX:
        return [f"action_id must be 1 to {ACTION_ID_MAX} characters {where}"]
    if action_id in action_ids:
        return [f"duplicate action_id {action_id!r} {where}"]
    action_ids.add(action_id)
    return []


def _overflow_errors(element: dict[str, Any], action_ids: set[str], where: str) -> list[str]:
    errors = _action_id_errors(element, action_ids, where)
    options = element.get("options")
    if not isinstance(options, list) or not 1 <= len(options) <= OVERFLOW_OPTIONS_MAX:
        return [*errors, f"an overflow needs 1 to {OVERFLOW_OPTIONS_MAX} options {where}"]
    for option in options:
        errors += _text_errors(option.get("text"), OPTION_TEXT_MAX, where + "/option", plain=True)
        if not 1 <= len(str(option.get("value", ""))) <= OPTION_VALUE_MAX:
            errors.append(f"option value must be 1 to {OPTION_VALUE_MAX} characters {where}")
    return errors


def _context_actions_errors(elements: Any, action_ids: set[str], where: str) -> list[str]:
    """A ``context_actions`` block: 1 to 5 ``feedback_buttons`` or ``icon_button`` elements
    (docs.slack.dev, "Context actions block"); a feedback pair has a positive and a negative
    button, each with a plain text and a value."""
    if not isinstance(elements, list) or not 1 <= len(elements) <= CONTEXT_ACTIONS_ELEMENTS_MAX:
        return [f"context_actions need 1 to {CONTEXT_ACTIONS_ELEMENTS_MAX} elements {where}"]
    errors: list[str] = []
    for index, element in enumerate(elements):
        at = f"{where}/elements/{index}"
        kind = element.get("type") if isinstance(element, dict) else None
        if kind not in ("feedback_buttons", "icon_button"):
            errors.append(f"context_actions take feedback_buttons or icon_button {at}")
            continue
        errors += _action_id_errors(element, action_ids, at)
        if kind == "icon_button":
            if element.get("icon") not in ICONS:
                errors.append(f"unknown icon {at}")
            errors += _text_errors(element.get("text"), BUTTON_TEXT_MAX, at + "/text", plain=True)
            continue
        for half in ("positive_button", "negative_button"):
            button = element.get(half)
            if not isinstance(button, dict):
                errors.append(f"feedback_buttons need a {half} {at}")
                continue
            errors += _text_errors(button.get("text"), BUTTON_TEXT_MAX, f"{at}/{half}", plain=True)
            if not 1 <= len(str(button.get("value", ""))) <= BUTTON_VALUE_MAX:
                errors.append(f"{half} value must be 1 to {BUTTON_VALUE_MAX} characters {at}")
    return errors


def _select_errors(element: dict[str, Any], where: str) -> list[str]:
    options = element.get("options")
    if not isinstance(options, list) or not 1 <= len(options) <= SELECT_OPTIONS_MAX:
        return [f"a static_select needs 1 to {SELECT_OPTIONS_MAX} options {where}/element"]
    errors: list[str] = []
    for option in options:
        errors += _text_errors(option.get("text"), OPTION_TEXT_MAX, where + "/option", plain=True)
        if not 1 <= len(str(option.get("value", ""))) <= OPTION_VALUE_MAX:
            errors.append(f"option value must be 1 to {OPTION_VALUE_MAX} characters {where}")
    if "initial_option" in element and element["initial_option"] not in options:
        errors.append(f"initial_option must be one of the options {where}/element")
    return errors


def _input_errors(block: dict[str, Any], where: str) -> list[str]:
    errors = _text_errors(block.get("label"), INPUT_LABEL_MAX, where + "/label", plain=True)
    element = block.get("element")
    if isinstance(element, dict) and element.get("type") == "static_select":
        return errors + _select_errors(element, where)
    if not isinstance(element, dict) or element.get("type") != "plain_text_input":
        return [*errors, f"only plain_text_input and static_select are modelled {where}/element"]
    action_id = element.get("action_id")
    if not isinstance(action_id, str) or not 1 <= len(action_id) <= ACTION_ID_MAX:
        errors.append(f"action_id must be 1 to {ACTION_ID_MAX} characters {where}/element")
    max_length = element.get("max_length", INPUT_MAX_LENGTH)
    if not isinstance(max_length, int) or not 1 <= max_length <= INPUT_MAX_LENGTH:
        errors.append(f"max_length must be 1 to {INPUT_MAX_LENGTH} {where}/element")
        max_length = INPUT_MAX_LENGTH
    if len(str(element.get("initial_value", ""))) > max_length:
        errors.append(f"initial_value longer than max_length {where}/element")
    if "placeholder" in element:
        errors += _text_errors(
            element["placeholder"], PLACEHOLDER_MAX, where + "/element/placeholder", plain=True
        )
    return errors
