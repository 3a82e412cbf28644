"""Pressed buttons drawn primary: marks made at once on one job all end up on its message, and
a press landing after a result is written but before it is recorded shows once it is."""

from __future__ import annotations

import asyncio
import contextlib
from pathlib import Path

from bot.kernel import MessageRef, OutMessage
from storage import Job
from tests.bot.features.jobs.support import press, run_command
from tests.bot.harness import ROOMY, Genbot, harness
from tests.fakes.platform import FakePlatform, PostedMessage

HELD_EDIT_WAIT = 10.0
OTHER_MARK_WAIT = 1.0


class HoldsTheFirstEdit(FakePlatform):
    """Holds the first edit of a message after ``hold`` is set until ``release`` is set."""

    def __init__(self) -> None:
        super().__init__(profile=ROOMY)
        self.hold = False
        self.holding = asyncio.Event()
        self.release = asyncio.Event()

    async def edit(self, ref: MessageRef, message: OutMessage) -> None:
        if self.hold:
            self.hold = False
            self.holding.set()
            async with asyncio.timeout(HELD_EDIT_WAIT):
                await self.release.wait()
        await super().edit(ref, message)


class HoldsTheShownResult(FakePlatform):
    """Shows the first result (an edit carrying images) at once, then holds the write's
    return until ``release`` is set: genbot records its job ``posted`` only after that."""

    def __init__(self) -> None:
        super().__init__(profile=ROOMY)
        self.hold = True
        self.holding = asyncio.Event()
        self.release = asyncio.Event()

    async def edit(self, ref: MessageRef, message: OutMessage) -> None:
        await super().edit(ref, message)
        if message.images and self.hold:
            self.hold = False
            self.holding.set()
            async with asyncio.timeout(HELD_EDIT_WAIT):
                await self.release.wait()


async def pressed_while_shown(
    bot: Genbot, platform: HoldsTheShownResult
) -> tuple[Job, PostedMessage]:
    """Alice's grid, shown and held before it is recorded ``posted``, and U1 pressed on it
    (drawn unpressed until then)."""
    alice = bot.actor()
    await alice.command("imagine", prompt="a red fox")
    async with asyncio.timeout(HELD_EDIT_WAIT):
        await platform.holding.wait()
    job = await bot.latest_job()
    grid = bot.progress(job)
    assert grid.message.images and grid.button("U1").style == "secondary"
    await press(bot, alice, grid, "U1")
    return job, grid


async def test_a_press_before_the_result_is_recorded_shows_once_it_is(tmp_path: Path) -> None:
    """U1 pressed on a grid already shown but not yet recorded ``posted``: its mark was stored
    but could not be drawn (the job was not posted), and the move to ``posted`` overwrote the
    stored result with the one the delivery had read, so the mark was lost for good."""
    platform = HoldsTheShownResult()
    async with harness(tmp_path, platform=platform) as bot:
        job, grid = await pressed_while_shown(bot, platform)
        unrecorded = await bot.store.jobs.get_job(job.id)
        assert unrecorded is not None and unrecorded.status == "posting", "pressed in the window"
        assert grid.button("U1").style == "secondary"

        platform.release.set()
        await bot.settled(job.id)
        await bot.jobs.tracker.wait_idle()

        assert grid.button("U1").style == "primary"
        stored = await bot.store.jobs.get_job(job.id)
        assert stored is not None and stored.result["pressed"] == ["upscale1"]
        assert {"width", "height"} <= set(stored.result), "the delivery's own keys are noted"


class HoldsTheResultThenItsRedraw(HoldsTheShownResult):
    """As :class:`HoldsTheShownResult`; then, once ``redrawn`` names a message, holds the next
    edit of that message (before it shows) until ``release_redraw`` is set."""

    def __init__(self) -> None:
        super().__init__()
        self.redrawn: str | None = None
        self.redrawing = asyncio.Event()
        self.release_redraw = asyncio.Event()

    async def edit(self, ref: MessageRef, message: OutMessage) -> None:
        if ref.message_id == self.redrawn:
            self.redrawn = None
            self.redrawing.set()
            async with asyncio.timeout(HELD_EDIT_WAIT):
                await self.release_redraw.wait()
        await super().edit(ref, message)


async def test_a_heartbeat_during_the_late_press_redraw_does_not_stop_it(tmp_path: Path) -> None:
    """The redraw of a press that came before the result was recorded runs after the move to
    ``posted``: a heartbeat then no longer finds the job held (it is not in flight any more),
    and took that for a takeover, cancelling the delivery and with it the redraw."""
    platform = HoldsTheResultThenItsRedraw()
    async with harness(tmp_path, platform=platform) as bot:
        job, grid = await pressed_while_shown(bot, platform)
        platform.redrawn = grid.ref.message_id

        platform.release.set()
        async with asyncio.timeout(HELD_EDIT_WAIT):
            await platform.redrawing.wait()
        recorded = await bot.store.jobs.get_job(job.id)
        assert recorded is not None and recorded.status == "posted"
        await bot.jobs.tracker.leases.beat()
        platform.release_redraw.set()
        await bot.jobs.tracker.wait_idle()

        assert grid.button("U1").style == "primary"


async def test_two_marks_at_once_both_show_whichever_edit_is_slower(tmp_path: Path) -> None:
    platform = HoldsTheFirstEdit()
    async with harness(tmp_path, platform=platform) as bot:
        job, grid = await run_command(bot, bot.actor(), "imagine", prompt="a red fox")
        marks = bot.jobs.delivery.marks
        platform.hold = True

        first = asyncio.create_task(marks.mark_pressed(job, "upscale1"))
        async with asyncio.timeout(HELD_EDIT_WAIT):
            await platform.holding.wait()
        second = asyncio.create_task(marks.mark_pressed(job, "upscale2"))
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(asyncio.shield(second), OTHER_MARK_WAIT)
        platform.release.set()
        await asyncio.gather(first, second)

        styles = {b.label: b.style for b in grid.buttons}
        assert styles["U1"] == styles["U2"] == "primary", styles
        stored = await bot.store.jobs.get_job(job.id)
        assert stored is not None and stored.result["pressed"] == ["upscale1", "upscale2"]
