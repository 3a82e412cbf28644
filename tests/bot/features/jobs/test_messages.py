"""Posting results through platform outages: retries back off, are counted in the database, and
end with a clear message once genbot gives up."""

from __future__ import annotations

import asyncio
import contextlib
from dataclasses import replace
from pathlib import Path

import pytest

from bot.features.jobs import DeliveryRetry
from bot.features.jobs import messages as messages_module
from bot.features.jobs.messages import JobMessages, JobMessagesStorage, place_of, progress_key
from bot.features.jobs.tracking import tracker as tracker_module
from bot.features.jobs.tracking.watch import JobWatch
from bot.kernel import (
    Command,
    Event,
    MediaFetcher,
    MessageRef,
    OutMessage,
    Place,
    PlatformProfile,
    SurfaceError,
    SurfaceRegistry,
    User,
)
from bot.outbox import Outbox, Pacer, WritePolicy
from simulator.server import serve
from simulator.state import SimulatorConfig
from storage import Job, NewJob, SqliteStore
from storage.queries.jobs import SQL_JOB_BY_ID, SQL_LINK_MESSAGE
from tests.bot.features.jobs.support import Bare, bare_engines
from tests.bot.harness import PLACE, ROOMY, harness
from tests.fakes.clock import FakeClock
from tests.fakes.platform import FakePlatform
from tests.fakes.surface import RateLimitingSurface
from tests.storage.counting import Trip, counted
from tests.storage.helpers import create_job

MANUAL = SimulatorConfig(time_scale=1.0, clock_start=1_700_000_000)
ALICE_IMAGINES = Command(user=User("alice"), place=PLACE, name="imagine")


SLACK_LIKE = replace(ROOMY, edits_add_images=False)
"""A platform whose edits cannot add images: results are posted, progress messages deleted."""


class OutagePlatform(FakePlatform):
    """A fake platform whose result writes (messages with images, posted or edited in) fail
    while ``outage`` is above zero, each failure counting it down (``None``: fail forever)."""

    def __init__(self, outage: int | None, profile: PlatformProfile = ROOMY) -> None:
        super().__init__(profile=profile)
        self.outage = outage
        self.failed_posts = 0

    def _down(self, message: OutMessage) -> None:
        if message.images and (self.outage is None or self.outage > 0):
            self.failed_posts += 1
            if self.outage is not None:
                self.outage -= 1
            raise SurfaceError("the platform is down")

    async def send(
        self, place: Place, message: OutMessage, *, origin: Event | None = None
    ) -> MessageRef:
        self._down(message)
        return await super().send(place, message, origin=origin)

    async def edit(self, ref: MessageRef, message: OutMessage) -> None:
        self._down(message)
        await super().edit(ref, message)


class Clock:
    """A clock the test moves by hand (shared by the store and the engines)."""

    def __init__(self) -> None:
        self.now = 1_800_000_000.0

    def __call__(self) -> float:
        return self.now


@pytest.mark.parametrize("profile", [ROOMY, SLACK_LIKE], ids=["edited-in", "posted"])
async def test_a_short_outage_delays_the_result_instead_of_losing_it(
    tmp_path: Path, profile: PlatformProfile
) -> None:
    platform = OutagePlatform(outage=5, profile=profile)
    async with harness(tmp_path, time_scale=0.003, platform=platform) as bot:
        bot.jobs.delivery.retry = DeliveryRetry(first_delay=0.01, max_delay=0.04, give_up_after=5)
        await bot.actor().command("imagine", prompt="a fox")
        job = await bot.latest_job()
        result = await bot.result(job.id)

        done = await bot.store.jobs.get_job(job.id)
        assert done is not None and done.status == "posted" and result.message.images
        assert platform.failed_posts == 5 and done.delivery_attempts == 5
        assert list(platform.messages) == [done.result_message_id]


