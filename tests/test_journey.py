"""The journey tracer's own reading of frames (:mod:`tests.journey`)."""

from __future__ import annotations

import asyncio
import sys
from types import FrameType
from typing import Any

from tests.journey import _fresh


async def _wait(until: asyncio.Future[None]) -> str:
    await asyncio.sleep(0)
    try:
        await until
    except asyncio.CancelledError:
        return "resumed by the cancellation"
    return "resumed with a result"


async def test_a_coroutine_is_fresh_only_when_it_starts() -> None:
    """A ``call`` event starts the coroutine once; it is resumed after ``sleep(0)`` (a send)
    and after its future was cancelled (a throw, which on 3.11 resumes the frame past its
    ``SEND`` loop, not at a ``RESUME``): neither resumption is a fresh entry."""
    fresh: list[bool] = []

    def hook(frame: FrameType, event: str, arg: Any) -> None:
        if event == "call" and frame.f_code is _wait.__code__:
            fresh.append(_fresh(frame))

    until: asyncio.Future[None] = asyncio.get_running_loop().create_future()
    previous = sys.getprofile()
    sys.setprofile(hook)
    try:
        waiting = asyncio.ensure_future(_wait(until))
        await asyncio.sleep(0)
        await asyncio.sleep(0)
        until.cancel()
        answer = await waiting
    finally:
        sys.setprofile(previous)

    assert answer == "resumed by the cancellation"
    assert fresh == [True, False, False], fresh
