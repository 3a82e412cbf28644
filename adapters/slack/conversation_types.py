"""Which kind of conversation a Slack channel id is, for events that do not say.

``message`` events carry ``channel_type``; slash commands and button presses name the
conversation (``mpdm-…`` for a group DM, ``directmessage`` for a DM: :func:`.inbound.
channel_type_named`). ``app_mention`` events carry neither, and a group DM's id starts with
``G`` or ``C`` like a private or public channel's, so the type is asked of ``conversations.info``
(``is_im``, ``is_mpim``) once per conversation and kept: a conversation's kind does not change.
"""

from __future__ import annotations

import logging
from collections import OrderedDict

from slack_sdk.errors import SlackApiError
from slack_sdk.web.async_client import AsyncWebClient

log = logging.getLogger(__name__)

CONVERSATIONS_KEPT = 4096


class ConversationTypes:
    """Slack's ``channel_type`` (``im``, ``mpim``, ``group``, ``channel``) of conversations,
    read from ``conversations.info`` and kept."""

    def __init__(self, kept: int = CONVERSATIONS_KEPT) -> None:
        self._kept = kept
        self._types: OrderedDict[tuple[str, str], str] = OrderedDict()

    async def of(self, client: AsyncWebClient, team_id: str, channel_id: str) -> str | None:
        """The ``channel_type`` of ``channel_id`` in ``team_id``; ``None`` when Slack does not
        tell (the failure is logged, and asked again next time)."""
        if channel_id.startswith("D"):
            return "im"
        key = (team_id, channel_id)
        if key in self._types:
            self._types.move_to_end(key)
            return self._types[key]
        try:
            answer = await client.conversations_info(channel=channel_id)
        except SlackApiError as error:
            log.warning(
                "could not tell what kind of conversation %s is: %s",
                channel_id,
                error.response.get("error"),
            )
            return None
        info = answer.get("channel") or {}
        kind = (
            "im"
            if info.get("is_im")
            else "mpim"
            if info.get("is_mpim")
            else "group"
            if info.get("is_group") or info.get("is_private")
            else "channel"
        )
        self._types[key] = kind
        while len(self._types) > self._kept:
            self._types.popitem(last=False)
        return kind
