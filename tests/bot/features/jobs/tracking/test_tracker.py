"""The tracker: restarts, webhooks (and forged ones), polling, timeouts, write windows."""

from __future__ import annotations

import asyncio
import contextlib
import json
import sqlite3
import threading
import time
import uuid
from collections.abc import Awaitable, Callable
from dataclasses import replace
from pathlib import Path
from typing import Any

import aiohttp
import pytest

from bot.api import ImagineRequest, TaskRecord
from bot.features.jobs.messages import place_of
from bot.features.jobs.starter import CREATING_GRACE_SECONDS
from bot.features.jobs.tracking import tracker as tracker_module
from bot.features.jobs.tracking.provider_state import LOST_AFTER_NULLS, LOST_TASK
from bot.features.jobs.tracking.tracker import AGE_SHARE, SWEEP_SECONDS
from bot.features.jobs.wording import LOST_BEFORE_SUBMIT, RESTARTED_BEFORE_SUBMIT, TIMEOUT_NOTE
from bot.kernel import Command, MessageRef, OutMessage, PlatformProfile, User
from simulator.server import serve
from simulator.state import Dialect, SimulatorConfig
from simulator.task_model import fetch_record
from storage import IN_FLIGHT_STATUSES, NewJob, SqliteStore
from tests.bot.features.jobs.support import (
    attachment,
    bare_engines,
    bodies,
    eventually,
    left_by_a_previous_run,
    press,
    run_command,
)
from tests.bot.harness import PLACE, ROOMY, harness, running_genbot
from tests.fakes.platform import FakePlatform, PostedMessage
from tests.sim_holds import one_at_a_time
from tests.sim_time import freeze
from tests.storage.counting import counted
from tests.storage.helpers import create_job

ROOMY_CAPS = {"max_concurrent_jobs_per_user": 10}
MANUAL = SimulatorConfig(time_scale=1.0, clock_start=1_700_000_000, insecure_webhooks=True)


def results_of(platform: FakePlatform, job_id: str) -> list[PostedMessage]:
    """Result messages (those with the job's buttons) posted for ``job_id``."""
    return [m for m in platform.messages.values() if any(b.ref == job_id for b in m.buttons)]


async def test_a_restart_delivers_every_job_exactly_once_and_old_buttons_work(
    tmp_path: Path,
) -> None:
    db = tmp_path / "genbot.db"
    platform = FakePlatform(profile=ROOMY)
    async with serve(MANUAL) as sim:
        async with running_genbot(sim, db, platform=platform, limits=ROOMY_CAPS) as first:
            alice = first.actor()
            await alice.command("imagine", prompt="an old fox")
            old = await first.latest_job()
            sim.advance(120)
            old_grid = await first.result(old.id)
            await alice.command("imagine", prompt="a fox in flight")
            await alice.command("imagine", prompt="a fox being posted")
            await alice.command("describe", url="https://files.example.com/cat.png")
            await alice.command(
                "diffusion.controlnet",
                prompt="a fox",
                model_id="sd",
                controlnet_model="canny",
                init_image=attachment("init.png"),
            )
            flying, claimed, described, controlled = (await first.all_jobs())[1:]
            assert all(j.status in IN_FLIGHT_STATUSES for j in (flying, claimed, described))
            assert controlled.status == "processing"

        sim.advance(120)
        async with await SqliteStore.open(db) as store:
            task = sim.state.tasks[claimed.provider_id or ""]
            finished = fetch_record(task, sim.state.now())
            await store.jobs.transition(
                claimed.id,
                IN_FLIGHT_STATUSES,
                "finished",
                result_urls=[finished["task_result"]["image_url"]],
                actions=finished["task_result"]["actions"],
            )
            assert await store.jobs.transition(claimed.id, "finished", "posting")
            orphan = await create_job(store.admission, NewJob(
                family="task", type="imagine", requester_id="alice", platform="fake",
                channel_id="c1", workspace_id="w1", prompt="never sent",
            ))  # fmt: skip

        async with running_genbot(sim, db, platform=platform, limits=ROOMY_CAPS) as second:
            for job in (flying, claimed, described, controlled):
                done = await second.settled(job.id)
                assert done.status == "posted", (job.type, done.status, done.error)
            await second.jobs.tracker.wait_idle()
            for job in (flying, claimed, described, controlled):
                assert len(results_of(platform, job.id)) == 1, job.type
            assert len(bodies(sim, "/gen/v2/imagine")) == 3

            refused = await second.settled(orphan.id)
            assert refused.status == "create_failed" and refused.error == RESTARTED_BEFORE_SUBMIT

            upscale, _ = await _press_and_finish(second, old_grid, "U1")
            assert bodies(sim, "/gen/v2/upscale") == [
                {"origin_task_id": old.provider_id, "index": "1"}
            ]
            assert upscale.requester_id == "alice"


async def _press_and_finish(bot: Any, message: PostedMessage, label: str) -> tuple[Any, Any]:
    before = {job.id for job in await bot.all_jobs()}
    await bot.actor().press(message, label)
    (job,) = [j for j in await bot.all_jobs() if j.id not in before]
    bot.sim.advance(120)
    return job, await bot.result(job.id)


