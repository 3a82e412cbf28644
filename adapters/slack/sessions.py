"""The agent session of a thread genbot streams an answer into (``agents.sessions.setStatus``):
``processing`` while the answer streams, which is when Slack shows its own stop button (pressed,
it sends ``agent_session_stopped``). ``chat.stopStream`` moves the session out of ``processing``
(Slack's agent session docs); an answer whose stream failed or was abandoned is set ``active``
(Slack does not move a session out of ``processing`` by itself).

A session is a courtesy: refusals are logged, never raised. A workspace whose app is not an
agent app (or whose Slack does not know the method) is asked once and then left alone for the
process's life.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable

from slack_sdk.web.async_client import AsyncWebClient

from bot.kernel import RateLimited, SurfaceError

from .calls import Call
from .errors import SlackRefused

log = logging.getLogger(__name__)
Clients = Callable[[str], Awaitable[AsyncWebClient]]

PROCESSING = "processing"
ACTIVE = "active"
WORKSPACE_REFUSALS = frozenset(
    {
        "not_allowed",
        "unknown_method",
        "method_deprecated",
        "missing_scope",
        "not_allowed_token_type",
        "feature_not_enabled",
        "no_permission",
        "access_denied",
    }
)
"""Refusals of ``agents.sessions.setStatus`` meaning the workspace has no agent sessions."""


class AgentSessions:
    """The sessions genbot set ``processing`` (for this process's life)."""

    def __init__(self, clients: Clients, call: Call) -> None:
        self._clients = clients
        self._call = call
        self._refused: dict[str, str] = {}
        self._processing: set[tuple[str, str, str]] = set()

    async def processing(
        self, workspace: str, channel: str, thread_ts: str, client: AsyncWebClient
    ) -> None:
        """An answer streams in ``thread_ts`` through ``client`` (the stream's own, so its token
        is not looked up again): Slack shows its stop button."""
        if await self._set(workspace, channel, thread_ts, PROCESSING, client):
            self._processing.add((workspace, channel, thread_ts))

    async def ended(self, workspace: str, channel: str, thread_ts: str, stopped: bool) -> None:
        """The stream in ``thread_ts`` ended: ``chat.stopStream`` (``stopped``) moved its session
        out of ``processing`` already, so only a failed stream's session is set ``active``."""
        if stopped:
            self._processing.discard((workspace, channel, thread_ts))
        else:
            await self.active(workspace, channel, thread_ts)

    async def active(self, workspace: str, channel: str, thread_ts: str) -> None:
        """The answer in ``thread_ts`` ended: the session leaves ``processing`` (nothing is
        sent for a thread genbot did not set ``processing``)."""
        key = (workspace, channel, thread_ts)
        if key in self._processing:
            self._processing.discard(key)
            await self._set(workspace, channel, thread_ts, ACTIVE)

    async def _set(
        self,
        workspace: str,
        channel: str,
        thread_ts: str,
        status: str,
        client: AsyncWebClient | None = None,
    ) -> bool:
        if workspace in self._refused:
            return False
        try:
            client = client or await self._clients(workspace)
            await self._call(
                "agents.sessions.setStatus",
                client.agents_sessions_setStatus(
                    channel_id=channel, thread_ts=thread_ts, status=status
                ),
            )
        except SlackRefused as refused:
            if refused.code in WORKSPACE_REFUSALS:
                self._refused[workspace] = refused.code
                log.info("no agent sessions in %s (%s)", workspace, refused.code)
            else:
                log.info("agent session %s/%s not %s: %s", channel, thread_ts, status, refused)
            return False
        except (SurfaceError, RateLimited) as error:
            log.info("agent session %s/%s not %s: %s", channel, thread_ts, status, error)
            return False
        return True
