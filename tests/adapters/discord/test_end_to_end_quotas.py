"""End to end, quota tiers on Discord: a tier mapped from a Discord role gives its members its
own caps, credits and modes; everyone else is in the ``default`` tier — through the real
discord.py (the member's roles come with the interaction), the fake Discord, the real core and
the simulator over HTTP."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator
from dataclasses import replace
from pathlib import Path

import pytest

from simulator.server import RunningSimulator, serve
from simulator.state import SimulatorConfig
from tests.adapters.discord.harness import Harness
from tests.adapters.discord.real_core import QUICK_BUCKET, QUICK_WINDOW, real_genbot
from tests.bot.features.jobs.proxy import faulty_proxy
from tests.fakes.discord import FakeChannel, FakeDiscord, FakeUser

pytestmark = pytest.mark.parametrize("fake", [QUICK_BUCKET], indirect=True)


@pytest.fixture
async def sim() -> AsyncIterator[RunningSimulator]:
    async with serve(SimulatorConfig(time_scale=1.0, clock_start=1_700_000_000)) as running:
        yield running


async def told(fake: FakeDiscord, user: FakeUser, count: int) -> list[str]:
    """The first ``count`` things ``user`` was told privately, once there are that many."""
    texts = await fake.wait_for(
        lambda: (t := [m.content for m in fake.ephemerals_for(user)])[count - 1 :] and t,
        what=f"{count} private answers",
    )
    return texts[:count]


async def imagine(fake: FakeDiscord, user: FakeUser, channel: FakeChannel, prompt: str) -> None:
    interaction = await fake.slash(user, channel, "imagine", {"prompt": prompt})
    await fake.answered(interaction)


def imagined(sim: RunningSimulator) -> int:
    return len(sim.state.requests_to("/gen/v2/imagine"))


async def until_imagined(sim: RunningSimulator, count: int) -> None:
    """Wait (bounded) until the provider was asked for ``count`` images."""
    async with asyncio.timeout(10):
        while True:
            if imagined(sim) >= count:
                return
            await asyncio.sleep(0.02)


async def test_a_role_mapped_tier_sets_its_members_caps_credits_and_modes(
    harness: Harness, sim: RunningSimulator, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    fake = harness.fake
    alice, bob, general = fake.user("alice"), fake.user("bob"), fake.channel("general")
    alice.roles.append(fake.role("patrons").id)
    tiers = [
        {"name": "default", "concurrent_jobs": 1, "daily_credits": 4},
        {
            "name": "patrons",
            "concurrent_jobs": 2,
            "daily_credits": 8,
            "modes": ["relax", "fast"],
            "roles": [f"discord:{fake.role('patrons').id}"],
        },
    ]
    monkeypatch.setenv("GENBOT_QUOTAS__TIERS", json.dumps(tiers))
    async with real_genbot(harness, sim, tmp_path / "genbot.db", edit_window_seconds=QUICK_WINDOW):
        await imagine(fake, alice, general, "a fox --turbo")
        [turbo] = await told(fake, alice, 1)
        assert turbo.startswith("Turbo mode is not in your tier **patrons** (it has relax, fast)")
        assert imagined(sim) == 0

        for number in (1, 2, 3):
            await imagine(fake, alice, general, f"fox {number}")
            await until_imagined(sim, min(number, 2))
        await imagine(fake, bob, general, "bob's fox 1")
        await until_imagined(sim, 3)
        await imagine(fake, bob, general, "bob's fox 2")
        assert (await told(fake, alice, 2))[1] == (
            "You already have 2 image jobs running — the cap of your tier **patrons** is 2; "
            "wait for one to finish."
        )
        assert (await told(fake, bob, 1)) == [
            "You already have 1 image job running — the cap of your tier **default** is 1; "
            "wait for one to finish."
        ]
        assert imagined(sim) == 3

        sim.advance(120)
        await fake.wait_for(
            lambda: len([m for m in fake.bot_messages(general.id) if m.attachments]) >= 3 or None,
            timeout=20,
            what="three results",
        )
        await imagine(fake, alice, general, "a fox after the others")
        await imagine(fake, bob, general, "bob's fox after the others")
        assert (await told(fake, alice, 3))[2] == (
            "You have used 8 of your 8 credits for today — that is the daily budget of your "
            "tier **patrons**; it resets at 00:00 UTC."
        )
        assert (await told(fake, bob, 2))[1].startswith("You have used 4 of your 4 credits")
        assert imagined(sim) == 3

        await fake.answered(await fake.slash(alice, general, "usage", {}))
        usage = (await told(fake, alice, 4))[3]
        assert "Your tier: **patrons**" in usage
        assert "Image credits today (UTC): 8 of 8 used, 0 left, more at 00:00 UTC." in usage
        assert "Image jobs at once: up to 2." in usage and "Modes: relax, fast." in usage


async def test_cancelling_a_job_the_service_never_confirmed_frees_its_place_at_once(
    harness: Harness, sim: RunningSimulator, tmp_path: Path
) -> None:
    """qa D6: with a cap of one, a job whose creation answer was lost (``unknown``) is
    cancelled, and the next /imagine starts at once instead of waiting for it to time out."""
    fake = harness.fake
    alice, general = fake.user("alice"), fake.channel("general")
    async with faulty_proxy(sim.base_url) as proxy:
        proxy.faults["/gen/v2/imagine"] = ["lose"]
        behind_proxy = replace(sim, base_url=proxy.base_url)
        async with real_genbot(
            harness, behind_proxy, tmp_path / "genbot.db", max_concurrent_jobs_per_user=1
        ) as genbot:
            await imagine(fake, alice, general, "a fox")
            progress = await fake.wait_for(
                lambda: next(
                    (m for m in fake.bot_messages(general.id) if "did not confirm" in m.text),
                    None,
                ),
                what="the unconfirmed job's progress message",
            )
            press = await fake.press(alice, progress, "❌ Cancel")
            await fake.answered(press)
            [note] = await told(fake, alice, 1)
            assert "no longer counts toward the jobs you may run at once" in note
            assert "until it ends it counts" not in note
            assert [job.status for job in await genbot.all_jobs()] == ["cancelled"]

            await imagine(fake, alice, general, "a fox again")
            await until_imagined(sim, 2)
            assert [m.content for m in fake.ephemerals_for(alice)] == [note]
