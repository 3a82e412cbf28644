"""Slack payloads as genbot events: places, users, text, files, commands, presses, submissions.

Pure translation: nothing here calls Slack. Slash commands carry text only, so a command becomes
``Command(name, text=...)`` for the core to parse Midjourney style; ``/diffusion`` and ``/genbot``
take their subcommand from the first word.
"""

from __future__ import annotations

import html
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from bot.kernel import (
    Attachment,
    ButtonPress,
    CommandError,
    HomeOpened,
    ModalSubmit,
    Place,
    User,
    _,
    decode_custom_id,
    resolve_command,
)

from .formatting import decode_place

PLATFORM = "slack"

GENBOT_SLASH = "/genbot"
GENBOT_SUBCOMMANDS: tuple[str, ...] = (
    "settings",
    "usage",
    "jobs",
    "show",
    "forget-me",
    "prefer",
    "help",
    "admin",
)
"""genbot's own commands, which Slack reaches as ``/genbot <subcommand>``."""
SLASH_COMMANDS: tuple[str, ...] = (
    "/chat",
    "/imagine",
    "/describe",
    "/blend",
    "/diffusion",
    GENBOT_SLASH,
)
"""The slash commands the Slack app declares (its manifest)."""

_USER_TOKEN = re.compile(r"<@([UW][A-Z0-9]+)(?:\|([^>]*))?>")
_CHANNEL_TOKEN = re.compile(r"<#([CGD][A-Z0-9]+)(?:\|([^>]*))?>")
_SPECIAL_TOKEN = re.compile(r"<!(everyone|here|channel)(?:\|[^>]*)?>")
_SUBTEAM_TOKEN = re.compile(r"<!subteam\^([A-Z0-9]+)(?:\|([^>]*))?>")
_LINK_TOKEN = re.compile(r"<((?:https?|mailto):[^|>]+)(?:\|([^>]*))?>")


@dataclass(frozen=True)
class SlackOrigin:
    """What an event keeps for answering it: the modal ``trigger_id`` (valid for 3 seconds),
    the command's or action's ``response_url``, and where bolt's ``say_stream`` would stream
    the answer (``thread_ts``: the event's thread, else the event itself) to whom
    (``recipient_team_id``)."""

    trigger_id: str | None = None
    response_url: str | None = None
    is_command: bool = False
    thread_ts: str | None = None
    recipient_team_id: str | None = None


PRIVATE_CHANNEL_TYPES = frozenset({"im", "mpim"})
"""Slack's ``channel_type`` of the conversations that are private places (``Place.is_dm``):
a DM with genbot (``im``) and a group DM (``mpim``), as a DM and a group DM are on Discord."""
GROUP_DM_PREFIX = "mpdm-"


def is_im(channel_id: str, channel_type: str | None = None) -> bool:
    """Whether the conversation is a user's own DM with genbot (``im``, ids ``D…``): where
    Slack's agent messaging experience is, and every message is addressed to genbot."""
    return channel_type == "im" or channel_id.startswith("D")


def channel_type_named(channel_id: str, channel_name: str | None) -> str | None:
    """The ``channel_type`` a slash command's ``channel_name`` or a press's ``channel.name``
    tells: ``directmessage`` is a DM, ``mpdm-…`` a group DM; ``None`` when it does not."""
    name = channel_name or ""
    if is_im(channel_id) or name == "directmessage":
        return "im"
    if name.startswith(GROUP_DM_PREFIX):
        return "mpim"
    return None


def place_for(
    workspace_id: str,
    channel_id: str,
    thread_ts: str | None = None,
    channel_type: str | None = None,
) -> Place:
    """A Slack conversation as a :class:`Place`: DMs (``im``, ``D…``) and group DMs (``mpim``)
    are private (``is_dm``)."""
    is_dm = channel_type in PRIVATE_CHANNEL_TYPES or is_im(channel_id)
    return Place(PLATFORM, workspace_id, channel_id, thread_ts or None, is_dm)


