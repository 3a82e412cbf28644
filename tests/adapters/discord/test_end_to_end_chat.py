"""End to end, chat: the real discord.py against the fake Discord, the real core on a tmp SQLite
database, and the simulator over HTTP answering by its documented rules (``echo:``, ``words:``,
``what was my first message``)."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from simulator.server import RunningSimulator, serve
from simulator.state import Dialect, SimulatorConfig
from tests.adapters.discord.harness import Harness
from tests.adapters.discord.real_core import (
    MARKER,
    QUICK_BUCKET,
    QUICK_WINDOW,
    RealGenbot,
    finished,
    newest,
    real_genbot,
    thread_of,
)
from tests.fakes.discord import FakeChannel, FakeDiscord, FakeMessage
from tests.sim_time import a_minute_passes_after_a_429, freeze

UNPACED = [{"advertise_rate_limits": False}]
"""Discord's own bucket (5 writes per channel in 5 s) without rate-limit headers, so only
genbot's own write windows can avoid 429s."""
QUICK = pytest.mark.parametrize("fake", [QUICK_BUCKET], indirect=True)
STREAMING_TIME_SCALE = 1.5
"""Stream rounds 30 ms apart: the answer streams for about five seconds, longer than one edit
window, so both the pacing and the channel's write window are needed to avoid 429s."""


@pytest.fixture
async def sim(request: pytest.FixtureRequest) -> AsyncIterator[RunningSimulator]:
    """The simulator in the dialect named by the indirect parameter; ``spec`` also with a
    chat limit of 2 a minute, so a third message meets a 429 that genbot waits out."""
    dialect: Dialect = getattr(request, "param", "default")
    rpm = 2 if dialect == "spec" else 0
    config = SimulatorConfig(
        time_scale=0.003, seed=5, dialect=dialect, chat_rpm=rpm, insecure_webhooks=True
    )
    async with serve(config) as running:
        yield running


@pytest.fixture
async def genbot(
    harness: Harness, sim: RunningSimulator, tmp_path: Path
) -> AsyncIterator[RealGenbot]:
    """genbot with the edit window of :data:`QUICK_BUCKET` (tests using it set that bucket)."""
    database = tmp_path / "genbot.db"
    async with real_genbot(harness, sim, database, edit_window_seconds=QUICK_WINDOW) as running:
        yield running


async def final_answers(fake: FakeDiscord, channel: FakeChannel, count: int) -> list[FakeMessage]:
    """The bot's first ``count`` messages in ``channel`` once all show their final text."""

    def ready() -> list[FakeMessage] | None:
        messages = fake.bot_messages(channel.id)
        done = len(messages) >= count and all(finished(m) for m in messages[:count])
        return messages[:count] if done else None

    return await fake.wait_for(ready, 20.0, f"{count} finished answer(s) in {channel.name}")


async def answer_after(fake: FakeDiscord, channel: FakeChannel, turn: FakeMessage) -> FakeMessage:
    """The bot's finished answer posted in ``channel`` after the user's ``turn`` (not a notice
    that it waits for the provider's rate limit)."""

    def ready() -> FakeMessage | None:
        later = [
            m
            for m in fake.bot_messages(channel.id)
            if m.id > turn.id and not m.content.startswith("⏳")
        ]
        return later[0] if later and finished(later[0]) else None

    return await fake.wait_for(ready, 10.0, f"an answer to {turn.content!r}")


@pytest.mark.parametrize("fake", UNPACED, indirect=True)
async def test_chat_streams_its_answer_within_the_edit_bucket(
    harness: Harness, tmp_path: Path
) -> None:
    fake = harness.fake
    alice, general = fake.user("alice"), fake.channel("general")
    text = " ".join(f"fox{number} jumps" for number in range(120))
    config = SimulatorConfig(time_scale=STREAMING_TIME_SCALE, seed=5)
    async with serve(config) as sim, real_genbot(harness, sim, tmp_path / "genbot.db"):
        interaction = await fake.slash(alice, general, "chat", {"prompt": f"echo: {text}"})
        assert await fake.answered(interaction) == 5
        question = await fake.wait_for(
            lambda: newest(fake.bot_messages(general.id), lambda m: m.thread_id is not None),
            what="the question, with a thread on it",
        )
        assert question.content.startswith("**Alice** asked: echo: fox0 jumps")
        [answer] = await final_answers(fake, thread_of(fake, question), 1)
    assert answer.content == text
    interim = [version for version in answer.history if MARKER in version]
    assert len(interim) >= 3, f"the answer was not streamed: {answer.history}"
    assert all(text.startswith(v.removesuffix(f" {MARKER}")) for v in interim)
    assert fake.rate_limit_hits == 0
    assert not fake.ephemerals_for(alice)


@QUICK
async def test_a_reply_longer_than_2000_characters_continues_in_a_second_message(
    harness: Harness, genbot: RealGenbot
) -> None:
    fake = harness.fake
    alice = fake.user("alice")
    dm = fake.dm_channel(alice)
    await fake.user_message(alice, dm, "words: 400")

    def whole_answer() -> list[FakeMessage] | None:
        messages = fake.bot_messages(dm.id)
        words = [w for m in messages for w in m.content.split()]
        return messages if len(words) == 400 and all(finished(m) for m in messages) else None

    first, second = await fake.wait_for(whole_answer, 10.0, "400 words, finished")
    assert 1500 < len(first.content) <= 2000
    assert 0 < len(second.content) <= 2000
    assert fake.rate_limit_hits == 0


