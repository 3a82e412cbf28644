"""The agent messaging experience of the fake Slack, mixed into
:class:`tests.fakes.slack.FakeSlack`, checked against the app's manifest
(``config/slack-manifest.yaml`` unless the fake is given another) as Slack checks it:

- ``assistant.threads.setSuggestedPrompts``: needs the ``assistant:write`` scope
  (``missing_scope``) and ``features.agent_view`` (or the older ``assistant_view``;
  ``feature_not_enabled``, the fake's word); ``channel_id`` must be a DM of the app
  (``channel_not_found``); 1 to 4 prompts, each with a ``title`` and a ``message``
  (``invalid_arguments``). For an agent app a call naming ``thread_ts`` silently does nothing
  (Slack's documented behaviour): it answers ``ok`` and is recorded in
  :attr:`SlackAgentApi.ignored_prompts`.
- ``agents.sessions.setStatus``: a thread's agent session (created by the first call), with a
  ``status`` of ``processing``, ``active``, ``suspended`` or ``closed`` (``invalid_arguments``);
  needs ``chat:write`` (``missing_scope``) and an agent app (``agent_view``; ``not_allowed``),
  ``channel_id`` (``channel_not_found``) and the ``thread_ts`` of a message in it
  (``invalid_thread_ts``). Slack shows its stop button while a session is ``processing``
  (:meth:`SlackAgentApi.stop_showing`; without the ``agent_session_stopped`` subscription the
  call answers a warning and no button shows). Only the app moves a session out of
  ``processing``: this call, or ``chat.stopStream`` in its thread (which makes it ``active``).
- ``conversations.open`` (``users``): a user's DM with the app, ``D`` + the user id's digits.
- Events and payloads Slack only sends when the manifest asks for them: ``app_home_opened``
  with ``tab: messages`` (the event subscribed, the Messages tab enabled; its ``context`` names
  the channel in view, as the agent experience sends it), ``app_context_changed`` (subscribed,
  ``agent_view`` on), and a ``message_action`` for a message shortcut the manifest declares.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

import yaml

from tests.fakes.slack_model import Ephemeral, FakeMessage, SlackError

Args = dict[str, Any]

MANIFEST = Path(__file__).resolve().parents[2] / "config" / "slack-manifest.yaml"
SUGGESTED_PROMPTS_MAX = 4
SESSION_STATUSES = frozenset({"processing", "active", "suspended", "closed"})


def load_manifest(path: Path = MANIFEST) -> Args:
    loaded = yaml.safe_load(path.read_text(encoding="utf-8"))
    assert isinstance(loaded, dict)
    return loaded


class SlackAgentApi:
    """Suggested prompts, DMs opened by the app, and the agent experience's payloads."""

    manifest: Args
    suggested_prompts: dict[tuple[str, str], Args]
    ignored_prompts: list[Args]
    users: dict[str, str]
    app_id: str
    sessions: dict[tuple[str, str], str]
    """Each thread's agent session status, by (channel, thread_ts)."""
    session_log: list[tuple[str, str, str]]

    if TYPE_CHECKING:

        @property
        def team_id(self) -> str: ...

        def _issue_trigger(self) -> str: ...

        def _issue_response_url(
            self, channel: str, user: str, pressed: Ephemeral | None = None
        ) -> str: ...

        def _user_payload(self, user: str) -> dict[str, str]: ...

        def message(self, channel: str, ts: str) -> FakeMessage | None: ...

    def agent_methods(self) -> dict[str, Callable[[Args], Args]]:
        return {
            "assistant.threads.setSuggestedPrompts": self._set_suggested_prompts,
            "conversations.open": self._conversations_open,
            "agents.sessions.setStatus": self._set_session_status,
        }

    # The manifest ----------------------------------------------------------------------------

    @property
    def features(self) -> Args:
        return dict(self.manifest.get("features") or {})

    @property
    def agent_view(self) -> bool:
        return "agent_view" in self.features

    @property
    def bot_scopes(self) -> set[str]:
        return set(((self.manifest.get("oauth_config") or {}).get("scopes") or {}).get("bot") or [])

    @property
    def bot_events(self) -> set[str]:
        settings = self.manifest.get("settings") or {}
        return set((settings.get("event_subscriptions") or {}).get("bot_events") or [])

    def _subscribed(self, event: str) -> None:
        assert event in self.bot_events, f"the manifest does not subscribe to {event}"

    @staticmethod
    def dm_of(user: str) -> str:
        """The app's DM with ``user`` (``U1`` → ``D1``)."""
        return "D" + user[1:]

    # Web API --------------------------------------------------------------------------------

    def _set_suggested_prompts(self, args: Args) -> Args:
        if "assistant:write" not in self.bot_scopes:
            raise SlackError("missing_scope")
        if not self.agent_view and "assistant_view" not in self.features:
            raise SlackError("feature_not_enabled")
        channel = str(args.get("channel_id") or "")
        if not channel.startswith("D"):
            raise SlackError("channel_not_found")
        prompts = args.get("prompts")
        if isinstance(prompts, str):
            prompts = json.loads(prompts)
        valid = (
            isinstance(prompts, list)
            and 1 <= len(prompts) <= SUGGESTED_PROMPTS_MAX
            and all(
                isinstance(p, dict)
                and isinstance(p.get("title"), str)
                and p["title"]
                and isinstance(p.get("message"), str)
                and p["message"]
                for p in prompts
            )
        )
        if not valid:
            raise SlackError("invalid_arguments")
        if self.agent_view and args.get("thread_ts"):
            self.ignored_prompts.append(dict(args))
            return {}
        self.suggested_prompts[(self.team_id, channel)] = {
            "title": args.get("title"),
            "prompts": list(prompts or []),
        }
        return {}

    def _set_session_status(self, args: Args) -> Args:
        if "chat:write" not in self.bot_scopes:
            raise SlackError("missing_scope")
        if not self.agent_view:
            raise SlackError("not_allowed")
        channel, thread_ts = str(args.get("channel_id") or ""), str(args.get("thread_ts") or "")
        if not channel:
            raise SlackError("channel_not_found")
        if not thread_ts or self.message(channel, thread_ts) is None:
            raise SlackError("invalid_thread_ts")
        status = str(args.get("status") or "")
        if status not in SESSION_STATUSES:
            raise SlackError("invalid_arguments")
        self.sessions[(channel, thread_ts)] = status
        self.session_log.append((channel, thread_ts, status))
        if "agent_session_stopped" not in self.bot_events:
            return {"warning": "missing_agent_session_stopped_event_subscription"}
        return {}

    def stop_showing(self, channel: str, thread_ts: str | None) -> bool:
        """Whether Slack shows its stop button on the agent session of ``thread_ts``."""
        return (
            "agent_session_stopped" in self.bot_events
            and self.sessions.get((channel, thread_ts or "")) == "processing"
        )

    def stream_stopped(self, channel: str, thread_ts: str | None) -> None:
        """``chat.stopStream`` in ``thread_ts``: a ``processing`` session becomes ``active``."""
        key = (channel, thread_ts or "")
        if self.sessions.get(key) == "processing":
            self.sessions[key] = "active"

    def _conversations_open(self, args: Args) -> Args:
        users = [u for u in str(args.get("users") or "").split(",") if u]
        if len(users) != 1 or users[0] not in self.users:
            raise SlackError("user_not_found")
        return {"channel": {"id": self.dm_of(users[0])}}

    # Payloads -------------------------------------------------------------------------------

    def messages_tab_opened_event(self, user: str, viewing: str | None = None) -> Args:
        """``app_home_opened`` for the Messages tab of ``user`` (looking at ``viewing``)."""
        self._subscribed("app_home_opened")
        home = self.features.get("app_home") or {}
        assert home.get("messages_tab_enabled"), "the manifest disables the Messages tab"
        event: Args = {
            "type": "app_home_opened",
            "user": user,
            "channel": self.dm_of(user),
            "tab": "messages",
            "event_ts": f"{time.time():.6f}",
        }
        if self.agent_view:
            event["context"] = self._context(viewing)
        return event

    def app_context_changed_event(self, user: str, viewing: str | None) -> Args:
        """What an agent app hears when ``user`` looks at ``viewing`` (``None``: nothing)."""
        self._subscribed("app_context_changed")
        assert self.agent_view, "Slack sends app_context_changed only to apps with agent_view"
        return {
            "type": "app_context_changed",
            "user": user,
            "event_ts": f"{time.time():.6f}",
            "context": self._context(viewing),
        }

    def _context(self, viewing: str | None) -> Args:
        if viewing is None:
            return {}
        entity = {"type": "slack#/types/channel_id", "value": viewing, "team_id": self.team_id}
        return {"entities": [entity]}

    def message_shortcut(self, message: FakeMessage, callback_id: str, *, user: str = "U1") -> Args:
        """The ``message_action`` payload of ``user`` running the message shortcut
        ``callback_id`` on ``message``."""
        declared = {
            s.get("callback_id")
            for s in self.features.get("shortcuts") or []
            if s.get("type") == "message"
        }
        assert callback_id in declared, f"the manifest declares no message shortcut {callback_id}"
        return {
            "type": "message_action",
            "token": "legacy-verification-token",
            "action_ts": f"{time.time():.6f}",
            "team": {"id": self.team_id, "domain": "fake"},
            "user": self._user_payload(user),
            "channel": {"id": message.channel, "name": message.channel.lower()},
            "is_enterprise_install": False,
            "enterprise": None,
            "callback_id": callback_id,
            "trigger_id": self._issue_trigger(),
            "response_url": self._issue_response_url(message.channel, user),
            "message_ts": message.ts,
            "message": message.payload(),
        }
