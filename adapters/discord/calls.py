"""Discord calls bounded in time, their failures translated into the surface's errors.

Rate limits: discord.py reads Discord's ``X-RateLimit-*`` headers and paces requests itself
(waiting at most a bucket window; note that the call which empties a bucket returns only when
the bucket resets), and retries a 429 whose ``retry_after`` is at most
:data:`RATE_LIMIT_WAIT_CAP` seconds; a longer one reaches the core as
:class:`~bot.kernel.surface.RateLimited` at once. The cap must stay above Discord's bucket windows:
discord.py refuses any request to a bucket whose reset lies further away than the cap. Every
call is bounded by :data:`CALL_TIMEOUT`.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

import aiohttp
import discord

from bot.kernel import MessageGone, RateLimited, SurfaceError

CALL_TIMEOUT = 30.0
RATE_LIMIT_WAIT_CAP = 10.0
UNKNOWN_MESSAGE = 10008


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
