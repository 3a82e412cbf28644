"""End to end on Slack, documents in chat: a PDF shared in a DM with genbot is downloaded with
the bot token (``url_private``), read within the model's context, and answered in the thread
with a note of what was read, both in the message's thread (Slack's agent messaging: every
message in a DM is answered in its own thread)."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from simulator.server import RunningSimulator, serve
from simulator.state import SimulatorConfig
from tests.adapters.slack.end_to_end import WAIT, budgeted_fake, slack_genbot
from tests.bot.features.chat.pdfs import read_of_report, report, scan
from tests.fakes.slack import FakeSlack
from tests.fakes.slack_model import FakeMessage

pytestmark = pytest.mark.usefixtures("errors_fail_the_test")

CHAT_PATH = "/v1/chat/completions"


@pytest.fixture
async def fake() -> AsyncIterator[FakeSlack]:
    async with budgeted_fake() as slack:
        yield slack


@pytest.fixture
async def sim() -> AsyncIterator[RunningSimulator]:
    async with serve(SimulatorConfig(time_scale=0.01)) as running:
        yield running


def bot_messages(fake: FakeSlack, message: FakeMessage) -> list[FakeMessage]:
    """genbot's finished messages after ``message`` in its DM: the note and the answer."""
    return [
        m
        for m in fake.channels.get(message.channel, [])
        if m.user == fake.bot_user_id and not m.streaming and m.ts > message.ts
    ]


async def test_a_300_page_pdf_in_a_dm_is_read_within_the_context(
    fake: FakeSlack, sim: RunningSimulator, tmp_path: Path
) -> None:
    async with slack_genbot(fake, sim, tmp_path / "genbot.db") as bot:
        shared = fake.user_says(
            "What did the keeper count?", channel="D1", files=[("report.pdf", report(300))]
        )
        await fake.post_event(bot.url, fake.event_callback(fake.message_event(shared)))
        note, answer = await fake.wait_for(
            lambda: posted if len(posted := bot_messages(fake, shared)) >= 2 else None, WAIT
        )
    assert answer.thread_ts == shared.ts
    assert note.thread_ts == shared.ts, "the note is in the thread the answer streams in"
    (request,) = sim.state.requests_to(CHAT_PATH)
    read_of_report(request.body, "What did the keeper count?", note.text)
    assert answer.markdown
    (pdf,) = [f for f in fake.files.values() if f.name == "report.pdf"]
    assert fake.downloads == [(pdf.id, True)], "downloaded once, with the bot token"


async def test_a_scanned_pdf_gets_its_reason_and_nothing_is_sent(
    fake: FakeSlack, sim: RunningSimulator, tmp_path: Path
) -> None:
    async with slack_genbot(fake, sim, tmp_path / "genbot.db") as bot:
        shared = fake.user_says("Read this", channel="D1", files=[("scan.pdf", scan(2))])
        await fake.post_event(bot.url, fake.event_callback(fake.message_event(shared)))
        refusal = await fake.wait_for(
            lambda: next((e for e in fake.ephemerals if "no text layer" in e.text), None), WAIT
        )
    assert refusal.text.startswith("scan.pdf has no text layer")
    assert sim.state.requests_to(CHAT_PATH) == []
