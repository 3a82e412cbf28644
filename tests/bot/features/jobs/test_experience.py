"""What genbot learns from its own history at start — how long each kind of job took, and the
diffusion models the provider ran (so a restart, or another process, knows as much) — and from
every result it posts."""

from __future__ import annotations

from pathlib import Path

from bot.features.jobs.estimates import Usual
from bot.features.jobs.experience import Experience
from storage import Job, SqliteStore
from tests.bot.features.jobs.support import run_command
from tests.bot.harness import harness
from tests.storage.conftest import new_job
from tests.storage.helpers import create_job


async def posted(store: SqliteStore, job: Job, took: float) -> Job:
    await store.jobs.transition(job.id, "creating", "finished", finished_at=job.created_at + took)
    await store.jobs.transition(job.id, "finished", "posting")
    await store.jobs.transition(job.id, "posting", "posted")
    done = await store.jobs.get_job(job.id)
    assert done is not None
    return done


async def test_the_stored_history_is_learned_at_start(tmp_path: Path) -> None:
    store = await SqliteStore.open(tmp_path / "genbot.db")
    try:
        imagine = await posted(store, await create_job(store.admission, new_job()), 42.0)
        body = {"prompt": "a fox", "model_id": "sd15"}
        diffusion = new_job(
            family="diffusion", type="txt2img", parameters={"endpoint": "txt2img", "body": body}
        )
        await posted(store, await create_job(store.admission, diffusion), 3.0)
        await create_job(store.admission, new_job(prompt="still running"))

        experience = Experience(store.history, models=["configured"])
        assert experience.estimates.usual(imagine) is None
        await experience.start()
        assert experience.estimates.usual(imagine) == Usual(42.0, 42.0)
        assert experience.models.known() == ("configured", "sd15")
    finally:
        await store.close()


async def test_every_posted_result_is_learned(tmp_path: Path) -> None:
    async with harness(tmp_path) as bot:
        alice = bot.actor()
        experience = bot.jobs.delivery.experience
        job, _ = await run_command(bot, alice, "imagine", prompt="a fox")
        assert experience.estimates.usual(await bot.settled(job.id)) is not None
        assert experience.models.known() == ()
        await run_command(bot, alice, "diffusion.txt2img", prompt="a red fox")
        assert experience.models.known() == ("sim-diffusion-1",)
