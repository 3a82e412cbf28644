"""Slack's streaming, status and rate tiers in the fake, mixed into
:class:`tests.fakes.slack.FakeSlack`.

- ``chat.startStream`` / ``chat.appendStream`` / ``chat.stopStream``: a streamed message is a
  thread reply (``thread_ts`` is required in DMs) whose ``markdown_text`` only grows; it is shown
  as one ``markdown`` block, and ``stopStream``'s ``blocks`` come after it. Outside DMs the call
  needs ``recipient_user_id`` and ``recipient_team_id`` (``missing_recipient_user_id`` /
  ``missing_recipient_team_id``). A stream older than ``stream_window_seconds`` answers
  ``message_not_in_streaming_state``; so does one already stopped. A team in
  ``streaming_refused`` gets that error code from ``chat.startStream``.
- Markdown beyond 12,000 characters in one message is ``msg_too_long``; block text beyond
  ``BLOCKS_TEXT_MAX`` in all is ``msg_blocks_too_long``.
- ``assistant.threads.setStatus``: the status of a thread (``""`` clears it); any message the bot
  posts in the thread clears it too, as on Slack.
- Tiers: every method in ``tier_per_minute`` has a window per team over a minute, and
  ``chat.postMessage`` per channel (``posts_per_window`` in ``post_window_seconds``); beyond
  them the call is answered ``ratelimited`` (HTTP 429) with ``Retry-After``.
"""

from __future__ import annotations

import math
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from tests.fakes.slack_model import FakeMessage, SlackError

Args = dict[str, Any]

MARKDOWN_MAX = 12000
BLOCKS_TEXT_MAX = 13200
LOADING_MESSAGES_MAX = 10
TIER_WINDOW_SECONDS = 60.0
DEFAULT_TIERS: dict[str, int] = {
    "chat.startStream": 20,
    "chat.appendStream": 100,
    "chat.stopStream": 20,
    "assistant.threads.setStatus": 100,
    "views.publish": 100,
    "usergroups.list": 20,
}
"""Calls per minute per team (Tier 2: 20, Tier 4: 100); ``chat.update`` keeps its own check."""


@dataclass
class ThreadStatus:
    """An ``assistant.threads.setStatus`` as it was set."""

    channel: str
    thread_ts: str
    status: str
    loading_messages: list[str]


def ratelimited(wait: float) -> SlackError:
    return SlackError(
        "ratelimited", status=429, headers={"Retry-After": str(max(1, math.ceil(wait)))}
    )


