"""Images shown inside genbot's own messages on Slack.

A job's result is one message: its images are uploaded without sharing them anywhere
(``files.completeUploadExternal`` without ``channel_id``: the file stays private to genbot, no
file-share message appears), then shown by the message's ``image`` blocks through their
``slack_file`` id. Slack processes an upload after the upload call answers, and refuses a block
naming a file before that (``invalid_blocks``, "invalid slack file"); the file is ready once
``files.info`` gives its ``mimetype`` (the sign Slack's developers point to), so
:class:`SlackUploads` waits for it, within bounds, before the message is posted.

Nothing is uploaded twice: an upload made by this process is remembered (a retried send reuses
it), and a send that may follow a crash (``OutMessage.may_exist``) first looks for genbot's
own recent uploads of the same file names (``files.list``; genbot's image names contain the
job id). Image blocks show PNG, JPEG and GIF only: other images are sent as PNG.
"""

from __future__ import annotations

import asyncio
import hashlib
import io
import logging
import time
from collections import OrderedDict
from collections.abc import Awaitable, Callable, Iterable, Mapping, Sequence
from dataclasses import replace
from typing import Any

from PIL import Image
from slack_sdk.web.async_client import AsyncWebClient

from bot.kernel import ImageFile, MediaError, OutMessage, inspect_image

from .calls import Call
from .errors import SlackRefused
from .keyed import EarlierPost

log = logging.getLogger(__name__)

FILE_REF_PREFIX = "file:"
"""A message id made of a file's id: what earlier versions stored for an image-only upload."""
BLOCK_IMAGE_TYPES = frozenset({"image/png", "image/jpeg", "image/gif"})
READY_WAITS = (0.1, 0.2, 0.4, 0.8, 1.6, 3.2, 3.2, 3.2)
"""Pauses between ``files.info`` checks of a new upload (≈ 13 s in all); the message is posted
after the last one even if Slack still says nothing (a refusal is then retried by the core)."""
RECENT_UPLOADS = 512
RECOVERY_WINDOW_SECONDS = 24 * 3600
RECOVERY_PAGE = 200
Sleep = Callable[[float], Awaitable[None]]


def block_ready(image: ImageFile) -> ImageFile:
    """``image`` in a type image blocks show: as is when PNG, JPEG or GIF, else as PNG (the
    image was checked before; one that cannot be read stays as it is)."""
    if image.content_type in BLOCK_IMAGE_TYPES:
        return image
    try:
        inspect_image(image.data)
        with Image.open(io.BytesIO(image.data)) as opened:
            buffer = io.BytesIO()
            opened.save(buffer, format="PNG")
    except (MediaError, OSError) as error:
        log.info("%s stays as it is: %s", image.filename, error)
        return image
    stem = image.filename.rsplit(".", 1)[0] or "image"
    return replace(image, filename=f"{stem}.png", data=buffer.getvalue(), content_type="image/png")


class SlackUploads:
    """Uploads a message's images privately and says when Slack can show them."""

    def __init__(self, call: Call, *, sleep: Sleep = asyncio.sleep) -> None:
        self._call = call
        self._sleep = sleep
        self._recent: OrderedDict[tuple[str, str, str], str] = OrderedDict()
        self._bot_users: dict[str, str] = {}

    async def files_for(
        self,
        client: AsyncWebClient,
        team_id: str,
        message: OutMessage,
        earlier: EarlierPost | None = None,
    ) -> list[str]:
        """The ids of Slack files showing ``message``'s images, in order, ready to be shown:
        found (shared by an earlier attempt, uploaded by this process, or — when the message
        may exist — uploaded by genbot before a restart), else uploaded now."""
        images = [block_ready(i) for i in message.images]
        if not images:
            return []
        known: dict[str, str] = dict(earlier.file_ids) if earlier is not None else {}
        for image in images:
            remembered = self._recent.get(_key(team_id, image))
            if remembered is not None:
                known.setdefault(image.filename, remembered)
        missing = [i for i in images if i.filename not in known]
        if missing and message.may_exist:
            names = {i.filename for i in missing}
            known.update(await self._uploaded_before(client, team_id, names))
            missing = [i for i in images if i.filename not in known]
        fresh = await self._upload(client, team_id, missing) if missing else {}
        known.update(fresh)
        ids = [known[i.filename] for i in images]
        await self.until_ready(client, ids)
        return ids

    async def until_ready(self, client: AsyncWebClient, file_ids: Iterable[str]) -> None:
        """Wait (bounded) until Slack has processed ``file_ids``."""
        waiting = list(dict.fromkeys(file_ids))
        for pause in (*READY_WAITS, None):
            waiting = [f for f in waiting if not await self._ready(client, f)]
            if not waiting:
                return
            if pause is None:
                log.warning("Slack has not processed %s yet; posting anyway", ", ".join(waiting))
                return
            await self._sleep(pause)

    async def _ready(self, client: AsyncWebClient, file_id: str) -> bool:
        try:
            answer = await self._call("files.info", client.files_info(file=file_id))
        except SlackRefused as refused:
            log.info("files.info %s: %s; not waiting for it", file_id, refused.code)
            return True
        file = answer.get("file") or {}
        return bool(file.get("mimetype"))

    async def _upload(
        self, client: AsyncWebClient, team_id: str, images: Sequence[ImageFile]
    ) -> dict[str, str]:
        uploads = [{"file": i.data, "filename": i.filename, "title": i.filename} for i in images]
        response = await self._call("files.upload", client.files_upload_v2(file_uploads=uploads))
        data = response.data if isinstance(response.data, dict) else {}
        files: list[Mapping[str, Any]] = [f for f in data.get("files") or [] if f.get("id")]
        uploaded: dict[str, str] = {}
        for image, file in zip(images, files, strict=False):
            uploaded[image.filename] = str(file["id"])
            self._recent[_key(team_id, image)] = str(file["id"])
            while len(self._recent) > RECENT_UPLOADS:
                self._recent.popitem(last=False)
        return uploaded

    async def _uploaded_before(
        self, client: AsyncWebClient, team_id: str, names: set[str]
    ) -> dict[str, str]:
        """genbot's uploads of the last day named ``names`` (newest first wins); nothing when
        Slack will not say (the images are then uploaded again: harmless, they are private)."""
        try:
            user = await self._bot_user(client, team_id)
            page = await self._call(
                "files.list",
                client.files_list(
                    user=user,
                    ts_from=str(int(time.time() - RECOVERY_WINDOW_SECONDS)),
                    types="images",
                    count=RECOVERY_PAGE,
                ),
            )
        except SlackRefused as refused:
            log.info("cannot look for earlier uploads: %s", refused.code)
            return {}
        found: dict[str, str] = {}
        for file in page.get("files") or []:
            name, file_id = str(file.get("name") or ""), str(file.get("id") or "")
            if name in names and file_id:
                found.setdefault(name, file_id)
        return found

    async def _bot_user(self, client: AsyncWebClient, team_id: str) -> str:
        if team_id not in self._bot_users:
            identity = await self._call("auth.test", client.auth_test())
            self._bot_users[team_id] = str(identity.get("user_id") or "")
        return self._bot_users[team_id]


def _key(team_id: str, image: ImageFile) -> tuple[str, str, str]:
    return (team_id, image.filename, hashlib.blake2b(image.data, digest_size=16).hexdigest())