async def test_the_moves_linking_a_jobs_messages_read_back_what_their_callers_use(
    tmp_path: Path,
) -> None:
    """A result's record and a failure report's move read back one value each (whether they
    moved; the result the move left, for its buttons' catch-up): each read the job's whole row
    back and parsed it. The progress message's link reads the job whole, as a read of the job
    does: the start goes on with it (and reads it no more)."""
    async with serve(MANUAL) as sim, bare_engines(sim, tmp_path) as bare:
        tracker, store = bare.engines.tracker, bare.store
        counting = counted(store)
        fox = await bare.engines.images.imagine(ALICE_IMAGINES, "a red fox")
        failing = await bare.engines.images.imagine(ALICE_IMAGINES, "please fail now")
        sim.advance(120)
        for job in (fox, failing):
            record = await bare.provider.tasks.fetch(job.provider_id or "")
            await tracker.apply_task_record(job, record)
            await tracker.wait_idle()

        def read_back(status: str) -> list[int]:
            return [trip.values_read for trip in counting.trips if trip.moves_to(status)]

        done = [await store.jobs.get_job(job.id) for job in (fox, failing)]
        assert [job.status if job else None for job in done] == ["posted", "failed_posted"]
        whole = next(trip.values_read for trip in counting.trips if trip.reads_whole_jobs())
        assert read_back("creating") == [whole, whole], "the progress messages linked"
        assert read_back("posted") == [1]
        assert read_back("failed_posted") == [1]


async def test_retries_back_off_and_their_count_is_stored(tmp_path: Path) -> None:
    clock, platform = Clock(), OutagePlatform(outage=2)
    async with (
        serve(MANUAL) as sim,
        bare_engines(
            sim,
            tmp_path,
            clock=clock,
            platform=platform,
            poll_interval_min=0.5,
            poll_interval_max=30.0,
        ) as bare,
    ):
        tracker, delivery, store = bare.engines.tracker, bare.engines.delivery, bare.store
        job = await bare.engines.images.imagine(ALICE_IMAGINES, "a fox")
        sim.advance(120)
        await tracker.apply_task_record(job, await bare.provider.tasks.fetch(job.provider_id or ""))
        await tracker.wait_idle()

        waiting = await store.jobs.get_job(job.id)
        assert waiting is not None and waiting.status == "finished"
        assert (waiting.delivery_attempts, waiting.next_poll_at) == (1, clock.now + 1)
        assert await delivery.deliver(job.id) is None and platform.failed_posts == 1
        assert await tracker.poll_round() == 1.0

        clock.now += 1
        assert await delivery.deliver(job.id) == clock.now + 2
        assert await tracker.poll_round() == 2.0
        clock.now += 2
        assert await delivery.deliver(job.id) is None

        posted = await store.jobs.get_job(job.id)
        assert posted is not None and posted.status == "posted" and posted.delivery_attempts == 2
        assert platform.failed_posts == 2


async def test_genbot_gives_up_once_the_retry_budget_is_spent(tmp_path: Path) -> None:
    clock, platform = Clock(), OutagePlatform(outage=None)
    async with (
        serve(MANUAL) as sim,
        bare_engines(sim, tmp_path, clock=clock, platform=platform) as bare,
    ):
        delivery, store = bare.engines.delivery, bare.store
        delivery.retry = DeliveryRetry(first_delay=1, max_delay=4, give_up_after=10)
        job = await bare.engines.images.imagine(ALICE_IMAGINES, "a fox")
        sim.advance(120)
        record = await bare.provider.tasks.fetch(job.provider_id or "")
        await bare.engines.tracker.apply_task_record(job, record)
        await bare.engines.tracker.wait_idle()

        waits = []
        for _ in range(10):
            current = await store.jobs.get_job(job.id)
            assert current is not None
            if current.status != "finished":
                break
            assert current.next_poll_at is not None
            waits.append(current.next_poll_at - clock.now)
            clock.now = current.next_poll_at
            await delivery.deliver(job.id)

        assert waits == [1, 2, 4]
        assert current is not None
        assert current.status == "failed_posted" and current.delivery_attempts == 4
        assert platform.failed_posts == 4
        progress = platform.messages[current.progress_message_id or ""].text
        assert progress.endswith("finished, but genbot could not post the result")


