"""The three journeys of issue 23, traced on the real stack (the fake Discord, discord.py, the
real core on a tmp SQLite database, the simulator over HTTP) with :mod:`tests.journey`:

- a U1 press, from the button's callback until ``TaskClient.upscale`` returns;
- the upscale's task seen finished by the tracker, until its result is delivered;
- one streamed delta, from ``SseParser.feed`` until the next platform edit returns.

Each test prints its trace (``pytest -s`` shows it) and holds each journey to its
:class:`Hold`: no callbacks (a lower part calling up), and at most the files and re-entries traced
when the figure was last lowered — a ratchet that becomes the issue's budget (U1 ≤ 20 files, 21
since presses are screened; finished ≤ 16, SSE ≤ 8; ≤ 3, 3, 2 re-entries; one more file each for U1
and finished since mentions are drawn) once a journey reaches it. Re-entries are read as the column
of the issue's baseline table that the budget is set against, "files re-entered": the number of
distinct files the journey moves into again after leaving them (``len(Trace.reentries)``), not the
sum of those moves (printed in the trace, where they still show what a file costs). On failure the
whole path is printed.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from simulator.server import serve
from simulator.state import SimulatorConfig
from tests.adapters.discord.harness import Harness
from tests.adapters.discord.real_core import (
    QUICK_BUCKET,
    QUICK_WINDOW,
    finished,
    newest,
    real_genbot,
    with_image,
)
from tests.fakes.discord import FakeMessage
from tests.journey import Journey, Point, Trace, tracing

pytestmark = pytest.mark.parametrize("fake", [QUICK_BUCKET], indirect=True)

U1_PRESS = Journey(
    "U1 press -> TaskClient.upscale returns",
    root=Point("adapters/discord/client.py", "GenbotButton.callback"),
    end=Point("bot/api/tasks.py", "TaskClient.upscale"),
)
U1_TO_THE_CALL = Journey(
    "U1 press -> TaskClient.upscale entered",
    root=U1_PRESS.root,
    end=U1_PRESS.end,
    end_at_entry=True,
)
FINISHED_TO_POSTED = Journey(
    "finished task -> result posted",
    root=Point(
        "bot/features/jobs/tracking/provider_state.py",
        "ProviderState.apply_task_record",
        lambda args: args["job"].type == "upscale" and args["record"].status == "finished",
    ),
    end=Point("bot/features/jobs/messages.py", "JobMessages.deliver"),
)
PLATFORM_EDIT = Point("adapters/discord/surface.py", "DiscordSurface.edit")


def nth_delta(n: int) -> Callable[[dict[str, Any]], bool]:
    """A ``where`` that accepts the ``n``-th chunk fed to the SSE parser carrying content."""
    seen = 0

    def accept(args: dict[str, Any]) -> bool:
        nonlocal seen
        if b'"content"' not in args["chunk"]:
            return False
        seen += 1
        return seen == n

    return accept


def delta_journey(n: int) -> Journey:
    return Journey(
        "one SSE delta -> the platform edit",
        root=Point("adapters/discord/client.py", "GenbotClient.on_message"),
        start=Point("bot/api/sse.py", "SseParser.feed", nth_delta(n)),
        end=PLATFORM_EDIT,
    )


def upscaled(message: FakeMessage) -> bool:
    """Whether ``message`` is an upscale's result (its image, with buttons to zoom out)."""
    return with_image(message) and any(b.get("label") == "Zoom Out 2x" for b in message.buttons)


def report(trace: Trace) -> None:
    print()
    print(trace.summary())
    print(trace.path())


@dataclass(frozen=True)
class Hold:
    """What a journey may take: ``files`` outside ``storage/`` and ``tests/``, ``reentered``
    (distinct files moved into again after their first entry), no callbacks."""

    files: int
    reentered: int

    def check(self, trace: Trace) -> None:
        files, again = len(trace.files), len(trace.reentries)
        callbacks = sum(trace.callbacks.values())
        within = files <= self.files and again <= self.reentered and callbacks == 0
        assert within, (
            f"{trace.journey.name}: {files} files (at most {self.files}), {again} files "
            f"re-entered (at most {self.reentered}), {callbacks} callbacks (none)\n"
            f"{trace.summary()}\n{trace.path()}"
        )


