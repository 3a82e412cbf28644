"""End to end, documents in chat: the real discord.py against the fake Discord (attachments on
its CDN), the real core, the simulator over HTTP. A 300-page PDF is read within the model's
context with a note of what was read; a file on ``/chat`` is read too."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from simulator.server import RunningSimulator, serve
from simulator.state import SimulatorConfig
from tests.adapters.discord.harness import Harness
from tests.adapters.discord.real_core import RealGenbot, finished, real_genbot, thread_of
from tests.bot.features.chat.pdfs import read_of_report, report
from tests.fakes.discord import FakeMessage

CHAT_PATH = "/v1/chat/completions"


@pytest.fixture
async def sim() -> AsyncIterator[RunningSimulator]:
    async with serve(SimulatorConfig(time_scale=0.003, seed=5)) as running:
        yield running


@pytest.fixture
async def genbot(
    harness: Harness, sim: RunningSimulator, tmp_path: Path
) -> AsyncIterator[RealGenbot]:
    async with real_genbot(harness, sim, tmp_path / "genbot.db") as running:
        yield running


async def test_a_300_page_pdf_in_a_dm_is_read_within_the_context(
    harness: Harness, sim: RunningSimulator, genbot: RealGenbot
) -> None:
    fake = harness.fake
    alice = fake.user("alice")
    dm = fake.dm_channel(alice)
    upload = ("report.pdf", report(300), "application/pdf")
    await fake.user_message(alice, dm, "What did the keeper count?", attachments=(upload,))

    def answered() -> list[FakeMessage] | None:
        messages = fake.bot_messages(dm.id)
        return messages[:2] if len(messages) >= 2 and finished(messages[1]) else None

    note, answer = await fake.wait_for(answered, 20.0, "the note and the answer")
    (request,) = sim.state.requests_to(CHAT_PATH)
    read_of_report(request.body, "What did the keeper count?", note.content)
    assert answer.content


async def test_chat_reads_its_file_option(
    harness: Harness, sim: RunningSimulator, genbot: RealGenbot
) -> None:
    fake = harness.fake
    alice, general = fake.user("alice"), fake.channel("general")
    upload = ("notes.md", b"The code word is heliotrope.", "text/markdown")
    interaction = await fake.slash(
        alice, general, "chat", {"prompt": "What is the code word?"}, attachments={"file": upload}
    )
    await fake.answered(interaction)
    question = await fake.wait_for(
        lambda: next((m for m in fake.bot_messages(general.id) if m.thread_id), None),
        what="the question with its thread",
    )
    thread = thread_of(fake, question)
    await fake.wait_for(
        lambda: any(finished(m) for m in fake.bot_messages(thread.id)), what="the answer"
    )
    (request,) = sim.state.requests_to(CHAT_PATH)
    assert request.body["messages"][-1]["content"] == (
        "What is the code word?\n\n--- notes.md (1 line) ---\nThe code word is heliotrope.\n"
        "--- end of notes.md ---"
    )