def message_place(workspace_id: str, event: dict[str, Any]) -> Place:
    """Where a person's message ``event`` is, as genbot answers it: its thread (a thread's
    parent, which Slack gives its own ``ts`` as ``thread_ts``, is in the channel), and in a DM
    always a thread — Slack's agent messaging answers each top-level DM message in its own;
    in a group DM too, as a mention in a channel is — so what genbot posts about it (notes,
    the answer, a job it starts) goes there."""
    ts, thread_ts = event.get("ts"), event.get("thread_ts")
    place = place_for(
        workspace_id,
        str(event.get("channel")),
        str(thread_ts) if thread_ts and thread_ts != ts else None,
        event.get("channel_type"),
    )
    if place.is_dm and place.thread_id is None and ts:
        return place.in_thread(str(ts))
    return place


def user_for(
    user_id: str, name: str, admin_ids: frozenset[str], roles: frozenset[str] = frozenset()
) -> User:
    """The core's user; ``roles``: the user groups they are in (when tiers map them)."""
    return User(id=user_id, name=name, is_admin=user_id in admin_ids, roles=roles)


def plain_text(text: str, bot_user_id: str | None) -> str:
    """Slack's message text as plain text: the bot's own mention removed, other mentions and
    links written out, HTML entities decoded."""
    if bot_user_id:
        text = re.sub(rf"<@{re.escape(bot_user_id)}(?:\|[^>]*)?>", "", text)
    text = _USER_TOKEN.sub(lambda m: "@" + (m.group(2) or m.group(1)), text)
    text = _CHANNEL_TOKEN.sub(lambda m: "#" + (m.group(2) or m.group(1)), text)
    text = _SPECIAL_TOKEN.sub(lambda m: "@" + m.group(1), text)
    text = _SUBTEAM_TOKEN.sub(lambda m: "@" + (m.group(2) or m.group(1)).lstrip("@"), text)
    text = _LINK_TOKEN.sub(lambda m: m.group(1), text)
    return re.sub(r"[ \t]{2,}", " ", html.unescape(text)).strip()


def mentions(text: str, user_id: str) -> bool:
    return re.search(rf"<@{re.escape(user_id)}(?:\|[^>]*)?>", text) is not None


def attachments_from_files(files: Any) -> tuple[Attachment, ...]:
    """Slack file objects (``event["files"]``) as attachments. Their URLs open only with the
    bot token (``private``): the core reads them through ``SlackSurface.download``."""
    found = []
    for file in files if isinstance(files, list) else []:
        url = (
            file.get("url_private_download") or file.get("url_private")
            if isinstance(file, dict)
            else None
        )
        if not url:
            continue
        found.append(
            Attachment(
                filename=str(file.get("name") or file.get("id") or "file"),
                url=str(url),
                content_type=file.get("mimetype"),
                size=file.get("size"),
                private=True,
            )
        )
    return tuple(found)


@dataclass(frozen=True)
class SlashRoute:
    """A slash command resolved: the core's command name and the text after the subcommand."""

    name: str
    text: str


def route_command(slash: str, text: str) -> SlashRoute | str:
    """The core's command for Slack's ``slash`` and ``text`` (named by
    :func:`bot.kernel.command_text.resolve_command`: ``/diffusion txt2img a fox`` →
    ``diffusion.txt2img`` + ``a fox``); ``/genbot`` names :data:`GENBOT_SUBCOMMANDS` (alone: help).
    A string is an error message for the user."""
    text = text.strip()
    if slash == GENBOT_SLASH:
        first, _space, rest = text.partition(" ")
        sub = first.lower() or "help"
        if sub not in GENBOT_SUBCOMMANDS:
            return _(
                "`{given}` is not one of `/genbot {commands}`.",
                given=first,
                commands=" | ".join(GENBOT_SUBCOMMANDS),
            )
        text = f"{sub} {rest}"
    elif slash not in SLASH_COMMANDS:
        return _("genbot does not know the command `{command}`.", command=slash)
    else:
        text = f"{slash} {text}"
    try:
        spec, rest = resolve_command(text)
    except CommandError as error:
        return str(error)
    return SlashRoute(spec.name, rest)


def _pressed_id(action: Mapping[str, Any]) -> str:
    """The custom id an action names: a button's action id, the value of the option chosen
    in a message's overflow menu, or of the half of Slack's ``feedback_buttons`` pressed."""
    chosen = action.get("selected_option")
    if action.get("type") == "overflow" and isinstance(chosen, dict):
        return str(chosen.get("value", ""))
    if action.get("type") == "feedback_buttons":
        return str(action.get("value", ""))
    return str(action.get("action_id", ""))


