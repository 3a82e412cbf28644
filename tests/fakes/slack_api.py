"""The Web API methods of the fake Slack, mixed into :class:`tests.fakes.slack.FakeSlack`.

Each method takes the call's arguments (query, form and JSON merged) and returns the answer's
fields, or raises :class:`SlackError` with Slack's error code.
"""

from __future__ import annotations

import math
from collections import deque
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from tests.fakes.slack_blocks import message_block_errors, view_errors
from tests.fakes.slack_model import (
    Ephemeral,
    FakeFile,
    FakeMessage,
    FakeTeam,
    FakeView,
    SlackError,
    new_id,
    new_ts,
)
from tests.fakes.slack_streaming import BLOCKS_TEXT_MAX, blocks_text_length

Args = dict[str, Any]

TEXT_MAX = 40000
TRIGGER_TTL_SECONDS = 3.0
CURSOR_PREFIX = "offset:"


class SlackWebApi:
    """``auth.test``, ``chat.*``, ``views.open``, ``conversations.*``, ``users.info``,
    ``usergroups.list``."""

    port: int
    users: dict[str, str]
    locales: dict[str, str]
    usergroups: dict[str, tuple[str, list[str]]]
    files: dict[str, FakeFile]
    views: list[FakeView]
    channels: dict[str, list[FakeMessage]]
    channels_without_bot: set[str]
    group_dms: dict[str, str]
    ephemerals: list[Ephemeral]
    updates_per_minute: int
    update_window_seconds: float
    min_seconds_between_updates: float
    update_tolerance_seconds: float
    clock: Callable[[], float]
    _tickets: set[str]
    _triggers: dict[str, float]
    _update_times: dict[str, deque[float]]
    _last_update: dict[tuple[str, str], float]

    if TYPE_CHECKING:

        @property
        def bot_user_id(self) -> str: ...

        @property
        def bot_id(self) -> str: ...

        @property
        def team_id(self) -> str: ...

        @property
        def team(self) -> FakeTeam: ...

        @property
        def base_url(self) -> str: ...

        def message(self, channel: str, ts: str) -> FakeMessage | None: ...

        def thread(self, channel: str, thread_ts: str) -> list[FakeMessage]: ...

        def image_errors(self, blocks: Any) -> list[str]: ...

        def _add_message(
            self,
            channel: str,
            user: str,
            text: str,
            blocks: list[dict[str, Any]] | None = None,
            thread_ts: str | None = None,
            files: list[FakeFile] | None = None,
        ) -> FakeMessage: ...

    def web_api_methods(self) -> dict[str, Callable[[Args], Args]]:
        """Method name → implementation."""
        return {
            "auth.test": self._auth_test,
            "apps.connections.open": self._connections_open,
            "chat.postMessage": self._post_message,
            "chat.update": self._update,
            "chat.postEphemeral": self._post_ephemeral,
            "chat.delete": self._delete,
            "chat.getPermalink": self._permalink,
            "views.open": self._views_open,
            "views.update": self._views_update,
            "conversations.replies": self._replies,
            "conversations.history": self._history,
            "conversations.info": self._conversation_info,
            "conversations.open": self._conversations_open,
            "users.info": self._user_info,
            "usergroups.list": self._usergroups_list,
        }

    def _bot_message(self, args: Args) -> FakeMessage:
        channel, ts = str(args.get("channel", "")), str(args.get("ts", ""))
        message = self.message(channel, ts)
        if message is None:
            raise SlackError("message_not_found")
        if message.user != self.bot_user_id:
            raise SlackError("cant_update_message")
        return message

    def _check_content(self, text: str, blocks: Any) -> None:
        if len(text) > TEXT_MAX:
            raise SlackError("msg_too_long")
        errors = message_block_errors(blocks) + self.image_errors(blocks)
        if errors:
            raise SlackError("invalid_blocks", errors=errors)
        if blocks_text_length(blocks) > BLOCKS_TEXT_MAX:
            raise SlackError("msg_blocks_too_long")

    def _spend_update(self, channel: str, ts: str) -> None:
        now = self.clock()
        window = self._update_times.setdefault(self.team_id, deque())
        while window and now - window[0] >= self.update_window_seconds:
            window.popleft()
        last = self._last_update.get((channel, ts))
        too_soon = self.min_seconds_between_updates - self.update_tolerance_seconds
        if last is not None and now - last < too_soon:
            _rate_limit(self.min_seconds_between_updates - (now - last))
        if len(window) >= self.updates_per_minute:
            _rate_limit(self.update_window_seconds - (now - window[0]))
        window.append(now)
        self._last_update[(channel, ts)] = now

    # Web API methods ----------------------------------------------------------------------

    def _auth_test(self, args: Args) -> Args:
        return {
            "url": f"{self.base_url}/",
            "team": self.team.name,
            "user": self.users[self.bot_user_id],
            "team_id": self.team_id,
            "user_id": self.bot_user_id,
            "bot_id": self.bot_id,
            "is_enterprise_install": False,
        }

    def _connections_open(self, args: Args) -> Args:
        ticket = new_id("ticket-")
        self._tickets.add(ticket)
        return {"url": f"ws://127.0.0.1:{self.port}/socket-mode?ticket={ticket}"}

    def _post_message(self, args: Args) -> Args:
        channel = str(args.get("channel") or "")
        if not channel:
            raise SlackError("channel_not_found")
        if channel in self.channels_without_bot:
            raise SlackError("not_in_channel")
        text, blocks = str(args.get("text") or ""), args.get("blocks") or []
        if not text and not blocks:
            raise SlackError("no_text")
        self._check_content(text, blocks)
        metadata = _metadata(args.get("metadata"))
        message = self._add_message(
            channel, self.bot_user_id, text, blocks, args.get("thread_ts") or None
        )
        message.metadata = metadata
        return {"channel": channel, "ts": message.ts, "message": message.payload()}

    def _update(self, args: Args) -> Args:
        message = self._bot_message(args)
        text = str(args.get("text") or "")
        blocks = args.get("blocks", message.blocks)
        if not text and not blocks:
            raise SlackError("no_text")
        self._check_content(text, blocks)
        self._spend_update(message.channel, message.ts)
        message.history.append(message.shown)
        message.text, message.blocks = text, blocks
        message.timeline.append((self.clock(), message.shown))
        return {"channel": message.channel, "ts": message.ts, "text": text}

    def _post_ephemeral(self, args: Args) -> Args:
        channel, user = str(args.get("channel") or ""), str(args.get("user") or "")
        if channel in self.channels_without_bot:
            raise SlackError("not_in_channel")
        if user not in self.users:
            raise SlackError("user_not_found")
        text, blocks = str(args.get("text") or ""), args.get("blocks") or []
        if not text and not blocks:
            raise SlackError("no_text")
        self._check_content(text, blocks)
        ts = new_ts()
        self.ephemerals.append(
            Ephemeral(channel, user, text, "chat.postEphemeral", args.get("thread_ts"), blocks, ts)
        )
        return {"message_ts": ts}

    def _delete(self, args: Args) -> Args:
        message = self._bot_message(args)
        self.channels[message.channel].remove(message)
        return {"channel": message.channel, "ts": message.ts}

    def _permalink(self, args: Args) -> Args:
        channel, ts = str(args.get("channel")), str(args.get("message_ts"))
        if self.message(channel, ts) is None:
            raise SlackError("message_not_found")
        return {"channel": channel, "permalink": f"https://fake.slack.com/archives/{channel}/p{ts}"}

    def _views_open(self, args: Args) -> Args:
        trigger_id = str(args.get("trigger_id") or "")
        issued = self._triggers.pop(trigger_id, None)
        if issued is None:
            raise SlackError("invalid_trigger_id")
        if self.clock() - issued > TRIGGER_TTL_SECONDS:
            raise SlackError("expired_trigger_id")
        errors = view_errors(args.get("view"))
        errors += self.image_errors((args.get("view") or {}).get("blocks"))
        if errors:
            raise SlackError("invalid_arguments", errors=errors)
        view = FakeView(new_id("V"), trigger_id, dict(args["view"]))
        self.views.append(view)
        return {"view": view.payload()}

    def _views_update(self, args: Args) -> Args:
        """Replace an open modal (by ``view_id``); a ``hash`` that is not the view's current one
        is refused, as is a view the user closed or submitted."""
        view = next((v for v in self.views if v.id == args.get("view_id")), None)
        if view is None or view.closed:
            raise SlackError("not_found")
        if args.get("hash") not in (None, view.hash):
            raise SlackError("hash_conflict")
        errors = view_errors(args.get("view"))
        errors += self.image_errors((args.get("view") or {}).get("blocks"))
        if errors:
            raise SlackError("invalid_arguments", errors=errors)
        view.updates.append(view.view)
        view.view = dict(args["view"])
        return {"view": view.payload()}

    def _conversations_open(self, args: Args) -> Args:
        """The app's direct-message channel with one user (``users``): the same id each time
        (a group of users is not modelled)."""
        users = [u for u in str(args.get("users") or "").split(",") if u]
        if not users:
            raise SlackError("users_list_not_supplied")
        if len(users) > 1:
            raise SlackError("not_implemented_in_fake")
        return {"channel": {"id": "D" + users[0].removeprefix("U").removeprefix("W")}}

    def _replies(self, args: Args) -> Args:
        """The thread oldest first, ``limit`` at a time, continued with ``cursor``."""
        messages = self.thread(str(args.get("channel")), str(args.get("ts")))
        if not messages:
            raise SlackError("thread_not_found")
        messages = [m for m in messages if _within(m, args)]
        cursor = str(args.get("cursor") or "")
        if cursor and not cursor.startswith(CURSOR_PREFIX):
            raise SlackError("invalid_cursor")
        start = int(cursor.removeprefix(CURSOR_PREFIX) or 0)
        end = start + int(args.get("limit") or 1000)
        with_metadata = _flag(args.get("include_all_metadata"))
        page: Args = {
            "messages": [m.payload(include_metadata=with_metadata) for m in messages[start:end]],
            "has_more": end < len(messages),
        }
        if end < len(messages):
            page["response_metadata"] = {"next_cursor": f"{CURSOR_PREFIX}{end}"}
        return page

    def _history(self, args: Args) -> Args:
        channel = str(args.get("channel") or "")
        if channel in self.channels_without_bot:
            raise SlackError("not_in_channel")
        limit = int(args.get("limit") or 100)
        top_level = [
            m
            for m in self.channels.get(channel, [])
            if (m.thread_ts is None or m.thread_ts == m.ts) and _within(m, args)
        ]
        newest_first = sorted(top_level, key=lambda m: float(m.ts), reverse=True)[:limit]
        with_metadata = _flag(args.get("include_all_metadata"))
        return {
            "messages": [m.payload(include_metadata=with_metadata) for m in newest_first],
            "has_more": False,
        }

    def _conversation_info(self, args: Args) -> Args:
        channel = str(args.get("channel") or "")
        group_dm = channel in self.group_dms
        return {
            "channel": {
                "id": channel,
                "name": self.group_dms.get(channel) or channel.lower(),
                "is_channel": channel.startswith("C") and not group_dm,
                "is_group": channel.startswith("G") and not group_dm,
                "is_im": channel.startswith("D"),
                "is_mpim": group_dm,
                "is_private": group_dm or not channel.startswith("C"),
                "is_member": channel not in self.channels_without_bot,
            }
        }

    def _user_info(self, args: Args) -> Args:
        user = str(args.get("user") or "")
        if user not in self.users:
            raise SlackError("user_not_found")
        name = self.users[user]
        profile = {"display_name": name, "real_name": name.title()}
        person: Args = {
            "id": user,
            "team_id": self.team_id,
            "name": name,
            "real_name": name.title(),
            "is_bot": user == self.bot_user_id,
            "profile": profile,
        }
        if _flag(args.get("include_locale")):
            person["locale"] = self.locales.get(user, "en-US")
        return {"user": person}

    def _usergroups_list(self, args: Args) -> Args:
        """The workspace's user groups; their members only with ``include_users`` (as Slack)."""
        groups = []
        for group_id, (handle, members) in self.usergroups.items():
            group: Args = {
                "id": group_id,
                "team_id": self.team_id,
                "is_usergroup": True,
                "name": handle.title(),
                "description": "",
                "handle": handle,
                "is_external": False,
                "date_create": 1_700_000_000,
                "date_update": 1_700_000_000,
                "date_delete": 0,
                "auto_type": None,
                "prefs": {"channels": [], "groups": []},
                "user_count": len(members),
            }
            if _flag(args.get("include_users")):
                group["users"] = list(members)
            groups.append(group)
        return {"usergroups": groups}


