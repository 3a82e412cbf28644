"""The state of the fake Discord: users, guild, channels, messages, interactions, requests.

Every object renders itself as the JSON payload Discord would send (``payload()``), complete
enough for discord.py's parsers. Tests read these objects to assert what users would see.
"""

from __future__ import annotations

import itertools
import re
import time
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

DISCORD_EPOCH_MS = 1420070400000
EPHEMERAL = 64
LOADING = 128
COMPONENTS_V2 = 1 << 15

TEXT_CHANNEL = 0
DM_CHANNEL = 1
VOICE_CHANNEL = 2
PUBLIC_THREAD = 11
PRIVATE_THREAD = 12

APPLICATION_COMMAND = 2
MESSAGE_COMPONENT = 3
AUTOCOMPLETE = 4
MODAL_SUBMIT = 5
SUBCOMMAND = 1
"""The application command option type of a group's subcommand."""

_sequence = itertools.count()


def snowflake() -> int:
    """A fresh, increasing Discord id."""
    millis = int(time.time() * 1000) - DISCORD_EPOCH_MS
    return (millis << 22) | (next(_sequence) & 0x3FFFFF)


def timestamp() -> str:
    return datetime.now(UTC).isoformat()


@dataclass
class FakeUser:
    """A Discord user (the bot is one too); ``roles``: the ids of the guild roles they have
    (beyond ``@everyone``), sent in their member objects."""

    id: int
    username: str
    bot: bool = False
    roles: list[int] = field(default_factory=list)
    locale: str = "en-US"
    """The language of the user's Discord client, sent as an interaction's ``locale``."""

    @property
    def mention(self) -> str:
        return f"<@{self.id}>"

    def payload(self) -> dict[str, Any]:
        return {
            "id": str(self.id),
            "username": self.username,
            "discriminator": "0",
            "global_name": self.username.title(),
            "avatar": None,
            "bot": self.bot,
            "public_flags": 0,
            "flags": 0,
        }


@dataclass
class FakeRole:
    """A guild role; ``<@&id>`` mentions it."""

    id: int
    name: str
    position: int = 1
    mentionable: bool = True
    managed: bool = False

    @property
    def mention(self) -> str:
        return f"<@&{self.id}>"

    def payload(self) -> dict[str, Any]:
        return {
            "id": str(self.id),
            "name": self.name,
            "color": 0,
            "hoist": False,
            "position": self.position,
            "permissions": "2248473465835073",
            "managed": self.managed,
            "mentionable": self.mentionable,
            "flags": 0,
        }


@dataclass
class FakeChannel:
    """A guild text or voice channel (with its text chat), a thread, or a DM channel."""

    id: int
    type: int
    name: str = ""
    guild_id: int | None = None
    parent_id: int | None = None
    owner_id: int | None = None
    recipient: FakeUser | None = None
    position: int = 0

    @property
    def is_thread(self) -> bool:
        return self.type in (PUBLIC_THREAD, PRIVATE_THREAD)

    def payload(self) -> dict[str, Any]:
        if self.type == DM_CHANNEL:
            assert self.recipient is not None
            return {
                "id": str(self.id),
                "type": DM_CHANNEL,
                "recipients": [self.recipient.payload()],
                "last_message_id": None,
            }
        data: dict[str, Any] = {
            "id": str(self.id),
            "type": self.type,
            "guild_id": str(self.guild_id),
            "name": self.name,
            "last_message_id": None,
            "rate_limit_per_user": 0,
            "flags": 0,
        }
        if self.is_thread:
            data |= {
                "parent_id": str(self.parent_id),
                "owner_id": str(self.owner_id),
                "message_count": 0,
                "member_count": 1,
                "total_message_sent": 0,
                "thread_metadata": {
                    "archived": False,
                    "auto_archive_duration": 1440,
                    "archive_timestamp": timestamp(),
                    "locked": False,
                },
            }
        else:
            data |= {
                "position": self.position,
                "permission_overwrites": [],
                "nsfw": False,
                "parent_id": None,
                "topic": None,
            }
        if self.type == VOICE_CHANNEL:
            data |= {"bitrate": 64000, "user_limit": 0, "rtc_region": None}
        return data


