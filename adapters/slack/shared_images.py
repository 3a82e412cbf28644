"""The files a user shared in a channel lately, as attachments: Slack's slash commands carry no
files, so :func:`bot.kernel.command_images.command_images` looks there for a command's images."""

from __future__ import annotations

import logging
import time

from slack_sdk.errors import SlackApiError
from slack_sdk.web.async_client import AsyncWebClient

from bot.kernel import RECENT_FILES_SECONDS, Attachment

from .inbound import attachments_from_files

log = logging.getLogger(__name__)


async def recent_files(
    client: AsyncWebClient, channel: str, user_id: str
) -> list[Attachment] | None:
    """The files ``user_id`` shared in ``channel`` within ``RECENT_FILES_SECONDS``, newest
    first; ``None`` when the channel's history is out of reach (genbot not a member, scope
    missing)."""
    try:
        history = await client.conversations_history(
            channel=channel, oldest=f"{time.time() - RECENT_FILES_SECONDS:.6f}", limit=50
        )
    except SlackApiError as error:
        log.info("No channel history for images: %s", error.response.get("error"))
        return None
    return [
        attachment
        for message in history.get("messages") or []
        if message.get("user") == user_id
        for attachment in attachments_from_files(message.get("files"))
    ]