async def test_job_posts_count_until_they_land_so_slow_requests_are_never_refused(
    tmp_path: Path,
) -> None:
    fake = FakeClock()
    slow_first = [(1.0, 1.0)] * 5

    def latency(call: int) -> tuple[float, float]:
        return slow_first[call] if call < len(slow_first) else (0.0, 0.0)

    discord = PlatformProfile(
        max_text=2000, edits_per_window_per_channel=5, edit_window_seconds=5.0
    )
    surface = RateLimitingSurface(fake.monotonic, discord, latency=latency, sleep=fake.sleep)
    surfaces = SurfaceRegistry([surface])
    store = await SqliteStore.open(tmp_path / "genbot.db")
    try:
        delivery = JobMessages(
            JobMessagesStorage(store.jobs, store.claims, store.message_links),
            Outbox(surfaces, Pacer(fake.clock)),
            MediaFetcher(1024, allow_private=True),
            JobWatch(store.jobs),
            clock=store.clock,
        )
        posts = (
            delivery.send(PLACE, OutMessage(f"result {i}"), policy=WritePolicy.MUST_DELIVER)
            for i in range(6)
        )
        await fake.run(asyncio.gather(*posts))
    finally:
        await store.close()
    assert surface.rate_limited == 0, surface.refusals
    assert len(surface.writes) == 6


class LostAnswerPlatform(FakePlatform):
    """A fake platform that accepts the first ``lost`` result posts but whose answers never
    arrive (the call fails after the platform showed the message)."""

    def __init__(self, lost: int) -> None:
        super().__init__(profile=SLACK_LIKE)
        self.lost = lost

    async def send(
        self, place: Place, message: OutMessage, *, origin: Event | None = None
    ) -> MessageRef:
        ref = await super().send(place, message, origin=origin)
        if message.images and self.lost > 0:
            self.lost -= 1
            raise SurfaceError("Discord did not answer in time to post a message")
        return ref


def results_of(platform: FakePlatform, job_id: str) -> list[str]:
    return [
        message_id
        for message_id, posted in platform.messages.items()
        if posted.message.images and job_id in posted.message.images[0].filename
    ]


async def test_a_result_the_platform_took_without_answering_is_not_posted_twice(
    tmp_path: Path,
) -> None:
    clock, platform = Clock(), LostAnswerPlatform(lost=1)
    async with (
        serve(MANUAL) as sim,
        bare_engines(sim, tmp_path, clock=clock, platform=platform) as bare,
    ):
        job = await bare.engines.images.imagine(ALICE_IMAGINES, "a fox")
        sim.advance(120)
        record = await bare.provider.tasks.fetch(job.provider_id or "")
        await bare.engines.tracker.apply_task_record(job, record)
        await bare.engines.tracker.wait_idle()
        waiting = await bare.store.jobs.get_job(job.id)
        assert waiting is not None and waiting.status == "finished"
        clock.now = waiting.next_poll_at or clock.now
        await bare.engines.delivery.deliver(job.id)

        posted = await bare.store.jobs.get_job(job.id)
        assert posted is not None and posted.status == "posted"
        [shown] = results_of(platform, job.id)
        assert posted.result_message_id == shown and posted.post_claims == 2
        attempts = [m for m in platform.sent if m.images]
        assert [(m.key, m.may_exist) for m in attempts] == [
            (f"{job.id}.result", False),
            (f"{job.id}.result", True),
        ]


class DyingPlatform(FakePlatform):
    """A fake platform that shows the first result (posted or edited in), then the process
    "dies": the call never returns (its task is cancelled), so nothing after it runs."""

    def __init__(self, profile: PlatformProfile = SLACK_LIKE) -> None:
        super().__init__(profile=profile)
        self.died = False

    def _die(self, message: OutMessage) -> None:
        if message.images and not self.died:
            self.died = True
            raise asyncio.CancelledError

    async def send(
        self, place: Place, message: OutMessage, *, origin: Event | None = None
    ) -> MessageRef:
        ref = await super().send(place, message, origin=origin)
        self._die(message)
        return ref

    async def edit(self, ref: MessageRef, message: OutMessage) -> None:
        await super().edit(ref, message)
        self._die(message)


