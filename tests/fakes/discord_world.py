"""The world the fake Discord models: the bot, one guild with its roles, channels and members,
users, messages, interactions and recorded requests; lookups and waits tests use on it."""

from __future__ import annotations

import asyncio
import contextlib
import re
from collections.abc import Callable
from typing import Any, TypeVar

from tests.fakes.discord_model import (
    DM_CHANNEL,
    TEXT_CHANNEL,
    VOICE_CHANNEL,
    FakeAttachment,
    FakeChannel,
    FakeInteraction,
    FakeMessage,
    FakeRole,
    FakeUser,
    RecordedRequest,
    member_payload,
    snowflake,
    timestamp,
)

T = TypeVar("T")

RECHECK = 0.05


class DiscordWorld:
    """State of the fake Discord; every change should be followed by :meth:`changed`."""

    def __init__(self) -> None:
        self.bot = FakeUser(snowflake(), "genbot", bot=True)
        self.app_id = self.bot.id
        self.guild_id = snowflake()
        self.guild_locale = "en-US"
        """The guild's ``preferred_locale`` (Server Settings → Community → Server Primary
        Language), sent in the guild and as an interaction's ``guild_locale``."""
        self.users: dict[str, FakeUser] = {
            name: FakeUser(snowflake(), name) for name in ("alice", "bob", "carol")
        }
        self.roles: dict[str, FakeRole] = {
            "everyone": FakeRole(self.guild_id, "@everyone", position=0),
            "moderators": FakeRole(snowflake(), "Moderators", position=2),
            "genbot": FakeRole(snowflake(), "genbot", position=1, managed=True),
            "patrons": FakeRole(snowflake(), "Patrons", position=3),
        }
        self.channels: dict[int, FakeChannel] = {}
        for position, name in enumerate(("general", "random", "closed")):
            channel = FakeChannel(snowflake(), TEXT_CHANNEL, name, self.guild_id, position=position)
            self.channels[channel.id] = channel
        lounge = FakeChannel(snowflake(), VOICE_CHANNEL, "lounge", self.guild_id, position=3)
        self.channels[lounge.id] = lounge
        self.messages: dict[int, FakeMessage] = {}
        self.attachments: dict[int, FakeAttachment] = {}
        self.interactions: dict[int, FakeInteraction] = {}
        self.requests: list[RecordedRequest] = []
        self.global_commands: list[dict[str, Any]] = []
        self.guild_commands: dict[int, list[dict[str, Any]]] = {}
        self.typing_in: list[int] = []
        self._waiters: list[asyncio.Future[None]] = []

    # Lookups -----------------------------------------------------------------------------------

    def channel(self, name: str) -> FakeChannel:
        """The guild channel (or thread) called ``name``."""
        for channel in self.channels.values():
            if channel.name == name and channel.type != DM_CHANNEL:
                return channel
        raise KeyError(name)

    def user(self, name: str) -> FakeUser:
        return self.users[name]

    def role(self, name: str) -> FakeRole:
        return self.roles[name]

    def dm_channel(self, user: FakeUser) -> FakeChannel:
        """The DM channel between ``user`` and the bot (created on first use)."""
        for channel in self.channels.values():
            if channel.type == DM_CHANNEL and channel.recipient == user:
                return channel
        channel = FakeChannel(snowflake(), DM_CHANNEL, recipient=user)
        self.channels[channel.id] = channel
        return channel

    def threads_in(self, channel_id: int) -> list[FakeChannel]:
        """Threads whose parent is ``channel_id``, oldest first."""
        return [c for c in self.channels.values() if c.is_thread and c.parent_id == channel_id]

    def messages_in(self, channel_id: int, *, ephemeral: bool = False) -> list[FakeMessage]:
        """Messages users see in a channel, oldest first; ``ephemeral`` includes private ones."""
        return [
            m
            for m in self.messages.values()
            if m.channel_id == channel_id and not m.deleted and (ephemeral or not m.ephemeral)
        ]

    def bot_messages(self, channel_id: int) -> list[FakeMessage]:
        """Public messages the bot posted in a channel, oldest first."""
        return [m for m in self.messages_in(channel_id) if m.author.id == self.bot.id]

    def ephemerals_for(self, user: FakeUser) -> list[FakeMessage]:
        """Ephemeral messages shown to ``user`` (answers and follow-ups, not "thinking…"; not
        the message a pressed component is on, which a press answered with an update has as
        its original)."""
        shown: list[FakeMessage] = []
        for interaction in self.interactions.values():
            if interaction.user != user:
                continue
            original = interaction.original_message_id
            answer = None if original == interaction.message_id else original
            messages = [self.messages[i] for i in (answer, *interaction.followup_ids) if i]
            shown += [m for m in messages if m.ephemeral and not m.deleted and not m.loading]
        return shown

    def requests_to(self, method: str, pattern: str) -> list[RecordedRequest]:
        """Recorded ``method`` requests whose API path (no ``/api/v10``) matches ``pattern``."""
        regex = re.compile(pattern)
        return [r for r in self.requests if r.method == method and regex.fullmatch(r.path)]

    def guild_payload(self) -> dict[str, Any]:
        guild_channels = [
            c for c in self.channels.values() if c.guild_id == self.guild_id and not c.is_thread
        ]
        threads = [c for c in self.channels.values() if c.is_thread]
        members = [member_payload(u, []) for u in self.users.values()]
        members.append(member_payload(self.bot, [self.roles["genbot"].id]))
        return {
            "id": str(self.guild_id),
            "name": "Genbot Test",
            "icon": None,
            "splash": None,
            "discovery_splash": None,
            "banner": None,
            "description": None,
            "owner_id": str(self.users["alice"].id),
            "afk_channel_id": None,
            "afk_timeout": 300,
            "verification_level": 0,
            "default_message_notifications": 0,
            "explicit_content_filter": 0,
            "mfa_level": 0,
            "nsfw_level": 0,
            "premium_tier": 0,
            "premium_progress_bar_enabled": False,
            "system_channel_id": None,
            "system_channel_flags": 0,
            "rules_channel_id": None,
            "public_updates_channel_id": None,
            "vanity_url_code": None,
            "preferred_locale": self.guild_locale,
            "features": [],
            "roles": [r.payload() for r in self.roles.values()],
            "emojis": [],
            "stickers": [],
            "channels": [c.payload() for c in guild_channels],
            "threads": [c.payload() for c in threads],
            "members": members,
            "member_count": len(members),
            "voice_states": [],
            "presences": [],
            "stage_instances": [],
            "guild_scheduled_events": [],
            "soundboard_sounds": [],
            "large": False,
            "unavailable": False,
            "joined_at": timestamp(),
        }

    # Waiting -----------------------------------------------------------------------------------

    async def wait_for(
        self, condition: Callable[[], T | None], timeout: float = 5.0, what: str = ""
    ) -> T:
        """Wait until ``condition()`` is truthy and return it.

        The condition is re-checked on every change and at least every ``RECHECK`` seconds,
        so a condition over another peer's state (the simulator's requests) is seen even
        when no Discord call follows it.
        """
        try:
            async with asyncio.timeout(timeout):
                while not (value := condition()):
                    waiter = asyncio.get_running_loop().create_future()
                    self._waiters.append(waiter)
                    with contextlib.suppress(TimeoutError):
                        await asyncio.wait_for(waiter, RECHECK)
                return value
        except TimeoutError:
            raise TimeoutError(f"fake Discord gave up waiting for {what or condition}") from None

    def changed(self) -> None:
        """Wake every :meth:`wait_for`."""
        waiters, self._waiters = self._waiters, []
        for waiter in waiters:
            if not waiter.done():
                waiter.set_result(None)
