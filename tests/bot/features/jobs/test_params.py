"""The jobs feature's typed parameters and results: the JSON shape genbot always stored is what
they write, and rows written before them read unchanged; the language a job's messages speak."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from bot.features.jobs.params import (
    BlendParams,
    DescribeParams,
    DiffusionParams,
    ImageParams,
    JobParams,
    JobResult,
    asked_mode,
    job_language,
    params_of,
    result_with,
    run_mode,
    with_language,
)
from bot.kernel import speaking
from tests.bot.features.jobs.support import job_record, press, run_command
from tests.bot.harness import PLACE, harness
from tests.storage.conftest import new_job

# Parameters exactly as genbot stored them before the typed models (one per type of job).
OLD_ROWS: list[tuple[str, str, dict[str, Any], JobParams]] = [
    (
        "task",
        "imagine",
        {"aspect_ratio": None, "process_mode": "fast", "model_version": "6", "remix": False},
        ImageParams(process_mode="fast", model_version="6"),
    ),
    (
        "task",
        "outpaint",
        {
            "aspect_ratio": "16:9",
            "process_mode": None,
            "model_version": "6",
            "remix": True,
            "zoom_ratio": "1.8",
            "is_dm": True,
        },
        ImageParams(aspect_ratio="16:9", model_version="6", remix=True, zoom_ratio="1.8"),
    ),
    ("task", "seed", {}, ImageParams()),
    (
        "task",
        "describe",
        {"image_url": "https://files.example.com/cat.png", "process_mode": "relax"},
        DescribeParams(image_url="https://files.example.com/cat.png", process_mode="relax"),
    ),
    (
        "task",
        "blend",
        {
            "image_urls": ["https://a.example/1.png", "https://a.example/2.png"],
            "dimension": None,
            "process_mode": "turbo",
            "remix": False,
        },
        BlendParams(
            image_urls=("https://a.example/1.png", "https://a.example/2.png"), process_mode="turbo"
        ),
    ),
    (
        "diffusion",
        "txt2img",
        {"endpoint": "txt2img", "body": {"prompt": "a fox", "width": 512}},
        DiffusionParams(endpoint="txt2img", body={"prompt": "a fox", "width": 512}),
    ),
    ("diffusion", "img2img", {"body": {"prompt": "x"}}, DiffusionParams(body={"prompt": "x"})),
]


@pytest.mark.parametrize(("family", "job_type", "raw", "typed"), OLD_ROWS)
def test_old_parameters_read_as_their_type(
    family: str, job_type: str, raw: dict[str, Any], typed: JobParams
) -> None:
    job = new_job(family=family, type=job_type, parameters=raw)
    assert params_of(job) == typed
    assert type(typed).from_json(typed.to_json()) == typed
    old_shape = {k: v for k, v in raw.items() if v is not None and k != "is_dm"}
    assert typed.to_json().items() >= old_shape.items()


def test_results_read_what_the_provider_and_genbot_wrote() -> None:
    raw = {
        "seed": 1234,
        "prompts": ["a cat", "a cat, painted"],
        "process_time": 12,
        "image_id": "img-1",
        "width": 1024,
        "height": 512,
        "pressed": ["upscale1", 7],
        "refused_actions": "not a list",
        "cancelled": True,
        "unknown_key": "kept in the JSON, ignored here",
    }
    result = JobResult.from_json(raw)
    assert (result.seed, result.prompts, result.process_time) == (
        "1234",
        ("a cat", "a cat, painted"),
        12.0,
    )
    assert (result.size, result.pressed, result.refused_actions) == ((1024, 512), ("upscale1",), ())
    assert (result.cancelled, result.timed_out, result.unconfirmed, result.accepted) == (
        True,
        False,
        False,
        False,
    )
    assert JobResult.from_json({}) == JobResult() and JobResult().size is None


def test_noting_a_result_changes_only_what_is_given() -> None:
    stored = {"seed": "7", "drafts": {"kept": "by another feature"}, "pressed": ["upscale1"]}
    job = job_record(result=stored)
    assert result_with(job, cancelled=True) == {**stored, "cancelled": True}
    assert result_with(job, size=(512, 768), pressed=("upscale1", "reroll")) == {
        **stored,
        "width": 512,
        "height": 768,
        "pressed": ["upscale1", "reroll"],
    }
    assert result_with(job) == stored
    noted = JobResult.from_json(result_with(job, timed_out=True, unconfirmed=True))
    assert (noted.timed_out, noted.unconfirmed, noted.size) == (True, True, None)


@pytest.mark.parametrize(
    ("fields", "mode"),
    [
        ({"parameters": {"process_mode": "turbo"}, "prompt": "a fox --fast"}, "turbo"),
        ({"parameters": {"process_mode": "mixed"}, "prompt": "a fox --fast"}, "mixed"),
        ({"parameters": {}, "prompt": "a fox --relax --fast"}, "fast"),
        ({"parameters": {"process_mode": "warp"}, "prompt": "a fox"}, "relax"),
        ({"family": "diffusion", "type": "txt2img", "parameters": {}, "prompt": "a fox"}, "relax"),
    ],
)
def test_the_asked_mode_is_the_parameter_else_the_prompts_else_relax(
    fields: dict[str, Any], mode: str
) -> None:
    assert asked_mode(job_record(**fields)) == mode
    assert asked_mode(new_job(**fields)) == mode, "a job about to be stored reads the same"


@pytest.mark.parametrize(
    ("process_mode", "prompt", "mode"),
    [
        ("fast", "a fox --turbo", "fast"),
        ("mixed", "a fox --turbo", "turbo"),
        ("mixed", "a fox", "relax"),
        (None, "a fox --fast", "fast"),
    ],
)
def test_the_provider_runs_mixed_in_the_mode_the_prompt_names_else_relax(
    process_mode: str | None, prompt: str, mode: str
) -> None:
    parameters = {"process_mode": process_mode} if process_mode else {}
    assert run_mode(new_job(parameters=parameters, prompt=prompt)) == mode


async def test_a_jobs_messages_speak_the_language_it_was_asked_in(tmp_path: Path) -> None:
    """The job keeps the public language of its command (the asker's, where the channel has
    none; the channel's where an admin set one); its progress, its result delivered later by
    the tracker and its follow-ups speak it. English jobs keep their parameters as before."""
    async with harness(tmp_path) as bot:
        german = bot.actor("alice", locale="de-DE")
        job, grid = await run_command(bot, german, "imagine", prompt="a red fox")
        assert job.parameters["language"] == "de" and job_language(job) == "de"
        assert set(grid.spoken) == {"de"}, "progress and the tracker's delivery"

        english = bot.actor("bob")
        job, grid = await run_command(bot, english, "imagine", prompt="a blue fox")
        assert "language" not in job.parameters and job_language(job) == "en"
        assert set(grid.spoken) == {"en"}

        await bot.store.settings.set_scope_settings(
            "channel", "fake", PLACE.channel_id, language="ja"
        )
        bot.parts.languages.forget()
        job, grid = await run_command(bot, german, "imagine", prompt="a green fox")
        assert job_language(job) == "ja" and set(grid.spoken) == {"ja"}
        upscale_job, upscale = await press(bot, german, grid, "U1")
        assert job_language(upscale_job) == "ja" and set(upscale.spoken) == {"ja"}
        assert set(grid.spoken) == {"ja"}, "the pressed button redrawn in the job's language"


def test_a_job_from_before_the_language_speaks_english() -> None:
    assert with_language({"aspect_ratio": "1:1"}) == {"aspect_ratio": "1:1"}
    with speaking("de", public="ja"):
        assert with_language({"ar": "1:1"}) == {"ar": "1:1", "language": "ja"}