@pytest.mark.parametrize("profile", [ROOMY, SLACK_LIKE], ids=["edited-in", "posted"])
async def test_a_result_shown_just_before_a_crash_is_not_shown_twice(
    tmp_path: Path, profile: PlatformProfile
) -> None:
    clock, platform = Clock(), DyingPlatform(profile)
    async with serve(MANUAL) as sim:
        async with bare_engines(sim, tmp_path, clock=clock, platform=platform) as first:
            job = await first.engines.images.imagine(ALICE_IMAGINES, "a fox")
            sim.advance(120)
            record = await first.provider.tasks.fetch(job.provider_id or "")
            await first.engines.tracker.apply_task_record(job, record)
            await first.engines.tracker.wait_idle()
            dead = await first.store.jobs.get_job(job.id)
            assert platform.died and dead is not None and dead.status == "posting"

        clock.now += 60
        async with bare_engines(sim, tmp_path, clock=clock, platform=platform) as restarted:
            await restarted.engines.tracker.resume()
            await restarted.engines.delivery.deliver(job.id)
            again = await restarted.store.jobs.get_job(job.id)

    assert again is not None and again.status == "posted"
    assert list(platform.messages) == [again.result_message_id]
    assert results_of(platform, job.id) == [again.result_message_id]
    if profile.edits_add_images:
        assert again.result_message_id == again.progress_message_id
        assert [m for m in platform.sent if m.images] == []
        shown = platform.messages[again.result_message_id or ""].history
        assert len([m for m in shown if m.images]) == 2, "the edit is made again, harmlessly"
    else:
        resent = [m for m in platform.sent if m.images][-1]
        assert resent.key == f"{job.id}.result" and resent.may_exist


async def test_a_slack_like_platform_keeps_one_message_per_job(tmp_path: Path) -> None:
    platform = FakePlatform(profile=SLACK_LIKE)
    async with harness(tmp_path, time_scale=0.003, platform=platform) as bot:
        await bot.actor().command("imagine", prompt="a fox")
        job = await bot.latest_job()
        result = await bot.result(job.id)
        done = await bot.store.jobs.get_job(job.id)

    assert done is not None and result.message.images
    assert done.result_message_id != done.progress_message_id
    assert list(platform.messages) == [done.result_message_id]
    assert [d.ref.message_id for d in platform.deleted] == [done.progress_message_id]


async def test_a_deleted_progress_message_gets_a_new_result_post(tmp_path: Path) -> None:
    clock, platform = Clock(), FakePlatform(profile=ROOMY)
    async with (
        serve(MANUAL) as sim,
        bare_engines(sim, tmp_path, clock=clock, platform=platform) as bare,
    ):
        job = await bare.engines.images.imagine(ALICE_IMAGINES, "a fox")
        assert job.progress_message_id is not None
        del platform.messages[job.progress_message_id]
        sim.advance(120)
        record = await bare.provider.tasks.fetch(job.provider_id or "")
        await bare.engines.tracker.apply_task_record(job, record)
        await bare.engines.tracker.wait_idle()
        done = await bare.store.jobs.get_job(job.id)

    assert done is not None and done.status == "posted"
    assert list(platform.messages) == [done.result_message_id]
    assert platform.messages[done.result_message_id or ""].message.key == f"{job.id}.result"


async def test_a_new_jobs_progress_link_answers_the_job_it_goes_on_with(tmp_path: Path) -> None:
    """The move linking a new job's progress message answers the job as it left it, and the
    start goes on with that: nothing reads the job between it and the move recording the
    submission. The start read the whole job again there, one round trip per job."""
    async with serve(MANUAL) as sim, bare_engines(sim, tmp_path) as bare:
        counting = counted(bare.store)
        fox = await bare.engines.images.imagine(ALICE_IMAGINES, "a red fox")
        trips = counting.trips
        linked = [n for n, trip in enumerate(trips) if trip.moves_to("creating")]
        submitted = [n for n, trip in enumerate(trips) if trip.moves_to("submitted")]
        stored = await bare.store.jobs.get_job(fox.id)

    assert stored is not None and stored.progress_message_id is not None
    assert fox.status == "submitted" and len(linked) == len(submitted) == 1
    between = trips[linked[0] + 1 : submitted[0]]
    assert [sql for trip in between for sql, _ in trip.statements] == []


A_FOX = NewJob(
    family="task", type="imagine", requester_id="alice", platform="fake", channel_id="c1",
    workspace_id="w1", prompt="a fox",
)  # fmt: skip


