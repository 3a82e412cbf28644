"""genbot's :class:`~bot.kernel.surface.Surface` on Slack's Web API.

Messages go out with ``chat.postMessage`` / ``chat.update`` (see
:mod:`adapters.slack.formatting`), one message however many images: images are uploaded
privately and shown by the message's ``image`` blocks (:mod:`adapters.slack.uploads`).
``ratelimited`` answers become :class:`RateLimited`; every other refusal a
:class:`SurfaceError` naming the method and Slack's error code.

Model answers stream natively where Slack allows it (:mod:`adapters.slack.streaming`); each
kind of write has its own per-workspace window, as Slack gives each method its own tier. Every
call uses the bot token of the place's workspace (:mod:`adapters.slack.tokens`).

A keyed message (see :mod:`adapters.slack.keyed`) is posted with its key as metadata. When an
earlier attempt may have reached Slack, the recent messages of the place are read first: the
keyed message found there is returned instead of posting another, and images genbot already
uploaded are not uploaded again. If that look-up fails the send fails too (the core retries it
later) rather than risk a duplicate, unless it cannot work at all (a missing scope).
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Mapping, Sequence
from functools import partial
from types import MappingProxyType
from typing import Any

import aiohttp
from slack_sdk.web.async_client import AsyncWebClient
from slack_sdk.webhook.async_client import AsyncWebhookClient

from bot.kernel import (
    ActivityKind,
    Attachment,
    ButtonPress,
    Command,
    CommandNames,
    Event,
    HomeOpened,
    HomeView,
    MessageGone,
    MessageRef,
    Modal,
    OutMessage,
    Place,
    PlatformProfile,
    SurfaceError,
    User,
    _,
)

from .activity import StatusLine
from .calls import SlackCalls
from .errors import SlackRefused
from .files import FileFetcher
from .formatting import (
    fallback_text,
    message_blocks,
    modal_view,
    notice_blocks,
    plain_notice,
)
from .home import HomeTab, ResultFiles
from .inbound import SlackOrigin, is_im
from .keyed import EarlierPost, find_earlier, key_metadata, look_back
from .sessions import AgentSessions
from .streaming import SlackStream, StreamSupport
from .tokens import OneWorkspace, TeamTokens
from .uploads import FILE_REF_PREFIX, SlackUploads

log = logging.getLogger(__name__)


class SlackSurface:
    """What the core calls to post, edit, upload, open forms and fetch files on Slack."""

    platform = "slack"
    spellings: Mapping[str, str] = MappingProxyType(
        {
            "settings": "genbot settings",
            "usage": "genbot usage",
            "help": "genbot help",
            "prefer.option": "genbot prefer option",
            "prefer.suffix": "genbot prefer suffix",
            "admin.moderation": "genbot admin moderation",
            "admin.audit": "genbot admin audit",
        }
    )
    """The commands Slack users type as ``/genbot …`` (the manifest's)."""

    def __init__(
        self,
        client: AsyncWebClient,
        *,
        profile: PlatformProfile,
        bot_token: str,
        api_url: str,
        call_timeout: float = 30.0,
        tokens: TeamTokens | None = None,
        max_upload_bytes: int = 8 * 1024 * 1024,
    ) -> None:
        """``client`` carries the API's address (and, for one workspace, its token);
        ``tokens`` gives each workspace's bot token (default: ``bot_token`` everywhere)."""
        self.client = client
        self.tokens = tokens or OneWorkspace(bot_token)
        self.profile = profile
        self.call_timeout = call_timeout
        self._clients: dict[str, AsyncWebClient] = {}
        self._call = SlackCalls(call_timeout, on_token_gone=self._forget_tokens)
        self._session: aiohttp.ClientSession | None = None
        self.files = FileFetcher(
            self.tokens,
            api_url,
            self._http,
            max_bytes=max_upload_bytes,
            timeout=call_timeout,
        )
        self.streaming = StreamSupport()
        self.activity = StatusLine(self.client_for, self._call)
        self.sessions = AgentSessions(self.client_for, self._call)
        self.home = HomeTab(self.client_for, self._call, ResultFiles(self.client_for, self._call))
        self.uploads = SlackUploads(self._call)

    async def close(self) -> None:
        """Release the HTTP session used for downloads and response URLs."""
        await self.activity.close()
        if self._session is not None:
            await self._session.close()
            self._session = None

    async def client_for(self, team_id: str) -> AsyncWebClient:
        """A client with the bot token of workspace ``team_id``."""
        token = await self.tokens.bot_token(team_id)
        if token == self.client.token:
            return self.client
        client = self._clients.get(team_id)
        if client is None or client.token != token:
            client = AsyncWebClient(
                token=token, base_url=self.client.base_url, timeout=self.client.timeout
            )
            self._clients[team_id] = client
        return client

    def _forget_tokens(self) -> None:
        for team_id in list(self._clients):
            self.tokens.forget(team_id)
        self._clients.clear()

    def command_names(self, place: Place) -> CommandNames:
        """Slack names commands as its users type them: ``/genbot settings``."""
        return CommandNames(spellings=self.spellings)

    # Surface ----------------------------------------------------------------------------------

    async def send(
        self, place: Place, message: OutMessage, *, origin: Event | None = None
    ) -> MessageRef:
        client = await self.client_for(place.workspace_id)
        earlier = await find_earlier(client, self._call, place, message)
        if earlier.message_ts is not None:
            return MessageRef(place, earlier.message_ts)
        files = await self.uploads.files_for(client, place.workspace_id, message, earlier)
        response = await self._call(
            "chat.postMessage",
            client.chat_postMessage(
                channel=place.channel_id,
                thread_ts=place.thread_id,
                text=fallback_text(message),
                blocks=message_blocks(message, files),
                unfurl_links=False,
                unfurl_media=False,
                metadata=key_metadata(message.key, files),
            ),
        )
        self.activity.posted(place.channel_id, place.thread_id)
        ts = str(response["ts"])
        if message.card or files:
            self.home.files.remember(place.channel_id, ts, files)
        return MessageRef(place, ts)

    async def posted(self, place: Place, key: str) -> MessageRef | None:
        """The recent message in ``place`` posted with ``key``, if any."""
        earlier = EarlierPost(key)
        await look_back(await self.client_for(place.workspace_id), self._call, place, earlier)
        return MessageRef(place, earlier.message_ts) if earlier.message_ts else None

    async def edit(self, ref: MessageRef, message: OutMessage) -> None:
        """Show ``message`` in ``ref``. Its images replace the message's; a job's message
        edited without images keeps those it shows (an edit marking a pressed button)."""
        if ref.message_id.startswith(FILE_REF_PREFIX):
            raise SurfaceError("Slack cannot edit an uploaded file's message")
        client = await self.client_for(ref.place.workspace_id)
        files: Sequence[str] = ()
        if message.images:
            files = await self.uploads.files_for(client, ref.place.workspace_id, message)
        elif message.card:
            files = await self.home.files.of(ref, strict=True)
        try:
            await self._call(
                "chat.update",
                client.chat_update(
                    channel=ref.place.channel_id,
                    ts=ref.message_id,
                    text=fallback_text(message),
                    blocks=message_blocks(message, files),
                    metadata=key_metadata(None, files) if message.images else None,
                ),
            )
        except SlackRefused as refused:
            if refused.code == "message_not_found":
                raise MessageGone(str(refused)) from None
            raise
        if message.images:
            self.home.files.remember(ref.place.channel_id, ref.message_id, files)

    async def delete(self, ref: MessageRef) -> None:
        """Delete a message genbot posted (a finished job's progress message)."""
        client = await self.client_for(ref.place.workspace_id)
        try:
            await self._call(
                "chat.delete",
                client.chat_delete(channel=ref.place.channel_id, ts=ref.message_id),
            )
        except SlackRefused as refused:
            if refused.code == "message_not_found":
                raise MessageGone(str(refused)) from None
            raise

    async def link(self, ref: MessageRef) -> str | None:
        """The message's permalink."""
        client = await self.client_for(ref.place.workspace_id)
        response = await self._call(
            "chat.getPermalink",
            client.chat_getPermalink(channel=ref.place.channel_id, message_ts=ref.message_id),
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
        to: tuple[str, str] | None = None
        if not is_im(place.channel_id):
            user = recipient or (origin.user if origin is not None else None)
            team = context.recipient_team_id or place.workspace_id
            if user is None or not team:
                return None
            to = (user.id, team)
        try:
            client = await self.client_for(place.workspace_id)
            stream = await SlackStream.start(
                client, self._call, place, thread_ts, text, recipient=to
            )
        except SlackRefused as refused:
            if self.streaming.refused(place, refused.code):
                return None
            raise
        self.activity.posted(place.channel_id, thread_ts)
        session = (place.workspace_id, place.channel_id, thread_ts)
        await self.sessions.processing(*session, client)
        stream.on_end = partial(self.sessions.ended, *session)
        return stream

    async def show_activity(
        self, place: Place, kind: ActivityKind, *, origin: Event | None = None
    ) -> None:
        """Show what genbot is doing in the thread of the answer (Slack's status line, see
        :mod:`adapters.slack.activity`)."""
        await self.activity.show(place, kind, origin)

    async def end_activity(
        self, place: Place, kind: ActivityKind, *, origin: Event | None = None
    ) -> None:
        """Genbot is done being ``kind`` in ``place`` (done "thinking": the answer ended, so
        its agent session is no longer ``processing``, even when its stream was abandoned)."""
        await self.activity.end(place, kind, origin)
        thread_ts = place.thread_id or (_origin(origin).thread_ts if origin is not None else None)
        if kind == "thinking" and thread_ts:
            await self.sessions.active(place.workspace_id, place.channel_id, thread_ts)

    async def publish_home(self, event: HomeOpened, view: HomeView) -> None:
        """Show ``view`` on the user's App Home tab (see :mod:`adapters.slack.home`)."""
        await self.home.publish(event, view)

    async def repost(self, ref: MessageRef, place: Place, message: OutMessage) -> MessageRef:
        """Post ``message`` in ``place`` under the images result ``ref`` shows."""
        return await self.home.repost(ref, place, message)

    async def send_ephemeral(self, origin: Event, text: str) -> None:
        notice, blocks = plain_notice(text), notice_blocks(text)
        context = _origin(origin)
        if (
            isinstance(origin, Command)
            and context.response_url
            and await self._respond(context.response_url, notice, blocks)
        ):
            return
        client = await self.client_for(origin.place.workspace_id)
        await self._call(
            "chat.postEphemeral",
            client.chat_postEphemeral(
                channel=origin.place.channel_id,
                user=origin.user.id,
                text=notice,
                blocks=blocks or None,
                thread_ts=origin.place.thread_id,
            ),
        )

    async def send_file_privately(
        self, origin: Event, text: str, filename: str, data: bytes
    ) -> None:
        """The file in ``origin``'s user's direct messages with genbot (a file cannot be in
        an ephemeral message), and a private note where they asked saying so."""
        client = await self.client_for(origin.place.workspace_id)
        opened = await self._call(
            "conversations.open", client.conversations_open(users=origin.user.id)
        )
        channel = str((opened.get("channel") or {}).get("id") or "")
        if not channel:
            raise SurfaceError("Slack opened no direct message channel")
        await self._call(
            "files.upload",
            client.files_upload_v2(
                channel=channel, content=data, filename=filename, title=filename,
                initial_comment=text,
            ),
        )  # fmt: skip
        if channel != origin.place.channel_id:
            await self.send_ephemeral(
                origin, _("Sent `{file}` to your direct messages with genbot.", file=filename)
            )

    async def send_private(self, origin: Event, message: OutMessage) -> None:
        """``message`` (images and buttons too) as an ephemeral message to ``origin``'s user
        in its place; its images are uploaded privately as for any message."""
        client = await self.client_for(origin.place.workspace_id)
        files = await self.uploads.files_for(client, origin.place.workspace_id, message)
        await self._call(
            "chat.postEphemeral",
            client.chat_postEphemeral(
                channel=origin.place.channel_id,
                user=origin.user.id,
                text=fallback_text(message),
                blocks=message_blocks(message, files),
                thread_ts=origin.place.thread_id,
            ),
        )

    async def edit_pressed(self, press: ButtonPress, message: OutMessage) -> None:
        """Replace the message ``press`` came from, an ephemeral one too, through the press's
        ``response_url`` (``replace_original``); buttons Slack cannot show disabled are left
        out. Its images are not shown again (the preview this replaces has none)."""
        response_url = _origin(press).response_url
        if not response_url:
            raise SurfaceError("Slack sent no response_url with this press")
        text, blocks = fallback_text(message), message_blocks(message)
        if not await self._respond(response_url, text, blocks, replace=True):
            raise SurfaceError("Slack did not take the new version of the pressed message")

    async def open_modal(self, origin: Event, modal: Modal) -> None:
        trigger_id = _origin(origin).trigger_id
        if not trigger_id:
            raise SurfaceError("Slack opens forms only in answer to a click or a command")
        client = await self.client_for(origin.place.workspace_id)
        opened = await self._call(
            "views.open",
            client.views_open(trigger_id=trigger_id, view=modal_view(modal, origin.place)),
        )
        if modal.preview is not None:
            await self._show_preview(client, origin.place, modal, opened.get("view") or {})

    async def _show_preview(
        self, client: AsyncWebClient, place: Place, modal: Modal, view: Mapping[str, Any]
    ) -> None:
        """Add ``modal``'s preview to the open form ``view``: the trigger to open it lasts 3 s,
        too short to upload an image and wait for Slack to process it, so the form opens first
        and gains its picture by ``views.update`` (kept values stay: block ids are unchanged).
        Best effort: a form closed or submitted meanwhile keeps working without it."""
        assert modal.preview is not None
        shown = OutMessage(text="", images=(modal.preview,))
        try:
            [file_id] = await self.uploads.files_for(client, place.workspace_id, shown)
            await self._call(
                "views.update",
                client.views_update(
                    view_id=str(view.get("id")),
                    hash=view.get("hash"),
                    view=modal_view(modal, place, file_id),
                ),
            )
        except SurfaceError as error:
            log.info("the form's preview was not shown: %s", error)

    async def typing(self, place: Place) -> None:
        """Slack offers bots no typing indicator outside assistant threads: nothing to do."""

    async def start_thread(self, ref: MessageRef, name: str) -> Place:
        """On Slack a thread is the replies to a message: its ``ts`` is the thread id."""
        if ref.place.thread_id:
            return ref.place
        return ref.place.in_thread(ref.message_id)

    async def download(self, attachment: Attachment) -> bytes:
        return await self.files.download(attachment)

    # Helpers ----------------------------------------------------------------------------------

    def _http(self) -> aiohttp.ClientSession:
        if self._session is None or self._session.closed:
            self._session = aiohttp.ClientSession()
        return self._session

    async def _respond(
        self, response_url: str, text: str, blocks: list[dict[str, Any]], *, replace: bool = False
    ) -> bool:
        """Answer through ``response_url``: a new ephemeral message, or (``replace``) the
        message the interaction came from replaced; whether Slack took it."""
        webhook = AsyncWebhookClient(
            response_url, session=self._http(), timeout=int(self.call_timeout)
        )
        try:
            async with asyncio.timeout(self.call_timeout):
                answer = await webhook.send(
                    text=text,
                    blocks=blocks or None,
                    response_type="ephemeral",
                    replace_original=replace,
                )
        except (aiohttp.ClientError, TimeoutError) as error:
            log.warning("response_url post failed: %s", type(error).__name__)
            return False
        return answer.status_code == 200


def _origin(event: Event) -> SlackOrigin:
    return event.context if isinstance(event.context, SlackOrigin) else SlackOrigin()
