"""The discord.py client: turns gateway traffic into genbot events and runs the core on them.

Slash commands are deferred at once (ephemeral "thinking…"), button presses are deferred
silently (type 6) unless their action opens a form, modal submissions are deferred like
commands; then the core runs in a task. Every genbot button press reaches
:class:`GenbotButton`, a ``DynamicItem`` registered at startup whose template matches the
``gb:<action>:<ref>`` custom ids, so a press on any message, posted by any earlier process,
comes here (the views genbot sends are stopped, so discord.py keeps none of them). Messages
become :class:`UserMessage` in DMs, in every guild thread (the core ignores threads that hold no
conversation), when they mention the bot, and in replies to the bot; other channel messages are
dropped without any REST call.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import sys
from collections.abc import AsyncIterator, Callable
from typing import Any

import discord
from discord import app_commands

from adapters import AdapterStartError
from adapters.discord.commands import build_commands, info_menu
from adapters.discord.interaction_source import InteractionSource
from adapters.discord.modals import REOPEN_ACTION
from adapters.discord.settings import DiscordSettings
from adapters.discord.surface import RATE_LIMIT_WAIT_CAP, DiscordSurface
from adapters.discord.translate import (
    PLATFORM,
    InteractionContext,
    attachment_of,
    is_allowed,
    modal_attachments,
    modal_values,
    not_allowed_text,
    place_of,
    source_of,
    strip_mention,
    user_of,
)
from adapters.discord.translator import CatalogTranslator
from bot.kernel import (
    INFO_ACTION,
    MODAL_ACTIONS,
    ButtonPress,
    Command,
    EventRouter,
    EventSink,
    InboundEvent,
    ModalSubmit,
    Offered,
    Place,
    SavedOptionChoices,
    UserMessage,
    _,
    decode_custom_id,
    offered,
    speaking,
    supported,
)

ErrorReporter = Callable[[str, BaseException], None]
"""Told about every exception discord.py or the adapter raised while handling traffic (genbot's
router logs what the core raised)."""

MODAL_GRACE_SECONDS = 2.0
"""How long a form-opening press waits for the core before it is acknowledged anyway."""

UNCACHED_CHANNELS_REMEMBERED = 1024
"""How many looked-up channels (thread or not) missing from discord.py's cache are remembered."""
LOCALES_REMEMBERED = 10_000
"""How many users' client languages are remembered for their messages (which carry none)."""

_log = logging.getLogger("genbot.discord")


class GenbotButton(
    discord.ui.DynamicItem[discord.ui.Button[Any]],
    template=r"gb:(?P<action>[^:]+):(?P<ref>.*)",
):
    """The press of a button carrying ``action`` and ``ref`` in its custom id: handed to the
    client (:meth:`GenbotClient.genbot_button`)."""

    def __init__(self, action: str, ref: str, *, custom_id: str) -> None:
        super().__init__(discord.ui.Button(custom_id=custom_id))
        self.action = action
        self.ref = ref

    @classmethod
    async def from_custom_id(
        cls,
        interaction: discord.Interaction[Any],
        item: discord.ui.Item[Any],
        match: Any,
        /,
    ) -> GenbotButton:
        custom_id = getattr(item, "custom_id", "") or ""
        decoded = decode_custom_id(custom_id)
        if decoded is None:
            raise ValueError(f"not a genbot custom id: {custom_id!r}")
        action, ref = decoded
        return cls(action, ref, custom_id=custom_id)

    async def callback(self, interaction: discord.Interaction[Any]) -> None:
        client = interaction.client
        if isinstance(client, GenbotClient):
            await client.genbot_button(interaction, self.action, self.ref)


def log_error(where: str, error: BaseException) -> None:
    _log.error("error in %s", where, exc_info=error)


