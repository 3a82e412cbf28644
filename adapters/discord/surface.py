"""genbot's :class:`bot.kernel.surface.Surface` on Discord: one class, everything genbot does
on Discord through discord.py, and the outbound translation (content, mentions — the users and
channels genbot's text names drawn as Discord's ``<@id>`` and ``<#id>`` —, length, the views and
cards that carry buttons).

Public results are ordinary channel messages (``POST /channels/{id}/messages``), never the
interaction's webhook: they outlive the 15-minute interaction token, sit in the per-channel
bucket whose window the outbox paces, and can carry buttons, images and threads. Where genbot may
answer only through an interaction (a user install in a server it is not a member of), its
messages go out as the interaction's follow-ups while its 15 minutes last, and by DM to the
requester after that. Images are uploaded within the place's upload limit (only messages that
have images are looked at), and a job's messages are Components V2 cards when result cards are
on; a message without buttons gets no view built.

Keyed messages (a job's result or failure report) are posted with a nonce derived from the key
and ``enforce_nonce``, so Discord returns the earlier message instead of posting it twice. Discord
remembers nonces only for a few minutes: a repeat sent later posts a second message.

Commands and modal submissions are deferred with an ephemeral "thinking…" placeholder; the first
ephemeral text replaces it (so errors are truly private) and the first public post removes it.

Calls: discord.py reads Discord's ``X-RateLimit-*`` headers and paces requests itself
(waiting at most a bucket window; note that the call which empties a bucket returns only when
the bucket resets), and retries a 429 whose ``retry_after`` is at most
:data:`RATE_LIMIT_WAIT_CAP` seconds; a longer one reaches the core as
:class:`~bot.kernel.surface.RateLimited` at once. The cap must stay above Discord's bucket windows:
discord.py refuses any request to a bucket whose reset lies further away than the cap. Every
call is bounded by :data:`CALL_TIMEOUT` and its failures translated by :func:`discord_call`.
"""

from __future__ import annotations

import asyncio
import hashlib
import io
import logging
import secrets
from collections import OrderedDict
from collections.abc import AsyncIterator, Sequence
from contextlib import asynccontextmanager
from dataclasses import dataclass, replace
from typing import Any, TypeVar

import aiohttp
import discord

from adapters.discord.command_mentions import CommandMentions
from adapters.discord.modals import build_modal, reopen_view
from adapters.discord.translate import DM_WORKSPACE, InteractionContext
from adapters.discord.uploads import DEFAULT_UPLOAD_LIMIT, fit_images
from bot.kernel import (
    Attachment,
    Button,
    ButtonPress,
    ButtonStyle,
    CommandNames,
    Event,
    ImageFile,
    Mention,
    MessageGone,
    MessageRef,
    Modal,
    OutMessage,
    Place,
    PlatformProfile,
    RateLimited,
    SurfaceError,
    _,
    draw_mentions,
    format_bytes,
)

NONCE_LENGTH = 25
HOOK_SECONDS = 15 * 60 - 60
"""How long genbot answers through an interaction: Discord's 15 minutes, less a margin."""
HOOKS_KEPT = 1000
ATTACHMENTS_REMEMBERED = 10_000
VIEWS_REMEMBERED = 256
ButtonRows = tuple[tuple[Button, ...], ...]
REFUSED_FORMS_KEPT = 500
ELLIPSIS = "…"
NOBODY = discord.AllowedMentions.none()
_log = logging.getLogger("genbot.discord")

CALL_TIMEOUT = 30.0
RATE_LIMIT_WAIT_CAP = 10.0
UNKNOWN_MESSAGE = 10008


def native_mention(mention: Mention) -> str:
    """Discord's own mention of a user (``<@123>``) or a channel (``<#456>``)."""
    return f"<@{mention.id}>" if mention.kind == "user" else f"<#{mention.id}>"


