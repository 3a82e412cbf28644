"""Slack's agent messaging experience end to end, the fake checking the manifest: the Messages
tab's greeting and suggested prompts, "summarize this channel's last hour" from the channel in
view (``app_context_changed``), and the "Ask genbot about this" message shortcut."""

from __future__ import annotations

from collections.abc import AsyncIterator
from functools import partial
from pathlib import Path

import pytest

from adapters.slack.agent import ASK_CALLBACK
from adapters.slack.settings import DEFAULT_GREETING
from simulator.server import RunningSimulator, serve
from simulator.state import SimulatorConfig
from tests.adapters.slack.end_to_end import WAIT, budgeted_fake, slack_genbot
from tests.fakes.slack import FakeSlack
from tests.language import german, said

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


def prompts_set(fake: FakeSlack, count: int) -> bool | None:
    return len(fake.calls_to("assistant.threads.setSuggestedPrompts")) >= count or None


async def test_the_messages_tab_greets_once_and_suggests_prompts(
    fake: FakeSlack, sim: RunningSimulator, tmp_path: Path
) -> None:
    async with slack_genbot(fake, sim, tmp_path / "genbot.db") as bot:
        for opened in (1, 2):
            event = fake.messages_tab_opened_event("U1", viewing="C1")
            await fake.post_event(bot.url, fake.event_callback(event))
            await fake.wait_for(partial(prompts_set, fake, opened), WAIT)
    prompts = fake.suggested_prompts[(fake.team_id, "D1")]
    assert [p["title"] for p in prompts["prompts"]] == [
        "Ask anything",
        "Draw an image",
        "Summarize this channel",
    ]
    assert prompts["prompts"][1]["message"] == "Draw a fox in the snow"
    assert fake.ignored_prompts == [], "an agent app's prompts name no thread"
    greetings = [m for m in fake.channels.get("D1", []) if m.user == fake.bot_user_id]
    assert [m.text for m in greetings] == [DEFAULT_GREETING]


async def test_summarize_this_channel_reads_the_channel_in_view(
    fake: FakeSlack, sim: RunningSimulator, tmp_path: Path
) -> None:
    fake.user_says("The release moves to Friday.", user="U2", channel="C1")
    fake.user_says("Then QA starts Wednesday.", user="U1", channel="C1")
    fake.channels_without_bot.add("C2")
    async with slack_genbot(fake, sim, tmp_path / "genbot.db") as bot:
        looked = fake.app_context_changed_event("U1", "C1")
        await fake.post_event(bot.url, fake.event_callback(looked))
        asked = fake.user_says("Summarize this channel's last hour", channel="D1")
        await fake.post_event(bot.url, fake.event_callback(fake.message_event(asked)))
        await fake.wait_for(lambda: sim.state.requests_to(CHAT_PATH) or None, WAIT)

        elsewhere = fake.app_context_changed_event("U1", "C2")
        await fake.post_event(bot.url, fake.event_callback(elsewhere))
        refused = fake.user_says("And this channel?", channel="D1")
        await fake.post_event(bot.url, fake.event_callback(fake.message_event(refused)))
        told = await fake.wait_for(
            lambda: next(
                (m for m in fake.thread("D1", refused.ts) if m.user == fake.bot_user_id), None
            ),
            WAIT,
        )
    (request,) = sim.state.requests_to(CHAT_PATH)
    content = request.body["messages"][-1]["content"]
    assert content.startswith("Summarize this channel's last hour\n\n--- channel-messages.txt")
    assert "Messages in <#C1> during the last hour" in content
    assert "bob: The release moves to Friday." in content
    assert content.index("Friday") < content.index("QA starts Wednesday")
    reads = [c.args for c in fake.calls_to("conversations.history") if c.args["channel"] == "C1"]
    assert [int(r["limit"]) for r in reads] == [200] and float(reads[0]["oldest"]) > 0
    assert told.text.startswith("genbot cannot read <#C2>: it is not a member there.")


