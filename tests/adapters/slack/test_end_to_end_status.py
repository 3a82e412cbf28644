"""genbot's status line end to end: ``assistant.threads.setStatus`` while it thinks and while
an image job it started draws, cleared when the answer starts or the job posts."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from simulator.server import RunningSimulator, serve
from simulator.state import SimulatorConfig
from tests.adapters.slack.end_to_end import JOB_TIME_SCALE, WAIT, slack_genbot
from tests.fakes.slack import FakeSlack
from tests.fakes.slack_model import ApiCall
from tests.language import german

pytestmark = pytest.mark.usefixtures("errors_fail_the_test")


@pytest.fixture
async def sim() -> AsyncIterator[RunningSimulator]:
    async with serve(SimulatorConfig(time_scale=JOB_TIME_SCALE)) as running:
        yield running


def statuses_in(fake: FakeSlack, channel: str, thread_ts: str) -> list[str]:
    return [s.status for s in fake.status_log if s.channel == channel and s.thread_ts == thread_ts]


def first_post_in(fake: FakeSlack, channel: str, thread_ts: str) -> int:
    """The index in ``fake.calls`` of genbot's first message in the thread."""
    posting = ("chat.postMessage", "chat.startStream", "files.completeUploadExternal")
    return next(
        index
        for index, call in enumerate(fake.calls)
        if call.method in posting
        and call.ok
        and call.args.get("channel", call.args.get("channel_id")) == channel
        and call.args.get("thread_ts") == thread_ts
    )


def status_calls(fake: FakeSlack, text: str) -> list[int]:
    return [
        index
        for index, call in enumerate(fake.calls)
        if call.method == "assistant.threads.setStatus" and call.args.get("status") == text
    ]


async def test_thinking_shows_until_a_dm_answer_starts(
    sim: RunningSimulator, tmp_path: Path
) -> None:
    async with FakeSlack() as fake, slack_genbot(fake, sim, tmp_path / "g.db") as bot:
        question = fake.user_says("echo: hello there", channel="D1")
        await fake.post_event(bot.url, fake.event_callback(fake.message_event(question)))

        await fake.wait_for(
            lambda: [m for m in fake.bot_messages("D1") if m.markdown == "hello there"], WAIT
        )

    (thinking,) = fake.status_log
    assert (thinking.channel, thinking.thread_ts) == ("D1", question.ts)
    assert thinking.status == "is thinking…" and thinking.loading_messages
    assert status_calls(fake, "is thinking…")[0] < first_post_in(fake, "D1", question.ts)
    assert fake.statuses == {}, "Slack cleared it when the answer started"
    assert status_calls(fake, "") == [], "no call spent on a status Slack already cleared"


def uploads_in(fake: FakeSlack, channel: str) -> list[ApiCall]:
    """The posts of images (job results) in ``channel``."""
    return [
        c
        for c in fake.calls_to("chat.postMessage")
        if c.ok
        and c.args.get("channel") == channel
        and any(b.get("type") == "image" for b in c.blocks)
    ]


async def test_drawing_shows_after_the_answer_while_its_job_runs_until_the_job_posts(
    sim: RunningSimulator, tmp_path: Path
) -> None:
    async with FakeSlack() as fake, slack_genbot(fake, sim, tmp_path / "g.db") as bot:
        mention = fake.user_says(f"<@{fake.bot_user_id}> draw a fox in the snow")
        await fake.post_event(bot.url, fake.event_callback(fake.app_mention_event(mention)))

        await fake.wait_for(lambda: uploads_in(fake, "C1"), WAIT)
        await fake.wait_for(lambda: fake.statuses == {} or None, WAIT)
        upload = fake.calls.index(uploads_in(fake, "C1")[0])

    assert uploads_in(fake, "C1")[0].args["thread_ts"] == mention.ts
    shown = statuses_in(fake, "C1", mention.ts)
    assert shown[0] == "is thinking…" and shown[-1] == "is drawing…"
    (answer_start,) = fake.calls_to("chat.startStream")
    (drawing,) = status_calls(fake, "is drawing…")
    assert fake.calls.index(answer_start) < drawing < upload, "drawing once the answer is out"
    assert status_calls(fake, "") == [], "the job's post cleared it"


async def test_a_dm_job_posts_in_the_status_thread_which_slack_clears(
    sim: RunningSimulator, tmp_path: Path
) -> None:
    async with FakeSlack() as fake, slack_genbot(fake, sim, tmp_path / "g.db") as bot:
        question = fake.user_says("draw a heron at dusk", channel="D1")
        await fake.post_event(bot.url, fake.event_callback(fake.message_event(question)))

        await fake.wait_for(lambda: uploads_in(fake, "D1"), WAIT)
        await fake.wait_for(lambda: fake.statuses == {} or None, WAIT)

    assert uploads_in(fake, "D1")[0].args["thread_ts"] == question.ts
    assert "is drawing…" in statuses_in(fake, "D1", question.ts)
    assert status_calls(fake, "") == [], "the job's post in the thread cleared it"


async def test_in_german_the_status_line_thinks_and_draws_in_german(
    sim: RunningSimulator, tmp_path: Path
) -> None:
    """The status line of a user whose Slack speaks German, while genbot thinks and while the
    job it started draws (shown by the tracker, outside the user's event)."""
    async with FakeSlack() as fake, slack_genbot(fake, sim, tmp_path / "g.db") as bot:
        fake.locales["U1"] = "de-DE"
        question = fake.user_says("draw a heron at dusk", channel="D1")
        await fake.post_event(bot.url, fake.event_callback(fake.message_event(question)))
        await fake.wait_for(lambda: uploads_in(fake, "D1"), WAIT)
        await fake.wait_for(lambda: fake.statuses == {} or None, WAIT)

    shown = [s for s in fake.status_log if s.channel == "D1" and s.status]
    assert {s.status for s in shown} == {german("is thinking…"), german("is drawing…")}
    loading = {text for s in shown for text in s.loading_messages}
    assert german("Thinking it over…") in loading and german("Sketching the grid…") in loading
