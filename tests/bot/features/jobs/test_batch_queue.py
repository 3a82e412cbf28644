"""The queue of a run batch's jobs: jobs it cannot start are told to their user privately, a line
per reason with the prompts it stopped — the real core against the simulator."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from bot.features.jobs.batch_queue import not_started
from bot.kernel import speaking
from simulator.server import serve
from tests.bot.features.chat.support import ALICE, CHANNEL, sim_config
from tests.bot.features.jobs.test_batches import PrivatePlatform, imagined, run_pressed
from tests.bot.harness import running_genbot
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
