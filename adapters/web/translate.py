"""Turning what the browser sends into core events' parts, and the command catalogue into JSON.

The playground's input takes the same slash commands as Discord, typed as text
(``/imagine a fox --ar 16:9``). The core names the command
(:func:`bot.kernel.command_text.resolve_command`) and parses the rest Midjourney style.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Any, TypeVar

from adapters.web.platform import can_see
from bot.kernel import (
    COMMANDS,
    EVERY_CHAT_MODEL,
    CommandError,
    CommandSpec,
    Modal,
    Offered,
    _,
    assign_images,
    file_options,
    option_choices,
    resolve_command,
    usage_name,
)

T = TypeVar("T")
CHANNEL_PATTERN = re.compile(r"^[a-z0-9][a-z0-9_-]{0,31}$")
DEFAULT_CHANNEL = "general"


class BadInput(ValueError):
    """What the browser sent cannot be acted on; the message is shown to the user as is."""


def parse_slash(text: str) -> tuple[CommandSpec, str]:
    """The command named by ``/name [subcommand] rest`` and the rest of the text (routed by
    :func:`bot.kernel.command_text.resolve_command`). Raises :class:`BadInput` for text that is not
    a command, or an empty, unknown or incomplete one."""
    stripped = text.strip()
    if not stripped.startswith("/"):
        raise BadInput(_("A command starts with '/', for example /imagine a fox."))
    try:
        return resolve_command(stripped)
    except CommandError as error:
        raise BadInput(str(error)) from None


def assign_attachments(spec: CommandSpec, uploads: Sequence[T]) -> dict[str, T]:
    """Uploads in order onto the command's image options
    (:func:`bot.kernel.command_images.assign_images`); :class:`BadInput` when there are more than
    the command takes."""
    try:
        return assign_images(spec, uploads)
    except CommandError as error:
        raise BadInput(str(error)) from None


def parse_channel(value: object, user_id: str | None = None) -> str:
    """A valid channel name from the request (``general`` when absent); with ``user_id``,
    someone else's direct messages are refused."""
    if value is None or value == "":
        return DEFAULT_CHANNEL
    if not isinstance(value, str) or not CHANNEL_PATTERN.match(value):
        raise BadInput(
            _("Invalid channel name: use 1 to 32 lowercase letters, digits, '-' or '_'.")
        )
    if user_id is not None and not can_see(value, user_id):
        raise BadInput(_("Those are someone else's direct messages."))
    return value


def catalogue(
    offered: Mapping[Offered, Sequence[str]] = EVERY_CHAT_MODEL,
) -> list[dict[str, Any]]:
    """Every command with its description, options and examples, for the command palette
    (``offered``: the values to offer for autocompleted options, see
    :func:`bot.kernel.commands.offered`)."""
    return [
        {
            "name": spec.name,
            "usage": usage_name(spec),
            "description": _(spec.description),
            "free_text": spec.free_text,
            "expands": spec.expands,
            "examples": [_(example) for example in spec.examples],
            "uploads": [f"#{n}" for n in range(1, spec.numbered_uploads + 1)]
            or list(file_options(spec)),
            "options": [
                {
                    "name": option.name,
                    "type": option.type,
                    "description": _(option.description),
                    "required": option.required,
                    "choices": list(option_choices(option, offered)),
                    "min_value": option.min_value,
                    "max_value": option.max_value,
                    "flags": list(option.flags),
                    "flag_values": [flag for flag, _value in option.flag_values],
                }
                for option in spec.options
            ],
        }
        for spec in COMMANDS
    ]


def modal_json(modal: Modal) -> dict[str, Any]:
    """A form as the page's JSON."""
    return {
        "title": modal.title,
        "custom_id": modal.custom_id,
        "action": modal.action,
        "notice": modal.notice,
        "errors": dict(modal.errors),
        "fields": [
            {
                "id": f.id,
                "label": f.label,
                "placeholder": f.placeholder,
                "default": f.default,
                "required": f.required,
                "max_length": f.max_length,
                "multiline": f.multiline,
                "kind": f.kind,
                "choices": [{"label": c.label, "value": c.value} for c in f.choices],
                "image_url": f.image_url,
            }
            for f in modal.fields
        ],
    }
