"""Creations the provider may have received but never confirmed: never created twice, told
honestly, adopted by their webhook, timed out with a charge note; restarts and cancellation."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import aiohttp

from bot.api import ImagineRequest
from bot.features.chat.tools import ChatImageTools
from bot.features.jobs.wording import UNCONFIRMED_NOTE
from bot.kernel import Command, OutMessage, User
from simulator.server import serve
from simulator.state import SimulatorConfig
from simulator.task_model import fetch_record
from storage import ALL_STATUSES, NewJob, SqliteStore
from tests.bot.features.jobs.proxy import faulty_proxy
from tests.bot.features.jobs.support import bare_engines, bodies, run_command
from tests.bot.harness import PLACE, ROOMY, running_genbot
from tests.fakes.platform import FakePlatform
from tests.storage.helpers import create_job

MANUAL = SimulatorConfig(time_scale=1.0, clock_start=1_700_000_000, insecure_webhooks=True)
UNCONFIRMED = "the service did not confirm this job"
WAIT = 10.0


async def test_a_lost_answer_leaves_the_job_unknown_until_its_webhook_adopts_it(
    tmp_path: Path,
) -> None:
    async with serve(MANUAL) as sim, faulty_proxy(sim.base_url) as proxy:
        proxy.faults["/gen/v2/imagine"] = ["lose"]
        db = tmp_path / "genbot.db"
        async with running_genbot(sim, db, webhooks=True, api_url=proxy.base_url) as bot:
            await bot.actor().command("imagine", prompt="a fox")
            job = await bot.latest_job()
            progress = bot.progress(job).text
            assert job.status == "unknown" and job.provider_id is None, job
            assert UNCONFIRMED in progress and "don't start it again" in progress
            assert "try again" not in progress.lower()
            assert bot.platform.ephemerals_for("alice") == []

            bot.sim.advance(120)
            grid = await bot.result(job.id)
            (task_id,) = sim.state.tasks
            done = await bot.store.jobs.get_job(job.id)
            assert done is not None and done.status == "posted" and done.provider_id == task_id
            assert grid.message.images and len(bodies(sim, "/gen/v2/imagine")) == 1
            assert done.result_message_id == done.progress_message_id


async def test_an_unknown_job_adopts_only_a_task_the_provider_answers_for(
    tmp_path: Path,
) -> None:
    # A notification (right address and secret) naming a task the provider does not know, in
    # flight or ended, is neither adopted nor counted towards a lost task, however often.
    quick = {"poll_interval_min": 0.01, "poll_interval_max": 0.02}
    async with serve(MANUAL) as sim, faulty_proxy(sim.base_url) as proxy:
        proxy.faults["/gen/v2/imagine"] = ["lose"]
        db = tmp_path / "genbot.db"
        async with running_genbot(
            sim, db, webhooks=True, api_url=proxy.base_url, limits=quick
        ) as bot:
            await bot.actor().command("imagine", prompt="a fox")
            job = await bot.latest_job()
            assert job.status == "unknown"
            (task_id,) = sim.state.tasks
            forged = {**fetch_record(sim.state.tasks[task_id], sim.state.now()), "task_id": "nope"}
            url = f"{bot.settings.webhook.public_url}/webhooks/tasks/{job.id}"
            headers = {"x-webhook-secret": await bot.jobs.starter.webhook_secrets.of(job) or ""}
            async with aiohttp.ClientSession() as http:
                for status in ("processing", "finished", "failed", "finished", "failed"):
                    body = json.dumps({**forged, "status": status})
                    async with http.post(url, data=body, headers=headers) as answer:
                        assert answer.status == 200
                    await bot.jobs.tracker.wait_idle()
                    await asyncio.sleep(0.03)
            still = await bot.store.jobs.get_job(job.id)
            assert still is not None and still.status == "unknown" and still.provider_id is None
            read = [r.body["task_ids"] for r in sim.state.requests_to("/gen/v2/multi_fetch")]
            assert ["nope"] in read

            bot.sim.advance(120)
            assert (await bot.result(job.id)).message.images
            done = await bot.store.jobs.get_job(job.id)
            assert done is not None and done.status == "posted" and done.provider_id == task_id


async def test_a_derivative_in_doubt_is_never_created_again(tmp_path: Path) -> None:
    async with serve(MANUAL) as sim, faulty_proxy(sim.base_url) as proxy:
        db = tmp_path / "genbot.db"
        async with running_genbot(sim, db, webhooks=True, api_url=proxy.base_url) as bot:
            alice = bot.actor()
            await alice.command("imagine", prompt="a fox")
            grid_job = await bot.latest_job()
            sim.advance(120)
            grid = await bot.result(grid_job.id)

            proxy.faults["/gen/v2/upscale"] = ["lose"]
            await alice.press(grid, "U1")
            upscale = await bot.latest_job()
            assert upscale.status == "unknown"
            await alice.press(grid, "U1")

            assert len(bodies(sim, "/gen/v2/upscale")) == 1
            (answer,) = bot.platform.ephemerals_for("alice")
            assert "never confirmed" in answer and "don't press again" in answer
            sim.advance(120)
            assert (await bot.result(upscale.id)).message.images
            assert len(await bot.all_jobs()) == 2


async def test_an_unconfirmed_job_times_out_saying_it_may_have_been_charged(
    tmp_path: Path,
) -> None:
    limits = {"job_timeout_seconds": 0.3}
    async with serve(MANUAL) as sim, faulty_proxy(sim.base_url) as proxy:
        proxy.faults["/gen/v2/imagine"] = ["lose"]
        db = tmp_path / "genbot.db"
        async with running_genbot(sim, db, limits=limits, api_url=proxy.base_url) as bot:
            job, report = await run_command(bot, bot.actor(), "imagine", prompt="a fox")
            done = await bot.settled(job.id)
            assert done.status == "failed_posted" and done.result["unconfirmed"] is True
            assert "never confirmed" in report.text and UNCONFIRMED_NOTE in report.text
            assert len(bodies(sim, "/gen/v2/imagine")) == 1


async def test_a_refused_creation_still_fails_at_once(tmp_path: Path) -> None:
    async with serve(MANUAL) as sim, faulty_proxy(sim.base_url) as proxy:
        proxy.faults["/gen/v2/imagine"] = ["bad_request"]
        db = tmp_path / "genbot.db"
        async with running_genbot(sim, db, api_url=proxy.base_url) as bot:
            await bot.actor().command("imagine", prompt="a fox")
            job = await bot.latest_job()
            assert job.status == "create_failed" and job.error
            assert bot.platform.ephemerals_for("alice") == [job.error], "told privately"
            assert bodies(sim, "/gen/v2/imagine") == []


async def test_a_job_being_created_at_a_restart_is_unknown_and_its_webhook_adopts_it(
    tmp_path: Path,
) -> None:
    db = tmp_path / "genbot.db"
    platform = FakePlatform(profile=ROOMY)
    progress = await platform.send(PLACE, OutMessage(text="⏳ **Imagine** — a fox"))
    async with serve(MANUAL) as sim:
        async with await SqliteStore.open(db) as store:
            job = await create_job(store.admission, NewJob(
                family="task", type="imagine", requester_id="alice", platform="fake",
                channel_id="c1", workspace_id="w1", prompt="a fox",
                webhook_secret="restart-secret-0123456789",
            ))  # fmt: skip
            await store.jobs.update_job(job.id, progress_message_id=progress.message_id)
        async with running_genbot(sim, db, platform=platform, webhooks=True) as bot:
            resumed = await bot.store.jobs.get_job(job.id)
            assert resumed is not None and resumed.status == "unknown"
            text = platform.messages[progress.message_id].text
            assert UNCONFIRMED in text and "restarted while sending it" in text

            created = await bot.parts.provider.tasks.imagine(ImagineRequest(prompt="a fox"))
            sim.advance(120)
            record = fetch_record(sim.state.tasks[created.task_id], sim.state.now())
            url = f"{bot.settings.webhook.public_url}/webhooks/tasks/{job.id}"
            headers = {"x-webhook-secret": "restart-secret-0123456789"}
            async with (
                aiohttp.ClientSession() as http,
                http.post(url, data=json.dumps(record), headers=headers) as answer,
            ):
                assert answer.status == 200
            assert (await bot.result(job.id)).message.images
            adopted = await bot.store.jobs.get_job(job.id)
            assert adopted is not None and adopted.provider_id == created.task_id


async def test_a_cancelled_start_leaves_no_job_creating(tmp_path: Path) -> None:
    event = Command(user=User("alice"), place=PLACE, name="imagine")
    async with (
        serve(MANUAL) as sim,
        faulty_proxy(sim.base_url) as proxy,
        bare_engines(sim, tmp_path, api_url=proxy.base_url) as bare,
    ):
        proxy.faults["/gen/v2/imagine"] = ["hang"]
        starting = asyncio.create_task(bare.engines.images.imagine(event, "a fox"))
        async with asyncio.timeout(WAIT):
            await proxy.hung.wait()
        starting.cancel()
        await asyncio.gather(starting, return_exceptions=True)

        (job,) = await bare.store.tracking.list_unfinished_jobs()
        assert job.status == "unknown", job.status
        text = bare.platform.messages[job.progress_message_id or ""].text
        assert UNCONFIRMED in text and "interrupted" in text


class Clock:
    """A clock the test moves by hand (shared by the store and the engines)."""

    def __init__(self) -> None:
        self.now = 1_800_000_000.0

    def __call__(self) -> float:
        return self.now


async def test_stale_creating_and_unknown_jobs_time_out(tmp_path: Path) -> None:
    clock = Clock()
    async with serve(MANUAL) as sim, bare_engines(sim, tmp_path, clock=clock) as bare:
        store, platform = bare.store, bare.platform

        async def row(status: str, *, progress: bool) -> str:
            new = NewJob(
                family="task", type="imagine", requester_id="alice", platform="fake",
                channel_id="c1", workspace_id="w1", prompt=status,
            )  # fmt: skip
            job = await create_job(store.admission, new)
            if progress:
                ref = await platform.send(PLACE, OutMessage(text="⏳"))
                await store.jobs.update_job(job.id, progress_message_id=ref.message_id)
            if status == "unknown":
                await store.jobs.transition(job.id, "creating", "unknown")
            return job.id

        never_sent = await row("creating", progress=False)
        maybe_sent = await row("creating", progress=True)
        unknown = await row("unknown", progress=True)
        being_started = await row("creating", progress=True)
        tracker = bare.engines.tracker
        bare.engines.starter.starting.add(being_started)
        clock.now += 1801
        await tracker.poll_round()
        await tracker.wait_idle()
        bare.engines.starter.starting.discard(being_started)

        jobs = {job.id: job for job in await store.tracking.list_unfinished_jobs(ALL_STATUSES)}
        assert jobs[never_sent].status == "create_failed"
        assert jobs[being_started].status == "creating"
        for job_id in (maybe_sent, unknown):
            job = jobs[job_id]
            assert job.status == "failed_posted", job
            report = platform.messages[job.result_message_id or ""].text
            assert "never confirmed" in report and UNCONFIRMED_NOTE in report


async def test_the_chat_model_hears_that_an_unconfirmed_image_job_must_not_be_started_again(
    tmp_path: Path,
) -> None:
    async with serve(MANUAL) as sim, faulty_proxy(sim.base_url) as proxy:
        proxy.faults["/gen/v2/imagine"] = ["lose"]
        db = tmp_path / "genbot.db"
        async with running_genbot(sim, db, webhooks=True, api_url=proxy.base_url) as bot:
            tools = ChatImageTools(bot.jobs.chat_jobs)
            said = await tools.generate_image(
                user=User("alice"), place=PLACE, prompt="a fox", origin=None
            )
            job = await bot.latest_job()
            assert job.status == "unknown"
            assert f"did not confirm job {job.id}" in said and "Do not start it again" in said