@dataclass
class FakeAttachment:
    """A file on a message (or an interaction's ``resolved`` data), served by the fake CDN."""

    id: int
    filename: str
    data: bytes
    content_type: str
    url: str

    def payload(self) -> dict[str, Any]:
        return {
            "id": str(self.id),
            "filename": self.filename,
            "size": len(self.data),
            "url": self.url,
            "proxy_url": self.url,
            "content_type": self.content_type,
        }


@dataclass(frozen=True)
class Pings:
    """Who a message actually notifies, after Discord applies ``allowed_mentions``."""

    users: frozenset[int]
    roles: frozenset[int]
    everyone: bool

    @property
    def nobody(self) -> bool:
        return not (self.users or self.roles or self.everyone)


@dataclass
class FakeMessage:
    """A message as users see it now, with every earlier version in ``history``."""

    id: int
    channel_id: int
    author: FakeUser
    content: str = ""
    guild_id: int | None = None
    attachments: list[FakeAttachment] = field(default_factory=list)
    components: list[dict[str, Any]] = field(default_factory=list)
    embeds: list[dict[str, Any]] = field(default_factory=list)
    flags: int = 0
    allowed_mentions: dict[str, Any] | None = None
    message_reference: dict[str, Any] | None = None
    referenced: FakeMessage | None = None
    mentions: list[FakeUser] = field(default_factory=list)
    mention_roles: list[int] = field(default_factory=list)
    webhook_id: int | None = None
    interaction_id: int | None = None
    thread_id: int | None = None
    deleted: bool = False
    edited: str | None = None
    created: str = field(default_factory=timestamp)
    posted_at: float = field(default_factory=time.monotonic)
    nonce: str | int | None = None
    history: list[str] = field(default_factory=list)

    @property
    def ephemeral(self) -> bool:
        return bool(self.flags & EPHEMERAL)

    @property
    def loading(self) -> bool:
        return bool(self.flags & LOADING)

    @property
    def components_v2(self) -> bool:
        return bool(self.flags & COMPONENTS_V2)

    @property
    def text(self) -> str:
        """What the message reads: its content, or a card's text displays."""
        if not self.components_v2:
            return self.content
        return "\n".join(c["content"] for c in walk(self.components) if c["type"] == 10)

    @property
    def gallery(self) -> list[str]:
        """The media URLs a card's galleries show."""
        return [
            item["media"]["url"]
            for c in walk(self.components)
            if c["type"] == 12
            for item in c.get("items", [])
        ]

    @property
    def buttons(self) -> list[dict[str, Any]]:
        """Every button, row by row (inside cards too)."""
        return [c for c in walk(self.components) if c["type"] == 2]

    @property
    def custom_ids(self) -> list[str]:
        return [b["custom_id"] for b in self.buttons if "custom_id" in b]

    def button(self, label: str) -> dict[str, Any]:
        """The button labelled ``label``; ``KeyError`` when there is none."""
        for button in self.buttons:
            if button.get("label") == label:
                return button
        raise KeyError(f"no button {label!r} in {[b.get('label') for b in self.buttons]}")

    @property
    def pings(self) -> Pings:
        return resolve_pings(self.text, self.allowed_mentions, self.referenced)

    def payload(self, bot_id: int) -> dict[str, Any]:
        data: dict[str, Any] = {
            "id": str(self.id),
            "channel_id": str(self.channel_id),
            "author": self.author.payload(),
            "content": self.content,
            "timestamp": self.created,
            "edited_timestamp": self.edited,
            "tts": False,
            "mention_everyone": "@everyone" in self.content and not self.author.bot,
            "mentions": [u.payload() for u in self.mentions],
            "mention_roles": [str(r) for r in self.mention_roles],
            "attachments": [a.payload() for a in self.attachments],
            "embeds": self.embeds,
            "components": self.components,
            "pinned": False,
            "type": 19 if self.message_reference else 0,
            "flags": self.flags,
        }
        if self.guild_id is not None:
            data["guild_id"] = str(self.guild_id)
            data["member"] = member_payload(self.author, roles=[])
        if self.webhook_id is not None:
            data["webhook_id"] = str(self.webhook_id)
            data["application_id"] = str(self.webhook_id)
        if self.message_reference is not None:
            data["message_reference"] = self.message_reference
            data["referenced_message"] = (
                self.referenced.payload(bot_id) if self.referenced is not None else None
            )
        if self.thread_id is not None:
            data["flags"] = self.flags | 32
        return data


