"""Starting a job when the database fails midway: the job's progress message is its one answer,
nothing is raised to the user on top of it, and the tracker settles the job afterwards. A
request the provider refuses as invalid is told to its user alone and leaves no card."""

from __future__ import annotations

import asyncio
import logging
from dataclasses import replace
from pathlib import Path

import pytest

from bot.features.jobs.starter import CREATING_GRACE_SECONDS
from bot.features.jobs.tracking.tracker import SWEEP_SECONDS
from bot.features.jobs.wording import LOST_BEFORE_SUBMIT
from bot.kernel import Command, Event, MessageRef, OutMessage, Place, SurfaceError, User
from simulator.server import serve
from simulator.state import SimulatorConfig
from storage import NewJob, SqliteStore
from tests.bot.features.jobs.proxy import faulty_proxy
from tests.bot.features.jobs.support import (
    bare_engines,
    bodies,
    eventually,
    left_by_a_previous_run,
)
from tests.bot.harness import PLACE, ROOMY, harness, running_genbot
from tests.fakes.platform import FakePlatform
from tests.storage.counting import counted

MANUAL = SimulatorConfig(time_scale=1.0, clock_start=1_700_000_000)
ALICE_IMAGINES = Command(user=User("alice"), place=PLACE, name="imagine")


class ReadOnlyAfterProgress(FakePlatform):
    """Makes the store refuse writes right after the first progress message is posted."""

    store: SqliteStore | None = None

    async def send(
        self, place: Place, message: OutMessage, *, origin: Event | None = None
    ) -> MessageRef:
        ref = await super().send(place, message, origin=origin)
        if self.store is not None:
            store, self.store = self.store, None
            await store.db.run(lambda db: db.execute("PRAGMA query_only = 1"))
        return ref


async def test_a_start_the_database_cuts_short_is_answered_once_and_settled_later(
    tmp_path: Path,
) -> None:
    now = [1_800_000_000.0]
    platform = ReadOnlyAfterProgress(profile=ROOMY)
    async with (
        serve(MANUAL) as sim,
        bare_engines(sim, tmp_path, clock=lambda: now[0], platform=platform) as bare,
    ):
        platform.store = bare.store
        job = await bare.engines.images.imagine(ALICE_IMAGINES, "a red fox")

        assert job.status == "creating" and job.progress_message_id is None
        assert sim.state.requests_to("/gen/v2/imagine") == []
        [progress] = platform.messages.values()
        await bare.store.db.run(lambda db: db.execute("PRAGMA query_only = 0"))
        now[0] += CREATING_GRACE_SECONDS + SWEEP_SECONDS + 1
        await bare.engines.tracker.poll_round()

        settled = await bare.store.jobs.get_job(job.id)
        assert settled is not None and settled.status == "create_failed"
        assert settled.progress_message_id == progress.ref.message_id
        assert LOST_BEFORE_SUBMIT in progress.text
        assert len(platform.messages) == 1 and platform.ephemerals == []


class TakenOverWhileShown(FakePlatform):
    """Another process takes the job over (a new lease generation) while its first progress
    message is posted: this process stalled long enough to lose it."""

    store: SqliteStore | None = None

    async def send(
        self, place: Place, message: OutMessage, *, origin: Event | None = None
    ) -> MessageRef:
        ref = await super().send(place, message, origin=origin)
        if self.store is not None and message.key is not None:
            store, self.store = self.store, None
            job_id = message.key.split(".", 1)[0]
            await store.db.run(
                lambda db: db.execute(
                    "UPDATE jobs SET owner = 'elsewhere', lease_generation = lease_generation + 1"
                    " WHERE id = ?",
                    (job_id,),
                )
            )
        return ref


async def test_a_job_taken_over_before_it_is_sent_is_not_sent(tmp_path: Path) -> None:
    platform = TakenOverWhileShown(profile=ROOMY)
    async with serve(MANUAL) as sim, bare_engines(sim, tmp_path, platform=platform) as bare:
        platform.store = bare.store
        job = await bare.engines.images.imagine(ALICE_IMAGINES, "a red fox")

        assert sim.state.requests_to("/gen/v2/imagine") == []
        stored = await bare.store.jobs.get_job(job.id)
        assert stored is not None and stored.status == "creating"
        assert (stored.owner, stored.progress_message_id) == ("elsewhere", None)
        assert len(platform.messages) == 1 and platform.ephemerals == []


