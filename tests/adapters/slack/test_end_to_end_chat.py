"""End to end on Slack with the real core: mentions, redeliveries, signatures, Socket Mode.

The real slack-bolt app receives signed requests (or Socket Mode envelopes) from the fake Slack;
the real core answers through the simulator over HTTP.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from bot.features.chat.renderer import MARKER
from simulator.server import RunningSimulator, serve
from simulator.state import Dialect, SimulatorConfig
from storage import ALL_STATUSES
from tests.adapters.slack.end_to_end import JOB_TIME_SCALE, WAIT, budgeted_fake, slack_genbot
from tests.fakes.slack import FakeSlack
from tests.fakes.slack_model import FakeMessage

pytestmark = pytest.mark.usefixtures("errors_fail_the_test")

CHAT_PATH = "/v1/chat/completions"
HELP_COMMANDS = (
    "chat",
    "imagine",
    "describe",
    "blend",
    "diffusion txt2img",
    "diffusion img2img",
    "diffusion upscale",
    "diffusion controlnet",
    "genbot settings",
    "genbot usage",
    "genbot help",
    "genbot admin moderation",
)
"""Every command as Slack users type it (settings, usage and help live under /genbot)."""
LONG_ANSWER = " ".join(f"fox{number}" for number in range(120))
"""Streamed in some 100 pieces, 20 ms apart at time scale 1: about two seconds, long enough
for an update between the first post and the final text under Slack's pacing."""


@pytest.fixture
async def fake() -> AsyncIterator[FakeSlack]:
    async with budgeted_fake() as slack:
        yield slack


@pytest.fixture
async def sim(request: pytest.FixtureRequest) -> AsyncIterator[RunningSimulator]:
    dialect: Dialect = getattr(request, "param", "default")
    async with serve(SimulatorConfig(time_scale=1.0, dialect=dialect)) as running:
        yield running


def replies(fake: FakeSlack, mention: FakeMessage) -> list[FakeMessage]:
    return [m for m in fake.thread("C1", mention.ts) if m.user == fake.bot_user_id]


def answered(fake: FakeSlack, mention: FakeMessage, text: str) -> FakeMessage | None:
    found = [m for m in replies(fake, mention) if m.markdown == text]
    return found[0] if found else None


def finished(fake: FakeSlack, mention: FakeMessage, text: str) -> FakeMessage | None:
    """The reply showing ``text`` once it is no longer streaming."""
    found = answered(fake, mention, text)
    return found if found is not None and not found.streaming else None


@pytest.mark.parametrize("sim", ["default", "spec"], indirect=True)
async def test_a_mention_is_streamed_natively_into_its_thread_with_the_exact_text(
    fake: FakeSlack, sim: RunningSimulator, tmp_path: Path
) -> None:
    async with slack_genbot(fake, sim, tmp_path / "genbot.db") as bot:
        mention = fake.user_says(f"<@{fake.bot_user_id}> please echo: {LONG_ANSWER}")

        delivery = await fake.post_event(
            bot.url, fake.event_callback(fake.app_mention_event(mention))
        )

        assert delivery.status == 200
        answer = await fake.wait_for(lambda: finished(fake, mention, LONG_ANSWER), WAIT)
        assert answer.thread_ts == mention.ts
        assert replies(fake, mention) == [answer]
        assert len(answer.history) >= 2, "the answer grew in several appends"
        for earlier in answer.history:
            assert LONG_ANSWER.startswith(earlier) and MARKER not in earlier, earlier
        (start,) = fake.calls_to("chat.startStream")
        assert start.args["recipient_user_id"] == mention.user
        assert start.args["recipient_team_id"] == fake.team_id
        assert start.args["thread_ts"] == mention.ts
        sent = [c.args.get("markdown_text") or "" for c in fake.calls if "Stream" in c.method]
        assert "".join(sent) == LONG_ANSWER, "only new text was sent"
        assert fake.calls_to("chat.update") == [] and fake.calls_to("chat.postMessage") == []
        assert fake.ratelimited == []
        (request,) = sim.state.requests_to(CHAT_PATH)
        assert request.body["stream"] is True
        assert request.body["messages"][-1]["content"].endswith(f"echo: {LONG_ANSWER}")


