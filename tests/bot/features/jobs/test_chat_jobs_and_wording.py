"""The chat tools handle, and what genbot writes about jobs."""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

import pytest

from bot.features.jobs import wording
from bot.features.jobs.messages import place_of
from bot.kernel import Place, UserMessage
from storage import Job
from tests.bot.features.jobs.support import bodies, job_record
from tests.bot.harness import PLACE, harness


def _job(**fields: Any) -> Job:
    return job_record(**fields)


@pytest.mark.parametrize(
    ("fields", "asked", "done"),
    [
        ({"type": "imagine"}, "Imagine", "Imagined"),
        ({"type": "upscale", "action": "upscale2"}, "Upscale #2", "Upscaled #2"),
        ({"type": "upscale", "action": "upscale_subtle"}, "Upscale (Subtle)", "Upscaled (Subtle)"),
        ({"type": "upscale", "action": "upscale_2x#3"}, "Upscale 2×", "Upscaled 2×"),
        ({"type": "variation", "action": "high_variation"}, "Vary (Strong)", "Varied (Strong)"),
        ({"type": "variation", "action": "variation3"}, "Vary #3", "Varied #3"),
        ({"type": "inpaint", "action": "vary_region:ab"}, "Vary (Region)", "Varied (Region)"),
        ({"type": "outpaint", "action": "outpaint_2"}, "Zoom out 2×", "Zoomed out 2×"),
        (
            {
                "type": "outpaint",
                "action": "outpaint_custom:ab12#2",
                "parameters": {"zoom_ratio": "1.8"},
            },
            "Zoom out 1.8×",
            "Zoomed out 1.8×",
        ),
        ({"type": "outpaint", "action": "outpaint_square"}, "Make square", "Made square"),
        ({"type": "pan", "action": "pan_left"}, "Pan left", "Panned left"),
        ({"type": "seed", "action": "seed"}, "Seed", "Seed"),
        ({"type": "imagine", "action": "describe_pick2"}, "Imagine prompt 2", "Imagined prompt 2"),
        ({"family": "diffusion", "type": "txt2img"}, "Generate", "Generated"),
        ({"family": "diffusion", "type": "txt2img", "action": "diff_reroll"}, "Reroll", "Rerolled"),
        (
            {"family": "diffusion", "type": "upscale", "action": "diff_upscale"},
            "Upscale",
            "Upscaled",
        ),
        (
            {"family": "diffusion", "type": "img2img", "action": "diff_init:x"},
            "Rework the image",
            "Reworked the image",
        ),
    ],
)
def test_one_title_style_without_doubled_words(
    fields: dict[str, Any], asked: str, done: str
) -> None:
    job = _job(**fields)
    assert (wording.asked_title(job), wording.done_title(job)) == (asked, done)
    words = done.lower().replace("(", " ").replace(")", " ").split()
    assert len(words) == len(set(words)), done


def test_prompts_cannot_ping_and_are_clipped() -> None:
    pinging = wording.heading(_job(prompt="hi @everyone <@123> " + "x" * 500))
    assert "@everyone" not in pinging and "<@123>" not in pinging
    assert len(pinging) < 340


def test_diffusion_results_show_how_they_were_made() -> None:
    job = _job(
        family="diffusion",
        type="txt2img",
        prompt="a fox",
        parameters={"body": {"guidance_scale": 7.5, "num_inference_steps": 20}},
        result={"meta": {"model_id": "sd-1.5", "seed": 1234, "W": 512, "H": 768, "steps": 30}},
    )
    assert wording.result_text(job) == (
        "**Generated** — a fox\nmodel sd-1.5 · seed 1234 · 512×768 · 30 steps · guidance 7.5"
    )


