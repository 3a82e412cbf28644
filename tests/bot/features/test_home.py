"""App Home: "Post again" goes through the budgeted-write path, so a platform's rate limit
delays it instead of losing it; the last images are found behind many jobs without one."""

from __future__ import annotations

from pathlib import Path

from bot.features.home import RECENT_JOBS, REPOST_ACTION, HomeFeature, HomeStorage
from bot.kernel import ButtonPress, Event, HomeOpened, MessageRef, OutMessage, Place, RateLimited
from storage import JobType, NewJob, Store
from tests.bot.harness import ROOMY, Parts, harness
from tests.fakes.platform import FakePlatform
from tests.storage.helpers import create_job

DM = Place("fake", "w1", "dm-alice", is_dm=True)


class RefusesWhenArmed(FakePlatform):
    """Answers the next ``refusals`` sends with "rate limited, retry after 0.02 s"."""

    def __init__(self) -> None:
        super().__init__(profile=ROOMY)
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
    store = parts.store
    storage = HomeStorage(store.settings, store.ledger, store.history, store.message_links)
    return [HomeFeature(storage, parts.outbox, parts.jobs.delivery.results)]


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
        assert (
            await bot.store.message_links.job_for_message(
                "fake", DM.channel_id, copy.ref.message_id
            )
        ) == (await bot.store.jobs.get_job(job.id))


async def test_the_home_finds_ten_images_behind_many_descriptions(tmp_path: Path) -> None:
    async with harness(tmp_path, features=_home) as bot:
        alice = bot.actor()
        for n in range(RECENT_JOBS + 2):
            await _posted(bot.store, "imagine", f"image-{n:02}")
        for n in range(3 * RECENT_JOBS):
            await _posted(bot.store, "describe", f"text-{n:02}")
        (home,) = _home(bot.parts)

        view = await home.view(HomeOpened(user=alice.user, place=DM))

        shown = [item.job.id for item in view.jobs]
        assert shown == [f"image-{n:02}" for n in range(RECENT_JOBS + 1, 1, -1)]


async def _posted(store: Store, job_type: JobType, job_id: str) -> None:
    """A posted job of alice's, with an image unless it is a description."""
    job = await create_job(
        store.admission,
        NewJob(
            id=job_id,
            family="task",
            type=job_type,
            requester_id="alice",
            platform="fake",
            workspace_id=DM.workspace_id,
            channel_id=DM.channel_id,
            status="posted",
        ),
    )
    await store.jobs.update_job(
        job.id,
        result_urls=[] if job_type == "describe" else [f"https://cdn.example/{job_id}.png"],
        result_message_id=f"m-{job_id}",
    )