@QUICK
@pytest.mark.parametrize("sim", ["default", "spec"], indirect=True)
async def test_a_dm_conversation_keeps_its_context_over_three_turns(
    harness: Harness, genbot: RealGenbot, sim: RunningSimulator
) -> None:
    fake = harness.fake
    bob = fake.user("bob")
    dm = fake.dm_channel(bob)
    limited = sim.state.config.chat_rpm > 0
    if limited:
        # Simulated time stands still, so the three turns fall within one rate-limit minute
        # however long they take, until the test lets the minute pass after the 429.
        freeze(sim)
    first = await fake.user_message(bob, dm, "echo: Nice to meet you, Bob.")
    assert (await answer_after(fake, dm, first)).content == "Nice to meet you, Bob."
    second = await fake.user_message(bob, dm, "echo: Foxes are quick.")
    assert (await answer_after(fake, dm, second)).content == "Foxes are quick."
    third = await fake.user_message(bob, dm, "what was my first message?")
    if limited:
        await a_minute_passes_after_a_429(sim)
    answer = await answer_after(fake, dm, third)
    assert answer.content == 'Your first message was: "echo: Nice to meet you, Bob."'
    answers = [m for m in fake.bot_messages(dm.id) if not m.content.startswith("⏳")]
    assert len(answers) == 3
    statuses = [r.status for r in sim.state.requests_to("/v1/chat/completions")]
    assert (429 in statuses) == limited
    assert dm.id in fake.typing_in


@QUICK
async def test_a_mention_opens_a_thread_that_continues(
    harness: Harness, genbot: RealGenbot
) -> None:
    fake = harness.fake
    carol, general = fake.user("carol"), fake.channel("general")
    opening = await fake.user_message(carol, general, f"{fake.bot.mention} echo: Hello thread")
    thread = await fake.wait_for(
        lambda: fake.threads_in(general.id), what="a thread on the mention"
    )
    assert [t.id for t in thread] == [opening.id]
    [answer] = await final_answers(fake, thread[0], 1)
    assert answer.content == "Hello thread"
    assert not fake.bot_messages(general.id), "the answer belongs in the thread"
    follow_up = await fake.user_message(carol, thread[0], "what was my first message")
    answer = await answer_after(fake, thread[0], follow_up)
    assert answer.content == 'Your first message was: "echo: Hello thread"'


@QUICK
async def test_model_output_pings_nobody(harness: Harness, genbot: RealGenbot) -> None:
    fake = harness.fake
    alice, general = fake.user("alice"), fake.channel("general")
    moderators, bob = fake.role("moderators"), fake.user("bob")
    said = f"hi @everyone {moderators.mention} and {bob.mention}"
    await fake.slash(alice, general, "chat", {"prompt": f"echo: {said}"})
    question = await fake.wait_for(
        lambda: newest(fake.bot_messages(general.id), lambda m: m.thread_id is not None),
        what="the question, with a thread on it",
    )
    assert question.pings.nobody
    [answer] = await final_answers(fake, thread_of(fake, question), 1)
    assert answer.content == said
    assert answer.allowed_mentions is not None
    assert answer.pings.nobody, f"the model's text pinged {answer.pings}"


@QUICK
@pytest.mark.parametrize("sim", ["default", "spec", "variant"], indirect=True)
async def test_draw_in_a_dm_runs_the_tool_and_its_grid_comes_by_webhook(
    harness: Harness, sim: RunningSimulator, tmp_path: Path
) -> None:
    # The backstop poll comes after 30 s: a grid within the wait came by webhook. The variant
    # streams single-line events and tool_calls, refuses the function role and webhook paths.
    fake = harness.fake
    bob = fake.user("bob")
    dm = fake.dm_channel(bob)
    database = tmp_path / "genbot.db"
    slow_backstop = {"poll_interval_max": 30.0}
    async with real_genbot(
        harness, sim, database, edit_window_seconds=QUICK_WINDOW, webhooks=True, **slow_backstop
    ) as genbot:
        asked = await fake.user_message(bob, dm, "draw a lighthouse at dusk")
        grid = await fake.wait_for(
            lambda: newest(fake.bot_messages(dm.id), lambda m: bool(m.attachments)),
            10.0,
            "the grid in the DM",
        )
        assert {"U1", "V1", "🔄"} <= {b.get("label") for b in grid.buttons}

        def model_answer() -> FakeMessage | None:
            later = [m for m in fake.bot_messages(dm.id) if m.id > asked.id]
            return newest(later, lambda m: finished(m) and not m.components_v2)

        answer = await fake.wait_for(model_answer, 10.0, "the model's answer")
        assert not answer.attachments
        job = await genbot.posted("imagine")
        assert job.prompt == "a lighthouse at dusk" and job.requester_id == str(bob.id)
        assert [a.status for a in sim.state.webhook_attempts] == [200]
        chats = [r.status for r in sim.state.requests_to("/v1/chat/completions")]
        assert chats == ([200, 400, 200] if sim.state.config.dialect == "variant" else [200, 200])