@pytest.mark.parametrize("dialect", ["default", "spec", "variant"])
async def test_webhooks_deliver_results_without_polling(tmp_path: Path, dialect: Dialect) -> None:
    # The backstop poll comes after 30 s: a result within the harness's 10 s came by webhook.
    # A spec-dialect notification carries no record, so genbot reads that one task at once.
    # The variant refuses an address with a path: genbot falls back to the bare address, once
    # (docs/provider.md#webhook-address), and finds the job by the task id in the body.
    async with harness(tmp_path, webhooks=True, dialect=dialect) as bot:
        alice = bot.actor()
        job, grid = await run_command(bot, alice, "imagine", prompt="a red fox")
        upscale, _ = await press(bot, alice, grid, "U1")

        hook = bot.settings.webhook
        own = f"{hook.public_url}/webhooks/tasks/{job.id}"
        sent = bodies(bot.sim, "/gen/v2/imagine")
        expected = [own, hook.public_url] if dialect == "variant" else [own]
        assert [body["webhook_endpoint"] for body in sent] == expected
        upscale_hook = hook.public_url if dialect == "variant" else own.replace(job.id, upscale.id)
        assert [b["webhook_endpoint"] for b in bodies(bot.sim, "/gen/v2/upscale")] == [upscale_hook]
        secret = await bot.jobs.starter.webhook_secrets.of(job)
        assert secret is not None and len(secret) > 20 and sent[-1]["webhook_secret"] == secret
        assert job.webhook_secret is not None and secret not in job.webhook_secret, "sealed"
        fetched = [r.body["task_ids"] for r in bot.sim.state.requests_to("/gen/v2/multi_fetch")]
        assert fetched == [[job.provider_id], [upscale.provider_id]], "each result confirmed"
        assert [a.status for a in bot.sim.state.webhook_attempts] == [200, 200]
        done = await bot.settled(upscale.id)
        assert done.last_webhook_at is not None
        assert await bot.jobs.starter.webhook_secrets.of(done) != secret


async def test_forged_unknown_and_replayed_webhooks_change_nothing(tmp_path: Path) -> None:
    async with harness(tmp_path, webhooks=True, sim_config=MANUAL) as bot:
        alice = bot.actor()
        await alice.command("imagine", prompt="a red fox")
        job = await bot.latest_job()
        url = f"{bot.settings.webhook.public_url}/webhooks/tasks/"
        forged = _finished_record(job.provider_id or "", "https://evil.example.com/x.png")
        other = _finished_record("another-task", "https://evil.example.com/x.png")
        secret = await bot.jobs.starter.webhook_secrets.of(job) or ""

        async with aiohttp.ClientSession() as http:
            answers = [
                await _post(http, url + job.id, forged, None),
                await _post(http, url + job.id, forged, "wrong-secret"),
                await _post(http, url + job.id, forged, secret[:-1]),
                await _post(http, url + "nosuchjob", forged, secret),
                await _post(http, url + "../../etc", forged, secret),
                await _post(http, url + job.id, "not json {", secret),
            ]
            assert answers == [401, 401, 401, 401, 404, 400]
            unchanged = await bot.store.jobs.get_job(job.id)
            assert unchanged is not None and unchanged.status in IN_FLIGHT_STATUSES
            assert unchanged.result_urls == [] and unchanged.last_webhook_at is None
            # Authentic notifications that carry no record of this task are signals: genbot
            # reads the task itself, and what the body claims changes nothing.
            fetches = len(bot.sim.state.requests_to("/gen/v2/multi_fetch"))
            assert await _post(http, url + job.id, other, secret) == 200
            assert await _post(http, url + job.id, {"status": []}, secret) == 200
            await bot.jobs.tracker.wait_idle()
            signalled = await bot.store.jobs.get_job(job.id)
            assert signalled is not None and signalled.status in IN_FLIGHT_STATUSES
            assert signalled.result_urls == [] and signalled.last_webhook_at is not None
            assert len(bot.sim.state.requests_to("/gen/v2/multi_fetch")) >= fetches + 2
            assert bot.platform.with_images() == []

            bot.sim.advance(120)
            grid = await bot.result(job.id)
            messages = len(bot.platform.messages)
            real = fetch_record(bot.sim.state.tasks[job.provider_id or ""], bot.sim.state.now())
            assert await _post(http, url + job.id, real, secret) == 200
            assert await _post(http, url + job.id, forged, secret) == 200

        await bot.jobs.tracker.wait_idle()
        after = await bot.store.jobs.get_job(job.id)
        assert after is not None and after.status == "posted"
        assert after.result_urls == [real["task_result"]["image_url"], *after.result_urls[1:]]
        assert len(bot.platform.messages) == messages and grid.message.images


async def test_a_finished_record_in_a_notification_is_confirmed_with_the_provider(
    tmp_path: Path,
) -> None:
    # A notification with the right address and secret claiming the task finished (or failed)
    # is not posted on its word: genbot reads the task, and posts only what the provider says.
    async with harness(tmp_path, webhooks=True, sim_config=MANUAL) as bot:
        await bot.actor().command("imagine", prompt="a red fox")
        job = await bot.latest_job()
        url = f"{bot.settings.webhook.public_url}/webhooks/tasks/{job.id}"
        forged = _finished_record(job.provider_id or "", "https://evil.example.com/x.png")
        failed = {**forged, "status": "failed", "task_result": {"error_messages": ["forged"]}}
        secret = await bot.jobs.starter.webhook_secrets.of(job) or ""
        async with aiohttp.ClientSession() as http:
            assert await _post(http, url, forged, secret) == 200
            assert await _post(http, url, failed, secret) == 200
            await bot.jobs.tracker.wait_idle()
            running = await bot.store.jobs.get_job(job.id)
            assert running is not None and running.status in IN_FLIGHT_STATUSES
            assert running.result_urls == [] and running.credits is None
            asked = [r.body["task_ids"] for r in bot.sim.state.requests_to("/gen/v2/multi_fetch")]
            assert [job.provider_id] in asked
            assert bot.platform.with_images() == []

            bot.sim.advance(120)
            assert await _post(http, url, forged, secret) == 200
            posted = await bot.result(job.id)
        done = await bot.settled(job.id)
        task = bot.sim.state.tasks[job.provider_id or ""]
        assert done.status == "posted" and posted.message.images
        assert done.result_urls[0] == task.image_url("images")
        assert "https://evil.example.com/x.png" not in done.result_urls
        assert done.credits != 999


