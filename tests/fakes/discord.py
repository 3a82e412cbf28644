"""A protocol-faithful fake Discord for driving the real discord.py on 127.0.0.1.

Usage::

    async with FakeDiscord() as fake:
        # point discord.py at it: Route.BASE = fake.api_base, DEFAULT_GATEWAY = fake.gateway_url
        alice, general = fake.user("alice"), fake.channel("general")
        interaction = await fake.slash(alice, general, "imagine", {"prompt": "a fox"})
        assert await fake.answered(interaction) == 5
        grid = await fake.wait_for(lambda: next(iter(fake.bot_messages(general.id)), None))
        await fake.press(alice, grid, "U2")

It serves REST under ``/api/v10`` (login, command sync, interaction callbacks with
``with_response``, webhooks, channel messages incl. multipart uploads, typing, threads, DMs),
attachments on a fake CDN, and a gateway websocket at ``/gateway`` (HELLO, IDENTIFY, READY,
GUILD_CREATE, heartbeats, RESUME). The world: one guild with text channels ``general``, ``random``
and ``closed`` and the voice channel ``lounge`` (whose text chat takes messages), users ``alice``,
``bob`` and ``carol``, roles ``everyone``, ``moderators``, ``patrons`` and the bot's own (a user's
are in ``FakeUser.roles``, sent in their member objects). Channel message posts and edits share
a per-channel bucket (``bucket_size`` per ``bucket_window`` seconds) answered with 429 +
``retry_after`` when exceeded (``rate_limit_hits`` counts them);
``advertise_rate_limits=False`` withholds the ``X-RateLimit-*`` headers on successful answers so
discord.py cannot pace itself and only the caller's own windows avoid 429s.
``message_content_intent=False`` models the Developer Portal switch left off (IDENTIFY asking for
it is closed with 4014); ``identify_close_code`` closes every IDENTIFY with that code;
``close_gateway(code)`` ends live sessions (4004: token reset). Interactions not answered within
``interaction_deadline`` seconds get Discord's "Unknown interaction" (``late_callbacks`` counts
them). A message posted with a ``nonce`` and ``enforce_nonce`` that repeats one of the bot's posts
in the channel within ``nonce_window`` seconds returns that post and creates nothing. Every request
is recorded in ``requests``; ``messages`` models what users see (``FakeMessage.pings`` tells who a
message notifies after ``allowed_mentions``). Unlike Discord's client, ``slash`` does not enforce
option ranges or choices, so tests can prove the core rejects out-of-range values itself.
"""

from __future__ import annotations

from typing import Any

from tests.fakes.discord_actions import Upload, UserActions
from tests.fakes.discord_model import (
    EPHEMERAL,
    FakeAttachment,
    FakeChannel,
    FakeInteraction,
    FakeMessage,
    FakeRole,
    FakeUser,
    Pings,
    RecordedRequest,
)

__all__ = [
    "EPHEMERAL",
    "FakeAttachment",
    "FakeChannel",
    "FakeDiscord",
    "FakeInteraction",
    "FakeMessage",
    "FakeRole",
    "FakeUser",
    "Pings",
    "RecordedRequest",
    "Upload",
]


class FakeDiscord(UserActions):
    """The fake Discord server (REST + gateway + CDN). Use as an async context manager."""

    def __init__(self, **options: Any) -> None:
        super().__init__(**options)

    async def __aenter__(self) -> FakeDiscord:
        await self.start()
        return self
