"""The queue of a run batch's jobs: jobs it cannot start are told to their user privately, a line
per reason with the prompts it stopped — the real core against the simulator."""

from __future__ import annotations

import asyncio
from dataclasses import replace
from pathlib import Path
from typing import Any

from bot.features.jobs.batch_queue import QUEUE_SECONDS, not_started
from bot.kernel import ButtonPress, Command, speaking
from simulator.server import serve
from storage import ModerationRule
from tests.bot.features.chat.support import ALICE, CHANNEL, sim_config
from tests.bot.features.jobs.test_batches import PrivatePlatform, imagined, run_pressed, until
from tests.bot.features.retention.test_forget import forget_me
from tests.bot.harness import Genbot, running_genbot
from tests.bot.test_router import moderated, untimed
from tests.fakes.platform import Actor

SPENT = (
    "You have used 4 of your 4 credits for today — that is the daily budget; it resets at "
    "00:00 UTC."
)


async def test_queued_jobs_past_the_budget_are_told_privately_once_per_reason(
    tmp_path: Path,
) -> None:
    platform = PrivatePlatform()
    limits = {"max_concurrent_jobs_per_user": 1, "daily_credit_budget_per_user": 4}
    options: dict[str, Any] = {"platform": platform, "limits": limits}
    async with (
        serve(sim_config(time_scale=0.003)) as sim,
        running_genbot(sim, tmp_path / "genbot.db", **options) as bot,
    ):
        await Actor(bot.core, platform, ALICE, CHANNEL).command("imagine", "{a, b, c} owl")
        await run_pressed(bot, platform, "Run 3 jobs")
        told = await platform.wait_for(
            lambda: [t for t in platform.ephemerals_for(ALICE.id) if "did not start" in t],
            timeout=15.0,
            what="the jobs the queue could not start",
        )
        assert imagined(sim) == ["a owl"]
        assert told == [f"2 queued jobs of yours did not start: `b owl`, `c owl`. {SPENT}"]
        public = [m.text for m in platform.messages.values() if m.message.mention_user_id]
        assert not [text for text in public if "start" in text], "nothing told in the channel"


def test_refused_jobs_are_grouped_by_reason_in_the_readers_language() -> None:
    refused = [("a fox", "Too dear."), ("a `b` owl", "Refused."), ("a cat", "Too dear.")]
    assert not_started(refused, queued=True) == (
        "2 queued jobs of yours did not start: `a fox`, `a cat`. Too dear.\n"
        "1 queued job of yours did not start: `a 'b' owl`. Refused."
    )
    assert not_started(refused[:1], queued=False) == "1 job did not start: `a fox`. Too dear."
    long = "a very long prompt " * 10
    assert not_started([(long, "No.")], queued=False) == (
        f"1 job did not start: `{long[:59]}…`. No."
    )
    with speaking("ja"):
        japanese = not_started([("a fox", "予算を使い切りました。")], queued=True)
    assert "。 " not in japanese and japanese.endswith("`a fox`。予算を使い切りました。")


QUEUED: dict[str, Any] = {"max_concurrent_jobs_per_user": 1}
"""One job at once: of a batch of three, Run starts one and two wait in the queue."""


async def queued_three(bot: Genbot, platform: PrivatePlatform) -> None:
    """ALICE runs ``{a, b, c} owl`` and presses Run: `a owl` starts, two wait."""
    await Actor(bot.core, platform, ALICE, CHANNEL).command("imagine", "{a, b, c} owl")
    await run_pressed(bot, platform, "Run 3 jobs")


def queue_told(platform: PrivatePlatform) -> list[str]:
    return [t for t in platform.ephemerals_for(ALICE.id) if "queued" in t]


async def after_queue_passes(bot: Genbot) -> None:
    """Long enough for the queue to have looked at the batches twice, on every process."""
    await asyncio.sleep(2 * QUEUE_SECONDS + 0.5)


async def test_queued_jobs_of_a_user_banned_since_are_dropped_and_told_once(
    tmp_path: Path,
) -> None:
    platform = PrivatePlatform()
    options: dict[str, Any] = {"platform": platform, "limits": QUEUED, "screen": moderated}
    async with (
        serve(sim_config(time_scale=1.0, clock_start=1_700_000_000)) as sim,
        running_genbot(sim, tmp_path / "genbot.db", **options) as bot,
    ):
        await queued_three(bot, platform)
        assert imagined(sim) == ["a owl"]
        await bot.store.moderation.ban("fake", ALICE.id, 30)

        sim.advance(3600)
        [told] = await platform.wait_for(
            lambda: queue_told(platform), timeout=15.0, what="the queued jobs dropped"
        )
        await after_queue_passes(bot)
        assert imagined(sim) == ["a owl"], "no queued job started"
        assert queue_told(platform) == [told], "told once"
        assert untimed(told) == (
            "2 queued jobs of yours did not start: `b owl`, `c owl`. genbot takes no prompts "
            "from you until …. Nothing was run."
        )
        assert ": an admin has banned you. Nothing was run." in told
        assert await bot.store.preferences.running_batches() == [], "nothing left to start"