class SlackStreamingApi:
    """The streaming, status and tier parts of the fake's Web API."""

    clock: Callable[[], float]
    stream_window_seconds: float
    streaming_refused: dict[str, str]
    tier_per_minute: dict[str, int]
    posts_per_window: int
    post_window_seconds: float
    statuses: dict[tuple[str, str], ThreadStatus]
    status_log: list[ThreadStatus]
    _tier_calls: dict[tuple[str, str], deque[float]]
    _caller_team: str

    if TYPE_CHECKING:

        @property
        def bot_user_id(self) -> str: ...

        def message(self, channel: str, ts: str) -> FakeMessage | None: ...

        def _add_message(
            self,
            channel: str,
            user: str,
            text: str,
            blocks: list[dict[str, Any]] | None = None,
            thread_ts: str | None = None,
            files: list[Any] | None = None,
        ) -> FakeMessage: ...

        def _bot_message(self, args: Args) -> FakeMessage: ...

        def _check_content(self, text: str, blocks: Any) -> None: ...

        def stream_stopped(self, channel: str, thread_ts: str | None) -> None: ...

    def streaming_methods(self) -> dict[str, Callable[[Args], Args]]:
        return {
            "chat.startStream": self._start_stream,
            "chat.appendStream": self._append_stream,
            "chat.stopStream": self._stop_stream,
            "assistant.threads.setStatus": self._set_status,
        }

    # Tiers ----------------------------------------------------------------------------------

    def spend_tier(self, method: str, args: Args) -> None:
        """Count one call of ``method`` against its window, or answer ``ratelimited``."""
        now = self.clock()
        if method == "chat.postMessage":
            key, capacity, window = (
                f"post:{args.get('channel')}",
                self.posts_per_window,
                self.post_window_seconds,
            )
        elif method in self.tier_per_minute:
            key, capacity, window = (
                f"{self._caller_team}:{method}",
                self.tier_per_minute[method],
                TIER_WINDOW_SECONDS,
            )
        else:
            return
        calls = self._tier_calls.setdefault((key, method), deque())
        while calls and now - calls[0] >= window:
            calls.popleft()
        if len(calls) >= capacity:
            raise ratelimited(window - (now - calls[0]))
        calls.append(now)

    # Streaming ------------------------------------------------------------------------------

    def _start_stream(self, args: Args) -> Args:
        channel, thread_ts = str(args.get("channel") or ""), str(args.get("thread_ts") or "")
        if not channel:
            raise SlackError("channel_not_found")
        refused = self.streaming_refused.get(self._caller_team)
        if refused:
            raise SlackError(refused)
        if not channel.startswith("D"):
            if not args.get("recipient_user_id"):
                raise SlackError("missing_recipient_user_id")
            if not args.get("recipient_team_id"):
                raise SlackError("missing_recipient_team_id")
        elif not thread_ts:
            raise SlackError("invalid_thread_ts")
        text = streamed_text(args)
        _check_markdown(text)
        message = self._add_message(
            channel, self.bot_user_id, text, _markdown_blocks(text), thread_ts or None
        )
        message.streaming = True
        message.stream_started = self.clock()
        return {"channel": channel, "ts": message.ts}

    def _streaming(self, args: Args) -> FakeMessage:
        message = self._bot_message(args)
        expired = self.clock() - message.stream_started > self.stream_window_seconds
        if not message.streaming or expired:
            message.streaming = False
            raise SlackError("message_not_in_streaming_state")
        return message

    def _append_stream(self, args: Args) -> Args:
        message = self._streaming(args)
        added = streamed_text(args)
        if not added:
            raise SlackError("invalid_arguments")
        self._grow(message, added, [])
        return {"channel": message.channel, "ts": message.ts}

    def _stop_stream(self, args: Args) -> Args:
        message = self._streaming(args)
        extra = args.get("blocks") or []
        self._check_content(message.text, extra)
        self._grow(message, streamed_text(args), extra)
        message.streaming = False
        self.stream_stopped(message.channel, message.thread_ts)
        return {"channel": message.channel, "ts": message.ts, "message": message.payload()}

    def _grow(self, message: FakeMessage, added: str, extra: list[dict[str, Any]]) -> None:
        text = message.text + added
        _check_markdown(text)
        blocks = _markdown_blocks(text) + list(extra)
        if blocks_text_length(blocks) > BLOCKS_TEXT_MAX:
            raise SlackError("msg_blocks_too_long")
        message.history.append(message.shown)
        message.text, message.blocks = text, blocks
        message.timeline.append((self.clock(), message.shown))

    # Status ---------------------------------------------------------------------------------

    def _set_status(self, args: Args) -> Args:
        channel, thread_ts = str(args.get("channel_id") or ""), str(args.get("thread_ts") or "")
        if not channel:
            raise SlackError("channel_not_found")
        if not thread_ts or self.message(channel, thread_ts) is None:
            raise SlackError("invalid_thread_ts")
        loading = args.get("loading_messages") or []
        if isinstance(loading, str):
            loading = [loading]
        if len(loading) > LOADING_MESSAGES_MAX:
            raise SlackError("invalid_arguments")
        status = ThreadStatus(channel, thread_ts, str(args.get("status") or ""), list(loading))
        self.status_log.append(status)
        if status.status:
            self.statuses[(channel, thread_ts)] = status
        else:
            self.statuses.pop((channel, thread_ts), None)
        return {}

    def clear_status_on_reply(self, message: FakeMessage) -> None:
        """The bot replied in a thread: Slack clears the thread's status."""
        if message.user == self.bot_user_id and message.thread_ts:
            self.statuses.pop((message.channel, message.thread_ts), None)


def streamed_text(args: Args) -> str:
    """The Markdown a streaming call adds: ``markdown_text`` and ``markdown_text`` chunks."""
    text = str(args.get("markdown_text") or "")
    chunks = args.get("chunks")
    for chunk in chunks if isinstance(chunks, list) else []:
        if isinstance(chunk, dict) and chunk.get("type") == "markdown_text":
            text += str(chunk.get("text") or "")
    return text


def blocks_text_length(blocks: list[dict[str, Any]]) -> int:
    """The characters of every text in ``blocks`` (markdown, sections, buttons…)."""

    def walk(value: Any) -> int:
        if isinstance(value, dict):
            own = len(value["text"]) if isinstance(value.get("text"), str) else 0
            return own + sum(walk(v) for k, v in value.items() if k != "text" or own == 0)
        if isinstance(value, list):
            return sum(walk(v) for v in value)
        return 0

    return walk(blocks)


def _markdown_blocks(text: str) -> list[dict[str, Any]]:
    return [{"type": "markdown", "text": text}] if text else []


def _check_markdown(text: str) -> None:
    if len(text) > MARKDOWN_MAX:
        raise SlackError("msg_too_long")