def statements_after(trips: list[Trip], status: str) -> list[str]:
    """The statements made after the first of ``trips`` that moves a job to ``status``."""
    first = next(n for n, trip in enumerate(trips) if trip.moves_to(status))
    return [sql for trip in trips[first + 1 :] for sql, _ in trip.statements]


async def creating_with_progress(bare: Bare) -> tuple[Job, MessageRef]:
    """A ``creating`` job held by ``bare``'s process, its progress message shown and linked."""
    job = await create_job(bare.store.admission, A_FOX)
    shown = await bare.platform.send(place_of(job), OutMessage("⏳"))
    await bare.store.jobs.update_job(job.id, progress_message_id=shown.message_id)
    return replace(job, progress_message_id=shown.message_id), shown


async def test_a_job_settled_as_never_started_is_answered_by_its_moves(tmp_path: Path) -> None:
    """Settling a ``creating`` job as never started answers the job as its move left it, and
    linking the progress message found by its key answers it as the link's move left it (the
    link committed with it): the job is not read again. Each was followed by a read of the
    whole job (the link by two statements more)."""
    platform = FakePlatform(profile=ROOMY)
    async with serve(MANUAL) as sim, bare_engines(sim, tmp_path, platform=platform) as bare:
        job = await create_job(bare.store.admission, A_FOX)
        shown = await platform.send(place_of(job), OutMessage("⏳", key=progress_key(job)))
        counting = counted(bare.store)
        settled = await bare.engines.delivery.mark_not_started(job, "nothing was sent")
        trips = list(counting.trips)
        stored = await bare.store.jobs.get_job(job.id)
        linked = await bare.store.message_links.job_for_message("fake", "c1", shown.message_id)

    assert SQL_JOB_BY_ID not in statements_after(trips, "create_failed")
    moves = [trip for trip in trips if trip.moves_to("create_failed")]
    assert [len(trip.statements) for trip in moves] == [1, 2], "the move, then the link's"
    assert moves[1].statements[1][0] == SQL_LINK_MESSAGE
    assert stored is not None and settled == stored and linked == stored
    assert (settled.status, settled.error) == ("create_failed", "nothing was sent")
    assert settled.progress_message_id == shown.message_id
    assert platform.messages[shown.message_id].text.endswith("could not start: nothing was sent")


async def test_a_job_settled_as_unconfirmed_is_answered_by_its_move(tmp_path: Path) -> None:
    """Settling a ``creating`` job as unconfirmed answers the job as its move left it: the job
    is not read again. It was, whole, after the move."""
    platform = FakePlatform(profile=ROOMY)
    async with serve(MANUAL) as sim, bare_engines(sim, tmp_path, platform=platform) as bare:
        job, shown = await creating_with_progress(bare)
        counting = counted(bare.store)
        unknown = await bare.engines.delivery.mark_unconfirmed(job, "its answer was lost")
        trips = list(counting.trips)
        stored = await bare.store.jobs.get_job(job.id)

    assert SQL_JOB_BY_ID not in statements_after(trips, "unknown")
    assert stored is not None and unknown == stored
    assert (unknown.status, unknown.error) == ("unknown", "its answer was lost")
    assert "(its answer was lost)" in platform.messages[shown.message_id].text


@pytest.mark.parametrize("settle", ["mark_not_started", "mark_unconfirmed"])
async def test_a_job_that_left_creating_before_it_was_settled_is_read_again(
    tmp_path: Path, settle: str
) -> None:
    """A job another step settled first (here: as never started, elsewhere): the settling
    move misses, shows nothing, and the job is read again, as that step left it."""
    platform = FakePlatform(profile=ROOMY)
    async with serve(MANUAL) as sim, bare_engines(sim, tmp_path, platform=platform) as bare:
        job, shown = await creating_with_progress(bare)
        assert await bare.store.jobs.transition(job.id, "creating", "create_failed", error="first")
        counting = counted(bare.store)
        answered = await getattr(bare.engines.delivery, settle)(job, "second")
        trips = list(counting.trips)
        stored = await bare.store.jobs.get_job(job.id)

    target = "create_failed" if settle == "mark_not_started" else "unknown"
    assert [(len(trip.statements), trip.rows_read) for trip in trips] == [(1, 0), (1, 1)]
    assert statements_after(trips, target) == [SQL_JOB_BY_ID]
    assert stored is not None and answered == stored and answered.error == "first"
    assert platform.messages[shown.message_id].text == "⏳"