def _within(message: FakeMessage, args: Args) -> bool:
    """Whether ``message`` lies between ``oldest`` and ``latest`` (both excluded unless
    ``inclusive``), as conversations.history and conversations.replies filter."""
    ts, inclusive = float(message.ts), _flag(args.get("inclusive"))
    oldest, latest = args.get("oldest"), args.get("latest")
    if oldest not in (None, "") and (ts < float(oldest) or (ts == float(oldest) and not inclusive)):
        return False
    return latest in (None, "") or ts < float(latest) or (ts == float(latest) and inclusive)


def _flag(value: Any) -> bool:
    """A boolean argument: JSON ``true`` or the form's ``1`` / ``true``."""
    return value is True or str(value).lower() in ("1", "true")


def _metadata(value: Any) -> dict[str, Any] | None:
    """Message metadata as ``chat.postMessage`` accepts it: an event type and a payload."""
    if value is None or value == "":
        return None
    if not isinstance(value, dict):
        raise SlackError("invalid_metadata_format")
    if not isinstance(value.get("event_type"), str) or not value["event_type"]:
        raise SlackError("invalid_metadata_schema")
    if not isinstance(value.get("event_payload"), dict):
        raise SlackError("invalid_metadata_schema")
    return {"event_type": value["event_type"], "event_payload": value["event_payload"]}


def _rate_limit(wait: float) -> None:
    retry_after = max(1, math.ceil(wait))
    raise SlackError("ratelimited", status=429, headers={"Retry-After": str(retry_after)})
