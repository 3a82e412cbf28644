"""What the fake Slack sends an app: payload builders and signed / Socket Mode delivery.

Builders return the JSON Slack would send (events, slash commands, ``block_actions``,
``view_submission``); senders deliver it as a signed HTTP request to the app's
``/slack/events`` URL or as a Socket Mode envelope on the fake's websocket. A user's message is
first added to the fake's model (:meth:`SlackPayloads.user_says`) so that history and thread
lookups see it.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import time
import uuid
from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING, Any
from urllib.parse import urlencode

import aiohttp
from slack_sdk.signature import SignatureVerifier

from tests.fakes.slack_model import (
    Delivery,
    Ephemeral,
    FakeFile,
    FakeMessage,
    FakeView,
    new_id,
    new_ts,
)

if TYPE_CHECKING:
    from aiohttp import web

DELIVERY_TIMEOUT = 10.0


def channel_type_of(channel: str) -> str:
    """Slack's ``channel_type`` for a conversation id: ``im``, ``group`` or ``channel``."""
    return {"D": "im", "G": "group"}.get(channel[:1], "channel")


class SlackPayloads:
    """Payload builders and senders, mixed into :class:`tests.fakes.slack.FakeSlack`."""

    app_id: str
    signing_secret: str
    port: int
    files: dict[str, FakeFile]
    users: dict[str, str]
    _session: aiohttp.ClientSession | None
    _ws: web.WebSocketResponse | None
    _sockets: list[web.WebSocketResponse]
    group_dms: dict[str, str]

    if TYPE_CHECKING:

        @property
        def team_id(self) -> str: ...

        @property
        def bot_user_id(self) -> str: ...

        @property
        def base_url(self) -> str: ...

        def in_team(self, team_id: str) -> contextlib.AbstractContextManager[Any]: ...

        def stop_showing(self, channel: str, thread_ts: str | None) -> bool: ...

        def _add_message(
            self,
            channel: str,
            user: str,
            text: str,
            blocks: list[dict[str, Any]] | None = None,
            thread_ts: str | None = None,
            files: list[FakeFile] | None = None,
        ) -> FakeMessage: ...

        def _issue_trigger(self) -> str: ...

        def _issue_response_url(
            self, channel: str, user: str, pressed: Ephemeral | None = None
        ) -> str: ...

        async def _notify(self) -> None: ...

    # Users acting ---------------------------------------------------------------------------

    def user_says(
        self,
        text: str,
        *,
        user: str = "U1",
        channel: str = "C1",
        thread_ts: str | None = None,
        files: Iterable[tuple[str, bytes]] = (),
    ) -> FakeMessage:
        """Add a user's message (optionally sharing files) to the model and return it."""
        shared = []
        for name, data in files:
            file = FakeFile(
                new_id("F"), name, len(data), user, self.base_url, data=data, team=self.team_id
            )
            self.files[file.id] = file
            shared.append(file)
        message = self._add_message(channel, user, text, thread_ts=thread_ts, files=shared)
        for file in shared:
            file.channel, file.thread_ts, file.message_ts = channel, thread_ts, message.ts
        return message

    # Events API -----------------------------------------------------------------------------

    def _channel_type(self, channel: str) -> str:
        return "mpim" if channel in self.group_dms else channel_type_of(channel)

    def _channel_name(self, channel: str) -> str:
        """The conversation's name as commands and presses give it."""
        if channel.startswith("D"):
            return "directmessage"
        return self.group_dms.get(channel) or channel.lower()

    def message_event(
        self, message: FakeMessage, *, channel_type: str | None = None
    ) -> dict[str, Any]:
        """The ``message`` event for ``message`` (``file_share`` subtype when it has files)."""
        event = {
            **message.payload(),
            "channel": message.channel,
            "event_ts": message.ts,
            "channel_type": channel_type or self._channel_type(message.channel),
        }
        if message.files:
            event["subtype"] = "file_share"
        return event

    def app_mention_event(self, message: FakeMessage) -> dict[str, Any]:
        """The ``app_mention`` event for a message that mentions the bot."""
        event = {**message.payload(), "type": "app_mention", "channel": message.channel}
        event["event_ts"] = message.ts
        event.pop("blocks", None)
        return event

    def agent_session_stopped_event(
        self, stopped: FakeMessage, *, user: str = "U1"
    ) -> dict[str, Any]:
        """``agent_session_stopped``: ``user`` pressed Slack's stop button on the agent session
        of ``stopped``'s thread while it streamed (Slack shows that button only while the
        session is ``processing``); Slack stops the stream itself, not the session."""
        assert self.stop_showing(stopped.channel, stopped.thread_ts), (
            "Slack shows no stop button: the thread's agent session is not processing"
        )
        stopped.streaming = False
        event_ts = new_ts()
        return {
            "type": "agent_session_stopped",
            "user": user,
            "channel": stopped.channel,
            "thread_ts": stopped.thread_ts,
            "streaming_message_ts": [stopped.ts],
            "event_ts": event_ts,
        }

    def message_changed_event(self, message: FakeMessage, new_text: str) -> dict[str, Any]:
        """The ``message_changed`` event Slack sends when ``message`` is edited."""
        edited = {**message.payload(), "text": new_text, "edited": {"user": message.user}}
        event_ts = new_ts()
        return {
            "type": "message",
            "subtype": "message_changed",
            "hidden": True,
            "channel": message.channel,
            "channel_type": self._channel_type(message.channel),
            "ts": event_ts,
            "event_ts": event_ts,
            "message": edited,
            "previous_message": message.payload(),
        }

    def event_callback(
        self, event: dict[str, Any], *, event_id: str | None = None, team_id: str | None = None
    ) -> dict[str, Any]:
        """The Events API envelope around ``event`` (from ``team_id``, else the current
        workspace)."""
        if team_id is not None:
            with self.in_team(team_id):
                return self.event_callback(event, event_id=event_id)
        return {
            "token": "legacy-verification-token",
            "team_id": self.team_id,
            "api_app_id": self.app_id,
            "event": event,
            "type": "event_callback",
            "event_id": event_id or new_id("Ev"),
            "event_time": int(time.time()),
            "authorizations": [
                {
                    "enterprise_id": None,
                    "team_id": self.team_id,
                    "user_id": self.bot_user_id,
                    "is_bot": True,
                    "is_enterprise_install": False,
                }
            ],
            "is_ext_shared_channel": False,
            "event_context": "4-fake-context",
        }

    # Commands and interactivity ------------------------------------------------------------

    def slash_command(
        self, command: str, text: str = "", *, user: str = "U1", channel: str = "C1"
    ) -> dict[str, str]:
        """A slash command's form fields, with a fresh ``trigger_id`` and ``response_url``."""
        return {
            "token": "legacy-verification-token",
            "team_id": self.team_id,
            "team_domain": "fake",
            "channel_id": channel,
            "channel_name": self._channel_name(channel),
            "user_id": user,
            "user_name": self.users.get(user, user),
            "command": command,
            "text": text,
            "api_app_id": self.app_id,
            "is_enterprise_install": "false",
            "response_url": self._issue_response_url(channel, user),
            "trigger_id": self._issue_trigger(),
        }

    def block_actions(
        self, message: FakeMessage, action_id: str, *, user: str = "U1"
    ) -> dict[str, Any]:
        """A press on the button ``action_id`` of ``message``."""
        return self._message_action(message, _button_action(message.blocks, action_id), user)

    def _message_action(
        self, message: FakeMessage, action: dict[str, Any], user: str
    ) -> dict[str, Any]:
        container: dict[str, Any] = {
            "type": "message",
            "message_ts": message.ts,
            "channel_id": message.channel,
            "is_ephemeral": False,
        }
        if message.thread_ts:
            container["thread_ts"] = message.thread_ts
        return {
            "type": "block_actions",
            "user": self._user_payload(user),
            "api_app_id": self.app_id,
            "token": "legacy-verification-token",
            "container": container,
            "trigger_id": self._issue_trigger(),
            "team": {"id": self.team_id, "domain": "fake"},
            "enterprise": None,
            "is_enterprise_install": False,
            "channel": {"id": message.channel, "name": self._channel_name(message.channel)},
            "message": message.payload(),
            "state": {"values": {}},
            "response_url": self._issue_response_url(message.channel, user),
            "actions": [action],
        }

    def overflow_actions(
        self, message: FakeMessage, text: str, *, user: str = "U1"
    ) -> dict[str, Any]:
        """A choice of the option ``text`` in the overflow menu of ``message``."""
        block_id, overflow, option = next(
            (block.get("block_id", ""), element, option)
            for block in message.blocks
            if block.get("type") == "actions"
            for element in block["elements"]
            if element.get("type") == "overflow"
            for option in element["options"]
            if option["text"]["text"] == text
        )
        action = {
            "type": "overflow",
            "action_id": overflow["action_id"],
            "block_id": block_id,
            "selected_option": option,
            "action_ts": f"{time.time():.6f}",
        }
        return self._message_action(message, action, user)

    def feedback_actions(
        self, message: FakeMessage, *, positive: bool, user: str = "U1"
    ) -> dict[str, Any]:
        """A press on one half of the ``feedback_buttons`` of ``message``: Slack sends the
        element's ``action_id`` and the pressed half's ``value``."""
        block_id, element = next(
            (block.get("block_id", ""), element)
            for block in message.blocks
            if block.get("type") == "context_actions"
            for element in block["elements"]
            if element.get("type") == "feedback_buttons"
        )
        half = element["positive_button" if positive else "negative_button"]
        action = {
            "action_id": element["action_id"],
            "block_id": block_id,
            "value": half["value"],
            "type": "feedback_buttons",
            "action_ts": f"{time.time():.6f}",
        }
        return self._message_action(message, action, user)

    def ephemeral_block_actions(
        self, ephemeral: Ephemeral, action_id: str, *, user: str | None = None
    ) -> dict[str, Any]:
        """A press on the button ``action_id`` of an ephemeral message. Slack sends no
        ``message`` for those (the app cannot read an ephemeral message back): the container
        says ``is_ephemeral`` and carries its ``message_ts``; answers go to ``response_url``."""
        assert ephemeral.ts, "only chat.postEphemeral messages have a ts"
        presser = user or ephemeral.user
        container: dict[str, Any] = {
            "type": "message",
            "message_ts": ephemeral.ts,
            "channel_id": ephemeral.channel,
            "is_ephemeral": True,
        }
        if ephemeral.thread_ts:
            container["thread_ts"] = ephemeral.thread_ts
        return {
            "type": "block_actions",
            "user": self._user_payload(presser),
            "api_app_id": self.app_id,
            "token": "legacy-verification-token",
            "container": container,
            "trigger_id": self._issue_trigger(),
            "team": {"id": self.team_id, "domain": "fake"},
            "enterprise": None,
            "is_enterprise_install": False,
            "channel": {"id": ephemeral.channel, "name": self._channel_name(ephemeral.channel)},
            "state": {"values": {}},
            "response_url": self._issue_response_url(ephemeral.channel, presser, ephemeral),
            "actions": [_button_action(ephemeral.blocks, action_id)],
        }

    def view_submission(
        self, view: FakeView, values: Mapping[str, str], *, user: str = "U1"
    ) -> dict[str, Any]:
        """The submission of ``view`` with ``values`` by input block id (the modal closes:
        genbot answers submissions with a plain acknowledgement)."""
        unknown = set(values) - set(view.input_ids)
        if unknown:
            raise KeyError(f"no inputs {sorted(unknown)} in the view (has {view.input_ids})")
        view.closed = True
        state: dict[str, Any] = {}
        for block in view.view.get("blocks", []):
            if block.get("type") != "input":
                continue
            element = block["element"]
            action_id = element["action_id"]
            if element["type"] == "static_select":
                chosen = [
                    o for o in element["options"] if o["value"] == values.get(block["block_id"])
                ]
                initial = element.get("initial_option")
                picked = chosen[0] if chosen else (None if block["block_id"] in values else initial)
                state[block["block_id"]] = {
                    action_id: {"type": "static_select", "selected_option": picked}
                }
                continue
            value = values.get(block["block_id"], element.get("initial_value"))
            state[block["block_id"]] = {action_id: {"type": "plain_text_input", "value": value}}
        return {
            "type": "view_submission",
            "team": {"id": self.team_id, "domain": "fake"},
            "user": self._user_payload(user),
            "api_app_id": self.app_id,
            "token": "legacy-verification-token",
            "trigger_id": self._issue_trigger(),
            "view": {**view.payload(), "state": {"values": state}, "team_id": self.team_id},
            "response_urls": [],
            "is_enterprise_install": False,
            "enterprise": None,
        }

    def _user_payload(self, user: str) -> dict[str, str]:
        name = self.users.get(user, user)
        return {"id": user, "username": name, "name": name, "team_id": self.team_id}

    # Signed HTTP delivery ------------------------------------------------------------------

    def signed_headers(
        self,
        body: str,
        content_type: str,
        *,
        secret: str | None = None,
        timestamp: int | None = None,
    ) -> dict[str, str]:
        """Headers Slack sends with ``body``: timestamp and ``v0`` signature."""
        stamp = str(timestamp if timestamp is not None else int(time.time()))
        verifier = SignatureVerifier(secret if secret is not None else self.signing_secret)
        return {
            "Content-Type": content_type,
            "X-Slack-Request-Timestamp": stamp,
            "X-Slack-Signature": str(verifier.generate_signature(timestamp=stamp, body=body)),
        }

    async def post_event(
        self,
        url: str,
        envelope: dict[str, Any],
        *,
        retry_num: int | None = None,
        retry_reason: str = "http_timeout",
        secret: str | None = None,
    ) -> Delivery:
        """Deliver an Events API envelope; ``retry_num`` adds Slack's retry headers."""
        extra = {}
        if retry_num is not None:
            extra = {"X-Slack-Retry-Num": str(retry_num), "X-Slack-Retry-Reason": retry_reason}
        body = json.dumps(envelope)
        delivery = await self._deliver(url, body, "application/json", extra, secret)
        delivery.event_id = envelope.get("event_id")
        return delivery

    async def post_command(
        self, url: str, fields: Mapping[str, str], *, secret: str | None = None
    ) -> Delivery:
        """Deliver a slash command (form-encoded)."""
        return await self._deliver(
            url, urlencode(fields), "application/x-www-form-urlencoded", {}, secret
        )

    async def post_interactive(
        self, url: str, payload: dict[str, Any], *, secret: str | None = None
    ) -> Delivery:
        """Deliver an interactivity payload (form field ``payload=<json>``)."""
        body = urlencode({"payload": json.dumps(payload)})
        return await self._deliver(url, body, "application/x-www-form-urlencoded", {}, secret)

    async def submit_view(
        self, url: str, view: FakeView, values: Mapping[str, str], *, user: str = "U1"
    ) -> Delivery:
        """Submit ``view`` with ``values`` as its user would. As Slack does, the view stays
        open, showing them beside its inputs, when the app acknowledges with
        ``response_action: errors`` (every key an input block of the view); otherwise it
        closes."""
        delivery = await self.post_interactive(url, self.view_submission(view, values, user=user))
        answer = json.loads(delivery.text) if delivery.text.lstrip().startswith("{") else {}
        if answer.get("response_action") == "errors":
            errors = answer.get("errors")
            assert isinstance(errors, dict) and errors, f"errors must name inputs: {answer}"
            unknown = set(errors) - set(view.input_ids)
            assert not unknown, f"errors for blocks the view does not have: {sorted(unknown)}"
            view.closed = False
            view.errors = {str(block): str(text) for block, text in errors.items()}
        return delivery

    async def _deliver(
        self, url: str, body: str, content_type: str, extra: dict[str, str], secret: str | None
    ) -> Delivery:
        assert self._session is not None, "start the fake first"
        headers = {**self.signed_headers(body, content_type, secret=secret), **extra}
        async with (
            asyncio.timeout(DELIVERY_TIMEOUT),
            self._session.post(url, data=body.encode(), headers=headers) as response,
        ):
            return Delivery(response.status, await response.text())

    # Socket Mode ---------------------------------------------------------------------------

    async def socket_push(
        self,
        kind: str,
        payload: dict[str, Any],
        *,
        accepts_response_payload: bool | None = None,
        retry_attempt: int = 0,
        retry_reason: str = "",
        connection: int | None = None,
    ) -> str:
        """Send an envelope (``events_api``, ``interactive``, ``slash_commands``) on the newest
        Socket Mode connection, or on the ``connection``-th one opened (from 0); its id."""
        ws = self._ws if connection is None else self._sockets[connection]
        if ws is None or ws.closed:
            raise RuntimeError("no Socket Mode connection")
        envelope_id = str(uuid.uuid4())
        accepts = (
            kind != "events_api" if accepts_response_payload is None else accepts_response_payload
        )
        envelope: dict[str, Any] = {
            "envelope_id": envelope_id,
            "type": kind,
            "payload": payload,
            "accepts_response_payload": accepts,
        }
        if kind == "events_api":
            envelope |= {"retry_attempt": retry_attempt, "retry_reason": retry_reason}
        await ws.send_json(envelope)
        return envelope_id


def _button_action(blocks: list[dict[str, Any]], action_id: str) -> dict[str, Any]:
    """The ``actions`` entry of a press on the button ``action_id`` among ``blocks``."""
    block_id, button = next(
        (block.get("block_id", ""), element)
        for block in blocks
        if block.get("type") == "actions"
        for element in block["elements"]
        if element["action_id"] == action_id
    )
    return {
        "action_id": action_id,
        "block_id": block_id,
        "text": button["text"],
        "value": button.get("value", ""),
        "type": "button",
        "action_ts": f"{time.time():.6f}",
    }
