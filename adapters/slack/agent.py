"""Slack's agent messaging experience (the manifest's ``features.agent_view``): genbot's Messages
tab, the channel a user is looking at, and the "Ask genbot about this" message shortcut.

- **Messages tab.** ``app_home_opened`` with ``tab: messages`` sets the tab's suggested prompts
  (``assistant.threads.setSuggestedPrompts`` on the DM, without ``thread_ts``: an agent app's
  prompts belong to the DM, and Slack ignores a call that names a thread) and, the first time
  (the DM holds no message yet), greets the user.
- **What the user is looking at.** ``app_context_changed`` (and the Messages tab's own
  ``context``) names the channel in view; it is kept per user for an hour in genbot's database
  (:class:`adapters.slack.ports.ChannelsInView`), so whichever process behind the load balancer
  receives the DM message reads the channel. A DM message that speaks of "this channel" gets
  that channel's recent messages (``conversations.history``, at most
  :data:`CHANNEL_MESSAGES_MAX`, over the hours or minutes the message names, else the last
  hour) as a text document, which chat reads like any other (:mod:`bot.features.chat.documents`).
- **"Ask genbot about this".** The message shortcut opens a form asking what to ask; on submit
  genbot reads the message and its thread (``conversations.replies``, bounded; the message
  alone when genbot cannot read the channel), opens the user's DM, posts the question there and
  answers it in that thread with the thread as a document; the conversation continues there.

Without a database (an adapter built without ``channels``) the channel in view is kept in this
process only. Whether a user was greeted is kept in this process (a second process checks the
DM's history again before greeting).
"""

from __future__ import annotations

import json
import logging
import re
import time
from collections import OrderedDict
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from slack_sdk.errors import SlackApiError
from slack_sdk.web.async_client import AsyncWebClient

from bot.kernel import COMMANDS_BY_NAME, N_, Attachment, _

from .formatting import escape_mrkdwn
from .inbound import plain_text
from .ports import ChannelsInView
from .settings import SUGGESTED_PROMPTS_MAX, SuggestedPrompt

log = logging.getLogger(__name__)

ASK_CALLBACK = "genbot_ask"
"""The callback id of the "Ask genbot about this" shortcut and of the form it opens."""
QUESTION_BLOCK = "question"
CHANNEL_MESSAGES_MAX = 200
THREAD_MESSAGES_MAX = 200
CONTEXT_SECONDS = 3600.0
VIEWERS_MAX = 4096
METADATA_TEXT_MAX = 2000
"""The shortcut's message text kept in the form's ``private_metadata`` (at most 3000
characters), read when genbot cannot read the channel itself."""
_THIS_CHANNEL = re.compile(r"\b(this|the|current)\s+(channel|conversation)\b", re.IGNORECASE)
_SPAN = re.compile(r"\blast\s+(\d+)?\s*(minute|min|hour|day)s?\b", re.IGNORECASE)
_SPAN_SECONDS = {"minute": 60, "min": 60, "hour": 3600, "day": 86400}
MAX_SPAN_SECONDS = 7 * 86400


def _example(command: str) -> str:
    example = COMMANDS_BY_NAME[command].examples[0]
    words = example.split(" --", 1)[0].split(" ", 1)[1]
    return words[:1].upper() + words[1:]


def default_prompts() -> list[SuggestedPrompt]:
    """genbot's own: ``/chat``'s example, ``/imagine``'s as a request to draw (the model's
    ``generate_image``), and a summary of the channel in view."""
    drawing = _example("imagine")
    return [
        SuggestedPrompt(title=N_("Ask anything"), message=_example("chat")),
        SuggestedPrompt(
            title=N_("Draw an image"), message=f"Draw {drawing[:1].lower()}{drawing[1:]}"
        ),
        SuggestedPrompt(
            title=N_("Summarize this channel"), message="Summarize this channel's last hour"
        ),
    ]


class ChannelUnreadable(Exception):
    """genbot cannot read the channel a message asks about; ``str(error)`` is for the user."""


@dataclass(frozen=True)
class Viewed:
    channel_id: str
    at: float


UserNames = Callable[[str], Awaitable[str]]
"""A user id's display name (cached by the adapter)."""