@dataclass
class FakeInteraction:
    """One interaction the fake sent, and every callback the bot answered it with.

    Set ``token_expired`` to make its webhook answer 401 as Discord does after 15 minutes.
    """

    id: int
    token: str
    type: int
    user: FakeUser
    channel_id: int
    guild_id: int | None
    data: dict[str, Any]
    created: float
    message_id: int | None = None
    callbacks: list[dict[str, Any]] = field(default_factory=list)
    late_callbacks: int = 0
    token_expired: bool = False
    original_message_id: int | None = None
    followup_ids: list[int] = field(default_factory=list)

    @property
    def response_type(self) -> int | None:
        """The callback type the bot answered with (4, 5, 6, 7, 8, 9), if any."""
        return self.callbacks[0]["type"] if self.callbacks else None

    @property
    def modal(self) -> dict[str, Any] | None:
        """The modal the bot opened in answer (callback type 9)."""
        if self.callbacks and self.callbacks[0]["type"] == 9:
            data: dict[str, Any] = self.callbacks[0]["data"]
            return data
        return None


@dataclass
class RecordedRequest:
    """One HTTP request the fake received and what it answered."""

    method: str
    path: str
    query: dict[str, str]
    json: Any
    files: list[tuple[str, str, bytes]]
    status: int = 0
    at: float = 0.0


def member_payload(user: FakeUser, roles: list[int]) -> dict[str, Any]:
    return {
        "user": user.payload(),
        "roles": [str(r) for r in (*roles, *user.roles)],
        "joined_at": timestamp(),
        "deaf": False,
        "mute": False,
        "flags": 0,
        "pending": False,
        "nick": None,
        "permissions": "2248473465835073",
    }


_USER_MENTION = re.compile(r"<@!?(\d+)>")
_ROLE_MENTION = re.compile(r"<@&(\d+)>")


def walk(components: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Every component, depth first (rows, containers, sections and their accessories)."""
    found: list[dict[str, Any]] = []
    for component in components:
        found.append(component)
        found += walk(component.get("components", []))
        if "accessory" in component:
            found += walk([component["accessory"]])
    return found


def resolve_pings(
    content: str, allowed: dict[str, Any] | None, referenced: FakeMessage | None = None
) -> Pings:
    """Apply Discord's ``allowed_mentions`` rules to ``content`` (absent = parse everything)."""
    users = {int(u) for u in _USER_MENTION.findall(content)}
    roles = {int(r) for r in _ROLE_MENTION.findall(content)}
    everyone = "@everyone" in content or "@here" in content
    replied = {referenced.author.id} if referenced is not None else set()
    if allowed is None:
        return Pings(frozenset(users | replied), frozenset(roles), everyone)
    parse = set(allowed.get("parse", []))
    if "users" not in parse:
        users &= {int(u) for u in allowed.get("users", [])}
    if "roles" not in parse:
        roles &= {int(r) for r in allowed.get("roles", [])}
    if allowed.get("replied_user"):
        users |= replied
    return Pings(frozenset(users), frozenset(roles), everyone and "everyone" in parse)