async def test_an_event_delivered_again_is_answered_once(
    fake: FakeSlack, sim: RunningSimulator, tmp_path: Path
) -> None:
    async with slack_genbot(fake, sim, tmp_path / "genbot.db") as bot:
        mention = fake.user_says(f"<@{fake.bot_user_id}> echo: only once")
        envelope = fake.event_callback(fake.app_mention_event(mention))
        as_channel_message = fake.event_callback(fake.message_event(mention))

        statuses = [
            (await fake.post_event(bot.url, envelope)).status,
            (await fake.post_event(bot.url, as_channel_message)).status,
            (await fake.post_event(bot.url, envelope, retry_num=1)).status,
        ]
        await fake.wait_for(lambda: answered(fake, mention, "only once"), WAIT)
        late_retry = await fake.post_event(
            bot.url, envelope, retry_num=2, retry_reason="http_error"
        )
        follow_up = fake.user_says(f"<@{fake.bot_user_id}> echo: next question")
        await fake.post_event(bot.url, fake.event_callback(fake.app_mention_event(follow_up)))
        await fake.wait_for(lambda: answered(fake, follow_up, "next question"), WAIT)

    assert statuses == [200, 200, 200]
    assert late_retry.status == 200
    assert [m.markdown for m in replies(fake, mention)] == ["only once"]
    assert len(sim.state.requests_to(CHAT_PATH)) == 2
    assert fake.ratelimited == []


async def test_a_request_with_a_bad_signature_gets_401_and_nothing_runs(
    fake: FakeSlack, sim: RunningSimulator, tmp_path: Path
) -> None:
    async with slack_genbot(fake, sim, tmp_path / "genbot.db") as bot:
        mention = fake.user_says(f"<@{fake.bot_user_id}> echo: genuine")
        envelope = fake.event_callback(fake.app_mention_event(mention))
        forged = "not-the-signing-secret"

        refused = [
            await fake.post_event(bot.url, envelope, secret=forged),
            await fake.post_command(
                bot.url, fake.slash_command("/imagine", "a fox --ar 16:9"), secret=forged
            ),
        ]
        genuine = await fake.post_event(bot.url, envelope)
        await fake.wait_for(lambda: answered(fake, mention, "genuine"), WAIT)

    assert [r.status for r in refused] == [401, 401]
    assert genuine.status == 200
    assert len(sim.state.requests_to(CHAT_PATH)) == 1
    assert sim.state.requests_to("/gen/") == []
    assert [m.markdown for m in fake.bot_messages()] == ["genuine"]
    assert fake.ephemerals == [] and fake.responses == []


async def test_socket_mode_with_the_real_core_answers_a_message_and_a_command(
    fake: FakeSlack, sim: RunningSimulator, tmp_path: Path
) -> None:
    async with slack_genbot(fake, sim, tmp_path / "genbot.db", socket_mode=True) as bot:
        assert bot.adapter.events_url is None
        await fake.wait_for(lambda: fake.socket_connected, WAIT)
        assert fake.socket_connections == 1
        message = fake.user_says("echo: hello over the socket", channel="D1")

        pushed = [
            await fake.socket_push("events_api", fake.event_callback(fake.message_event(message))),
            await fake.socket_push("slash_commands", fake.slash_command("/genbot", "help")),
        ]

        await fake.wait_for(lambda: acked(fake) >= set(pushed), WAIT)
        answer = await fake.wait_for(
            lambda: [m for m in fake.bot_messages("D1") if m.markdown == "hello over the socket"],
            WAIT,
        )
        help_shown = await fake.wait_for(
            lambda: shown_ephemerals(fake, "to have it looked at"), WAIT
        )
        assert answer[0].thread_ts in (None, message.ts)
        assert len(fake.bot_messages()) == 1
    for command in HELP_COMMANDS:
        assert f"/{command}" in help_shown, command
    assert fake.calls_to("apps.connections.open")[0].token == fake.app_token
    assert len(sim.state.requests_to(CHAT_PATH)) == 1
    assert fake.ratelimited == []


def acked(fake: FakeSlack) -> set[str]:
    return {ack["envelope_id"] for ack in fake.socket_acks}


def shown_ephemerals(fake: FakeSlack, last_words: str) -> str | None:
    """Everything the ephemerals show (their sections, else their text), once it includes
    ``last_words``."""
    shown = "\n".join(
        "\n".join(b["text"]["text"] for b in e.blocks if b.get("type") == "section") or e.text
        for e in fake.ephemerals
    )
    return shown if last_words in shown else None