@asynccontextmanager
async def discord_call(what: str) -> AsyncIterator[None]:
    """Bound a Discord call in time and translate its failures into the surface's errors."""
    try:
        async with asyncio.timeout(CALL_TIMEOUT):
            yield
    except discord.RateLimited as exc:
        raise RateLimited(exc.retry_after) from exc
    except discord.NotFound as exc:
        if exc.code == UNKNOWN_MESSAGE:
            raise MessageGone(f"Discord refused to {what} ({exc.status}: {exc.text})") from exc
        raise SurfaceError(f"Discord refused to {what} ({exc.status}: {exc.text})") from exc
    except discord.HTTPException as exc:
        if exc.status == 429:
            retry_after = float(exc.response.headers.get("Retry-After", "1") or 1)
            raise RateLimited(retry_after) from exc
        raise SurfaceError(f"Discord refused to {what} ({exc.status}: {exc.text})") from exc
    except TimeoutError as exc:
        raise SurfaceError(f"Discord did not answer in time to {what}") from exc
    except (aiohttp.ClientError, discord.ClientException, ValueError) as exc:
        raise SurfaceError(f"could not {what}: {exc}") from exc


def missing_access(error: SurfaceError) -> bool:
    """Whether Discord refused a channel post because genbot is not in that server or chat."""
    cause = error.__cause__
    return isinstance(cause, discord.HTTPException) and (
        (cause.status == 403 and cause.code in (50001, 50013)) or cause.code == 10003
    )


def token_expired(error: SurfaceError) -> bool:
    """Whether Discord refused an interaction webhook because its token expired."""
    cause = error.__cause__
    return isinstance(cause, discord.HTTPException) and (
        cause.status == 401 or cause.code in (10015, 50027)
    )


# Drawing a message --------------------------------------------------------------------------------

MAX_ROWS = 5
MAX_PER_ROW = 5
CARD_COLOUR = discord.Colour.blurple()
_STYLES: dict[ButtonStyle, discord.ButtonStyle] = {
    "primary": discord.ButtonStyle.primary,
    "secondary": discord.ButtonStyle.secondary,
    "success": discord.ButtonStyle.success,
    "danger": discord.ButtonStyle.danger,
}

SentView = TypeVar("SentView", discord.ui.View, discord.ui.LayoutView)


def build_view(rows: Sequence[Sequence[Button]]) -> discord.ui.View | None:
    """A view of ``rows`` of buttons (stopped: :func:`_sent`), or ``None`` when there are none.

    Raises ``ValueError`` beyond Discord's 5 rows of 5 buttons.
    """
    rows = _checked_rows(rows)
    if not rows:
        return None
    view = discord.ui.View(timeout=None)
    for index, row in enumerate(rows):
        for button in row:
            view.add_item(_button_item(button, index))
    return _sent(view)


def build_card(
    text: str, filenames: Sequence[str], rows: Sequence[Sequence[Button]]
) -> discord.ui.LayoutView:
    """A Components V2 card (stopped: :func:`_sent`): one container holding the text, the
    images (the message's attachments ``filenames``) as a gallery, and the button rows."""
    parts: list[discord.ui.Item[Any]] = []
    if text:
        parts.append(discord.ui.TextDisplay(text))
    if filenames:
        items = [discord.MediaGalleryItem(f"attachment://{name}") for name in filenames[:10]]
        parts.append(discord.ui.MediaGallery(*items))
    for row in _checked_rows(rows):
        action_row: discord.ui.ActionRow[Any] = discord.ui.ActionRow()
        for button in row:
            action_row.add_item(_button_item(button))
        parts.append(action_row)
    view = discord.ui.LayoutView(timeout=None)
    view.add_item(discord.ui.Container(*parts, accent_colour=CARD_COLOUR))
    return _sent(view)


def _sent(view: SentView) -> SentView:
    """``view`` stopped, as every view genbot sends: discord.py keeps no view in memory then
    (genbot's never time out), and a press on one of its buttons — on any message, posted by any
    process — reaches the one handler of genbot's custom ids, registered at startup
    (:class:`adapters.discord.client.GenbotButton`)."""
    view.stop()
    return view


def _checked_rows(rows: Sequence[Sequence[Button]]) -> list[Sequence[Button]]:
    kept = [row for row in rows if row]
    if len(kept) > MAX_ROWS or any(len(row) > MAX_PER_ROW for row in kept):
        raise ValueError(f"Discord shows at most {MAX_ROWS} rows of {MAX_PER_ROW} buttons")
    return kept


