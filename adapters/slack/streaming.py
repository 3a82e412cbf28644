"""Slack's native streaming (``chat.startStream`` → ``chat.appendStream`` → ``chat.stopStream``)
as the core's :class:`~bot.kernel.surface.NativeStream`.

A streamed message is a thread reply: in the place's thread, else in the thread of the message
being answered (a top-level DM or mention). Outside DMs Slack needs the recipient (the user
being answered and their team). Only new text is sent, with pings broken as in every message
of the model (:func:`~adapters.slack.formatting.neutralise_markdown`); a word that could still
turn into a ping with the next characters (``@her`` → ``@here``) is held back until it is
complete. Slack's streams take no blocks while they stream, so a streamed answer carries no ⏹ Stop
(Slack's own stop shows instead, while the thread's agent session is ``processing``: see
:mod:`adapters.slack.sessions`); its controls (🔁, and 👍/👎 as Slack's ``feedback_buttons``) are
given with ``chat.stopStream``.

Where Slack refuses to stream, :class:`StreamSupport` remembers it: for the whole workspace
when the refusal is the workspace's (a scope, a plan, a disabled feature), for the conversation
otherwise, and the core posts and edits there instead. A stream Slack no longer accepts
(``message_not_in_streaming_state``, after about five minutes) raises
:class:`~bot.kernel.surface.StreamExpired`: the core finishes the message with ``chat.update``.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Awaitable, Callable
from typing import Any, TypeVar

from slack_sdk.web.async_client import AsyncWebClient

from bot.kernel import ButtonRows, MessageRef, Place, RateLimited, StreamExpired

from .errors import SlackRefused
from .formatting import button_blocks, neutralise_markdown

log = logging.getLogger(__name__)
T = TypeVar("T")
Call = Callable[[str, Awaitable[Any]], Awaitable[Any]]
Ended = Callable[[bool], Awaitable[None]]

NOT_STREAMING = "message_not_in_streaming_state"
WORKSPACE_REFUSALS = frozenset(
    {
        "missing_scope",
        "not_allowed_token_type",
        "feature_not_enabled",
        "team_not_allowed",
        "unknown_method",
        "method_deprecated",
        "access_denied",
        "no_permission",
    }
)
"""Refusals of ``chat.startStream`` that hold for the whole workspace."""
CONVERSATION_REFUSALS = frozenset(
    {
        "channel_type_not_supported",
        "missing_recipient_user_id",
        "missing_recipient_team_id",
        "invalid_thread_ts",
        "cannot_reply_to_message",
        "streaming_not_supported",
    }
)
"""Refusals of ``chat.startStream`` that hold for one conversation."""
_PING_START = re.compile(r"[<@&]")


def stable_length(raw: str) -> int:
    """How much of ``raw`` can be sent now: all of it, unless its last word could still become
    a ping with the next characters (it holds ``<``, ``@`` or ``&``); then up to that word."""
    word_start = max(raw.rfind(" "), raw.rfind("\n"), raw.rfind("\t")) + 1
    return word_start if _PING_START.search(raw, word_start) else len(raw)


class StreamSupport:
    """Where Slack refused to stream (for this process's life)."""

    def __init__(self) -> None:
        self._workspaces: dict[str, str] = {}
        self._conversations: dict[tuple[str, str], str] = {}

    def allowed(self, place: Place) -> bool:
        key = (place.workspace_id, place.channel_id)
        return place.workspace_id not in self._workspaces and key not in self._conversations

    def refused(self, place: Place, code: str) -> bool:
        """Remember a refusal of ``chat.startStream``; False when ``code`` is not one (the
        error is the caller's to report)."""
        if code in WORKSPACE_REFUSALS:
            self._workspaces[place.workspace_id] = code
        elif code in CONVERSATION_REFUSALS:
            self._conversations[(place.workspace_id, place.channel_id)] = code
        else:
            return False
        log.info(
            "Slack does not stream in %s/%s (%s): posting and editing there",
            place.workspace_id,
            place.channel_id,
            code,
        )
        return True


class SlackStream:
    """One streamed message; create with :meth:`start`. ``on_end`` is awaited once the stream
    ended, told whether ``chat.stopStream`` ended it (then Slack itself moves the thread's agent
    session out of ``processing``) or it failed."""

    def __init__(
        self, client: AsyncWebClient, call: Call, token: str | None, ref: MessageRef
    ) -> None:
        self._client = client
        self._call = call
        self._token = token
        self.ref = ref
        self.on_end: Ended | None = None
        self._raw = ""
        self._sent = ""

    @classmethod
    async def start(
        cls,
        client: AsyncWebClient,
        call: Call,
        place: Place,
        thread_ts: str,
        text: str,
        *,
        token: str | None = None,
        recipient: tuple[str, str] | None = None,
    ) -> SlackStream:
        """Start the stream with ``text`` (for ``recipient``: user and team ids, outside DMs);
        raises what ``call`` raises for a refusal."""
        stream = cls(client, call, token, MessageRef(place.in_thread(thread_ts), ""))
        markdown = stream._take(text, final=False)
        response = await call(
            "chat.startStream",
            client.chat_startStream(
                channel=place.channel_id,
                thread_ts=thread_ts,
                markdown_text=markdown or None,
                token=token,
                recipient_user_id=recipient[0] if recipient else None,
                recipient_team_id=recipient[1] if recipient else None,
            ),
        )
        stream._sent += markdown
        stream.ref = MessageRef(stream.ref.place, str(response["ts"]))
        return stream

    def _take(self, text: str, *, final: bool) -> str:
        """Add ``text``; the Markdown not sent yet that can be sent now."""
        self._raw += text
        ready = self._raw if final else self._raw[: stable_length(self._raw)]
        shown = neutralise_markdown(ready)
        if not shown.startswith(self._sent):
            log.warning("streamed text changed under its ping guard in %s", self.ref.message_id)
            return ""
        return shown[len(self._sent) :]

    async def append(self, text: str) -> None:
        markdown = self._take(text, final=False)
        if markdown:
            await self._send("chat.appendStream", markdown)

    async def stop(self, text: str = "", buttons: ButtonRows = ()) -> None:
        """Add ``text`` and end the stream; ``buttons`` go under the message (Slack appends
        ``chat.stopStream``'s blocks to the finished message)."""
        try:
            await self._send(
                "chat.stopStream", self._take(text, final=True), button_blocks(buttons)
            )
        except RateLimited:
            raise
        except Exception:
            await self._ended(stopped=False)
            raise
        await self._ended(stopped=True)

    async def _ended(self, *, stopped: bool) -> None:
        on_end, self.on_end = self.on_end, None
        if on_end is not None:
            await on_end(stopped)

    async def _send(
        self, method: str, markdown: str, blocks: list[dict[str, Any]] | None = None
    ) -> None:
        channel, ts = self.ref.place.channel_id, self.ref.message_id
        if method == "chat.appendStream":
            call = self._client.chat_appendStream(
                channel=channel, ts=ts, markdown_text=markdown, token=self._token
            )
        else:
            call = self._client.chat_stopStream(
                channel=channel,
                ts=ts,
                markdown_text=markdown or None,
                blocks=blocks or None,
                token=self._token,
            )
        try:
            await self._call(method, call)
        except SlackRefused as refused:
            if refused.code == NOT_STREAMING:
                raise StreamExpired(NOT_STREAMING) from None
            raise
        self._sent += markdown
