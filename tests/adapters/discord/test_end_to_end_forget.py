"""End to end, ``/forget-me`` on Discord: a user who chatted in a DM, made a grid and set their
defaults sees what genbot keeps about them (privately, with a button), another user may not name
them, pressing "Delete all of it" while banned is refused, and once the ban is lifted no table
of the database names them after the press, while the other user's job stays — through the real
discord.py, the fake Discord, the real core and the simulator over HTTP."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from simulator.server import RunningSimulator, serve
from simulator.state import SimulatorConfig
from storage import JobStatus
from tests.adapters.discord.harness import Harness
from tests.adapters.discord.real_core import (
    QUICK_BUCKET,
    QUICK_WINDOW,
    newest,
    real_genbot,
    told,
)
from tests.fakes.discord import FakeMessage
from tests.storage.helpers import rows_naming

pytestmark = pytest.mark.parametrize("fake", [QUICK_BUCKET], indirect=True)
POSTED: tuple[JobStatus, ...] = ("posted",)


@pytest.fixture
async def sim() -> AsyncIterator[RunningSimulator]:
    async with serve(SimulatorConfig(time_scale=0.003, seed=11)) as running:
        yield running


async def test_forget_me_counts_then_deletes_every_row_naming_the_user(
    harness: Harness, sim: RunningSimulator, tmp_path: Path
) -> None:
    fake = harness.fake
    alice, bob = fake.user("alice"), fake.user("bob")
    general, dm = fake.channel("general"), fake.dm_channel(alice)
    async with real_genbot(
        harness, sim, tmp_path / "genbot.db", edit_window_seconds=QUICK_WINDOW
    ) as genbot:
        await fake.user_message(alice, dm, "echo: remember me")
        await fake.wait_for(
            lambda: newest(fake.bot_messages(dm.id), lambda m: m.content == "remember me"),
            what="the chat's answer",
        )
        await fake.slash(alice, general, "imagine", {"prompt": "a lighthouse at dusk"})
        await fake.slash(bob, general, "imagine", {"prompt": "an owl"})
        await fake.slash(alice, general, "settings", {"aspect_ratio": "16:9"})
        await told(fake, alice, 1)

        def both_grids() -> list[FakeMessage] | None:
            grids = [m for m in fake.bot_messages(general.id) if m.buttons]
            return grids if len(grids) == 2 else None

        await fake.wait_for(both_grids, what="both grids")
        for job in await genbot.all_jobs():
            await genbot.jobs.watch.wait(job.id, POSTED, 10.0)
        me = str(alice.id)
        assert set(await rows_naming(genbot.store, me)) >= {"jobs", "usage", "conversations"}

        await fake.slash(bob, general, "forget-me", {"user": f"<@{alice.id}>"})
        assert "Only genbot admins" in (await told(fake, bob, 1)).content
        await fake.slash(alice, general, "forget-me")
        preview = await told(fake, alice, 2)
        for line in (
            "Conversations you started: 1",
            "Chat messages in them: 2",
            "Jobs (prompts, parameters, result links): 1",
            "Personal settings: 1",
        ):
            assert line in preview.content
        await genbot.store.moderation.ban("discord", me, 60)
        await fake.press(alice, preview, "Delete all of it")
        assert "You are banned until" in (await told(fake, alice, 3)).content
        await genbot.store.moderation.lift_ban("discord", me)
        await fake.press(alice, preview, "Delete all of it")
        done = (await told(fake, alice, 4)).content
        assert "Your data on discord is deleted" in done

        assert await rows_naming(genbot.store, me) == {}
        left = await genbot.store.db.fetch_all("SELECT requester_id FROM jobs")
        assert left == [{"requester_id": str(bob.id)}], "another user's job stays"