async def test_a_command_handled_twice_starts_one_job(tmp_path: Path) -> None:
    platform = FakePlatform(profile=ROOMY)
    async with serve(MANUAL) as sim, bare_engines(sim, tmp_path, platform=platform) as bare:
        command = Command(user=User("alice"), place=PLACE, name="imagine", key="fake:m1")
        first = await bare.engines.images.imagine(command, "a red fox")
        again = await bare.engines.images.imagine(command, "a red fox")
        other = await bare.engines.images.imagine(replace(command, key="fake:m2"), "a red fox")

        assert again.id == first.id != other.id
        assert first.command_key == "fake:m1"
        assert len(sim.state.requests_to("/gen/v2/imagine")) == 2
        assert len(platform.messages) == 2 and platform.ephemerals == []


async def test_a_command_handled_again_waits_for_the_process_still_starting_its_job(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """The grace another process has to post the job's message ran on real time, not on the
    store's clock that stamped the job: on a clock behind real time it was over at once, and
    a job another process was still starting was settled as never started under it."""
    now = [1_700_000_000.0]
    caplog.set_level(logging.INFO, logger="bot.features.jobs.starter")
    command = Command(user=User("alice"), place=PLACE, name="imagine", key="fake:m1")
    async with serve(MANUAL) as sim, bare_engines(sim, tmp_path, clock=lambda: now[0]) as bare:
        new = NewJob(family="task", type="imagine", requester_id="alice", platform="fake",
                     channel_id=PLACE.channel_id, command_key="fake:m1")  # fmt: skip
        theirs = await left_by_a_previous_run(tmp_path / "genbot.db", new, clock=lambda: now[0])
        again = asyncio.create_task(bare.engines.images.imagine(command, "a red fox"))
        await eventually(lambda: "not starting it again" in caplog.text)
        await bare.store.db.run(
            lambda db: db.execute(
                "UPDATE jobs SET progress_message_id = 'posted-by-them' WHERE id = ?",
                (theirs.id,),
            )
        )
        async with asyncio.timeout(5):
            answer = await again

        assert answer.id == theirs.id and answer.progress_message_id == "posted-by-them"
        stored = await bare.store.jobs.get_job(theirs.id)
        assert stored is not None and stored.status == "creating"
        assert sim.state.requests_to("/gen/v2/imagine") == []


async def test_a_refusal_at_start_is_said_in_the_language_of_the_channel_that_reads_it(
    tmp_path: Path,
) -> None:
    """A German user's job in a channel whose language is English: why it could not start is
    stored and shown in English, as its progress message is, for everyone there."""
    config = SimulatorConfig(time_scale=0.003, credits=3)
    async with harness(tmp_path, sim_config=config) as bot:
        await bot.store.settings.set_scope_settings(
            "channel", "fake", PLACE.channel_id, language="en"
        )
        await bot.actor(locale="de").command("imagine", prompt="a red fox")
        job = await bot.settled((await bot.latest_job()).id)

        assert job.error == "The workspace has run out of credits."
        assert bot.progress(job).text.endswith(
            "could not start: The workspace has run out of credits."
        )


async def test_recording_a_submission_answers_the_job_without_reading_it_again(
    tmp_path: Path,
) -> None:
    """The move recording the provider's answer for a new job answers the job as it left it,
    and the start returns that. It used to read the whole job again after the move: one
    round trip per job."""
    async with serve(MANUAL) as sim, bare_engines(sim, tmp_path) as bare:
        counting = counted(bare.store)
        fox = await bare.engines.images.imagine(ALICE_IMAGINES, "a red fox")
        trips = list(counting.trips)
        stored = await bare.store.jobs.get_job(fox.id)

    [submitted] = [n for n, trip in enumerate(trips) if trip.moves_to("submitted")]
    after = [sql for trip in trips[submitted + 1 :] for sql, _ in trip.statements]
    assert "SELECT * FROM jobs WHERE id = ?" not in after
    assert stored is not None and (fox.status, fox.provider_id) == ("submitted", stored.provider_id)
    assert fox.updated_at == stored.updated_at and fox.progress_message_id is not None


async def test_a_job_that_moved_on_before_its_submission_was_recorded_is_read_again(
    tmp_path: Path,
) -> None:
    """An early webhook (here: a failure) moved the job before the provider's answer to its
    create call was recorded: the recording moves nothing, and the start answers the job as
    the webhook left it, read again after the miss."""
    async with (
        serve(MANUAL) as sim,
        faulty_proxy(sim.base_url) as proxy,
        bare_engines(sim, tmp_path, api_url=proxy.base_url) as bare,
    ):
        proxy.faults["/gen/v2/imagine"] = ["hang"]
        starting = asyncio.create_task(bare.engines.images.imagine(ALICE_IMAGINES, "a red fox"))
        async with asyncio.timeout(5):
            await proxy.hung.wait()
        (job,) = await bare.store.tracking.list_unfinished_jobs()
        assert job.status == "creating" and job.progress_message_id is not None
        assert await bare.store.jobs.transition(job.id, "creating", "failed", error="early")
        counting = counted(bare.store)
        proxy.release.set()
        async with asyncio.timeout(5):
            fox = await starting
        trips = list(counting.trips)

    assert (fox.id, fox.status, fox.error, fox.provider_id) == (job.id, "failed", "early", None)
    [submitted] = [n for n, trip in enumerate(trips) if trip.moves_to("submitted")]
    assert trips[submitted].rows_written + trips[submitted].rows_read == 0
    after = [sql for trip in trips[submitted + 1 :] for sql, _ in trip.statements]
    assert "SELECT * FROM jobs WHERE id = ?" in after


RATIO_REFUSED = (
    "The service refused the request: aspect_ratio must be between 1:4 and 4:1 (got 99:1)"
)


async def test_a_request_the_provider_refuses_is_told_privately_and_leaves_no_card(
    tmp_path: Path,
) -> None:
    """``--ar 99:1`` reaches the provider (docs/provider.md#prompt-check), which refuses it:
    the job ends ``create_failed``, its progress message is deleted, only its user reads why,
    and it counts for nothing (the next job starts under a cap of one; no credits). The
    command handled again after a restart is refused privately again, sending nothing."""
    platform = FakePlatform(profile=ROOMY)
    config = SimulatorConfig(time_scale=0.003, insecure_webhooks=True)
    limits = {"max_concurrent_jobs_per_user": 1}
    command = Command(
        user=User("alice"),
        place=PLACE,
        name="imagine",
        text="a cat --ar 99:1",
        key="fake:m1",
    )
    db = tmp_path / "genbot.db"
    async with serve(config) as sim:
        async with running_genbot(sim, db, platform=platform, limits=limits) as bot:
            await bot.core.handle(command)
            refused = await bot.settled((await bot.latest_job()).id)

            assert (refused.status, refused.error) == ("create_failed", RATIO_REFUSED)
            assert refused.progress_message_id is None
            assert platform.ephemerals_for("alice") == [RATIO_REFUSED]
            assert platform.messages == {} and len(platform.deleted) == 1
            assert len(bodies(sim, "/gen/v2/imagine")) == 1

            await bot.actor("alice").command("imagine", prompt="a cat")
            started = await bot.latest_job()
            assert (await bot.result(started.id)).message.images
            assert len(platform.ephemerals) == 1, "the refused job holds no place under the cap"
            charged = (await bot.settled(started.id)).credits
            spent = await bot.store.ledger.usage_for_user("fake", "alice")
            assert charged and spent.credits == charged, "the grid's credits alone"

        async with running_genbot(sim, db, platform=platform, limits=limits) as bot:
            await bot.core.handle(command)

            assert platform.ephemerals_for("alice")[1:] == [
                f"**Imagine** — a cat --ar 99:1 (relax) could not start: {RATIO_REFUSED}"
            ]
            assert len(bodies(sim, "/gen/v2/imagine")) == 2
            assert len(platform.messages) == 1


class KeepsMessages(FakePlatform):
    """A platform where genbot may not delete its messages (a lost permission)."""

    async def delete(self, ref: MessageRef) -> None:
        raise SurfaceError("missing permission to delete messages")


@pytest.mark.parametrize(
    ("command", "options", "path", "heading"),
    [
        ("describe", {"url": "https://files.example.com/cat.png"}, "/gen/v2/describe", "Describe"),
        ("diffusion.txt2img", {"prompt": "a cat"}, "/diff/txt2img", "Generate** — a cat"),
    ],
)
async def test_every_command_that_submits_is_refused_privately_where_a_card_cannot_go(
    tmp_path: Path, command: str, options: dict[str, str], path: str, heading: str
) -> None:
    """The starter is the one place: describe and diffusion refused with a 400 are told
    privately too. Where the card cannot be deleted it says only that the job did not start."""
    platform = KeepsMessages(profile=ROOMY)
    async with (
        serve(MANUAL) as sim,
        faulty_proxy(sim.base_url) as proxy,
        running_genbot(
            sim, tmp_path / "genbot.db", platform=platform, api_url=proxy.base_url
        ) as bot,
    ):
        proxy.faults[path] = ["bad_request"]
        await bot.actor("alice").command(command, **options)
        job = await bot.settled((await bot.latest_job()).id)

        reason = "The service refused the request: refused by the test proxy"
        assert (job.status, job.error, job.progress_message_id) == ("create_failed", reason, None)
        assert platform.ephemerals_for("alice") == [reason]
        [card] = platform.messages.values()
        assert card.text.startswith(f"❌ **{heading}") and card.text.endswith("— did not start")
        assert card.buttons == [] and sim.state.requests_to(path) == []


async def test_a_refusal_the_documentation_does_not_name_tells_the_providers_reason(
    tmp_path: Path,
) -> None:
    """A creation refused in the body with a message the documentation does not list shows the
    provider's reason, not a generic sentence: on one line, the key hidden, bounded."""
    async with (
        serve(MANUAL) as sim,
        faulty_proxy(sim.base_url) as proxy,
        running_genbot(sim, tmp_path / "genbot.db", api_url=proxy.base_url) as bot,
    ):
        proxy.faults["/gen/v2/imagine"] = ["refused"]
        proxy.refusal = "prompt rejected by\nthe upstream bot for key sim-key: " + "x" * 400
        await bot.actor("alice").command("imagine", prompt="a cat")
        job = await bot.settled((await bot.latest_job()).id)

        assert job.status == "create_failed" and job.error is not None
        assert job.error.startswith(
            "The service refused to create the task: prompt rejected by the upstream bot for "
            "key [hidden]: xxx"
        )
        assert job.error.endswith("x…") and "sim-key" not in job.error
        assert len(job.error) < 300


@pytest.mark.parametrize("status", [418, 302])
async def test_an_undocumented_status_is_told_as_what_it_is(
    tmp_path: Path, status: int, caplog: pytest.LogCaptureFixture
) -> None:
    # A 4xx started nothing: the job did not start, saying the status; another status may have
    # reached the provider: the job is unconfirmed, saying the status too. Both in the log.
    caplog.set_level(logging.WARNING)
    async with serve(MANUAL) as sim, faulty_proxy(sim.base_url) as proxy:
        proxy.faults["/gen/v2/imagine"] = ["status"]
        proxy.status = status
        async with running_genbot(sim, tmp_path / "genbot.db", api_url=proxy.base_url) as bot:
            await bot.actor().command("imagine", prompt="a fox")
            job = await bot.latest_job()
            said = f"HTTP {status}, which its API does not document"
            if status == 418:
                assert job.status == "create_failed" and job.error is not None
                assert said in job.error and "odd answer" in job.error
            else:
                assert job.status == "unknown"
                assert said in bot.progress(job).text
            warned = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
            assert any(f"HTTP {status}" in line for line in warned), warned
