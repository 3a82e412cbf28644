"""``DiscordAdapter``: what the composition root starts, stops and attaches to the core."""

from __future__ import annotations

import asyncio
import contextlib

import discord
import yarl

from adapters.discord.client import ErrorReporter, GenbotClient, log_error
from adapters.discord.surface import DiscordSurface
from bot.config import DiscordSettings, LimitsSettings
from bot.events import EventHandler, SurfaceLimits


def point_discord_py_at(api_base: str, gateway_url: str) -> None:
    """Aim discord.py's REST and gateway at ``api_base``/``gateway_url`` (process-wide)."""
    discord.http.Route.BASE = api_base.rstrip("/")
    discord.gateway.DiscordWebSocket.DEFAULT_GATEWAY = yarl.URL(gateway_url)


def surface_limits(limits: LimitsSettings) -> SurfaceLimits:
    return SurfaceLimits(
        max_text=2000,
        edits_per_window_per_channel=limits.discord_edits_per_window,
        edit_window_seconds=limits.discord_edit_window_seconds,
        max_buttons_per_row=5,
    )


class DiscordAdapter:
    """genbot on Discord: a discord.py client translating traffic for ``handler``.

    ``surface`` is the :class:`bot.events.Surface` the core answers through. ``report_error``
    hears about every exception raised while handling traffic (default: logged).
    """

    def __init__(
        self,
        settings: DiscordSettings,
        limits: LimitsSettings,
        handler: EventHandler,
        *,
        report_error: ErrorReporter = log_error,
        guild_ready_timeout: float = 2.0,
        start_timeout: float = 60.0,
    ) -> None:
        self.settings = settings
        self.start_timeout = start_timeout
        self.client = GenbotClient(
            settings,
            handler,
            lambda client: DiscordSurface(client, surface_limits(limits), limits.max_upload_bytes),
            report_error=report_error,
            guild_ready_timeout=guild_ready_timeout,
        )
        self._connection: asyncio.Task[None] | None = None

    @property
    def surface(self) -> DiscordSurface:
        return self.client.surface

    async def start(self) -> None:
        """Log in, sync commands, connect to the gateway and wait until ready (bounded).

        Raises ``discord.LoginFailure`` for a bad token, ``TimeoutError`` when not ready in
        ``start_timeout`` seconds, or the gateway's error when the connection ends first.
        """
        token = self.settings.token.get_secret_value()
        if not token:
            raise ValueError("[discord] token is not set")
        point_discord_py_at(self.settings.api_base, self.settings.gateway_url)
        ready: asyncio.Task[None] | None = None
        try:
            async with asyncio.timeout(self.start_timeout):
                await self.client.login(token)
                self._connection = asyncio.create_task(self.client.connect(reconnect=True))
                ready = asyncio.create_task(self.client.wait_until_ready())
                await asyncio.wait({ready, self._connection}, return_when=asyncio.FIRST_COMPLETED)
                if not ready.done():
                    error = self._connection.exception()
                    raise error or ConnectionError("the Discord gateway closed before it was ready")
        except BaseException:
            if ready is not None:
                ready.cancel()
            await self.stop(drain_timeout=0.0)
            raise

    async def stop(self, drain_timeout: float = 5.0) -> None:
        """Let running handlers finish (up to ``drain_timeout``), then disconnect."""
        await self.client.drain(drain_timeout)
        await self.client.close()
        if self._connection is not None:
            with contextlib.suppress(Exception, asyncio.CancelledError):
                await asyncio.wait_for(self._connection, timeout=5.0)
            self._connection = None
