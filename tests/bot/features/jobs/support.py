"""Helpers for the job tests: run a flow through the fake platform and read what happened."""

from __future__ import annotations

import asyncio
import base64
import io
import time
from collections.abc import AsyncIterator, Callable
from contextlib import AsyncExitStack, asynccontextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from PIL import Image

from bot.api import ProviderClient
from bot.kernel import Attachment, ButtonPress, ModalSubmit, SurfaceRegistry
from bot.outbox import Outbox
from genbot.compose import JobEngines, build_job_engines
from simulator.server import RunningSimulator
from storage import Job, NewJob, SqliteStore
from tests.bot.harness import ROOMY, Genbot, harness_settings
from tests.fakes.platform import Actor, FakePlatform, PostedMessage
from tests.storage.helpers import create_job

GRID_LABELS = ["U1", "U2", "U3", "U4", "🔄", "V1", "V2", "V3", "V4", "🌱 Seed", "ℹ️"]
"""The buttons under every grid: U and V rows, the seed, and its info."""
RECHECK = 0.01


async def run_command(
    bot: Genbot, actor: Actor, name: str, **options: Any
) -> tuple[Job, PostedMessage]:
    """Run a command that starts a job; return the job and its result message."""
    await actor.command(name, **options)
    job = await bot.latest_job()
    return job, await bot.result(job.id)


async def press(
    bot: Genbot, actor: Actor, message: PostedMessage, label: str
) -> tuple[Job, PostedMessage]:
    """Press a button that starts a job; return the new job and its result message."""
    before = {job.id for job in await bot.all_jobs()}
    await actor.press(message, label)
    new = [job for job in await bot.all_jobs() if job.id not in before]
    assert len(new) == 1, f"pressing {label} made {len(new)} jobs; {bot.platform.ephemerals}"
    return new[0], await bot.result(new[0].id)


def bodies(sim: RunningSimulator, path: str) -> list[dict[str, Any]]:
    """The JSON bodies the simulator received on ``path``."""
    return [request.body for request in sim.state.requests_to(path)]


def png(width: int = 32, height: int = 32, color: str = "red") -> bytes:
    """A small PNG."""
    buffer = io.BytesIO()
    Image.new("RGB", (width, height), color).save(buffer, format="PNG")
    return buffer.getvalue()


def image_size(data: bytes) -> tuple[int, int]:
    with Image.open(io.BytesIO(data)) as image:
        return image.size


def mask_pixels(mask_base64: str) -> Image.Image:
    """A mask sent to inpaint, decoded."""
    return Image.open(io.BytesIO(base64.b64decode(mask_base64)))


def attachment(name: str, url: str = "", data: bytes | None = None) -> Attachment:
    return Attachment(filename=name, url=url or f"https://files.example.com/{name}", data=data)


def submission(actor: Actor, action: str, ref: str, **values: str) -> ModalSubmit:
    """A form submission by ``actor`` (as a platform would send it, even for a forged ref)."""
    return ModalSubmit(user=actor.user, place=actor.place, action=action, ref=ref, values=values)


def job_record(**fields: Any) -> Job:
    """A stored job as the store returns it: an imagine job in ``submitted``, with ``fields``
    changed."""
    values: dict[str, Any] = {
        "id": "j1", "family": "task", "type": "imagine", "status": "submitted",
        "provider_id": None, "parent_job_id": None, "action": None, "requester_id": "alice",
        "platform": "fake", "workspace_id": "w", "channel_id": "c", "thread_id": None,
        "progress_message_id": None, "result_message_id": None, "prompt": "a fox",
        "parameters": {}, "result_urls": [], "actions": [], "result": {}, "error": None,
        "webhook_secret": None, "credits": None, "created_at": 0.0, "updated_at": 0.0,
        "finished_at": None, "last_polled_at": None, "last_webhook_at": None,
        "next_poll_at": None,
    }  # fmt: skip
    values.update(fields)
    return Job(**values)


def raw_press(actor: Actor, message: PostedMessage, action: str, ref: str) -> ButtonPress:
    """A press of a button that may not exist (a forged or stale custom id)."""
    return ButtonPress(
        user=actor.user,
        place=message.ref.place,
        message_id=message.ref.message_id,
        action=action,
        ref=ref,
    )


MONOTONIC_OFFSET = 1e9
"""How far :func:`monotonic_beside` a fake wall clock puts its monotonic clock."""


def monotonic_beside(clock: Callable[[], float]) -> Callable[[], float]:
    """A monotonic clock for engines on the wall ``clock``: real ``time.monotonic`` for real
    ``time.time``, else one that moves with the fake ``clock`` from another origin
    (:data:`MONOTONIC_OFFSET` seconds before it)."""
    if clock is time.time:
        return time.monotonic
    return lambda: clock() - MONOTONIC_OFFSET


@dataclass
class Bare:
    """The job machinery with its tracker not started (the test drives it)."""

    engines: JobEngines
    platform: FakePlatform
    store: SqliteStore
    provider: ProviderClient


@asynccontextmanager
async def bare_engines(
    sim: RunningSimulator,
    tmp_path: Path,
    *,
    api_url: str | None = None,
    clock: Callable[[], float] = time.time,
    monotonic: Callable[[], float] | None = None,
    platform: FakePlatform | None = None,
    **limits: Any,
) -> AsyncIterator[Bare]:
    """Job engines on ``tmp_path / "genbot.db"`` talking to ``sim`` (or ``api_url``); the store
    and the engines share the wall ``clock``. The engines measure their intervals on
    ``monotonic``: by default real ``time.monotonic`` when ``clock`` is real ``time.time``,
    else ``clock`` at an origin :data:`MONOTONIC_OFFSET` seconds away, so it moves with a
    stepped fake but any subtraction across the two clocks is visibly wrong (a test stepping
    the wall clock alone gives both)."""
    db = tmp_path / "genbot.db"
    settings = harness_settings(api_url or sim.base_url, db, webhooks=False, limits=limits)
    async with AsyncExitStack() as stack:
        store = await stack.enter_async_context(await SqliteStore.open(db, clock=clock))
        provider = await stack.enter_async_context(ProviderClient(settings.api))
        fake = platform or FakePlatform(profile=ROOMY)
        surfaces = SurfaceRegistry([fake])
        engines = build_job_engines(
            settings,
            store,
            provider,
            Outbox(surfaces),
            clock=clock,
            monotonic=monotonic_beside(clock) if monotonic is None else monotonic,
        )
        stack.push_async_callback(engines.media.aclose)
        stack.push_async_callback(engines.tracker.stop)
        yield Bare(engines, fake, store, provider)


async def left_by_a_previous_run(
    db: Path, new: NewJob, clock: Callable[[], float] = time.time
) -> Job:
    """A job created (and so leased) by an earlier genbot process on the database ``db``."""
    async with await SqliteStore.open(db, clock=clock) as previous:
        return await create_job(previous.admission, new)


async def eventually(condition: Callable[[], bool], timeout: float = 5.0) -> None:
    """Wait (bounded) until ``condition()`` holds, checking it every :data:`RECHECK`
    (sleeping between checks: a loop of ``sleep(0)`` would keep a core busy while the work it
    waits for, in other tasks, threads and processes, needs it)."""
    async with asyncio.timeout(timeout):
        while True:
            if condition():
                return
            await asyncio.sleep(RECHECK)