async def test_a_progress_message_found_for_a_job_that_moved_on_is_linked_all_the_same(
    tmp_path: Path,
) -> None:
    """The progress message found by its key is linked by a move from the status the job was
    read in; when the job has moved on since (here: settled as unconfirmed elsewhere), that
    move misses and the message is linked whatever the job's status, and the job read again."""
    platform = FakePlatform(profile=ROOMY)
    async with serve(MANUAL) as sim, bare_engines(sim, tmp_path, platform=platform) as bare:
        job = await create_job(bare.store.admission, A_FOX)
        shown = await platform.send(place_of(job), OutMessage("⏳", key=progress_key(job)))
        assert await bare.store.jobs.transition(job.id, "creating", "unknown", error="elsewhere")
        counting = counted(bare.store)
        recovered = await bare.engines.delivery.recover_progress(job)
        trips = list(counting.trips)
        stored = await bare.store.jobs.get_job(job.id)
        linked = await bare.store.message_links.job_for_message("fake", "c1", shown.message_id)

    steps = [(trip.rows_read, trip.rows_written) for trip in trips]
    assert steps == [(0, 0), (0, 1), (0, 1), (1, 0)], "missed, updated, linked, read"
    assert trips[0].moves_to("creating") == 1
    assert trips[-1].statements[0][0] == SQL_JOB_BY_ID
    assert stored is not None and recovered == stored and linked == stored
    assert (recovered.status, recovered.progress_message_id) == ("unknown", shown.message_id)


class HeldResults(FakePlatform):
    """A fake platform whose result writes (edits that show images) wait for ``gate``,
    noting how many are under way at once."""

    def __init__(self) -> None:
        super().__init__(profile=ROOMY)
        self.gate = asyncio.Event()
        self.under_way = 0
        self.most_under_way = 0
        self.arrived = asyncio.Event()

    async def edit(self, ref: MessageRef, message: OutMessage) -> None:
        if message.images:
            self.under_way += 1
            self.most_under_way = max(self.most_under_way, self.under_way)
            self.arrived.set()
            try:
                await self.gate.wait()
            finally:
                self.under_way -= 1
        await super().edit(ref, message)


async def deliver_held(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, results: int, held: int, *, until: int
) -> HeldResults:
    """``results`` results of four delivery slots delivered with room for ``held`` results of
    images at the upload limit; the platform holds their writes until ``until`` are under way
    at once (or a while), then lets them all go."""
    monkeypatch.setattr(tracker_module, "DELIVERY_CONCURRENCY", 4)
    monkeypatch.setattr(messages_module, "RESULTS_AT_MOST_HELD", held)
    platform = HeldResults()
    async with serve(MANUAL) as sim, bare_engines(sim, tmp_path, platform=platform) as bare:
        for n in range(results):
            command = Command(user=User(f"user{n}"), place=PLACE, name="imagine")
            await bare.engines.images.imagine(command, f"a held fox {n}")
        sim.advance(120)
        await bare.engines.tracker.poll_round()
        with contextlib.suppress(TimeoutError):
            async with asyncio.timeout(1.0):
                while platform.under_way < until:
                    platform.arrived.clear()
                    await platform.arrived.wait()
        platform.gate.set()
        await bare.engines.tracker.wait_idle()
        assert len(platform.with_images()) == results
    return platform


async def test_results_waiting_to_be_written_hold_at_most_the_images_allowed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Each waiting delivery holds its downloaded images: with room for one result at the
    upload limit, the second downloads only once the first is written, whatever the slots."""
    platform = await deliver_held(tmp_path, monkeypatch, 4, held=1, until=2)

    assert platform.most_under_way == 1


async def test_small_results_wait_to_be_written_beyond_the_count_of_large_ones(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Room is kept in bytes: small images leave room for more deliveries than the count of
    results at the upload limit, up to the delivery slots."""
    platform = await deliver_held(tmp_path, monkeypatch, 4, held=2, until=4)

    assert platform.most_under_way == 4