async def test_a_notification_at_the_bare_address_is_matched_by_the_task_in_its_body(
    tmp_path: Path,
) -> None:
    # A provider that drops the job from the address posts to the bare address (or the path).
    async with harness(tmp_path, webhooks=True, sim_config=MANUAL) as bot:
        alice = bot.actor()
        await alice.command("imagine", prompt="a red fox")
        job = await bot.latest_job()
        task = job.provider_id or ""
        secret = await bot.jobs.starter.webhook_secrets.of(job) or ""
        bare = bot.settings.webhook.public_url
        signal = {"data": {"task_id": task, "status": "finished"}}
        async with aiohttp.ClientSession() as http:
            assert await _post(http, bare + "/", signal, "wrong-secret") == 401
            assert await _post(http, bare + "/", {"task_id": "nosuch"}, secret) == 401
            assert await _post(http, bare + "/", {"status": "finished"}, secret) == 401
            assert await _post(http, bare + "/webhooks/tasks", "not json", secret) == 401
            unchanged = await bot.store.jobs.get_job(job.id)
            assert unchanged is not None and unchanged.last_webhook_at is None
            bot.sim.advance(120)
            assert await _post(http, bare + "/webhooks/tasks", signal, secret) == 200
            assert (await bot.result(job.id)).message.images
            posted = await bot.store.jobs.get_job(job.id)
            assert posted is not None and posted.last_webhook_at is not None


def _finished_record(task_id: str, image_url: str) -> dict[str, Any]:
    return {
        "task_id": task_id,
        "status": "finished",
        "process_time": 1,
        "task_result": {"image_url": image_url, "actions": ["upscale1"], "credit": 999},
        "meta": {},
    }


async def _post(
    http: aiohttp.ClientSession, url: str, body: dict[str, Any] | str, secret: str | None
) -> int:
    headers = {"x-webhook-secret": secret} if secret is not None else {}
    data = body if isinstance(body, str) else json.dumps(body)
    async with http.post(url, data=data, headers=headers) as response:
        return response.status


async def test_a_job_the_provider_never_finishes_times_out_with_a_note(tmp_path: Path) -> None:
    limits = {"job_timeout_seconds": 0.3}
    async with harness(tmp_path, sim_config=MANUAL, limits=limits) as bot:
        alice = bot.actor()
        job, report = await run_command(bot, alice, "imagine", prompt="a slow fox")
        done = await bot.settled(job.id)
        assert done.status == "failed_posted" and done.result["timed_out"] is True
        assert "did not finish this job within" in report.text and TIMEOUT_NOTE in report.text


async def test_job_messages_share_the_write_windows_and_are_never_rate_limited(
    tmp_path: Path,
) -> None:
    tight = PlatformProfile(edits_per_window_per_channel=4, edit_window_seconds=0.4)
    platform = FakePlatform(profile=tight, enforce_windows=True)
    async with harness(tmp_path, time_scale=0.01, platform=platform) as bot:
        alice = bot.actor()
        await asyncio.gather(
            *(alice.command("imagine", prompt=f"fox number {n}") for n in range(3))
        )
        for job in await bot.all_jobs():
            await bot.result(job.id)
        await bot.jobs.tracker.wait_idle()
        assert platform.rate_limited == 0
        assert len(bot.platform.with_images()) == 3


class ResultOrder(FakePlatform):
    """A fake platform that notes the channel of each result as it is shown."""

    def __init__(self, profile: PlatformProfile) -> None:
        super().__init__(profile=profile)
        self.results_in: list[str] = []

    async def edit(self, ref: MessageRef, message: OutMessage) -> None:
        await super().edit(ref, message)
        if message.images:
            self.results_in.append(ref.place.channel_id)


