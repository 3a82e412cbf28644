"""genbot's own messages on Discord: posted, edited, deleted and linked (the base of
:class:`~adapters.discord.surface.DiscordSurface`).

Public results are ordinary channel messages (``POST /channels/{id}/messages``), never the
interaction's webhook: they outlive the 15-minute interaction token, sit in the per-channel
bucket the renderer budgets for, and can carry buttons, images and threads. Where genbot may
answer only through an interaction (a user install in a server it is not a member of), its
messages go out as the interaction's follow-ups while its 15 minutes last, and by DM to the
requester after that. Images are uploaded within the place's upload limit, and a job's
messages are Components V2 cards when result cards are on.

Keyed messages (a job's result or failure report) are posted with a nonce derived from the key
and ``enforce_nonce``, so Discord returns the earlier message instead of posting it twice. Discord
remembers nonces only for a few minutes: a repeat sent later posts a second message.
"""

from __future__ import annotations

import asyncio
import hashlib
import io
import logging
from collections import OrderedDict
from dataclasses import dataclass, replace
from typing import Any

import discord

from adapters.discord.calls import discord_call, missing_access
from adapters.discord.components import build_card, build_view
from adapters.discord.translate import (
    DM_WORKSPACE,
    InteractionContext,
    allowed_mentions,
    message_content,
)
from adapters.discord.uploads import DEFAULT_UPLOAD_LIMIT, fit_images
from adapters.text import truncate
from bot.kernel import (
    Event,
    MessageGone,
    MessageRef,
    OutMessage,
    Place,
    RateLimited,
    SurfaceError,
    SurfaceLimits,
)

NONCE_LENGTH = 25
HOOK_SECONDS = 15 * 60 - 60
"""How long genbot answers through an interaction: Discord's 15 minutes, less a margin."""
HOOKS_KEPT = 1000
ATTACHMENTS_REMEMBERED = 10_000
_log = logging.getLogger("genbot.discord")


class DiscordPosting:
    """Posts, edits, deletes and links genbot's messages through discord.py: in channels,
    through interactions, or by DM."""

    def __init__(
        self,
        client: discord.Client,
        limits: SurfaceLimits,
        max_upload_bytes: int,
        *,
        result_cards: bool = True,
    ) -> None:
        self.client = client
        self.limits = limits
        self.max_upload_bytes = max_upload_bytes
        self._upload_limits: dict[str, int] = {}
        self._attachments: OrderedDict[int, tuple[str, ...]] = OrderedDict()
        self.hook_seconds = HOOK_SECONDS
        self._hooks: OrderedDict[tuple[str, str], Hook] = OrderedDict()
        self._hook_messages: OrderedDict[str, Hook] = OrderedDict()
        self.result_cards = result_cards

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
                "allowed_mentions": allowed_mentions(message),
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
                "allowed_mentions": allowed_mentions(message),
                **self._layout(message, shown),
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
        nobody = allowed_mentions(message)
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
            "allowed_mentions": allowed_mentions(message),
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
        note = (
            f"_genbot cannot post in {where} any more (where it is not a member, Discord lets "
            "it answer for 15 minutes), so this is here:_"
        )
        dm_message = replace(
            message, text=truncate(f"{note}\n{message.text}", self.limits.max_text)
        )
        async with discord_call("open a DM"):
            dm = await self.client.create_dm(discord.Object(int(user_id)))
        dm_place = Place(place.platform, DM_WORKSPACE, str(dm.id), None, True)
        return await self._post(dm_place, dm_message, None)

    def _is_card(self, message: OutMessage) -> bool:
        return self.result_cards and message.card

    def _layout(self, message: OutMessage, filenames: list[str]) -> dict[str, Any]:
        """Content and view: a Components V2 card for a job's messages (when cards are on),
        else the classic content and button rows."""
        text = message_content(message, self.limits.max_text)
        if self._is_card(message):
            return {"content": None, "view": build_card(text or "", filenames, message.buttons)}
        return {"content": text, "view": build_view(message.buttons)}

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
        if len(message.text) > self.limits.max_text:
            raise SurfaceError(
                f"message of {len(message.text)} characters; Discord allows {self.limits.max_text}"
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
        """The files to upload within the place's limit; images that cannot be made to fit
        are linked in the text instead."""
        fitted = fit_images(message.images, self.upload_limit(place))
        if fitted.left_out:
            links = " ".join(image.url for image in fitted.left_out if image.url)
            note = f"_(too large to upload here{': ' + links if links else ''})_"
            text = truncate(f"{message.text}\n{note}".strip(), self.limits.max_text)
            message = replace(message, text=text, images=fitted.images)
        files = [discord.File(io.BytesIO(i.data), filename=i.filename) for i in fitted.images]
        return message, files


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