async def test_ask_genbot_about_this_answers_in_the_dm_with_the_thread(
    fake: FakeSlack, sim: RunningSimulator, tmp_path: Path
) -> None:
    parent = fake.user_says("Should we ship the fox feature?", user="U2", channel="C1")
    fake.user_says("Only after the lighthouse fix.", user="U1", channel="C1", thread_ts=parent.ts)
    async with slack_genbot(fake, sim, tmp_path / "genbot.db") as bot:
        shortcut = fake.message_shortcut(parent, ASK_CALLBACK, user="U1")
        await fake.post_interactive(bot.url, shortcut)
        form = await fake.wait_for(
            lambda: next((v for v in fake.views if v.callback_id == ASK_CALLBACK), None), WAIT
        )
        await fake.submit_view(bot.url, form, {"question": "What was decided?"})
        await fake.wait_for(lambda: sim.state.requests_to(CHAT_PATH) or None, WAIT)
        root = next(m for m in fake.channels["D1"] if m.user == fake.bot_user_id)
        answer = await fake.wait_for(
            lambda: next(
                (
                    m
                    for m in fake.thread("D1", root.ts)
                    if m.ts != root.ts and m.user == fake.bot_user_id and not m.streaming
                ),
                None,
            ),
            WAIT,
        )
    assert root.text.startswith("What was decided?")
    assert answer.thread_ts == root.ts and answer.markdown
    (request,) = sim.state.requests_to(CHAT_PATH)
    content = request.body["messages"][-1]["content"]
    assert content.startswith("What was decided?\n\n--- message-and-thread.txt (3 lines) ---")
    assert "bob: Should we ship the fox feature?" in content
    assert "alice: Only after the lighthouse fix." in content


async def test_in_german_the_messages_tab_and_the_ask_form(
    fake: FakeSlack, sim: RunningSimulator, tmp_path: Path
) -> None:
    """A user whose Slack speaks German: the Messages tab's prompts and greeting, the "Ask
    genbot" form and the question's note in the DM speak German (built before any event reaches
    the core)."""
    fake.locales["U1"] = "de-DE"
    parent = fake.user_says("Should we ship the fox feature?", user="U2", channel="C1")
    async with slack_genbot(fake, sim, tmp_path / "genbot.db") as bot:
        event = fake.messages_tab_opened_event("U1", viewing="C1")
        await fake.post_event(bot.url, fake.event_callback(event))
        await fake.wait_for(partial(prompts_set, fake, 1), WAIT)
        await fake.wait_for(lambda: fake.channels.get("D1") or None, WAIT)

        await fake.post_interactive(bot.url, fake.message_shortcut(parent, ASK_CALLBACK, user="U1"))
        form = await fake.wait_for(
            lambda: next((v for v in fake.views if v.callback_id == ASK_CALLBACK), None), WAIT
        )
        await fake.submit_view(bot.url, form, {"question": "Was wurde entschieden?"})
        root = await fake.wait_for(
            lambda: next((m for m in fake.channels["D1"] if m.text.startswith("Was wurde")), None),
            WAIT,
        )

    prompts = fake.suggested_prompts[(fake.team_id, "D1")]
    assert prompts["title"] == german("Try")
    assert [p["title"] for p in prompts["prompts"]] == [
        german("Ask anything"),
        german("Draw an image"),
        german("Summarize this channel"),
    ]
    (greeting, *_) = [m for m in fake.channels["D1"] if m.user == fake.bot_user_id]
    assert greeting.text == german(DEFAULT_GREETING)
    assert form.view["title"]["text"] == german("Ask genbot")
    question = next(b for b in form.view["blocks"] if b.get("block_id") == "question")
    assert question["label"]["text"] == german("What do you want to know?")
    assert german("_About a message in <#{channel}>:_", channel="C1") in root.text


async def test_the_messages_tab_speaks_the_language_the_user_chose(
    fake: FakeSlack, sim: RunningSimulator, tmp_path: Path
) -> None:
    """A user whose Slack speaks German but who chose Japanese (``/settings language``) gets
    the Messages tab in Japanese, as every answer of genbot's."""
    fake.locales["U1"] = "de-DE"
    async with slack_genbot(fake, sim, tmp_path / "genbot.db") as bot:
        await fake.post_command(bot.url, fake.slash_command("/genbot", "settings --language ja"))
        await fake.wait_for(lambda: fake.ephemerals or None, WAIT)
        event = fake.messages_tab_opened_event("U1", viewing="C1")
        await fake.post_event(bot.url, fake.event_callback(event))
        await fake.wait_for(partial(prompts_set, fake, 1), WAIT)

    prompts = fake.suggested_prompts[(fake.team_id, "D1")]
    assert prompts["title"] == said("ja", "Try") != "Try"