class AgentSurfaces:
    """See the module docstring. ``prompts`` and ``greeting`` are ``[slack]``'s; ``channels``
    where the processes serving the app share each user's channel in view (None: this
    process's memory)."""

    def __init__(
        self,
        prompts: Sequence[SuggestedPrompt],
        greeting: str,
        *,
        channels: ChannelsInView | None = None,
        monotonic: Callable[[], float] = time.monotonic,
    ) -> None:
        self.prompts = list(prompts)[:SUGGESTED_PROMPTS_MAX]
        self.greeting = greeting
        self._channels = channels
        self._monotonic = monotonic
        self._viewing: OrderedDict[tuple[str, str], Viewed] = OrderedDict()
        self._greeted: OrderedDict[tuple[str, str], None] = OrderedDict()

    # What the user looks at -----------------------------------------------------------------

    async def context_changed(self, team_id: str, user_id: str, context: Any) -> None:
        """Keep the channel ``context`` (an event's ``context``) names as ``user_id``'s."""
        channel = channel_in_view(context)
        if not user_id or not channel:
            return
        if self._channels is not None:
            await self._channels.save_channel_in_view(team_id, user_id, channel)
            return
        key = (team_id, user_id)
        self._viewing.pop(key, None)
        self._viewing[key] = Viewed(channel, self._monotonic())
        while len(self._viewing) > VIEWERS_MAX:
            self._viewing.popitem(last=False)

    async def viewing(self, team_id: str, user_id: str) -> str | None:
        """The channel ``user_id`` looked at last, within the hour."""
        if self._channels is not None:
            return await self._channels.find_channel_in_view(team_id, user_id, CONTEXT_SECONDS)
        viewed = self._viewing.get((team_id, user_id))
        if viewed is None or self._monotonic() - viewed.at > CONTEXT_SECONDS:
            return None
        return viewed.channel_id

    async def channel_document(
        self,
        client: AsyncWebClient,
        team_id: str,
        user_id: str,
        text: str,
        names: UserNames,
    ) -> Attachment | None:
        """The channel in view's recent messages as a document, when a DM message speaks of
        "this channel" and a channel is in view (:class:`ChannelUnreadable` when genbot cannot
        read it)."""
        if not _THIS_CHANNEL.search(text):
            return None
        channel = await self.viewing(team_id, user_id)
        if channel is None:
            return None
        span = requested_span(text)
        oldest = time.time() - span
        try:
            answer = await client.conversations_history(
                channel=channel, oldest=f"{oldest:.6f}", limit=CHANNEL_MESSAGES_MAX
            )
        except SlackApiError as error:
            code = str(error.response.get("error") or "")
            log.info("conversations.history of a channel in view failed: %s", code)
            raise ChannelUnreadable(unreadable_text(channel, code)) from None
        messages = sorted(answer.get("messages") or [], key=lambda m: float(m.get("ts") or 0))
        header = f"Messages in <#{channel}> during the last {describe_span(span)}"
        if len(messages) >= CHANNEL_MESSAGES_MAX:
            header += f" (the newest {CHANNEL_MESSAGES_MAX})"
        return await transcript("channel-messages.txt", header, messages, names)

    # The Messages tab -------------------------------------------------------------------------

    async def messages_tab_opened(
        self, client: AsyncWebClient, team_id: str, user_id: str, dm: str
    ) -> None:
        """Set the tab's suggested prompts; greet a user whose DM is still empty."""
        if self.prompts:
            try:
                await client.assistant_threads_setSuggestedPrompts(
                    channel_id=dm,
                    # Translators: the heading of the suggested prompts in Slack's Messages tab.
                    title=_("Try"),
                    prompts=[{**p.model_dump(), "title": _(p.title)} for p in self.prompts],
                )
            except SlackApiError as error:
                log.info("setSuggestedPrompts failed: %s", error.response.get("error"))
        key = (team_id, user_id)
        if not self.greeting or key in self._greeted:
            return
        try:
            history = await client.conversations_history(channel=dm, limit=1)
            if not history.get("messages"):
                await client.chat_postMessage(channel=dm, text=escape_mrkdwn(_(self.greeting)))
        except SlackApiError as error:
            log.info("greeting in the Messages tab failed: %s", error.response.get("error"))
            return
        self._greeted[key] = None
        while len(self._greeted) > VIEWERS_MAX:
            self._greeted.popitem(last=False)

    # "Ask genbot about this" ------------------------------------------------------------------

    @staticmethod
    def ask_form(shortcut: dict[str, Any]) -> dict[str, Any]:
        """The form the shortcut opens on the message of ``shortcut`` (a ``message_action``)."""
        message = shortcut.get("message") or {}
        channel = str((shortcut.get("channel") or {}).get("id") or "")
        kept = {
            "channel": channel,
            "ts": str(message.get("ts") or shortcut.get("message_ts") or ""),
            "thread_ts": str(message.get("thread_ts") or ""),
            "user": str(message.get("user") or ""),
            "text": str(message.get("text") or "")[:METADATA_TEXT_MAX],
        }
        # Translators: in "About a message by someone in #channel" (its author is not known).
        author = f"<@{kept['user']}>" if kept["user"] else _("someone")
        return {
            "type": "modal",
            "callback_id": ASK_CALLBACK,
            "title": {"type": "plain_text", "text": _("Ask genbot")},
            # Translators: the submit button of the "Ask genbot" form.
            "submit": {"type": "plain_text", "text": _("Ask")},
            "close": {"type": "plain_text", "text": _("Cancel")},
            "private_metadata": json.dumps(kept),
            "blocks": [
                {
                    "type": "context",
                    "elements": [
                        {
                            "type": "mrkdwn",
                            "text": _(
                                "About a message by {author} in <#{channel}> and its thread. "
                                "genbot answers in your DM with it.",
                                author=author,
                                channel=channel,
                            ),
                        }
                    ],
                },
                {
                    "type": "input",
                    "block_id": QUESTION_BLOCK,
                    "label": {"type": "plain_text", "text": _("What do you want to know?")},
                    "element": {
                        "type": "plain_text_input",
                        "action_id": QUESTION_BLOCK,
                        "multiline": True,
                        "initial_value": _("Summarize this message and its thread."),
                    },
                },
            ],
        }

    @staticmethod
    def asked(view: dict[str, Any]) -> tuple[dict[str, str], str]:
        """The message the form was opened on and the question typed in it."""
        kept = json.loads(str(view.get("private_metadata") or "{}"))
        values = ((view.get("state") or {}).get("values") or {}).get(QUESTION_BLOCK) or {}
        question = str((values.get(QUESTION_BLOCK) or {}).get("value") or "").strip()
        return {str(k): str(v) for k, v in kept.items()}, question

    async def thread_document(
        self, client: AsyncWebClient, kept: dict[str, str], names: UserNames
    ) -> Attachment:
        """The message and its thread (bounded) as a document; the message alone when genbot
        cannot read the channel."""
        channel = kept.get("channel", "")
        root = kept.get("thread_ts") or kept.get("ts", "")
        try:
            answer = await client.conversations_replies(
                channel=channel, ts=root, limit=THREAD_MESSAGES_MAX
            )
            messages = list(answer.get("messages") or [])
            header = f"A thread in <#{channel}>, the message asked about at {_clock(kept['ts'])}"
        except SlackApiError as error:
            log.info(
                "conversations.replies for the shortcut failed: %s", error.response.get("error")
            )
            messages = [
                {
                    "user": kept.get("user", ""),
                    "ts": kept.get("ts", ""),
                    "text": kept.get("text", ""),
                }
            ]
            header = (
                f"A message in <#{channel}> (genbot cannot read that channel's thread: "
                "invite it there to include the replies)"
            )
        return await transcript("message-and-thread.txt", header, messages, names)


