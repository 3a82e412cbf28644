"""The images a slash command works on: https links in its text, else the images its user
shared in the channel shortly before (Slack slash commands carry no files)."""

from __future__ import annotations

import logging
import time
from collections.abc import Mapping

from slack_sdk.errors import SlackApiError
from slack_sdk.web.async_client import AsyncWebClient

from bot.chat.requests import is_image
from bot.events import Attachment

from .inbound import attachments_from_files, image_slots, url_attachment, urls_in, without_urls

log = logging.getLogger(__name__)

RECENT_FILES_SECONDS = 15 * 60


async def command_images(
    client: AsyncWebClient, name: str, text: str, channel: str, user_id: str
) -> tuple[Mapping[str, Attachment] | str, str]:
    """Images for commands that take them: https URLs in the text if any (filling the
    command's image options in order), else the images the same user shared in the channel
    in the last 15 minutes, oldest first: up to five for ``/blend``, otherwise the newest
    image(s) the command requires. A string instead of images says what the user must do."""
    slots, required = image_slots(name)
    if not slots:
        return {}, text
    if name == "describe" and urls_in(text):
        return {}, text
    links = urls_in(text)
    if links:
        return dict(zip(slots, map(url_attachment, links), strict=False)), without_urls(text)
    needed = max(required, 1)
    wanted = len(slots) if name == "blend" else needed
    shared = await recent_images(client, channel, user_id, wanted)
    if shared is None:
        return (
            "genbot cannot read this conversation to find your images: invite it with "
            "`/invite @genbot` (or paste https links after the command).",
            text,
        )
    if len(shared) < needed:
        many = f"{needed} images" if needed > 1 else "an image"
        return (
            f"`/{name.replace('.', ' ')}` needs {many}: share {many} in this channel first "
            "(or paste https links after the command), then run it again.",
            text,
        )
    return dict(zip(slots, shared, strict=False)), text


async def recent_images(
    client: AsyncWebClient, channel: str, user_id: str, count: int
) -> list[Attachment] | None:
    """The user's ``count`` newest shared images, oldest first; ``None`` when the channel's
    history is out of reach (genbot not a member, scope missing)."""
    try:
        history = await client.conversations_history(
            channel=channel, oldest=f"{time.time() - RECENT_FILES_SECONDS:.6f}", limit=50
        )
    except SlackApiError as error:
        log.info("No channel history for images: %s", error.response.get("error"))
        return None
    newest_first: list[Attachment] = []
    for message in history.get("messages") or []:
        if message.get("user") == user_id:
            newest_first += [a for a in attachments_from_files(message.get("files")) if is_image(a)]
    return list(reversed(newest_first[:count]))