class GenbotClient(discord.AutoShardedClient):
    """A discord.py client with genbot's command tree, buttons and message routing.

    It runs the shards ``[discord] shard_ids`` of ``shard_count`` when they are set (each
    process of a cluster its own), else every shard Discord recommends (one for most bots).
    Discord sends DMs to shard 0 only, so the process running shard 0 answers them."""

    def __init__(
        self,
        settings: DiscordSettings,
        surface_factory: Callable[[discord.Client], DiscordSurface],
        *,
        report_error: ErrorReporter = log_error,
        guild_ready_timeout: float = 2.0,
    ) -> None:
        intents = discord.Intents.default()
        intents.message_content = True
        if settings.shard_ids is not None and settings.shard_count is not None:
            super().__init__(
                intents=intents,
                guild_ready_timeout=guild_ready_timeout,
                shard_count=settings.shard_count,
                shard_ids=list(settings.shard_ids),
            )
        else:
            super().__init__(
                intents=intents,
                guild_ready_timeout=guild_ready_timeout,
                shard_count=settings.shard_count,
            )
        self.http.max_ratelimit_timeout = RATE_LIMIT_WAIT_CAP
        self.settings = settings
        self.report_error = report_error
        self.surface = surface_factory(self)
        self.tree = app_commands.CommandTree(self)
        self.tree.error(self._tree_error)
        for command in build_commands(self._command, self._offered, self._saved):
            self.tree.add_command(command)
        self.tree.add_command(info_menu(self._image_info))
        self.router: EventRouter | None = None
        self._intake: EventSink | None = None
        self._thread_parents: dict[int, asyncio.Future[int | None]] = {}
        self._locales: dict[str, str] = {}
        """The language of each user's client, as their last interaction said (newest last)."""

    def serve(self, router: EventRouter) -> None:
        """Submit the events from now on to ``router``'s intake for Discord."""
        self.router = router
        self._intake = router.intake(PLATFORM, around=self.surface.settling)

    @property
    def intake(self) -> EventSink:
        """Where this client's events go; ``RuntimeError`` before :meth:`serve`."""
        if self._intake is None:
            raise RuntimeError("the discord adapter is not started")
        return self._intake

    def _offered(self) -> dict[Offered, tuple[str, ...]]:
        if self.router is None:
            raise RuntimeError("the discord adapter is not started")
        return offered(self.router)

    async def _saved(self, interaction: discord.Interaction[Any]) -> tuple[str, ...]:
        """The names of the user's saved options where they type (for autocomplete)."""
        router = self.router
        if not isinstance(router, SavedOptionChoices):
            return ()
        source = source_of(interaction, self.settings.admin_ids, self.settings.allowed_channel_ids)
        return await router.saved_options(source.user, source.place)

    async def setup_hook(self) -> None:
        await self.tree.set_translator(CatalogTranslator())
        self.add_dynamic_items(GenbotButton)
        if self.settings.guild_ids:
            for guild_id in self.settings.guild_ids:
                guild = discord.Object(guild_id)
                self.tree.copy_global_to(guild=guild)
                try:
                    self.surface.mentions.registered(guild_id, await self.tree.sync(guild=guild))
                except discord.Forbidden as error:
                    raise AdapterStartError(
                        f"Discord refused genbot's slash commands in guild {guild_id} "
                        f"(403: {error.text}): invite genbot there with the "
                        "applications.commands scope, or remove it from [discord] guild_ids"
                    ) from error
        else:
            self.surface.mentions.registered(None, await self.tree.sync())

    # Interactions ------------------------------------------------------------------------------

    async def _command(
        self, interaction: discord.Interaction[Any], name: str, values: dict[str, Any]
    ) -> None:
        source = await self._admit(interaction)
        if source is None:
            return
        hook_only = source.hook_only
        await interaction.response.defer(ephemeral=not hook_only, thinking=True)
        given = {k: v for k, v in values.items() if v is not None}
        event = Command(
            user=source.user,
            place=source.place,
            locale=source.locale,
            place_locale=source.place_locale,
            context=InteractionContext(interaction, placeholder=True, hook_only=hook_only),
            name=name,
            options={k: v for k, v in given.items() if not isinstance(v, discord.Attachment)},
            attachments={
                k: attachment_of(v) for k, v in given.items() if isinstance(v, discord.Attachment)
            },
            key=f"discord:{interaction.id}",
        )
        self._run(event)

    async def _image_info(
        self, interaction: discord.Interaction[Any], message: discord.Message
    ) -> None:
        """ "Image info" on a message: a press of ℹ️ naming no job (the message's)."""
        source = await self._admit(interaction)
        if source is None:
            return
        await interaction.response.defer(ephemeral=True, thinking=True)
        event = ButtonPress(
            user=source.user,
            place=source.place,
            locale=source.locale,
            place_locale=source.place_locale,
            context=InteractionContext(interaction, placeholder=True, hook_only=source.hook_only),
            message_id=str(message.id),
            action=INFO_ACTION,
            ref="",
        )
        self._run(event)

    async def genbot_button(
        self, interaction: discord.Interaction[Any], action: str, ref: str
    ) -> None:
        """A press on a genbot button (any message, any process that posted it)."""
        try:
            await self._press(interaction, action, ref)
        except Exception as error:
            self.report_error(f"button {action}", error)

    async def _press(self, interaction: discord.Interaction[Any], action: str, ref: str) -> None:
        source = await self._admit(interaction)
        if source is None:
            return
        if action == REOPEN_ACTION:
            await self.surface.reopen(interaction, ref)
            return
        opens_form = action in MODAL_ACTIONS
        if not opens_form:
            await interaction.response.defer()
        message_id = interaction.message.id if interaction.message else 0
        event = ButtonPress(
            user=source.user,
            place=source.place,
            locale=source.locale,
            place_locale=source.place_locale,
            context=InteractionContext(interaction, hook_only=source.hook_only),
            message_id=str(message_id),
            action=action,
            ref=ref,
        )
        self._run(event, watchdog=opens_form)

    async def on_interaction(self, interaction: discord.Interaction[Any]) -> None:
        if interaction.type is not discord.InteractionType.modal_submit:
            return
        data: Any = interaction.data or {}
        decoded = decode_custom_id(str(data.get("custom_id", "")))
        if decoded is None:
            return
        source = await self._admit(interaction)
        if source is None:
            return
        await interaction.response.defer(ephemeral=not source.hook_only, thinking=True)
        event = ModalSubmit(
            user=source.user,
            place=source.place,
            locale=source.locale,
            place_locale=source.place_locale,
            context=InteractionContext(interaction, placeholder=True, hook_only=source.hook_only),
            action=decoded[0],
            ref=decoded[1],
            values=modal_values(data),
            attachments=modal_attachments(data),
        )
        self._run(event)

    async def _admit(self, interaction: discord.Interaction[Any]) -> InteractionSource | None:
        """Where ``interaction`` comes from, remembered by the surface; ``None`` (answered
        with why) where genbot is not enabled."""
        settings = self.settings
        source = source_of(interaction, settings.admin_ids, settings.allowed_channel_ids)
        self._remember_locale(source)
        self.surface.remember_upload_limit(source.place, interaction.filesize_limit)
        if source.hook_only:
            self.surface.remember_hook(source.place, str(interaction.user.id), interaction)
        if source.allowed:
            return source
        with speaking(supported(source.locale) or "en"):
            text = not_allowed_text(settings.allowed_channel_ids)
        await interaction.response.send_message(text, ephemeral=True)
        return None

    def _remember_locale(self, source: InteractionSource) -> None:
        """Keep the language of the user's client: their messages carry none."""
        self._locales.pop(source.user.id, None)
        if source.locale is not None:
            self._locales[source.user.id] = source.locale
        while len(self._locales) > LOCALES_REMEMBERED:
            del self._locales[next(iter(self._locales))]

    async def _tree_error(
        self, interaction: discord.Interaction[Any], error: app_commands.AppCommandError
    ) -> None:
        self.report_error(f"slash command {interaction.data!r}", error)
        if not interaction.response.is_done():
            with speaking(supported(interaction.locale.value) or "en"):
                await interaction.response.send_message(
                    _("genbot could not run that command."), ephemeral=True
                )

    # Messages ----------------------------------------------------------------------------------

    async def on_message(self, message: discord.Message) -> None:
        await self._hear(message)

    async def on_raw_message_edit(self, payload: discord.RawMessageUpdateEvent) -> None:
        """An author's edit of their message, heard in a DM or a thread (where it may be a
        conversation's turn). Updates that change no text (an embed unfurled) carry no
        ``edited_timestamp`` and are not edits."""
        if "content" in payload.data and payload.data.get("edited_timestamp"):
            await self._hear(payload.message, edited=True)

    async def _hear(self, message: discord.Message, *, edited: bool = False) -> None:
        me = self.user
        if me is None or message.author.bot or message.author.id == me.id:
            return
        if message.type not in (discord.MessageType.default, discord.MessageType.reply):
            return
        mentions_bot = any(user.id == me.id for user in message.mentions)
        reference = message.reference
        reply_to = str(reference.message_id) if reference and reference.message_id else None
        replied = reference.resolved if reference else None
        replies_to_bot = reply_to is not None and (
            not isinstance(replied, discord.Message) or replied.author.id == me.id
        )
        place = await self._message_place(message, addressed=mentions_bot or replies_to_bot)
        if place is None or not is_allowed(place, self.settings.allowed_channel_ids):
            return
        if edited and not (place.is_dm or place.thread_id):
            return
        event = UserMessage(
            user=user_of(message.author, self.settings.admin_ids),
            place=place,
            locale=self._locales.get(str(message.author.id)),
            place_locale=message.guild.preferred_locale.value if message.guild else None,
            context=message,
            message_id=str(message.id),
            text=strip_mention(message.content, me.id),
            attachments=tuple(attachment_of(a) for a in message.attachments),
            reply_to_message_id=reply_to,
            mentions_bot=mentions_bot,
            edited=edited,
            serial_key=(place.channel_id, place.thread_id),
        )
        self._run(event)

    async def _message_place(self, message: discord.Message, *, addressed: bool) -> Place | None:
        """Where a message the core should hear lives, or ``None`` for other traffic.

        DMs, every guild thread (the core keeps the conversations and ignores the rest) and
        messages addressed to the bot count; plain channel chatter does not, and costs no REST
        call. A channel missing from discord.py's cache may be a thread: it is looked up once.
        """
        channel: Any = message.channel
        if message.guild is None:
            return place_of(channel, None)
        guild_id = message.guild.id
        if isinstance(channel, discord.PartialMessageable):
            return await self._uncached_place(channel.id, guild_id, addressed=addressed)
        if isinstance(channel, discord.Thread) or addressed:
            return place_of(channel, guild_id)
        return None

    async def _uncached_place(
        self, channel_id: int, guild_id: int, *, addressed: bool
    ) -> Place | None:
        lookup = self._thread_parents.get(channel_id)
        if lookup is None:
            lookup = asyncio.ensure_future(self._parent_of(channel_id))
            self._thread_parents[channel_id] = lookup
            while len(self._thread_parents) > UNCACHED_CHANNELS_REMEMBERED:
                del self._thread_parents[next(iter(self._thread_parents))]
        try:
            parent_id = await asyncio.shield(lookup)
        except Exception as error:
            if self._thread_parents.get(channel_id) is lookup:
                del self._thread_parents[channel_id]
            if isinstance(error, discord.HTTPException):
                return None
            raise
        if parent_id is not None:
            return Place(PLATFORM, str(guild_id), str(parent_id), str(channel_id))
        return Place(PLATFORM, str(guild_id), str(channel_id)) if addressed else None

    async def _parent_of(self, channel_id: int) -> int | None:
        """The parent channel of thread ``channel_id``; ``None`` when it is not a thread."""
        fetched = await self.fetch_channel(channel_id)
        return fetched.parent_id if isinstance(fetched, discord.Thread) else None

    async def on_error(self, event_method: str, /, *args: Any, **kwargs: Any) -> None:
        error = sys.exc_info()[1]
        if error is not None:
            self.report_error(f"discord event {event_method}", error)

    # Running the core --------------------------------------------------------------------------

    def _run(self, event: InboundEvent, *, watchdog: bool = False) -> None:
        self.intake.submit(event, around=self._watched_scope if watchdog else None)

    @contextlib.asynccontextmanager
    async def _watched_scope(self, event: InboundEvent) -> AsyncIterator[None]:
        guard = asyncio.create_task(self._acknowledge_late(event))
        try:
            async with self.surface.settling(event):
                yield
        finally:
            guard.cancel()

    async def _acknowledge_late(self, event: InboundEvent) -> None:
        await asyncio.sleep(MODAL_GRACE_SECONDS)
        context = event.context
        if isinstance(context, InteractionContext) and not context.interaction.response.is_done():
            try:
                await context.interaction.response.defer()
            except discord.DiscordException as error:
                self.report_error("acknowledging a slow form-opening press", error)

    async def drain(self, timeout: float) -> None:
        """Wait for running event tasks (up to ``timeout``), then cancel what is left."""
        if self._intake is not None:
            await self._intake.drain(timeout)
