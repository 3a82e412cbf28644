"""``DiscordAdapter``: what the composition root starts, stops and attaches to the core."""

from __future__ import annotations

import asyncio
import logging

import aiohttp
import discord
import yarl

from adapters import AdapterStartError, FatalHandler
from adapters.discord.client import ErrorReporter, GenbotClient, log_error
from adapters.discord.settings import DiscordSettings
from adapters.discord.surface import DiscordSurface
from bot.kernel import EventRouter, EventSink, LimitsSettings

"""Told, once, that the gateway connection ended for good after a successful start."""

STOP_CONNECTION_TIMEOUT = 5.0
_log = logging.getLogger("genbot.discord")

_GATEWAY_CLOSE_REASONS = {
    4004: "Discord's gateway refused the token (4004 authentication failed): check [discord] token",
    4010: "Discord's gateway refused the shard (4010 invalid shard)",
    4011: "Discord's gateway requires sharding for this bot (4011 sharding required)",
    4012: "Discord's gateway refused the API version (4012 invalid API version)",
    4013: "Discord's gateway refused the intents (4013 invalid intents)",
}
PRIVILEGED_INTENTS_TEXT = (
    "Discord refused the gateway connection (4014 disallowed intents): enable the Message "
    "Content intent in the Developer Portal (Bot → Privileged Gateway Intents)"
)


def point_discord_py_at(api_base: str, gateway_url: str) -> None:
    """Aim discord.py's REST and gateway at ``api_base``/``gateway_url`` (process-wide)."""
    discord.http.Route.BASE = api_base.rstrip("/")
    discord.gateway.DiscordWebSocket.DEFAULT_GATEWAY = yarl.URL(gateway_url)


def log_fatal(error: BaseException) -> None:
    _log.error("genbot no longer hears Discord: %s", error, exc_info=error)


def connection_problem(error: BaseException) -> str | None:
    """One line saying why Discord ended or refused the connection; ``None`` if unknown."""
    if isinstance(error, discord.LoginFailure):
        return "Discord refused the token (401): check [discord] token"
    if isinstance(error, discord.PrivilegedIntentsRequired):
        return PRIVILEGED_INTENTS_TEXT
    if isinstance(error, discord.ConnectionClosed):
        return _GATEWAY_CLOSE_REASONS.get(
            error.code, f"Discord's gateway closed the connection ({error.code})"
        )
    return None