def press_from_action(body: Mapping[str, Any], admin_ids: frozenset[str]) -> ButtonPress | None:
    """A ``block_actions`` payload as a press of one of genbot's buttons. A press on a thread's
    parent (Slack gives it ``thread_ts`` equal to its own ``ts``) happened in the channel; a
    press on the App Home tab happened in the user's conversation with genbot (kept in the
    view's ``private_metadata``), on no message. A press of Slack's ``feedback_buttons`` says
    which half was pressed in its ``value`` (the 👍's or the 👎's custom id). A press in a group
    DM (its ``channel.name`` is ``mpdm-…``) is in a private place, as in a DM."""
    actions = body.get("actions") or []
    decoded = decode_custom_id(_pressed_id(actions[0])) if actions else None
    container = body.get("container") or {}
    view = body.get("view") or {}
    if decoded is not None and container.get("type") == "view" and view.get("type") == "home":
        team = str((body.get("team") or {}).get("id") or view.get("team_id") or "")
        place = decode_place(str(view.get("private_metadata") or ""), team)
        if place is None:
            return None
        return ButtonPress(
            user=_actor(body, admin_ids),
            place=place,
            context=SlackOrigin(body.get("trigger_id")),
            message_id="",
            action=decoded[0],
            ref=decoded[1],
        )
    channel_id = container.get("channel_id") or (body.get("channel") or {}).get("id")
    message_ts = container.get("message_ts")
    if decoded is None or not channel_id or not message_ts:
        return None
    message = body.get("message") or {}
    thread_ts = message.get("thread_ts") or container.get("thread_ts")
    if thread_ts == message_ts:
        thread_ts = None
    user = body.get("user") or {}
    named = channel_type_named(str(channel_id), (body.get("channel") or {}).get("name"))
    return ButtonPress(
        user=user_for(
            str(user.get("id")), str(user.get("username") or user.get("name") or ""), admin_ids
        ),
        place=place_for(
            str((body.get("team") or {}).get("id") or ""), str(channel_id), thread_ts, named
        ),
        context=SlackOrigin(body.get("trigger_id"), body.get("response_url")),
        message_id=str(message_ts),
        action=decoded[0],
        ref=decoded[1],
    )


def home_opened(team_id: str, event: Mapping[str, Any], user: User) -> HomeOpened | None:
    """``app_home_opened`` on the Home tab as :class:`HomeOpened` (its ``channel`` is the
    user's conversation with genbot); ``None`` for the Messages tab."""
    channel = str(event.get("channel") or "")
    if event.get("tab") != "home" or not channel:
        return None
    return HomeOpened(user=user, place=place_for(team_id, channel, None, "im"))


def _actor(body: Mapping[str, Any], admin_ids: frozenset[str]) -> User:
    user = body.get("user") or {}
    return user_for(
        str(user.get("id")), str(user.get("username") or user.get("name") or ""), admin_ids
    )


def submit_from_view(body: Mapping[str, Any], admin_ids: frozenset[str]) -> ModalSubmit | None:
    """A ``view_submission`` of a genbot modal; values keyed by input block id (= field id)."""
    view = body.get("view") or {}
    decoded = decode_custom_id(str(view.get("callback_id", "")))
    workspace = str((body.get("team") or {}).get("id") or view.get("team_id") or "")
    place = decode_place(str(view.get("private_metadata") or ""), workspace)
    if decoded is None or place is None:
        return None
    values: dict[str, str] = {}
    for block_id, inputs in ((view.get("state") or {}).get("values") or {}).items():
        for state in (inputs or {}).values():
            value = state.get("value") if isinstance(state, dict) else None
            chosen = state.get("selected_option") if isinstance(state, dict) else None
            if isinstance(chosen, dict):
                value = chosen.get("value")
            values[str(block_id)] = "" if value is None else str(value)
    user = body.get("user") or {}
    return ModalSubmit(
        user=user_for(
            str(user.get("id")), str(user.get("username") or user.get("name") or ""), admin_ids
        ),
        place=place,
        context=SlackOrigin(body.get("trigger_id")),
        action=decoded[0],
        ref=decoded[1],
        values=values,
    )