async def test_a_busy_channels_results_do_not_hold_up_another_channels(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Results wait for their channel's write window inside a delivery slot; taken first come,
    first served, the slots held by a busy channel's results kept a quiet channel's result
    waiting behind every one of them."""
    monkeypatch.setattr(tracker_module, "DELIVERY_CONCURRENCY", 2)
    platform = ResultOrder(PlatformProfile(edits_per_window_per_channel=2, edit_window_seconds=0.2))
    quiet = replace(PLACE, channel_id="quiet")
    async with serve(MANUAL) as sim, bare_engines(sim, tmp_path, platform=platform) as bare:
        for n in range(6):
            command = Command(user=User(f"user{n}"), place=PLACE, name="imagine")
            await bare.engines.images.imagine(command, f"a busy fox {n}")
        command = Command(user=User("quiet"), place=quiet, name="imagine")
        await bare.engines.images.imagine(command, "a quiet fox")
        sim.advance(120)

        await bare.engines.tracker.poll_round()
        await bare.engines.tracker.wait_idle()

        assert platform.results_in.count(PLACE.channel_id) == 6
        assert platform.results_in.index("quiet") <= 2, platform.results_in


ALICE_IMAGINES = Command(user=User("alice"), place=PLACE, name="imagine")
A_FOX = NewJob(family="task", type="imagine", requester_id="alice", platform="fake",
               channel_id="c1", workspace_id="w1", prompt="a fox")  # fmt: skip
"""A job created in a test's own store: nobody is starting it, so it is stranded in
``creating`` until a sweep settles it."""


async def test_concurrent_deliveries_of_one_job_post_it_once(tmp_path: Path) -> None:
    async with serve(MANUAL) as sim, bare_engines(sim, tmp_path) as bare:
        tracker, delivery = bare.engines.tracker, bare.engines.delivery
        job = await bare.engines.images.imagine(ALICE_IMAGINES, "a red fox")
        sim.advance(120)
        record = await bare.provider.tasks.fetch(job.provider_id or "")
        await asyncio.gather(
            tracker.apply_task_record(job, record),
            tracker.apply_task_record(job, record),
            *(delivery.deliver(job.id) for _ in range(3)),
        )
        await tracker.wait_idle()
        await asyncio.gather(*(delivery.deliver(job.id) for _ in range(3)))

        assert len(bare.platform.with_images()) == 1
        assert (await bare.engines.watch.wait(job.id, {"posted"}, 5)).result_message_id
        assert (await bare.store.ledger.usage_for_user("fake", "alice")).credits == 4


async def test_a_job_past_the_timeout_is_asked_for_once_before_it_fails(tmp_path: Path) -> None:
    """After a downtime longer than the job timeout, a job the provider finished meanwhile is
    posted, not reported as "did not finish"; one still unfinished times out."""
    now = [1_700_000_000.0]
    async with (
        serve(MANUAL) as sim,
        bare_engines(sim, tmp_path, clock=lambda: now[0], job_timeout_seconds=600) as bare,
    ):
        images, tracker = bare.engines.images, bare.engines.tracker
        finished = await images.imagine(ALICE_IMAGINES, "a fox finished while we were down")
        sim.advance(120)
        unfinished = await images.imagine(ALICE_IMAGINES, "a fox the provider lost track of")
        now[0] += 3600
        await tracker.poll_round()
        await tracker.wait_idle()
        posted = await bare.store.jobs.get_job(finished.id)
        assert posted is not None and posted.status == "posted"
        late = await bare.store.jobs.get_job(unfinished.id)
        assert late is not None and late.status == "failed_posted" and late.result["timed_out"]


async def test_the_poll_interval_adapts_to_activity(tmp_path: Path) -> None:
    now = [1_800_000_000.0]
    async with (
        serve(MANUAL) as sim,
        bare_engines(
            sim, tmp_path, clock=lambda: now[0], poll_interval_min=1.0, poll_interval_max=8.0
        ) as bare,
    ):
        tracker = bare.engines.tracker
        assert await tracker.poll_round() == 8.0
        await bare.engines.images.imagine(ALICE_IMAGINES, "a red fox")
        assert tracker.interval == 1.0
        now[0] += 8.0 / AGE_SHARE
        assert [await tracker.poll_round() for _ in range(5)] == [1.0, 2.0, 4.0, 8.0, 8.0]
        sim.advance(25)
        assert await tracker.poll_round() == 1.0


async def test_an_idle_round_is_one_statement_until_a_job_is_held(tmp_path: Path) -> None:
    """A process holding no unfinished job ran all of a round's listings each round (six to
    eight statements every ``poll_interval_max``); after a round that found nothing, a round
    asks once whether it holds any, and a job it holds unannounced (no kick) still gets the
    whole round."""
    now = [1_800_000_000.0]
    async with serve(MANUAL) as sim, bare_engines(sim, tmp_path, clock=lambda: now[0]) as bare:
        store, tracker = bare.store, bare.engines.tracker
        await tracker.poll_round()
        counting = counted(store)
        for _ in range(3):
            now[0] += SWEEP_SECONDS
            await tracker.poll_round()
        assert len(counting.trips) == 3

        stranded = await create_job(store.admission, A_FOX)
        now[0] += CREATING_GRACE_SECONDS + SWEEP_SECONDS + 1
        await tracker.poll_round()
        settled = await store.jobs.get_job(stranded.id)
        assert settled is not None and settled.status == "create_failed"


async def test_a_sweep_is_due_on_time_though_the_wall_clock_stepped_back(tmp_path: Path) -> None:
    """The next sweep was scheduled on the wall clock: stepped back an hour (an NTP step), a
    ``creating`` job nobody is starting waited an hour more to be settled."""
    now, moment = [1_800_000_000.0], [100.0]
    async with (
        serve(MANUAL) as sim,
        bare_engines(sim, tmp_path, clock=lambda: now[0], monotonic=lambda: moment[0]) as bare,
    ):
        store, tracker = bare.store, bare.engines.tracker
        await tracker.poll_round()
        now[0] -= 3600
        stranded = await create_job(store.admission, A_FOX)
        now[0] += CREATING_GRACE_SECONDS + SWEEP_SECONDS + 1
        moment[0] += CREATING_GRACE_SECONDS + SWEEP_SECONDS + 1
        await tracker.poll_round()
        settled = await store.jobs.get_job(stranded.id)
        assert settled is not None and settled.status == "create_failed"


async def test_a_sweep_comes_every_sweep_seconds_of_the_monotonic_clock(tmp_path: Path) -> None:
    """Not every round: a sweep due-checked on the wall clock against a schedule on the
    monotonic clock was always due, two more listings a round."""
    now, moment = [1_800_000_000.0], [100.0]
    async with (
        serve(MANUAL) as sim,
        bare_engines(sim, tmp_path, clock=lambda: now[0], monotonic=lambda: moment[0]) as bare,
    ):
        store, tracker = bare.store, bare.engines.tracker
        await tracker.poll_round()
        stranded = await create_job(store.admission, A_FOX)
        now[0] += CREATING_GRACE_SECONDS + 1
        moment[0] += SWEEP_SECONDS - 1
        await tracker.poll_round()
        early = await store.jobs.get_job(stranded.id)
        assert early is not None and early.status == "creating", "no sweep before it is due"
        moment[0] += 1
        await tracker.poll_round()
        settled = await store.jobs.get_job(stranded.id)
        assert settled is not None and settled.status == "create_failed"


async def test_quiet_rounds_grow_the_interval_to_a_share_of_the_youngest_jobs_age(
    tmp_path: Path,
) -> None:
    """Jobs created together finish together: a quiet round while they were a few seconds old
    doubled the wait before any of their finishes was seen (issue 32 (d))."""
    now = [1_800_000_000.0]
    async with (
        serve(MANUAL) as sim,
        bare_engines(
            sim, tmp_path, clock=lambda: now[0], poll_interval_min=1.0, poll_interval_max=8.0
        ) as bare,
    ):
        freeze(sim)
        tracker, images = bare.engines.tracker, bare.engines.images
        await images.imagine(ALICE_IMAGINES, "an old fox")
        now[0] += 50.0
        born = now[0]
        await images.imagine(ALICE_IMAGINES, "a young fox")
        await tracker.poll_round()
        young = []
        for _ in range(4):
            now[0] += 1.0
            young.append(await tracker.poll_round())
        assert young == [1.0] * 4, "the young fox's finish is known within the cycle"
        now[0] = born + 3.0 / AGE_SHARE
        grown = [await tracker.poll_round() for _ in range(3)]
        assert grown == [2.0, 3.0, 3.0], "a twentieth of the youngest job's age, not the oldest's"


async def test_the_interval_runs_from_the_start_of_a_round_on_the_monotonic_clock(
    tmp_path: Path,
) -> None:
    """A round's start is read on the monotonic clock; the wait after it must be too (wall
    time less a monotonic start was always past, and the tracker polled without a pause)."""
    now, moment = [1_700_000_000.0], [1000.0]
    async with (
        serve(MANUAL) as sim,
        bare_engines(sim, tmp_path, clock=lambda: now[0], monotonic=lambda: moment[0]) as bare,
    ):
        tracker = bare.engines.tracker
        moment[0] += 0.3
        now[0] -= 3600
        assert tracker.wait_after(1000.0, 1.0) == pytest.approx(0.7)
        moment[0] += 2.0
        assert tracker.wait_after(1000.0, 1.0) == 0.0


async def test_a_round_during_which_the_wall_clock_stepped_back_is_followed_by_the_next(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The wait after a round was measured on the wall clock: stepped back an hour during the
    round (an NTP step), the tracker slept an hour more before polling again."""
    now = [1_700_000_000.0]
    async with (
        serve(MANUAL) as sim,
        bare_engines(
            sim,
            tmp_path,
            clock=lambda: now[0],
            monotonic=time.monotonic,
            poll_interval_min=0.01,
            poll_interval_max=0.05,
        ) as bare,
    ):
        tracker = bare.engines.tracker
        round_of = tracker.poll_round
        second = asyncio.Event()

        async def stepping_round() -> float:
            sleep = await round_of()
            if tracker.rounds == 1:
                now[0] -= 3600
            else:
                second.set()
            return sleep

        monkeypatch.setattr(tracker, "poll_round", stepping_round)
        await tracker.start()
        async with asyncio.timeout(5):
            await second.wait()


