"""genbot's :class:`~bot.events.Surface` on Slack's Web API.

Text and buttons go out with ``chat.postMessage`` / ``chat.update`` (see
:mod:`adapters.slack.formatting`); images with ``files_upload_v2`` into the channel or thread,
followed by the message carrying text and buttons, whose ``ts`` is the returned
:class:`MessageRef`. ``ratelimited`` answers become :class:`RateLimited`; every other refusal
a :class:`SurfaceError` naming the method and Slack's error code.

Model answers stream natively where Slack allows it (:mod:`adapters.slack.streaming`); each
kind of write has its own per-workspace budget, as Slack gives each method its own tier.

A keyed message (see :mod:`adapters.slack.keyed`) is posted with its key as metadata. When an
earlier attempt may have reached Slack, the recent messages of the place are read first: the
keyed message found there is returned instead of posting another, and images already shared
there are not uploaded again. If that look-up fails the send fails too (the core retries it
later) rather than risk a duplicate, unless it cannot work at all (a missing scope).
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Mapping
from types import MappingProxyType
from typing import Any, TypeVar

import aiohttp
import yarl
from slack_sdk.errors import SlackApiError, SlackClientError
from slack_sdk.web.async_client import AsyncWebClient
from slack_sdk.webhook.async_client import AsyncWebhookClient

from bot.config import LimitsSettings
from bot.events import (
    Attachment,
    Command,
    Event,
    ImageFile,
    MessageGone,
    MessageRef,
    Modal,
    OutMessage,
    Place,
    RateLimited,
    SurfaceError,
    SurfaceLimits,
    User,
    WorkStatus,
    WriteKind,
)

from .errors import SlackRefused
from .formatting import (
    MODEL_TEXT_BUDGET,
    fallback_text,
    message_blocks,
    modal_view,
    notice_blocks,
    plain_notice,
)
from .inbound import SlackOrigin
from .keyed import EarlierPost, key_metadata
from .status import StatusLine
from .streaming import SlackStream, StreamSupport

log = logging.getLogger(__name__)
T = TypeVar("T")

SLACK_FILE_HOSTS = frozenset({"files.slack.com"})
# chat.postMessage allows about one message per second per channel with short bursts; the
# workspace-wide chat.update budget (Tier 3) comes from [limits] slack_updates_per_minute.
CHANNEL_WRITES_PER_WINDOW = 5
CHANNEL_WINDOW_SECONDS = 5.0
FILE_REF_PREFIX = "file:"
METHOD_TIERS: Mapping[WriteKind, int | None] = MappingProxyType(
    {"send": None, "stream_start": 20, "stream_append": 100, "stream_stop": 20}
)
"""Per-workspace budgets of the methods with a tier of their own: ``chat.startStream`` and
``chat.stopStream`` Tier 2, ``chat.appendStream`` Tier 4; ``chat.postMessage`` has only its
per-channel limit. ``chat.update`` (Tier 3) is the shared ``slack_updates_per_minute``."""
# Where an earlier attempt is looked for: the newest top-level messages of a channel, or the
# first pages of a thread (conversations.replies reads threads oldest first).
HISTORY_LOOKBACK = 100
THREAD_PAGE = 200
THREAD_PAGES = 5
# Refusals of the look-up that no retry can cure: the message is posted without it.
LOOKUP_IMPOSSIBLE = frozenset(
    {"missing_scope", "not_in_channel", "channel_not_found", "thread_not_found"}
)


class SlackSurface:
    """What the core calls to post, edit, upload, open forms and fetch files on Slack."""

    platform = "slack"
    command_names: Mapping[str, str] = MappingProxyType(
        {"settings": "genbot settings", "usage": "genbot usage", "help": "genbot help"}
    )

    def __init__(
        self,
        client: AsyncWebClient,
        *,
        limits: LimitsSettings,
        bot_token: str,
        api_url: str,
        call_timeout: float = 30.0,
    ) -> None:
        self.client = client
        self.limits = SurfaceLimits(
            max_text=MODEL_TEXT_BUDGET,
            edits_per_window_per_channel=CHANNEL_WRITES_PER_WINDOW,
            edit_window_seconds=CHANNEL_WINDOW_SECONDS,
            edits_per_minute_per_workspace=limits.slack_updates_per_minute,
            min_seconds_between_edits_of_one_message=1.0 / limits.slack_message_updates_per_second,
            max_buttons_per_row=5,
            writes_per_minute_per_workspace=METHOD_TIERS,
            edits_add_images=False,
        )
        self.max_download_bytes = limits.max_upload_bytes
        self.call_timeout = call_timeout
        self._bot_token = bot_token
        self._api_origin = yarl.URL(api_url).origin()
        self._session: aiohttp.ClientSession | None = None
        self.streaming = StreamSupport()
        self.status = StatusLine(client, self._call)

    async def close(self) -> None:
        """Release the HTTP session used for downloads and response URLs."""
        await self.status.close()
        if self._session is not None:
            await self._session.close()
            self._session = None

    # Surface ----------------------------------------------------------------------------------

    async def send(
        self, place: Place, message: OutMessage, *, origin: Event | None = None
    ) -> MessageRef:
        earlier = await self._earlier(place, message)
        if earlier.message_ts is not None:
            return MessageRef(place, earlier.message_ts)
        images = tuple(i for i in message.images if i.filename not in earlier.files)
        upload = await self._upload(place, images) if images else None
        if message.images and not message.text.strip() and not message.buttons:
            return MessageRef(place, _images_ref(upload, earlier, message.images, place))
        response = await self._call(
            "chat.postMessage",
            self.client.chat_postMessage(
                channel=place.channel_id,
                thread_ts=place.thread_id,
                text=fallback_text(message),
                blocks=message_blocks(message),
                unfurl_links=False,
                unfurl_media=False,
                metadata=key_metadata(message.key) if message.key else None,
            ),
        )
        self.status.posted(place.channel_id, place.thread_id)
        return MessageRef(place, str(response["ts"]))

    async def posted(self, place: Place, key: str) -> MessageRef | None:
        """The recent message in ``place`` posted with ``key``, if any."""
        earlier = EarlierPost(key)
        await self._look_back(place, earlier)
        return MessageRef(place, earlier.message_ts) if earlier.message_ts else None

    async def edit(self, ref: MessageRef, message: OutMessage) -> None:
        if ref.message_id.startswith(FILE_REF_PREFIX):
            raise SurfaceError("Slack cannot edit an uploaded file's message")
        if message.images:
            await self._upload(ref.place, message.images)
        try:
            await self._call(
                "chat.update",
                self.client.chat_update(
                    channel=ref.place.channel_id,
                    ts=ref.message_id,
                    text=fallback_text(message),
                    blocks=message_blocks(message),
                ),
            )
        except SlackRefused as refused:
            if refused.code == "message_not_found":
                raise MessageGone(str(refused)) from None
            raise

    async def delete(self, ref: MessageRef) -> None:
        """Delete a message genbot posted (a finished job's progress message)."""
        try:
            await self._call(
                "chat.delete",
                self.client.chat_delete(channel=ref.place.channel_id, ts=ref.message_id),
            )
        except SlackRefused as refused:
            if refused.code == "message_not_found":
                raise MessageGone(str(refused)) from None
            raise

    async def link(self, ref: MessageRef) -> str | None:
        """The message's permalink."""
        response = await self._call(
            "chat.getPermalink",
            self.client.chat_getPermalink(channel=ref.place.channel_id, message_ts=ref.message_id),
        )
        permalink = response.get("permalink")
        return str(permalink) if permalink else None

    async def start_stream(
        self,
        place: Place,
        text: str,
        *,
        origin: Event | None = None,
        recipient: User | None = None,
    ) -> SlackStream | None:
        """A natively streamed answer in ``place`` (its thread, else the thread of the message
        answered), or ``None`` where Slack does not stream (see
        :mod:`adapters.slack.streaming`)."""
        context = _origin(origin) if origin is not None else SlackOrigin()
        thread_ts = place.thread_id or context.thread_ts
        if not thread_ts or not self.streaming.allowed(place):
            return None
        to: dict[str, str] = {}
        if not place.is_dm:
            user = recipient or (origin.user if origin is not None else None)
            team = context.recipient_team_id or place.workspace_id
            if user is None or not team:
                return None
            to = {"recipient_user_id": user.id, "recipient_team_id": team}
        try:
            stream = await SlackStream.start(
                self.client, self._call, place, thread_ts, text, recipient=to
            )
        except SlackRefused as refused:
            if self.streaming.refused(place, refused.code):
                return None
            raise
        self.status.posted(place.channel_id, thread_ts)
        return stream

    async def show_status(
        self, place: Place, status: WorkStatus, *, origin: Event | None = None
    ) -> None:
        """Show genbot's working status in the thread of the answer (see
        :mod:`adapters.slack.status`)."""
        await self.status.show(place, status, origin)

    async def end_status(
        self, place: Place, status: WorkStatus, *, origin: Event | None = None
    ) -> None:
        """Genbot is done being ``status`` in ``place``."""
        await self.status.end(place, status, origin)

    async def send_ephemeral(self, origin: Event, text: str) -> None:
        notice, blocks = plain_notice(text), notice_blocks(text)
        context = _origin(origin)
        if (
            isinstance(origin, Command)
            and context.response_url
            and await self._respond(context.response_url, notice, blocks)
        ):
            return
        await self._call(
            "chat.postEphemeral",
            self.client.chat_postEphemeral(
                channel=origin.place.channel_id,
                user=origin.user.id,
                text=notice,
                blocks=blocks or None,
                thread_ts=origin.place.thread_id,
            ),
        )

    async def open_modal(self, origin: Event, modal: Modal) -> None:
        trigger_id = _origin(origin).trigger_id
        if not trigger_id:
            raise SurfaceError("Slack opens forms only in answer to a click or a command")
        await self._call(
            "views.open",
            self.client.views_open(trigger_id=trigger_id, view=modal_view(modal, origin.place)),
        )

    async def typing(self, place: Place) -> None:
        """Slack offers bots no typing indicator outside assistant threads: nothing to do."""

    async def start_thread(self, ref: MessageRef, name: str) -> Place:
        """On Slack a thread is the replies to a message: its ``ts`` is the thread id."""
        if ref.place.thread_id:
            return ref.place
        return ref.place.in_thread(ref.message_id)

    async def download(self, attachment: Attachment) -> bytes:
        if attachment.data is not None:
            return attachment.data
        url = yarl.URL(attachment.url)
        if url.scheme not in ("http", "https") or not url.host:
            raise SurfaceError(f"{attachment.filename}: only http(s) links can be fetched")
        headers = {"Authorization": f"Bearer {self._bot_token}"} if self._trusted(url) else {}
        limit = self.max_download_bytes
        try:
            async with (
                asyncio.timeout(self.call_timeout),
                self._http().get(url, headers=headers) as response,
            ):
                if response.status != 200:
                    raise SurfaceError(
                        f"{attachment.filename}: fetching it failed (HTTP {response.status})"
                    )
                if response.content_type == "text/html":
                    raise SurfaceError(
                        f"{attachment.filename}: got a web page instead of the file "
                        "(does the Slack app have the files:read scope?)"
                    )
                data = bytearray()
                async for chunk in response.content.iter_chunked(64 * 1024):
                    data += chunk
                    if len(data) > limit:
                        raise SurfaceError(
                            f"{attachment.filename} is larger than {limit // (1024 * 1024)} MiB"
                        )
        except (aiohttp.ClientError, TimeoutError) as error:
            raise SurfaceError(
                f"{attachment.filename}: fetching it failed ({type(error).__name__})"
            ) from None
        return bytes(data)

    # Helpers ----------------------------------------------------------------------------------

    def _trusted(self, url: yarl.URL) -> bool:
        """Whether ``url`` may receive the bot token: Slack's file host or the API's own origin."""
        if url.origin() == self._api_origin:
            return True
        return url.scheme == "https" and url.host in SLACK_FILE_HOSTS

    def _http(self) -> aiohttp.ClientSession:
        if self._session is None or self._session.closed:
            self._session = aiohttp.ClientSession()
        return self._session

    async def _earlier(self, place: Place, message: OutMessage) -> EarlierPost:
        """What an earlier attempt at ``message`` left in ``place``: looked up only for a keyed
        message that may have reached Slack."""
        earlier = EarlierPost(message.key or "")
        if not message.key or not message.may_exist:
            return earlier
        try:
            await self._look_back(place, earlier)
        except SlackRefused as refused:
            if refused.code not in LOOKUP_IMPOSSIBLE:
                raise
            log.warning(
                "Cannot look for an earlier %s in %s (%s); posting it anyway",
                message.key,
                place.channel_id,
                refused.code,
            )
        return earlier

    async def _look_back(self, place: Place, earlier: EarlierPost) -> None:
        if place.thread_id is None:
            page = await self._call(
                "conversations.history",
                self.client.conversations_history(
                    channel=place.channel_id, limit=HISTORY_LOOKBACK, include_all_metadata=True
                ),
            )
            earlier.note(page.get("messages") or [])
            return
        cursor: str | None = None
        for _ in range(THREAD_PAGES):
            page = await self._call(
                "conversations.replies",
                self.client.conversations_replies(
                    channel=place.channel_id,
                    ts=place.thread_id,
                    limit=THREAD_PAGE,
                    cursor=cursor,
                    include_all_metadata=True,
                ),
            )
            earlier.note(page.get("messages") or [])
            cursor = (page.get("response_metadata") or {}).get("next_cursor") or None
            if earlier.message_ts is not None or not page.get("has_more") or cursor is None:
                return

    async def _upload(self, place: Place, images: tuple[ImageFile, ...]) -> Mapping[str, Any]:
        uploads = [{"file": i.data, "filename": i.filename, "title": i.filename} for i in images]
        response = await self._call(
            "files.upload",
            self.client.files_upload_v2(
                file_uploads=uploads, channel=place.channel_id, thread_ts=place.thread_id
            ),
        )
        self.status.posted(place.channel_id, place.thread_id)
        return response.data if isinstance(response.data, dict) else {}

    async def _respond(self, response_url: str, text: str, blocks: list[dict[str, Any]]) -> bool:
        webhook = AsyncWebhookClient(
            response_url, session=self._http(), timeout=int(self.call_timeout)
        )
        try:
            async with asyncio.timeout(self.call_timeout):
                answer = await webhook.send(
                    text=text,
                    blocks=blocks or None,
                    response_type="ephemeral",
                    replace_original=False,
                )
        except (aiohttp.ClientError, TimeoutError) as error:
            log.warning("response_url post failed: %s", type(error).__name__)
            return False
        return answer.status_code == 200

    async def _call(self, method: str, call: Awaitable[T]) -> T:
        try:
            async with asyncio.timeout(self.call_timeout):
                return await call
        except SlackApiError as error:
            response = error.response
            if response.status_code == 429 or response.get("error") == "ratelimited":
                raise RateLimited(_retry_after(response.headers)) from None
            raise SlackRefused(method, str(response.get("error"))) from None
        except (SlackClientError, aiohttp.ClientError) as error:
            raise SurfaceError(f"Slack {method} failed: {type(error).__name__}") from None
        except TimeoutError:
            raise SurfaceError(f"Slack did not answer {method} in {self.call_timeout:g}s") from None


def _origin(event: Event) -> SlackOrigin:
    return event.context if isinstance(event.context, SlackOrigin) else SlackOrigin()


def _retry_after(headers: Any) -> float:
    value = None
    if isinstance(headers, Mapping):
        value = headers.get("Retry-After") or headers.get("retry-after")
    try:
        return max(float(value), 0.0) if value is not None else 1.0
    except (TypeError, ValueError):
        return 1.0


def _shared_ts(upload: Mapping[str, Any], channel_id: str) -> str | None:
    for file in upload.get("files") or []:
        for shares in (file.get("shares") or {}).values():
            for share in shares.get(channel_id) or []:
                if share.get("ts"):
                    return str(share["ts"])
    return None


def _images_ref(
    upload: Mapping[str, Any] | None,
    earlier: EarlierPost,
    images: tuple[ImageFile, ...],
    place: Place,
) -> str:
    """The message id of a text-less image post: the upload's, else the earlier one's."""
    if upload is None:
        return earlier.files[images[0].filename]
    return _shared_ts(upload, place.channel_id) or _file_ref(upload)


def _file_ref(upload: Mapping[str, Any]) -> str:
    files = upload.get("files") or [{}]
    return FILE_REF_PREFIX + str(files[0].get("id", "unknown"))