async def test_queued_prompts_are_screened_against_the_rules_in_force_as_they_start(
    tmp_path: Path,
) -> None:
    platform = PrivatePlatform()
    options: dict[str, Any] = {"platform": platform, "limits": QUEUED, "screen": moderated}
    async with (
        serve(sim_config(time_scale=1.0, clock_start=1_700_000_000)) as sim,
        running_genbot(sim, tmp_path / "genbot.db", **options) as bot,
    ):
        alice = Actor(bot.core, platform, ALICE, CHANNEL)
        await alice.command("imagine", "{a calm, a grey, a gory} fox")
        await run_pressed(bot, platform, "Run 3 jobs")
        assert imagined(sim) == ["a calm fox"]
        await bot.store.moderation.add_rule("fake", "w1", ModerationRule("gore", "gory"), "root")

        sim.advance(3600)
        await until(lambda: asyncio.sleep(0, len(imagined(sim)) == 2))
        sim.advance(3600)
        [told] = await platform.wait_for(
            lambda: queue_told(platform), timeout=15.0, what="the queued prompt refused"
        )
        assert imagined(sim) == ["a calm fox", "a grey fox"], "only the refused one is dropped"
        assert told.startswith(
            "1 queued job of yours did not start: `a gory fox`. Refused: this matches genbot's "
            "rules on **gore**, so nothing was run."
        )


async def test_queued_jobs_of_a_user_who_deleted_their_data_never_start(
    tmp_path: Path,
) -> None:
    platform = PrivatePlatform()
    options: dict[str, Any] = {"platform": platform, "limits": QUEUED, "features": forget_me}
    async with (
        serve(sim_config(time_scale=1.0, clock_start=1_700_000_000)) as sim,
        running_genbot(sim, tmp_path / "genbot.db", **options) as bot,
    ):
        await queued_three(bot, platform)
        assert imagined(sim) == ["a owl"]
        await bot.core.handle(Command(user=ALICE, place=CHANNEL, name="forget-me"))
        preview = platform.privates[-1]
        waiting = "- Previews of several jobs, and jobs waiting in your queue: 1"
        assert waiting in preview.text.splitlines()
        [delete] = [b for row in preview.buttons for b in row if b.label == "Delete all of it"]
        press = ButtonPress(
            user=ALICE, place=CHANNEL, message_id="p", action=delete.action, ref=delete.ref
        )
        await bot.core.handle(press)

        sim.advance(3600)
        await after_queue_passes(bot)
        assert imagined(sim) == ["a owl"], "no queued job started"
        assert queue_told(platform) == []
        assert await bot.store.preferences.running_batches() == []


async def test_queued_jobs_are_admitted_against_the_tier_in_force_as_they_start(
    tmp_path: Path,
) -> None:
    platform = PrivatePlatform()
    db = tmp_path / "genbot.db"
    lowered = {**QUEUED, "daily_credit_budget_per_user": 4}
    async with serve(sim_config(time_scale=1.0, clock_start=1_700_000_000)) as sim:
        async with running_genbot(sim, db, platform=platform, limits=QUEUED) as bot:
            await Actor(bot.core, platform, ALICE, CHANNEL).command("imagine", "a fox")
            sim.advance(3600)
            await until(lambda: asyncio.sleep(0, bool(platform.with_images())))
            await queued_three(bot, platform)
            assert imagined(sim) == ["a fox", "a owl"]
        async with running_genbot(sim, db, platform=platform, limits=lowered):
            sim.advance(3600)
            [told] = await platform.wait_for(
                lambda: queue_told(platform), timeout=15.0, what="the queued jobs refused"
            )
            assert imagined(sim) == ["a fox", "a owl"]
            assert told.startswith("2 queued jobs of yours did not start: `b owl`, `c owl`. ")
            assert told.endswith(
                " of your 4 credits for today — that is the daily budget; it resets at 00:00 UTC."
            )


async def test_jobs_queued_by_an_admin_no_more_start_within_their_cap(tmp_path: Path) -> None:
    platform = PrivatePlatform()
    options: dict[str, Any] = {"platform": platform, "limits": QUEUED}
    async with (
        serve(sim_config(time_scale=1.0, clock_start=1_700_000_000)) as sim,
        running_genbot(sim, tmp_path / "genbot.db", **options) as bot,
    ):
        admin = replace(ALICE, is_admin=True)
        await Actor(bot.core, platform, admin, CHANNEL).command("imagine", "{a, b, c} owl")
        assert "queue" not in platform.privates[0].text, "an admin has no cap"

        await run_pressed(bot, platform, "Run 3 jobs")
        await after_queue_passes(bot)
        assert imagined(sim) == ["a owl"]
        [told] = platform.ephemerals_for(ALICE.id)
        assert told.startswith("1 of 3 jobs started. 2 wait in the queue, each starting")

        sim.advance(3600)
        await until(lambda: asyncio.sleep(0, len(imagined(sim)) == 2))
        await after_queue_passes(bot)
        assert imagined(sim) == ["a owl", "b owl"], "one at a time"
