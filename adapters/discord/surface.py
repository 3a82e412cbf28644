"""genbot's :class:`bot.kernel.surface.Surface` on Discord.

Commands and modal submissions are deferred with an ephemeral "thinking…" placeholder; the first
ephemeral text replaces it (so errors are truly private) and the first public post removes it.
Posting, editing, deleting and linking genbot's messages is
:class:`~adapters.discord.posting.DiscordPosting`, which :class:`DiscordSurface` extends with
private answers, forms, typing, threads and downloads. Every call is bounded in time and its
failures translated by :func:`~adapters.discord.calls.discord_call`.
"""

from __future__ import annotations

import logging
import secrets
from collections import OrderedDict
from typing import Any

import discord

from adapters.discord.calls import discord_call, token_expired
from adapters.discord.components import build_modal, build_view, reopen_view
from adapters.discord.posting import DiscordPosting
from adapters.discord.translate import InteractionContext, allowed_mentions, message_content
from adapters.text import truncate
from bot.kernel import (
    Attachment,
    Event,
    MessageRef,
    Modal,
    OutMessage,
    Place,
    RateLimited,
    SurfaceError,
    SurfaceLimits,
)

REFUSED_FORMS_KEPT = 500
_log = logging.getLogger("genbot.discord")


class DiscordSurface(DiscordPosting):
    """Posts, edits, ephemerals, modals, typing, threads and downloads through discord.py."""

    platform = "discord"

    def __init__(
        self,
        client: discord.Client,
        limits: SurfaceLimits,
        max_upload_bytes: int,
        *,
        result_cards: bool = True,
    ) -> None:
        super().__init__(client, limits, max_upload_bytes, result_cards=result_cards)
        self._refused_forms: OrderedDict[str, Modal] = OrderedDict()

    async def send_ephemeral(self, origin: Event, text: str) -> None:
        """Private text: the interaction's answer, its placeholder, or an ephemeral follow-up.

        Events without an interaction (messages), and interactions whose 15-minute token has
        expired, get a message in place addressed to the user: the most private answer left.
        """
        text = truncate(text, self.limits.max_text)
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

    async def send_private(self, origin: Event, message: OutMessage) -> None:
        """``message`` (images and buttons too) only ``origin``'s user sees: the interaction's
        private "thinking" placeholder edited into it, or an ephemeral follow-up."""
        context = origin.context
        if not isinstance(context, InteractionContext):
            raise SurfaceError("a private message answers an interaction")
        message, files = self._uploads(origin.place, message)
        text = truncate(message.text, self.limits.max_text)
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
            text = message_content(addressed, self.limits.max_text) or text
            post["allowed_mentions"] = allowed_mentions(addressed)
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
            await self._offer_form(context, modal, "✏️ Edit and resubmit")
            return
        if interaction.response.is_done():
            await self._offer_form(context, modal, "📎 Open the form")
            return
        async with discord_call("open a form"):
            await interaction.response.send_modal(build_modal(modal))

    async def _offer_form(self, context: InteractionContext, modal: Modal, label: str) -> None:
        token = secrets.token_urlsafe(9)
        self._refused_forms[token] = modal
        while len(self._refused_forms) > REFUSED_FORMS_KEPT:
            self._refused_forms.popitem(last=False)
        note = f"⚠️ {modal.refusal}" if modal.refusal else f"{modal.title}: open the form."
        text = truncate(note, self.limits.max_text)
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
                    "That form has expired; press the button under the image again.",
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
                f"{attachment.filename} is {attachment.size} bytes; the limit is {limit} bytes"
            )
        if not attachment.url:
            raise SurfaceError(f"{attachment.filename} has no URL to download from")
        async with discord_call(f"download {attachment.filename}"):
            data = await self.client.http.get_from_cdn(attachment.url)
        if len(data) > limit:
            raise SurfaceError(f"{attachment.filename} is larger than {limit} bytes")
        return data

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
