"""App Home's "Post again": the copy goes through the budgeted-write path, so a platform's
rate limit delays it instead of losing it."""

from __future__ import annotations

from pathlib import Path

from bot.events import ButtonPress, Event, MessageRef, OutMessage, Place, RateLimited
from bot.home import REPOST_ACTION, HomeFeature
from tests.bot.harness import ROOMY, Parts, harness
from tests.fakes.platform import FakePlatform

DM = Place("fake", "w1", "dm-alice", is_dm=True)


class RefusesWhenArmed(FakePlatform):
    """Answers the next ``refusals`` sends with "rate limited, retry after 0.02 s"."""

    def __init__(self) -> None:
        super().__init__(limits=ROOMY)
        self.refusals = 0
        self.refused = 0

    async def send(
        self, place: Place, message: OutMessage, *, origin: Event | None = None
    ) -> MessageRef:
        if self.refusals > 0:
            self.refusals -= 1
            self.refused += 1
            raise RateLimited(0.02)
        return await super().send(place, message, origin=origin)


def _home(parts: Parts) -> list[HomeFeature]:
    return [
        HomeFeature(parts.store, parts.surfaces, parts.jobs.delivery.results, budget=parts.budget)
    ]


async def test_post_again_waits_out_a_rate_limit_and_posts(tmp_path: Path) -> None:
    platform = RefusesWhenArmed()
    async with harness(tmp_path, platform=platform, features=_home) as bot:
        alice = bot.actor()
        await alice.command("imagine", prompt="a fox")
        job = await bot.latest_job()
        await bot.result(job.id)
        platform.refusals = 1
        press = ButtonPress(
            user=alice.user, place=DM, message_id="", action=REPOST_ACTION, ref=job.id
        )
        await bot.core.handle(press)
        (copy,) = platform.in_place(DM)
        assert platform.refused == 1 and copy.message.images
        assert platform.ephemerals_for("alice") == []
        assert (await bot.store.job_for_message("fake", DM.channel_id, copy.ref.message_id)) == (
            await bot.store.get_job(job.id)
        )