@pytest.mark.parametrize("dialect", ["default", "spec", "variant"])
async def test_draw_in_a_mention_runs_the_tool_and_its_grid_comes_by_webhook(
    fake: FakeSlack, dialect: Dialect, tmp_path: Path
) -> None:
    # The backstop poll comes after 30 s: a grid within the wait came by webhook. The variant
    # streams single-line events and tool_calls, refuses the function role and webhook paths.
    config = SimulatorConfig(time_scale=JOB_TIME_SCALE, dialect=dialect, insecure_webhooks=True)
    backstop = {"poll_interval_max": 30.0}
    async with (
        serve(config) as sim,
        slack_genbot(fake, sim, tmp_path / "genbot.db", rehosting=True, limits=backstop) as bot,
    ):
        mention = fake.user_says(f"<@{fake.bot_user_id}> draw a lighthouse at dusk")
        await fake.post_event(bot.url, fake.event_callback(fake.app_mention_event(mention)))

        def grid() -> FakeMessage | None:
            found = [m for m in replies(fake, mention) if m.image_files]
            return found[0] if found else None

        def answer() -> FakeMessage | None:
            found = [m for m in replies(fake, mention) if m.markdown and not m.image_files]
            return found[0] if found and not found[0].streaming else None

        posted = await fake.wait_for(grid, WAIT)
        assert {"U1", "V1", "🔄"} <= {b["text"]["text"] for b in posted.buttons}
        assert (await fake.wait_for(answer, WAIT)).markdown
        [job] = await bot.store.tracking.list_unfinished_jobs(ALL_STATUSES)
        assert (job.type, job.prompt) == ("imagine", "a lighthouse at dusk")
        assert [a.status for a in sim.state.webhook_attempts] == [200]
        chats = [r.status for r in sim.state.requests_to(CHAT_PATH)]
        assert chats == ([200, 400, 200] if dialect == "variant" else [200, 200])


async def test_draw_in_a_dm_message_posts_the_job_in_that_messages_thread(
    fake: FakeSlack, tmp_path: Path
) -> None:
    config = SimulatorConfig(time_scale=JOB_TIME_SCALE, insecure_webhooks=True)
    async with (
        serve(config) as sim,
        slack_genbot(fake, sim, tmp_path / "genbot.db", rehosting=True) as bot,
    ):
        asked = fake.user_says("draw a lighthouse at dusk", channel="D1")
        await fake.post_event(bot.url, fake.event_callback(fake.message_event(asked)))

        def grid() -> FakeMessage | None:
            found = [m for m in fake.thread("D1", asked.ts) if m.image_files]
            return found[0] if found else None

        posted = await fake.wait_for(grid, WAIT)
        assert {"U1", "V1", "🔄"} <= {b["text"]["text"] for b in posted.buttons}
        [job] = await bot.store.tracking.list_unfinished_jobs(ALL_STATUSES)
        assert (job.prompt, job.channel_id, job.thread_id) == (
            "a lighthouse at dusk",
            "D1",
            asked.ts,
        )
    posts = fake.calls_to("chat.postMessage") + fake.calls_to("chat.startStream")
    assert posts and {call.args.get("thread_ts") for call in posts} == {asked.ts}, (
        "the answer, the job's progress and its grid, all in the message's thread"
    )
    top = [m for m in fake.channels["D1"] if m.user == fake.bot_user_id and not m.thread_ts]
    assert top == [], "nothing at the DM's top level"


async def test_a_flood_of_chat_commands_gets_the_users_cap_of_answers(
    fake: FakeSlack, sim: RunningSimulator, tmp_path: Path
) -> None:
    """One user sends 20 /chat at once: genbot writes as many answers as the user's cap
    allows and refuses the rest at once, saying so — the provider gets the cap's number of
    chat requests, not 20 (before: every one was sent)."""
    async with slack_genbot(fake, sim, tmp_path / "genbot.db") as bot:
        cap = bot.settings.limits.max_concurrent_chats_per_user
        commands = [
            fake.slash_command("/chat", f"echo: {LONG_ANSWER}", channel=f"C{n}") for n in range(20)
        ]
        await asyncio.gather(*(fake.post_command(bot.url, command) for command in commands))
        refusals = await fake.wait_for(
            lambda: [e.text for e in fake.ephemerals] if len(fake.ephemerals) >= 20 - cap else None,
            WAIT,
        )
        await fake.wait_for(
            lambda: (
                len([m for m in fake.bot_messages() if m.markdown == LONG_ANSWER]) >= cap or None
            ),
            WAIT,
        )

    assert len(refusals) == 20 - cap
    assert all(f"at most {cap} at once" in text for text in refusals), refusals[0]
    assert len(sim.state.requests_to(CHAT_PATH)) == cap