def channel_in_view(context: Any) -> str | None:
    """The channel an event's ``context`` names first (its entities come by relevance)."""
    if not isinstance(context, dict):
        return None
    for entity in context.get("entities") or []:
        if isinstance(entity, dict) and entity.get("type") == "slack#/types/channel_id":
            value = str(entity.get("value") or "")
            if value and not value.startswith("D"):
                return value
    return None


def requested_span(text: str) -> float:
    """The seconds "the last 2 hours" (or minutes, days) names; an hour when none, at most a
    week."""
    match = _SPAN.search(text)
    if match is None:
        return 3600.0
    count = int(match.group(1) or 1)
    return float(min(count * _SPAN_SECONDS[match.group(2).lower()], MAX_SPAN_SECONDS))


def describe_span(seconds: float) -> str:
    for unit, size in (("day", 86400), ("hour", 3600), ("minute", 60)):
        if seconds >= size and seconds % size == 0:
            count = int(seconds // size)
            return unit if count == 1 else f"{count} {unit}s"
    return f"{int(seconds)} seconds"


def unreadable_text(channel: str, code: str) -> str:
    if code in ("not_in_channel", "channel_not_found"):
        return _(
            "genbot cannot read <#{channel}>: it is not a member there. Invite it "
            "(/invite @genbot) and ask again.",
            channel=channel,
        )
    return _(
        "genbot could not read <#{channel}> just now (Slack answered {code}); try again.",
        channel=channel,
        code=code,
    )


def _clock(ts: str) -> str:
    try:
        return datetime.fromtimestamp(float(ts), UTC).strftime("%Y-%m-%d %H:%M UTC")
    except ValueError:
        return "an unknown time"


async def transcript(
    filename: str, header: str, messages: Sequence[dict[str, Any]], names: UserNames
) -> Attachment:
    """``messages`` (oldest first) as a text document: one ``[time] name: text`` per message."""
    lines = [header]
    for message in messages:
        author = str(message.get("user") or message.get("username") or "")
        name = (await names(author)) if author else "a bot"
        text = plain_text(str(message.get("text") or ""), None).replace("\n", "\n    ")
        lines.append(f"[{_clock(str(message.get('ts') or ''))}] {name or author}: {text}")
    data = "\n".join(lines).encode()
    return Attachment(filename, content_type="text/plain", size=len(data), data=data)