@pytest.mark.parametrize(
    ("result", "timed_out", "note"),
    [
        ({}, False, wording.NO_CHARGE_NOTE),
        ({}, True, wording.TIMEOUT_NOTE),
        ({"unconfirmed": True}, False, wording.UNCONFIRMED_NOTE),
        ({"accepted": True}, False, wording.ACCEPTED_NOTE),
    ],
)
def test_failures_say_what_failed_and_whether_credits_were_charged(
    result: dict[str, Any], timed_out: bool, note: str
) -> None:
    job = _job(type="upscale", action="upscale_subtle", prompt="a fox", error="Banned prompt.")
    job = dataclasses.replace(job, result=result)
    assert wording.failure_text(job, timed_out) == (
        f"❌ **Upscale (Subtle)** failed — a fox (relax)\nBanned prompt.\n{note}"
    )


async def test_chat_tools_start_jobs_in_the_conversation_and_wait_for_them(
    tmp_path: Path,
) -> None:
    async with harness(tmp_path) as bot:
        thread = PLACE.in_thread("t9")
        event = UserMessage(user=bot.actor().user, place=thread, message_id="u1", text="draw a fox")
        tools = bot.jobs.chat_jobs
        job = await tools.generate_image(event, "a fox in a thread", aspect_ratio="16:9")
        done = await tools.wait(job.id, timeout=10)
        grid = await bot.result(job.id)
        assert done.status in ("finished", "posting", "posted")
        assert grid.ref.place == thread and bot.progress(done).ref.place == thread
        assert bodies(bot.sim, "/gen/v2/imagine")[0]["aspect_ratio"] == "16:9"

        prompts = await tools.describe_prompts(event, "https://files.example.com/cat.png", 10)
        assert len(prompts) == 4 and all(p.endswith("--ar 1:1") for p in prompts)


async def test_a_job_asked_for_in_a_direct_message_keeps_the_place_for_its_result(
    tmp_path: Path,
) -> None:
    async with harness(tmp_path) as bot:
        dm = Place("fake", "w1", "dm-alice", is_dm=True)
        event = UserMessage(user=bot.actor().user, place=dm, message_id="u1", text="draw a fox")
        job = await bot.jobs.chat_jobs.generate_image(event, "a fox in a DM")
        done = await bot.jobs.chat_jobs.wait(job.id, timeout=10)
        grid = await bot.result(job.id)
        assert done.is_dm and "is_dm" not in done.parameters
        assert grid.ref.place == dm and place_of(done) == dm


@pytest.mark.parametrize(
    ("fields", "title"),
    [
        (
            {"parameters": {"aspect_ratio": "2:3", "process_mode": "turbo"}},
            "**Imagined** — a fox --ar 2:3 (turbo)",
        ),
        (
            {"prompt": "a fox --AR 16:9", "parameters": {"aspect_ratio": "2:3"}},
            "**Imagined** — a fox --AR 16:9 (relax)",
        ),
        (
            {
                "parameters": {"aspect_ratio": "2:3", "process_mode": "turbo"},
                "result": {"mode": "fast"},
            },
            "**Imagined** — a fox --ar 2:3 (turbo)",
        ),
        (
            {
                "parameters": {"aspect_ratio": "2:3", "process_mode": "turbo"},
                "result": {"mode": "relax"},
            },
            "**Imagined** — a fox --ar 2:3 (relax)",
        ),
        (
            {
                "type": "outpaint",
                "action": "outpaint_square",
                "parameters": {"aspect_ratio": "2:3"},
            },
            "**Made square** — a fox (relax)",
        ),
        (
            {"type": "pan", "action": "pan_left", "parameters": {"aspect_ratio": "2:3"}},
            "**Panned left** — a fox (relax)",
        ),
        (
            {
                "prompt": "https://h/m/a.png a fox --sref https://h/m/b.png",
                "parameters": {"reference_names": {"https://h/m/b.png": "#2"}},
            },
            "**Imagined** — https://h/m/a.png a fox --sref #2 (relax)",
        ),
        ({"type": "describe", "prompt": ""}, "**Described** — your image"),
    ],
)
def test_a_result_title_is_the_prompt_as_it_ran_and_its_speed(
    fields: dict[str, Any], title: str
) -> None:
    # An --ar the prompt says is not said twice; Make Square and pans change the shape their
    # inherited aspect ratio names; a reference the job names nothing for keeps its link.
    assert wording.result_text(_job(**fields)) == title