async def test_polling_without_webhooks_writes_no_poll_stamp(tmp_path: Path) -> None:
    async with serve(MANUAL) as sim, bare_engines(sim, tmp_path) as bare:
        await bare.engines.images.imagine(ALICE_IMAGINES, "a red fox")
        (job,) = await bare.store.tracking.list_unfinished_jobs(IN_FLIGHT_STATUSES)
        await bare.engines.tracker.poll_round()
        assert sim.state.requests_to("/gen/v2/multi_fetch")
        polled = await bare.store.jobs.get_job(job.id)
        assert polled is not None and polled.last_polled_at is None, "only webhooks need it"


async def test_jobs_waiting_for_a_webhook_are_polled_once_webhooks_are_off(
    tmp_path: Path,
) -> None:
    db = tmp_path / "genbot.db"
    platform = FakePlatform(profile=ROOMY)
    async with serve(MANUAL) as sim:
        async with running_genbot(sim, db, platform=platform, webhooks=True) as first:
            await first.actor().command("imagine", prompt="a red fox")
            job = await first.latest_job()
            assert job.webhook_secret
        sim.advance(120)
        slow_backstop = {"poll_interval_max": 30.0}
        async with running_genbot(sim, db, platform=platform, limits=slow_backstop) as second:
            assert (await second.result(job.id)).message.images
            assert second.sim.state.requests_to("/gen/v2/multi_fetch")


async def test_a_late_poll_answer_leaves_the_finished_progress_message_alone(
    tmp_path: Path,
) -> None:
    unpaced = FakePlatform(profile=PlatformProfile(edits_per_window_per_channel=10**9))
    async with harness(tmp_path, sim_config=MANUAL, platform=unpaced) as bot:
        await bot.actor().command("imagine", prompt="a fox")
        snapshot = await bot.latest_job()
        bot.sim.advance(120)
        await bot.result(snapshot.id)
        await bot.jobs.tracker.wait_idle()
        done = await bot.store.jobs.get_job(snapshot.id)
        assert done is not None and bot.progress(done).text.startswith("**Imagined**")

        late = TaskRecord(task_id=snapshot.provider_id or "", status="processing", process_time=12)
        assert not await bot.jobs.tracker.apply_task_record(snapshot, late)
        assert not await bot.jobs.delivery.show_progress(snapshot, "processing")
        assert bot.progress(done).text.startswith("**Imagined**"), bot.progress(done).text


def submitted(task_id: str) -> NewJob:
    """An /imagine job in channel c1 whose task ``task_id`` the provider has."""
    return NewJob(
        family="task",
        type="imagine",
        requester_id="alice",
        platform="fake",
        channel_id="c1",
        prompt="a fox",
        status="submitted",
        provider_id=task_id,
    )