class DiscordAdapter:
    """genbot on Discord: a discord.py client translating traffic for the core.

    ``surface`` is the :class:`bot.kernel.surface.Surface` the core answers through.
    ``report_error`` hears about every exception the adapter or discord.py raised while handling
    traffic (default: logged; genbot's router logs what the core raised).
    The ``on_fatal`` given to :meth:`start` is called once, from the event loop, when the gateway
    connection ends for good after the start succeeded (a revoked token, a disallowed intent, or a
    connection that stopped although nobody called :meth:`stop`). The process should then stop: this
    adapter no longer hears Discord.
    """

    def __init__(
        self,
        settings: DiscordSettings,
        limits: LimitsSettings,
        *,
        report_error: ErrorReporter = log_error,
        guild_ready_timeout: float = 2.0,
        start_timeout: float = 60.0,
    ) -> None:
        self.settings = settings
        self.start_timeout = start_timeout
        self.on_fatal: FatalHandler = log_fatal
        self.client = GenbotClient(
            settings,
            lambda client: DiscordSurface(
                client,
                settings.platform_profile(),
                limits.max_upload_bytes,
                result_cards=settings.result_cards,
            ),
            report_error=report_error,
            guild_ready_timeout=guild_ready_timeout,
        )
        self._connection: asyncio.Task[None] | None = None
        self._stopping = False

    @property
    def surface(self) -> DiscordSurface:
        return self.client.surface

    @property
    def intake(self) -> EventSink:
        """Where this adapter's events go (from :meth:`start` on)."""
        return self.client.intake

    async def connected(self) -> bool:
        """Whether the gateway connection is open and ready."""
        client = self.client
        if not client.is_ready() or client.is_closed():
            return False
        shards = client.shards.values()
        return bool(shards) and not any(shard.is_closed() for shard in shards)

    async def start(self, router: EventRouter, on_fatal: FatalHandler = log_fatal) -> None:
        """Log in, sync commands, connect to the gateway and wait until ready (bounded); from
        then on every event goes to ``router``'s intake and ``on_fatal`` hears a connection that
        ends.

        Raises :class:`adapters.AdapterStartError` with a one-line reason when Discord refuses
        the token (401 or gateway 4004), the Message Content intent is not enabled (4014),
        Discord cannot be reached, or the gateway is not ready within ``start_timeout``.
        """
        token = self.settings.token.get_secret_value()
        if not token:
            raise AdapterStartError("[discord] token is not set")
        self.on_fatal = on_fatal
        self.client.serve(router)
        point_discord_py_at(self.settings.api_base, self.settings.gateway_url)
        try:
            await self._connect(token)
        except BaseException as error:
            await self.stop(drain_timeout=0.0)
            problem = self._start_problem(error)
            if problem is None:
                raise
            raise AdapterStartError(problem) from error
        assert self._connection is not None
        self._connection.add_done_callback(self._connection_ended)

    async def _connect(self, token: str) -> None:
        ready: asyncio.Task[None] | None = None
        try:
            async with asyncio.timeout(self.start_timeout):
                await self.client.login(token)
                self._connection = asyncio.create_task(self.client.connect(reconnect=True))
                ready = asyncio.create_task(self.client.wait_until_ready())
                await asyncio.wait({ready, self._connection}, return_when=asyncio.FIRST_COMPLETED)
                if not ready.done():
                    raise _ended_error(self._connection)
        finally:
            if ready is not None and not ready.done():
                ready.cancel()

    def _start_problem(self, error: BaseException) -> str | None:
        if isinstance(error, AdapterStartError):
            return str(error)
        known = connection_problem(error)
        if known is not None:
            return known
        if isinstance(error, TimeoutError):
            return (
                f"Discord was not ready within {self.start_timeout:g} s "
                f"(API {self.settings.api_base}, gateway {self.settings.gateway_url})"
            )
        if isinstance(error, discord.HTTPException):
            return f"Discord refused genbot's start-up ({error.status}: {error.text})"
        if isinstance(error, aiohttp.ClientError | OSError | discord.GatewayNotFound):
            return f"cannot reach Discord at {self.settings.api_base}: {error}"
        return None

    def _connection_ended(self, task: asyncio.Task[None]) -> None:
        error = _ended_error(task)
        if self._stopping:
            return
        problem = connection_problem(error)
        fatal = error
        if problem is not None:
            fatal = ConnectionError(problem)
            fatal.__cause__ = error
        try:
            self.on_fatal(fatal)
        except Exception:
            _log.exception("on_fatal failed while reporting: %s", fatal)

    async def stop(self, drain_timeout: float = 5.0) -> None:
        """Let running handlers finish (up to ``drain_timeout``), then disconnect.

        The connection's end is not reported to ``on_fatal``. Cancelling the caller cancels
        the stop (it is not swallowed).
        """
        self._stopping = True
        if self.client.router is not None:
            self.intake.stop()
        await self.client.drain(drain_timeout)
        await self.client.close()
        connection = self._connection
        if connection is None:
            return
        done, _ = await asyncio.wait({connection}, timeout=STOP_CONNECTION_TIMEOUT)
        if not done:
            connection.cancel()
            await asyncio.wait({connection}, timeout=STOP_CONNECTION_TIMEOUT)
        if connection.done() and not connection.cancelled():
            connection.exception()
        self._connection = None


def _ended_error(task: asyncio.Task[None]) -> BaseException:
    """Why a finished connection task ended, as an exception (its own when it raised one)."""
    if task.cancelled():
        return ConnectionError("the Discord gateway connection was cancelled")
    raised = task.exception()
    if raised is not None:
        return raised
    return ConnectionError("the Discord gateway connection closed")