U1_HOLD = Hold(files=22, reentered=3)
"""Issue 23's budget: 20 files, 3 files re-entered (bot/kernel/i18n.py, which every translated
text enters since issue 31, is one of them and one of the re-entered); a 21st since a press that
starts paid work is screened like a command (``bot/features/moderation/screen.py``, entered once:
a banned user's U1 is refused before anything is stored or asked of the provider); a 22nd since
the users and channels genbot's text names are drawn by each platform (``bot/kernel/mentions.py``,
entered once, as the progress message's text is drawn; model text is not drawn, so the SSE
journey does not enter it)."""
FINISHED_HOLD = Hold(files=19, reentered=5)
"""Issue 23's budget: 16 files, 3 files re-entered (bot/kernel/i18n.py among them, as for
:data:`U1_HOLD`); a 17th since the delivery slots are shared fairly among channels (issue 32:
``tracking/delivery_slots.py``, a class of its own, entered once). Since the images deliveries
hold are bounded in bytes (issue 32), 18 files and 5 re-entered: ``held_images.py`` (the room
taken, then kept down to what the images took) and ``result_messages.py`` (the most the images
may take, then the message). A 19th since the users and channels genbot's text names are drawn by
each platform (``bot/kernel/mentions.py``, entered once, as the result's text is drawn)."""
DELTA_HOLD = Hold(files=6, reentered=0)
"""Issue 23's budget: 8 files, 2 files re-entered. Traced: the renderer, woken by the bytes
without reading them, waits for its window and only then reads all that arrived (the delta's
``feed``) and writes, so a delta of a streaming answer enters each file once whenever it
arrives; only the answer's last one takes another path (its end ends the wait, the final text
waits again: 8 files, the text and the outbox re-entered)."""


async def test_a_u1_press_and_its_result_are_traced_file_by_file(
    harness: Harness, tmp_path: Path
) -> None:
    fake = harness.fake
    alice, general = fake.user("alice"), fake.channel("general")
    config = SimulatorConfig(time_scale=0.003, seed=11)
    async with (
        serve(config) as sim,
        real_genbot(
            harness, sim, tmp_path / "genbot.db", edit_window_seconds=QUICK_WINDOW
        ) as genbot,
    ):
        await fake.slash(alice, general, "imagine", {"prompt": "a red fox"})

        def grid() -> Any:
            return newest(fake.bot_messages(general.id), lambda m: with_image(m))

        grid_message = await fake.wait_for(grid, 10.0, "the grid")
        with tracing([U1_PRESS, U1_TO_THE_CALL, FINISHED_TO_POSTED]) as tracer:
            await fake.press(alice, grid_message, "U1")
            await fake.wait_for(
                lambda: newest(fake.bot_messages(general.id), upscaled), 10.0, "the upscale"
            )
            await genbot.posted("upscale")
    press, delivery = tracer[U1_PRESS.name], tracer[FINISHED_TO_POSTED.name]
    to_the_call = tracer[U1_TO_THE_CALL.name]
    report(press)
    report(to_the_call)
    report(delivery)
    assert press.ended and to_the_call.ended and delivery.ended
    assert to_the_call.files[-1] == "bot/api/tasks.py" and set(to_the_call.files) < set(press.files)
    assert press.files[0] == "adapters/discord/client.py"
    unlinked = [move for move in press.moves[1:] if move.caller is None]
    assert not unlinked, f"every task is entered from the file that created it: {unlinked}"
    assert "bot/api/tasks.py" in press.files
    assert (
        "bot/features/jobs/messages.py" in delivery.files and PLATFORM_EDIT.file in delivery.files
    )
    U1_HOLD.check(to_the_call)
    FINISHED_HOLD.check(delivery)


async def test_one_streamed_delta_is_traced_to_the_platform_edit(
    harness: Harness, tmp_path: Path
) -> None:
    fake = harness.fake
    alice = fake.user("alice")
    dm = fake.dm_channel(alice)
    text = " ".join(f"fox{number}" for number in range(16))
    config = SimulatorConfig(time_scale=15, seed=5)
    journey = delta_journey(4)
    async with (
        serve(config) as sim,
        real_genbot(harness, sim, tmp_path / "genbot.db", edit_window_seconds=QUICK_WINDOW),
    ):
        with tracing([journey]) as tracer:
            await fake.user_message(alice, dm, f"echo: {text}")
            await fake.wait_for(
                lambda: newest(fake.bot_messages(dm.id), finished), 30.0, "the answer"
            )
    trace = tracer[journey.name]
    report(trace)
    assert trace.ended
    assert trace.files[0] == "bot/api/sse.py" and PLATFORM_EDIT.file in trace.files
    DELTA_HOLD.check(trace)