async def test_a_kick_during_a_round_is_not_lost(tmp_path: Path) -> None:
    async with (
        serve(MANUAL) as sim,
        bare_engines(sim, tmp_path, poll_interval_min=0.01, poll_interval_max=60.0) as bare,
    ):
        tracker, store = bare.engines.tracker, bare.store
        created = await bare.provider.tasks.imagine(ImagineRequest(prompt="a fox"))
        await tracker.start()
        await eventually(lambda: tracker.rounds == 1 and tracker.interval == 60.0)
        gate = threading.Event()
        blocked = asyncio.ensure_future(store.db.run(lambda _: gate.wait(5)))
        tracker.kick()
        await eventually(lambda: tracker.rounds >= 2)
        flying = submitted(created.task_id)
        inserted = asyncio.ensure_future(create_job(store.admission, flying))
        tracker.kick()
        gate.set()
        await asyncio.gather(blocked, inserted)

        await eventually(lambda: bool(sim.state.requests_to("/gen/v2/multi_fetch")))


async def test_a_rounds_calls_are_spread_and_kicks_do_not_hurry_them(
    tmp_path: Path,
) -> None:
    """250 jobs in flight are five multi_fetch calls, more than go at once: when the first
    call's answer is applied, it is the only call sent (the next comes a fifth of the spread
    later), and the diffusion job due was fetched before (not after the spread). Jobs submitted
    meanwhile (kicks) do not send the others sooner: on a busy bot every round has some."""
    now = [1_800_000_000.0]

    def clock() -> float:
        now[0] += 0.001
        return now[0]

    async with (
        serve(MANUAL) as sim,
        bare_engines(
            sim, tmp_path, clock=clock, poll_interval_min=600.0, poll_interval_max=600.0
        ) as bare,
    ):
        freeze(sim)
        tracker = bare.engines.tracker
        created = await bare.provider.tasks.imagine(ImagineRequest(prompt="a fox"))
        task_ids = [created.task_id] + [str(uuid.UUID(int=i)) for i in range(249)]
        for task_id in task_ids:
            flying = submitted(task_id)
            await create_job(bare.store.admission, flying)
        diffusion = replace(
            flying, family="diffusion", type="txt2img", status="processing", provider_id="1"
        )
        await create_job(bare.store.admission, diffusion)

        polling = asyncio.ensure_future(tracker.poll_round())
        await eventually(lambda: tracker.state.records_read == 1)
        assert len(sim.state.requests_to("/gen/v2/multi_fetch")) == 1
        assert len(sim.state.requests_to("/diff/fetch")) == 1
        for _ in range(3):
            tracker.kick()
            await asyncio.sleep(0.05)
        assert len(sim.state.requests_to("/gen/v2/multi_fetch")) == 1
        polling.cancel()
        with pytest.raises(asyncio.CancelledError):
            await polling


async def test_resuming_leaves_the_jobs_this_process_is_creating_alone(tmp_path: Path) -> None:
    now = [1_800_000_000.0]
    async with serve(MANUAL) as sim, bare_engines(sim, tmp_path, clock=lambda: now[0]) as bare:
        store, tracker = bare.store, bare.engines.tracker
        job = NewJob(family="task", type="imagine", requester_id="alice", platform="fake",
                     channel_id="c1", workspace_id="w1", prompt="a fox")  # fmt: skip
        now[0] -= 60
        left_behind = await left_by_a_previous_run(tmp_path / "genbot.db", job, lambda: now[0])
        now[0] += 61
        just_accepted = await create_job(store.admission, job)

        await tracker.resume()

        old = await store.jobs.get_job(left_behind.id)
        new = await store.jobs.get_job(just_accepted.id)
        assert old is not None and old.status == "create_failed"
        assert new is not None and new.status == "creating"


async def test_a_progress_message_posted_just_before_a_crash_tells_what_happened(
    tmp_path: Path,
) -> None:
    platform, now = FakePlatform(profile=ROOMY), [1_800_000_000.0]
    async with (
        serve(MANUAL) as sim,
        bare_engines(sim, tmp_path, clock=lambda: now[0], platform=platform) as bare,
    ):
        now[0] -= 60
        job = await left_by_a_previous_run(tmp_path / "genbot.db", NewJob(
            family="task", type="imagine", requester_id="alice", platform="fake",
            channel_id="c1", workspace_id="w1", prompt="a fox",
        ), lambda: now[0])  # fmt: skip
        waiting = OutMessage("⏳ Waiting to start…", key=f"{job.id}.progress")
        shown = await platform.send(place_of(job), waiting)

        await bare.engines.tracker.resume()

        settled = await bare.store.jobs.get_job(job.id)
        assert settled is not None and settled.status == "create_failed"
        assert settled.progress_message_id == shown.message_id
        assert RESTARTED_BEFORE_SUBMIT in platform.messages[shown.message_id].text
        assert len(platform.messages) == 1
        assert sim.state.requests_to("/gen/v2/imagine") == []


async def test_a_webhook_delivers_without_speeding_up_polling(tmp_path: Path) -> None:
    async with (
        serve(MANUAL) as sim,
        bare_engines(sim, tmp_path, poll_interval_min=0.5, poll_interval_max=30.0) as bare,
    ):
        tracker, store = bare.engines.tracker, bare.store
        job = await bare.engines.images.imagine(ALICE_IMAGINES, "a fox")
        await store.jobs.update_job(job.id, webhook_secret="s" * 32)
        sim.advance(120)
        record = fetch_record(sim.state.tasks[job.provider_id or ""], sim.state.now())
        tracker.interval = 30.0

        authentic = await tracker.webhook_job(job.id, "s" * 32)
        assert authentic is not None and await tracker.webhook_job(job.id, "t" * 32) is None
        answer = await tracker.on_webhook(authentic, json.dumps(record).encode())
        await tracker.wait_idle()

        done = await store.jobs.get_job(job.id)
        assert answer == 200 and done is not None and done.status == "posted"
        assert done.last_webhook_at is not None
        assert tracker.interval == 30.0