def _button_item(button: Button, row: int | None = None) -> discord.ui.Button[Any]:
    return discord.ui.Button(
        label=(button.label or button.action)[:80],
        style=_STYLES.get(button.style, discord.ButtonStyle.secondary),
        custom_id=button.custom_id,
        row=row,
        disabled=button.disabled,
    )


class DiscordSurface:
    """Posts, edits, ephemerals, modals, typing, threads and downloads through discord.py."""

    platform = "discord"

    def __init__(
        self,
        client: discord.Client,
        profile: PlatformProfile,
        max_upload_bytes: int,
        *,
        result_cards: bool = True,
    ) -> None:
        self.client = client
        self.profile = profile
        self.max_upload_bytes = max_upload_bytes
        self._upload_limits: dict[str, int] = {}
        self._attachments: OrderedDict[int, tuple[str, ...]] = OrderedDict()
        self._views: OrderedDict[int, tuple[ButtonRows, discord.ui.View]] = OrderedDict()
        """The view each recent message was last given, to give it again to an edit with the
        same buttons (a streamed answer's ⏹ Stop) instead of building it anew."""
        self.hook_seconds = HOOK_SECONDS
        self._hooks: OrderedDict[tuple[str, str], Hook] = OrderedDict()
        self._hook_messages: OrderedDict[str, Hook] = OrderedDict()
        self.result_cards = result_cards
        self._refused_forms: OrderedDict[str, Modal] = OrderedDict()
        self.mentions = CommandMentions()
        """The registered commands' ids, kept by the client when it registers them."""

    def command_names(self, place: Place) -> CommandNames:
        """Discord names genbot's commands by their mentions, which show them in the reader's
        language (:mod:`adapters.discord.command_mentions`)."""
        return self.mentions.names(place)

    async def send(
        self, place: Place, message: OutMessage, *, origin: Event | None = None
    ) -> MessageRef:
        """Post ``message`` in ``place`` (its thread when set) and retire any placeholder.

        A keyed message posted again within Discord's nonce window (a few minutes) returns the
        message posted first.
        """
        self._check(message)
        user_id = origin.user.id if origin is not None else (message.mention_user_id or "")
        hook = self._hook(place, user_id)
        if hook is not None:
            return await self._send_by_hook(hook, place, message, origin)
        try:
            return await self._post(place, message, origin)
        except SurfaceError as error:
            if not missing_access(error) or not user_id.isdigit():
                raise
        return await self._send_dm(place, message, user_id)

    async def _post(self, place: Place, message: OutMessage, origin: Event | None) -> MessageRef:
        channel = self._channel(place)
        context = origin.context if origin is not None else None
        message, files = self._uploads(place, message)
        async with discord_call("post a message"):
            post: dict[str, Any] = {
                "files": files,
                "allowed_mentions": self._mentions(message),
                **self._layout(message, [f.filename or "" for f in files]),
            }
            if message.key is not None:
                post["nonce"] = message_nonce(message.key)
            in_channel = not place.is_dm and place.thread_id is None
            if (
                isinstance(context, discord.Message)
                and origin
                and origin.place == place
                and in_channel
            ):
                post["reference"] = context.to_reference(fail_if_not_exists=False)
                post["mention_author"] = False
            sent = await channel.send(**post)
        self._remember_attachments(sent)
        if "view" in post:
            self._remember_view(sent.id, message.buttons, post["view"])
        if origin is not None:
            await self._retire_placeholder(origin)
        return MessageRef(place, str(sent.id))

    async def edit(self, ref: MessageRef, message: OutMessage) -> None:
        """Replace text and buttons; images are replaced only when ``message`` has some. A
        message sent through an interaction is edited through it while its 15 minutes last;
        after that it is gone for genbot (:class:`MessageGone`)."""
        self._check(message)
        hook = self._hook_messages.get(ref.message_id)
        if hook is not None:
            await self._edit_by_hook(hook, ref, message)
            return
        channel = self._channel(ref.place)
        replaces_images = bool(message.images)
        message, files = self._uploads(ref.place, message)
        partial = channel.get_partial_message(int(ref.message_id))
        if replaces_images:
            shown = [f.filename or "" for f in files]
        elif self._is_card(message):
            shown = await self._attachment_names(partial)
        else:
            shown = []
        async with discord_call("edit a message"):
            changes: dict[str, Any] = {
                "allowed_mentions": self._mentions(message),
                **self._layout(message, shown, partial.id),
            }
            if replaces_images:
                changes["attachments"] = files
            edited = await partial.edit(**changes)
        self._remember_attachments(edited)

    # Answering through interactions (user installs) -------------------------------------------

    def remember_hook(
        self, place: Place, user_id: str, interaction: discord.Interaction[Any]
    ) -> None:
        """``user_id`` uses genbot in ``place`` where it may answer only through
        ``interaction`` (see :func:`answers_by_hook_only`): its messages there go out as the
        interaction's follow-ups for the next 15 minutes."""
        expires = asyncio.get_running_loop().time() + self.hook_seconds
        key = (place.thread_id or place.channel_id, user_id)
        self._hooks[key] = Hook(interaction, expires)
        self._hooks.move_to_end(key)
        while len(self._hooks) > HOOKS_KEPT:
            self._hooks.popitem(last=False)

    def _hook(self, place: Place, user_id: str) -> Hook | None:
        hook = self._hooks.get((place.thread_id or place.channel_id, user_id))
        return hook if hook is not None and hook.fresh() else None

    async def _send_by_hook(
        self, hook: Hook, place: Place, message: OutMessage, origin: Event | None
    ) -> MessageRef:
        interaction = hook.interaction
        context = origin.context if origin is not None else None
        message, files = self._uploads(place, message)
        layout = self._layout(message, [f.filename or "" for f in files])
        nobody = self._mentions(message)
        async with discord_call("answer through the interaction"):
            if (
                isinstance(context, InteractionContext)
                and context.placeholder
                and context.interaction is interaction
            ):
                context.placeholder = False
                sent: discord.Message = await interaction.edit_original_response(
                    attachments=files, allowed_mentions=nobody, **layout
                )
            else:
                sent = await interaction.followup.send(
                    files=files, allowed_mentions=nobody, wait=True, **_webhook(layout)
                )
        self._remember_attachments(sent)
        self._hook_messages[str(sent.id)] = hook
        while len(self._hook_messages) > HOOKS_KEPT:
            self._hook_messages.popitem(last=False)
        return MessageRef(place, str(sent.id))

    async def _edit_by_hook(self, hook: Hook, ref: MessageRef, message: OutMessage) -> None:
        if not hook.fresh():
            raise MessageGone("Discord's 15 minutes to answer through that interaction are over")
        replaces_images = bool(message.images)
        message, files = self._uploads(ref.place, message)
        shown = [f.filename or "" for f in files] if replaces_images else []
        if not replaces_images and self._is_card(message):
            shown = list(self._attachments.get(int(ref.message_id), ()))
        changes: dict[str, Any] = {
            "allowed_mentions": self._mentions(message),
            **_webhook(self._layout(message, shown)),
        }
        if replaces_images:
            changes["attachments"] = files
        async with discord_call("edit through the interaction"):
            edited = await hook.interaction.followup.edit_message(int(ref.message_id), **changes)
        self._remember_attachments(edited)

    async def _send_dm(self, place: Place, message: OutMessage, user_id: str) -> MessageRef:
        """A job message for a place genbot cannot post in (a user install whose interaction
        has expired, or after a restart): sent to the requester by DM, with a note."""
        where = f"<#{place.thread_id or place.channel_id}>"
        note = _(
            "_genbot cannot post in {where} any more (where it is not a member, Discord lets "
            "it answer for 15 minutes), so this is here:_",
            where=where,
        )
        dm_message = replace(message, text=self._fit(f"{note}\n{self._drawn(message)}"))
        async with discord_call("open a DM"):
            dm = await self.client.create_dm(discord.Object(int(user_id)))
        dm_place = Place(place.platform, DM_WORKSPACE, str(dm.id), None, True)
        return await self._post(dm_place, dm_message, None)

    def _fit(self, text: str) -> str:
        """``text`` within Discord's length, ending with an ellipsis when cut."""
        limit = self.profile.max_text
        if len(text) <= limit:
            return text
        return text[: limit - 1] + ELLIPSIS if limit > 0 else ""

    @staticmethod
    def _drawn(message: OutMessage) -> str:
        """``message``'s text with the mentions in genbot's own text drawn; model text as it
        is."""
        return message.text if message.from_model else draw_mentions(message.text, native_mention)

    def _content(self, message: OutMessage) -> str | None:
        """The content Discord shows for ``message``: genbot's own text addressed to a user
        starts with their mention (Discord notifies only users mentioned in the content),
        within the length (the mentions in genbot's text drawn); model text as it is."""
        text = self._drawn(message)
        user_id = message.mention_user_id or ""
        if not message.from_model and user_id.isdigit() and f"<@{user_id}>" not in text:
            text = self._fit(f"<@{user_id}> {text}".rstrip())
        return text or None

    @staticmethod
    def _mentions(message: OutMessage) -> discord.AllowedMentions:
        """Model text pings nobody; genbot's own text may ping the requester only."""
        if message.from_model or not (message.mention_user_id or "").isdigit():
            return NOBODY
        return discord.AllowedMentions(
            everyone=False,
            users=[discord.Object(int(message.mention_user_id or 0))],
            roles=False,
            replied_user=False,
        )

    def _is_card(self, message: OutMessage) -> bool:
        return self.result_cards and message.card

    def _layout(
        self, message: OutMessage, filenames: list[str], message_id: int | None = None
    ) -> dict[str, Any]:
        """Content and view: a Components V2 card for a job's messages (when cards are on),
        else the classic content and button rows (for an edit of ``message_id``, the view it
        was last given when its buttons are the same)."""
        text = self._content(message)
        if self._is_card(message):
            return {"content": None, "view": build_card(text or "", filenames, message.buttons)}
        rows = message.buttons
        if not rows:
            return {"content": text, "view": None}
        given = self._views.get(message_id) if message_id is not None else None
        if given is not None and given[0] == rows:
            return {"content": text, "view": given[1]}
        view = build_view(rows)
        if message_id is not None and view is not None:
            self._remember_view(message_id, rows, view)
        return {"content": text, "view": view}

    def _remember_view(self, message_id: int, rows: ButtonRows, view: Any) -> None:
        if not isinstance(view, discord.ui.View):
            return
        self._views[message_id] = (rows, view)
        self._views.move_to_end(message_id)
        while len(self._views) > VIEWS_REMEMBERED:
            self._views.popitem(last=False)

    def _remember_attachments(self, message: discord.Message | None) -> None:
        if message is None:
            return
        self._attachments[message.id] = tuple(a.filename for a in message.attachments)
        while len(self._attachments) > ATTACHMENTS_REMEMBERED:
            self._attachments.popitem(last=False)

    async def _attachment_names(self, partial: discord.PartialMessage) -> list[str]:
        """The files a card's gallery shows (remembered, else read from Discord once)."""
        if partial.id not in self._attachments:
            async with discord_call("read a message"):
                self._remember_attachments(await partial.fetch())
        return list(self._attachments.get(partial.id, ()))

    async def delete(self, ref: MessageRef) -> None:
        """Delete a message genbot posted."""
        channel = self._channel(ref.place)
        async with discord_call("delete a message"):
            await channel.get_partial_message(int(ref.message_id)).delete()

    async def link(self, ref: MessageRef) -> str:
        """The message's jump URL."""
        place = ref.place
        guild = "@me" if place.is_dm else place.workspace_id
        return (
            f"https://discord.com/channels/{guild}/{place.thread_id or place.channel_id}/"
            f"{ref.message_id}"
        )

    async def _retire_placeholder(self, origin: Event) -> None:
        context = origin.context
        if not isinstance(context, InteractionContext) or not context.placeholder:
            return
        context.placeholder = False
        try:
            async with discord_call("remove the thinking placeholder"):
                await context.interaction.delete_original_response()
        except (SurfaceError, RateLimited) as exc:
            _log.warning("could not remove placeholder of %s: %s", context.interaction.id, exc)

    def _channel(self, place: Place) -> discord.PartialMessageable:
        try:
            channel_id = int(place.thread_id or place.channel_id)
            guild_id = None if place.is_dm else int(place.workspace_id)
        except ValueError as exc:
            raise SurfaceError(f"not a Discord place: {place}") from exc
        return self.client.get_partial_messageable(channel_id, guild_id=guild_id)

    def _check(self, message: OutMessage) -> None:
        if len(message.text) > self.profile.max_text:
            raise SurfaceError(
                f"message of {len(message.text)} characters; Discord allows {self.profile.max_text}"
            )
        if not message.text and not message.images:
            raise SurfaceError("Discord cannot show an empty message")

    def remember_upload_limit(self, place: Place, limit: int) -> None:
        """The upload limit an interaction in ``place``'s server (or DM) reported."""
        if limit > 0:
            self._upload_limits[place.workspace_id] = limit

    def upload_limit(self, place: Place) -> int:
        """The largest attachment Discord takes in ``place`` (as last reported, else 10 MiB)."""
        return self._upload_limits.get(place.workspace_id, DEFAULT_UPLOAD_LIMIT)

    def _uploads(self, place: Place, message: OutMessage) -> tuple[OutMessage, list[discord.File]]:
        """The files to upload within the place's limit (images above it are fitted by
        :func:`~adapters.discord.uploads.fit_images`); images that cannot be made to fit are
        linked in the text instead."""
        images = message.images
        limit = self.upload_limit(place)
        if any(len(image.data) > limit for image in images):
            fitted = fit_images(images, limit)
            images = fitted.images
            if fitted.left_out:
                links = " ".join(image.url for image in fitted.left_out if image.url)
                note = (
                    _("_(too large to upload here: {links})_", links=links)
                    if links
                    else _("_(too large to upload here)_")
                )
                text = self._fit(f"{self._drawn(message)}\n{note}".strip())
                message = replace(message, text=text, images=images)
        files = [discord.File(io.BytesIO(i.data), filename=i.filename) for i in images]
        return message, files

    async def send_ephemeral(self, origin: Event, text: str) -> None:
        """Private text: the interaction's answer, its placeholder, or an ephemeral follow-up.

        Events without an interaction (messages), and interactions whose 15-minute token has
        expired, get a message in place addressed to the user: the most private answer left.
        An event genbot made itself (no context: a notice of queued jobs) is answered in the
        user's direct messages with genbot, or in place where Discord refuses the DM.
        """
        if origin.context is None and not origin.place.is_dm and origin.user.id.isdigit():
            try:
                await self._direct(origin.user.id, OutMessage(text))
                return
            except SurfaceError as refused:
                _log.info("no DM to %s (%s): told in place", origin.user.id, refused)
        text = self._fit(draw_mentions(text, native_mention))
        context = origin.context
        if isinstance(context, InteractionContext):
            try:
                async with discord_call("answer privately"):
                    await self._answer_privately(context, text)
                return
            except SurfaceError as error:
                if not token_expired(error):
                    raise
        await self._notice(origin, text)

    async def _direct(self, user_id: str, message: OutMessage) -> None:
        """Post ``message`` in ``user_id``'s direct messages with genbot."""
        async with discord_call("open a DM"):
            dm = await self.client.create_dm(discord.Object(int(user_id)))
        await self._post(Place(self.platform, DM_WORKSPACE, str(dm.id), None, True), message, None)

    async def send_file_privately(
        self, origin: Event, text: str, filename: str, data: bytes
    ) -> None:
        """The file in the user's direct messages with genbot, and a private answer saying
        so; where Discord refuses the DM (the user takes none from this server's members), the
        file is attached to the private answer instead (see :meth:`send_private`)."""
        file = ImageFile(filename, data, "application/octet-stream")
        message = OutMessage(text=text, images=(file,))
        try:
            await self._direct(origin.user.id, message)
        except SurfaceError as refused:
            _log.info(
                "no DM to %s (%s): the file goes with the private answer", origin.user.id, refused
            )
            await self.send_private(origin, message)
            return
        await self.send_ephemeral(
            origin, _("Sent `{file}` to your direct messages with genbot.", file=filename)
        )

    async def send_private(self, origin: Event, message: OutMessage) -> None:
        """``message`` (images and buttons too) only ``origin``'s user sees: the interaction's
        private "thinking" placeholder edited into it, or an ephemeral follow-up."""
        context = origin.context
        if not isinstance(context, InteractionContext):
            raise SurfaceError("a private message answers an interaction")
        message, files = self._uploads(origin.place, message)
        text = self._fit(self._drawn(message))
        view = build_view(message.buttons) or discord.ui.View(timeout=None)
        nobody = discord.AllowedMentions.none()
        interaction = context.interaction
        async with discord_call("answer privately"):
            if not interaction.response.is_done():
                await interaction.response.send_message(
                    text, files=files, view=view, ephemeral=True, allowed_mentions=nobody
                )
            elif context.placeholder and not context.hook_only:
                context.placeholder = False
                await interaction.edit_original_response(
                    content=text, attachments=files, view=view, allowed_mentions=nobody
                )
            else:
                if context.placeholder:
                    context.placeholder = False
                    await interaction.delete_original_response()
                await interaction.followup.send(
                    text, files=files, view=view, ephemeral=True, allowed_mentions=nobody
                )

    async def edit_pressed(self, press: ButtonPress, message: OutMessage) -> None:
        """Replace the text and buttons of the message ``press`` came from, an ephemeral one
        too, through the press's interaction: deferred as an update, its original response is
        that message."""
        context = press.context
        if not isinstance(context, InteractionContext):
            raise SurfaceError("only the press's interaction edits the message it came from")
        self._check(message)
        async with discord_call("edit the pressed message"):
            await context.interaction.edit_original_response(
                content=self._fit(self._drawn(message)),
                view=build_view(message.buttons),
                allowed_mentions=NOBODY,
            )

    async def _answer_privately(self, context: InteractionContext, text: str) -> None:
        interaction = context.interaction
        nobody = discord.AllowedMentions.none()
        if not interaction.response.is_done():
            await interaction.response.send_message(text, ephemeral=True, allowed_mentions=nobody)
        elif context.placeholder and context.hook_only:
            context.placeholder = False
            await interaction.delete_original_response()
            await interaction.followup.send(text, ephemeral=True, allowed_mentions=nobody)
        elif context.placeholder:
            context.placeholder = False
            await interaction.edit_original_response(content=text, allowed_mentions=nobody)
        else:
            await interaction.followup.send(text, ephemeral=True, allowed_mentions=nobody)

    async def _notice(self, origin: Event, text: str) -> None:
        post: dict[str, Any] = {"allowed_mentions": discord.AllowedMentions.none()}
        if isinstance(origin.context, discord.Message):
            reference = origin.context.to_reference(fail_if_not_exists=False)
            post |= {"reference": reference, "mention_author": False}
        elif origin.user.id.isdigit():
            addressed = OutMessage(text, mention_user_id=origin.user.id)
            text = self._content(addressed) or text
            post["allowed_mentions"] = self._mentions(addressed)
        async with discord_call("answer in place"):
            await self._channel(origin.place).send(text, **post)

    async def open_modal(self, origin: Event, modal: Modal) -> None:
        """Show ``modal`` as the first answer to a button press or command. Where Discord
        cannot (a form answering a form, a command already answered with "thinking"), a
        private note offers a button that opens the form, filled in (kept in memory): "Edit
        and resubmit" for a refused form, "Open the form" otherwise."""
        context = origin.context
        if not isinstance(context, InteractionContext):
            raise SurfaceError("a form can only be the first answer to a button press or command")
        interaction = context.interaction
        if interaction.type is discord.InteractionType.modal_submit:
            await self._offer_form(context, modal, _("✏️ Edit and resubmit"))
            return
        if interaction.response.is_done():
            await self._offer_form(context, modal, _("📎 Open the form"))
            return
        async with discord_call("open a form"):
            await interaction.response.send_modal(build_modal(modal))

    async def _offer_form(self, context: InteractionContext, modal: Modal, label: str) -> None:
        token = secrets.token_urlsafe(9)
        self._refused_forms[token] = modal
        while len(self._refused_forms) > REFUSED_FORMS_KEPT:
            self._refused_forms.popitem(last=False)
        note = (
            f"⚠️ {modal.refusal}" if modal.refusal else _("{form}: open the form.", form=modal.title)
        )
        text = self._fit(note)
        nobody = discord.AllowedMentions.none()
        interaction, view = context.interaction, reopen_view(token, label)
        async with discord_call("offer the form again"):
            if context.placeholder:
                context.placeholder = False
                await interaction.edit_original_response(
                    content=text, view=view, allowed_mentions=nobody
                )
            else:
                await interaction.followup.send(
                    text, view=view, ephemeral=True, allowed_mentions=nobody
                )

    async def reopen(self, interaction: discord.Interaction[Any], token: str) -> None:
        """Open a refused form again (the "Edit and resubmit" button)."""
        modal = self._refused_forms.pop(token, None)
        async with discord_call("open a form again"):
            if modal is None:
                await interaction.response.send_message(
                    _("That form has expired; press the button under the image again."),
                    ephemeral=True,
                )
                return
            await interaction.response.send_modal(build_modal(modal))

    async def typing(self, place: Place) -> None:
        """Trigger the typing indicator (lasts ~10 s on Discord); failures are ignored."""
        try:
            async with discord_call("show typing"):
                await self._channel(place).typing()
        except (SurfaceError, RateLimited) as exc:
            _log.debug("typing indicator failed: %s", exc)

    async def start_thread(self, ref: MessageRef, name: str) -> Place:
        """Open a public thread on a channel message; its place keeps the parent channel."""
        place = ref.place
        if place.is_dm or place.thread_id is not None:
            raise SurfaceError("threads can only start from a message in a server channel")
        title = " ".join(name.split())[:100] or "genbot"
        async with discord_call("start a thread"):
            channel = self.client.get_partial_messageable(
                int(place.channel_id), guild_id=int(place.workspace_id)
            )
            thread = await channel.get_partial_message(int(ref.message_id)).create_thread(
                name=title, auto_archive_duration=1440
            )
        return place.in_thread(str(thread.id))

    async def download(self, attachment: Attachment) -> bytes:
        """The attachment's bytes from Discord's CDN, refused above ``max_upload_bytes``."""
        if attachment.data is not None:
            return attachment.data
        limit = self.max_upload_bytes
        if attachment.size is not None and attachment.size > limit:
            raise SurfaceError(
                _(
                    "{file} is {size}; the limit is {limit}",
                    file=attachment.filename,
                    size=format_bytes(attachment.size),
                    limit=format_bytes(limit),
                )
            )
        if not attachment.url:
            raise SurfaceError(_("{file} has no URL to download from", file=attachment.filename))
        async with discord_call(f"download {attachment.filename}"):
            data = await self.client.http.get_from_cdn(attachment.url)
        if len(data) > limit:
            raise SurfaceError(
                _(
                    "{file} is larger than {limit}",
                    file=attachment.filename,
                    limit=format_bytes(limit),
                )
            )
        return data

    @asynccontextmanager
    async def settling(self, origin: Event) -> AsyncIterator[None]:
        """Around the core's handling of ``origin`` (the client's ``around``): :meth:`finish`
        it afterwards, whatever happened."""
        try:
            yield
        finally:
            await self.finish(origin)

    async def finish(self, origin: Event) -> None:
        """After the core handled ``origin``: make sure the interaction is not left "thinking"
        or unanswered."""
        context = origin.context
        if not isinstance(context, InteractionContext):
            return
        try:
            if context.placeholder:
                await self._retire_placeholder(origin)
            elif not context.interaction.response.is_done():
                async with discord_call("acknowledge an interaction"):
                    await context.interaction.response.defer()
        except (SurfaceError, RateLimited) as exc:
            _log.warning("could not close interaction %s: %s", context.interaction.id, exc)


@dataclass
class Hook:
    """An interaction genbot may answer through until ``expires`` (event-loop time)."""

    interaction: discord.Interaction[Any]
    expires: float

    def fresh(self) -> bool:
        return asyncio.get_running_loop().time() < self.expires


def _webhook(layout: dict[str, Any]) -> dict[str, Any]:
    """``layout`` for a webhook call: no view means no components, no content means none."""
    return {key: value for key, value in layout.items() if value is not None}


def message_nonce(key: str) -> str:
    """The Discord nonce (at most 25 characters) that stands for ``key``, the same every time."""
    return hashlib.sha256(key.encode()).hexdigest()[:NONCE_LENGTH]
