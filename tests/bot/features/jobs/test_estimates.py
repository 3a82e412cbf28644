"""How long jobs take here: durations remembered per kind of job (task type and mode)."""

from __future__ import annotations

from bot.features.jobs.estimates import Estimates, Usual
from storage import Job
from tests.bot.features.jobs.support import job_record


def _job(**fields: object) -> Job:
    return job_record(**{"status": "processing", "created_at": 100.0, **fields})


def test_estimates_are_measured_per_task_type_and_mode() -> None:
    estimates = Estimates()
    assert estimates.usual(_job()) is None
    for took in (20.0, 30.0, 25.0):
        estimates.observe(_job(finished_at=100.0 + took))
    assert estimates.usual(_job()) == Usual(25.0, 30.0)
    assert estimates.usual(_job(parameters={"process_mode": "fast"})) is None
    assert estimates.usual(_job(type="upscale")) is None
    assert estimates.usual(_job(family="diffusion", type="txt2img")) is None
    estimates.learn([_job(finished_at=103.0, type="upscale"), _job(finished_at=160.0)])
    assert estimates.usual(_job(type="upscale")) == Usual(3.0, 3.0)
    assert estimates.usual(_job()) == Usual(27.5, 60.0)


def test_credits_are_the_charges_recorded_per_kind_else_the_defaults() -> None:
    estimates = Estimates()
    assert estimates.credits("task:imagine:fast") == (8, False)
    assert estimates.credits("task:imagine:relax") == (4, False)
    assert estimates.credits("task:upscale:relax") == (4, False)
    fast = {"parameters": {"process_mode": "fast"}}
    for charged in (6, 10, 7):
        estimates.observe(_job(finished_at=130.0, credits=charged, **fast))
    estimates.observe(_job(finished_at=130.0, credits=None))
    assert estimates.credits("task:imagine:fast") == (7, True)
    assert estimates.credits("task:imagine:relax") == (4, False)
    estimates.learn([_job(finished_at=120.0, credits=3)])
    assert estimates.credits("task:imagine:relax") == (3, True)