async def test_notified_tasks_waiting_to_be_read_are_read_together(tmp_path: Path) -> None:
    # Each notification makes genbot read its task; those that come while a read is under way
    # wait for it and are read in one multi_fetch, not one call each.
    roomy: dict[str, Any] = {
        "poll_interval_min": 0.5,
        "poll_interval_max": 30.0,
        "max_concurrent_jobs_per_user": 5,
    }
    async with (
        serve(MANUAL) as sim,
        bare_engines(sim, tmp_path, platform=FakePlatform(profile=ROOMY), **roomy) as bare,
    ):
        tracker = bare.engines.tracker
        jobs = [await bare.engines.images.imagine(ALICE_IMAGINES, f"fox {n}") for n in range(3)]
        sim.advance(120)
        async with one_at_a_time(sim, "/gen/v2/multi_fetch") as reads:
            assert await tracker.on_webhook(jobs[0], b"{}") == 200
            await reads.arrived(1)
            for job in jobs[1:]:
                assert await tracker.on_webhook(job, b"{}") == 200
            reads.open()
            await tracker.wait_idle()
        asked = [r.body["task_ids"] for r in sim.state.requests_to("/gen/v2/multi_fetch")]
        assert asked == [[jobs[0].provider_id], [job.provider_id for job in jobs[1:]]]
        done = [await bare.store.jobs.get_job(job.id) for job in jobs]
        assert [job.status for job in done if job is not None] == ["posted"] * 3


class LatePollPlatform(FakePlatform):
    """Runs ``late`` (a stale poll answer) while the job's outcome edit is under way."""

    def __init__(self) -> None:
        super().__init__(profile=PlatformProfile(edits_per_window_per_channel=10**9))
        self.late: Callable[[], Awaitable[bool]] | None = None
        self.late_answer: asyncio.Future[bool] | None = None

    async def edit(self, ref: MessageRef, message: OutMessage) -> None:
        await super().edit(ref, message)
        if message.images and self.late is not None:
            late, self.late = self.late, None
            self.late_answer = asyncio.ensure_future(late())
            await asyncio.sleep(0)


async def test_a_poll_answer_during_the_outcome_edit_leaves_it_alone(tmp_path: Path) -> None:
    platform = LatePollPlatform()
    async with harness(tmp_path, sim_config=MANUAL, platform=platform) as bot:
        await bot.actor().command("imagine", prompt="a fox")
        snapshot = await bot.latest_job()
        platform.late = lambda: bot.jobs.delivery.show_progress(snapshot, "processing")
        bot.sim.advance(120)
        await bot.result(snapshot.id)
        await bot.jobs.tracker.wait_idle()

        assert platform.late_answer is not None and not await platform.late_answer
        done = await bot.store.jobs.get_job(snapshot.id)
        assert done is not None and bot.progress(done).text.startswith("**Imagined**")


async def test_a_task_the_provider_lost_is_reported_after_a_few_unknown_answers(
    tmp_path: Path,
) -> None:
    # multi_fetch answers null for a task genbot created (docs/provider.md#lost-tasks).
    async with harness(tmp_path, sim_config=MANUAL) as bot:
        await bot.actor().command("imagine", prompt="a red fox")
        job = await bot.latest_job()
        bot.sim.state.lose_task(job.provider_id or "")
        done = await bot.settled(job.id)
        assert done.status == "failed_posted" and done.error == LOST_TASK
        report = bot.progress(done)
        assert "no longer knows this job" in report.text
        assert "may or may not have been charged" in report.text
        polls = [r.body["task_ids"] for r in bot.sim.state.requests_to("/gen/v2/multi_fetch")]
        assert polls.count([job.provider_id]) >= LOST_AFTER_NULLS


async def test_a_notification_that_never_comes_is_made_up_by_the_backstop_poll(
    tmp_path: Path,
) -> None:
    # docs/provider.md#webhook-delivery: no retries or guarantees are documented.
    limits = {"poll_interval_max": 0.3}
    async with harness(tmp_path, webhooks=True, sim_config=MANUAL, limits=limits) as bot:
        await bot.actor().command("imagine", prompt="a red fox")
        job = await bot.latest_job()
        assert job.webhook_secret
        bot.sim.state.tasks[job.provider_id or ""].webhook_endpoint = ""
        bot.sim.advance(120)
        assert (await bot.result(job.id)).message.images
        done = await bot.store.jobs.get_job(job.id)
        assert done is not None and done.last_webhook_at is None
        assert bot.sim.state.webhook_attempts == []
        assert bot.sim.state.requests_to("/gen/v2/multi_fetch")


class ReadOnlyAfterResult(FakePlatform):
    """Makes the store refuse writes (``PRAGMA query_only``) right after a result is shown,
    as a database that fails between the post and the write recording it."""

    store: SqliteStore | None = None

    async def edit(self, ref: MessageRef, message: OutMessage) -> None:
        await super().edit(ref, message)
        if message.images and self.store is not None:
            store, self.store = self.store, None
            await store.db.run(lambda db: db.execute("PRAGMA query_only = 1"))


