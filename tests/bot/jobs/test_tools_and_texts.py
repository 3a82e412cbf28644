"""The chat tools handle, and what genbot writes about jobs."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from bot.events import UserMessage
from bot.jobs import texts
from storage import Job
from tests.bot.harness import PLACE, harness
from tests.bot.jobs.support import bodies, job_record


def _job(**fields: Any) -> Job:
    return job_record(**fields)


@pytest.mark.parametrize(
    ("status", "elapsed", "line"),
    [
        ("creating", None, "waiting to start"),
        ("pending", 3.0, "waiting to start"),
        ("staged", 3.0, "waiting to start"),
        ("processing", 12.7, "working… 12s"),
        ("processing", None, "working…"),
        ("retry", 20.0, "retrying"),
    ],
)
def test_status_lines(status: str, elapsed: float | None, line: str) -> None:
    assert texts.status_line(status, elapsed) == line


def test_titles_name_the_pressed_button_and_prompts_cannot_ping() -> None:
    assert texts.title(_job(type="upscale", action="upscale2")) == "Upscale (U2)"
    assert texts.title(_job(type="outpaint", action="outpaint_custom:ab12#2")) == (
        "Zoom Out (Custom Zoom)"
    )
    assert texts.title(_job(type="variation", action="high_variation")) == (
        "Variation (Vary (Strong))"
    )
    assert texts.title(_job(family="diffusion", type="img2img", action="diff_init:x")) == (
        "Diffusion img2img (Use as init)"
    )
    pinging = texts.heading(_job(prompt="hi @everyone <@123> " + "x" * 500))
    assert "@everyone" not in pinging and "<@123>" not in pinging
    assert len(pinging) < 340


async def test_chat_tools_start_jobs_in_the_conversation_and_wait_for_them(
    tmp_path: Path,
) -> None:
    async with harness(tmp_path) as bot:
        thread = PLACE.in_thread("t9")
        event = UserMessage(user=bot.actor().user, place=thread, message_id="u1", text="draw a fox")
        tools = bot.jobs.tools
        job = await tools.generate_image(event, "a fox in a thread", aspect_ratio="16:9")
        done = await tools.wait(job.id, timeout=10)
        grid = await bot.result(job.id)
        assert done.status in ("finished", "posting", "posted")
        assert grid.ref.place == thread and bot.progress(done).ref.place == thread
        assert bodies(bot.sim, "/gen/v2/imagine")[0]["aspect_ratio"] == "16:9"

        prompts = await tools.describe_prompts(event, "https://files.example.com/cat.png", 10)
        assert len(prompts) == 4 and all(p.endswith("--ar 1:1") for p in prompts)