async def test_a_delivery_whose_outcome_was_not_recorded_is_released_and_posted_once(
    tmp_path: Path,
) -> None:
    platform = ReadOnlyAfterResult(profile=ROOMY)
    async with serve(MANUAL) as sim, bare_engines(sim, tmp_path, platform=platform) as bare:
        store, tracker = bare.store, bare.engines.tracker
        job = await bare.engines.images.imagine(ALICE_IMAGINES, "a red fox")
        sim.advance(120)
        platform.store = store
        await tracker.apply_task_record(job, await bare.provider.tasks.fetch(job.provider_id or ""))
        await tracker.wait_idle()
        stranded = await store.jobs.get_job(job.id)
        assert stranded is not None and stranded.status == "posting"
        await store.db.run(lambda db: db.execute("PRAGMA query_only = 0"))

        await tracker.poll_round()
        released = await store.jobs.get_job(job.id)
        assert released is not None and released.status == "finished"
        assert released.delivery_attempts == 1 and released.next_poll_at is not None
        await asyncio.sleep(max(released.next_poll_at - time.time(), 0) + 0.05)
        await tracker.poll_round()
        await tracker.wait_idle()

        posted = await store.jobs.get_job(job.id)
        assert posted is not None and posted.status == "posted" and posted.post_claims == 2
        assert len(results_of(platform, job.id)) == 1
        assert posted.result_message_id == posted.progress_message_id


async def test_a_delivery_cancelled_at_shutdown_while_claiming_is_delivered_at_once_on_restart(
    tmp_path: Path,
) -> None:
    """A stop that cancels a delivery while its claim's transaction is under way leaves the
    claim stored (the transaction still commits: nobody takes its answer) with nobody
    delivering it; the restart's takeover gives it back, so the first round posts it: not
    left for a sweep, no attempt counted, no retry backed off."""
    async with serve(MANUAL) as sim:
        async with bare_engines(sim, tmp_path) as bare:
            store, tracker = bare.store, bare.engines.tracker
            job = await bare.engines.images.imagine(ALICE_IMAGINES, "a red fox")
            sim.advance(120)
            record = await bare.provider.tasks.fetch(job.provider_id or "")
            assert await tracker.apply_task_record(job, record, owned=False)
            counting = counted(store)
            with contextlib.closing(sqlite3.connect(tmp_path / "genbot.db")) as other:
                other.isolation_level = None
                other.execute("BEGIN IMMEDIATE")  # another writer: the claim's transaction waits
                tracker.schedule_delivery(job.id)
                [delivery] = [
                    t for t in asyncio.all_tasks() if t.get_name() == f"genbot-deliver-{job.id}"
                ]
                await eventually(lambda: any(trip.claims() for trip in counting.trips))
                stopping = asyncio.create_task(tracker.drain(0.0))
                await eventually(delivery.done)
                assert delivery.cancelled()
                other.execute("COMMIT")
                await stopping
            left = await store.jobs.get_job(job.id)
            assert left is not None and left.status == "posting" and left.post_claims == 1
            assert bare.platform.with_images() == []

        async with bare_engines(sim, tmp_path) as restarted:
            await restarted.engines.tracker.resume()
            await restarted.engines.tracker.poll_round()
            await restarted.engines.tracker.wait_idle()
            posted = await restarted.store.jobs.get_job(job.id)
            assert posted is not None and posted.status == "posted", posted
            assert posted.post_claims == 2 and posted.delivery_attempts == 0
            assert len(restarted.platform.with_images()) == 1


async def test_a_creating_job_nobody_is_starting_is_settled_by_its_owner(
    tmp_path: Path,
) -> None:
    now = [1_800_000_000.0]
    async with serve(MANUAL) as sim, bare_engines(sim, tmp_path, clock=lambda: now[0]) as bare:
        store, tracker = bare.store, bare.engines.tracker
        stranded = await create_job(store.admission, A_FOX)
        await tracker.poll_round()
        assert (await store.jobs.get_job(stranded.id)).status == "creating"  # type: ignore[union-attr]

        now[0] += CREATING_GRACE_SECONDS + SWEEP_SECONDS + 1
        await tracker.poll_round()

        settled = await store.jobs.get_job(stranded.id)
        assert settled is not None and settled.status == "create_failed"
        assert settled.error == LOST_BEFORE_SUBMIT and settled.owner == store.owner.process_id
        assert sim.state.requests_to("/gen/v2/imagine") == []


async def test_a_delivery_started_once_the_heartbeat_asked_goes_on_though_the_clock_stepped_back(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A heartbeat stops the deliveries of jobs it does not count that started before it
    asked; that was judged by the time, so with the wall clock stepped back meanwhile (an NTP
    step) it stopped the delivery of a job created after it had read (a failure reported at
    once), which waited for the sweep."""
    now = [1_700_000_000.0]
    async with (
        serve(MANUAL) as sim,
        bare_engines(sim, tmp_path, clock=lambda: now[0]) as bare,
    ):
        tracker, leasing = bare.engines.tracker, bare.store.leasing
        answered = leasing.heartbeat
        failed: list[str] = []

        async def a_job_fails_while_it_answers(*args: Any, **kwargs: Any) -> Any:
            beat = await answered(*args, **kwargs)
            job = await bare.engines.images.imagine(ALICE_IMAGINES, "a fox that fails")
            await tracker.wait_idle()
            assert await bare.store.jobs.transition(job.id, IN_FLIGHT_STATUSES, "failed")
            now[0] -= 1
            tracker.schedule_delivery(job.id)
            failed.append(job.id)
            return beat

        monkeypatch.setattr(leasing, "heartbeat", a_job_fails_while_it_answers)
        await tracker.leases.beat()
        await tracker.wait_idle()

        reported = await bare.store.jobs.get_job(failed[0])
        assert reported is not None and reported.status == "failed_posted"
