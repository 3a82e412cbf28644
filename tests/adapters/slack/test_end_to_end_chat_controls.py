"""An answer's controls on Slack, end to end: the real bolt app and core, the fake Slack, the
simulator. A natively streamed answer ends with 🔁 and Slack's own ``feedback_buttons`` (given
with ``chat.stopStream``); while it streams, its thread's agent session is ``processing``, so
Slack shows its own stop button, and the session is ``active`` again once the answer ended or was
stopped. Where answers are posted and updated, ⏹ Stop is a button of the answer's message while
it streams."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from bot.features.chat.renderer import STOPPED_NOTE
from simulator.server import serve
from simulator.state import SimulatorConfig
from tests.adapters.slack.end_to_end import WAIT, slack_genbot
from tests.adapters.slack.test_fake_slack_agent import without
from tests.fakes.slack import FakeSlack
from tests.fakes.slack_model import FakeMessage

pytestmark = pytest.mark.usefixtures("errors_fail_the_test")

WORDS = " ".join(f"otter{number}" for number in range(150))


def answered(fake: FakeSlack, text: str) -> FakeMessage | None:
    found = [m for m in fake.bot_messages("D1") if m.markdown.startswith(text) and not m.streaming]
    return found[-1] if found else None


async def test_a_streamed_answer_ends_with_regenerate_and_slacks_feedback_buttons(
    tmp_path: Path,
) -> None:
    async with (
        serve(SimulatorConfig(time_scale=0.01)) as sim,
        FakeSlack() as fake,
        slack_genbot(fake, sim, tmp_path / "g.db") as bot,
    ):
        question = fake.user_says("echo: the otter", channel="D1")
        await fake.post_event(bot.url, fake.event_callback(fake.message_event(question)))
        answer = await fake.wait_for(lambda: answered(fake, "the otter"), WAIT)
        session = ("D1", str(answer.thread_ts))
        await fake.wait_for(lambda: fake.sessions[session] == "active" or None, WAIT)
        assert fake.session_log == [(*session, "processing")], "chat.stopStream ended it"
        assert fake.calls_to("chat.stopStream")[-1].args.get("blocks")
        assert [b["text"]["text"] for b in answer.buttons] == ["🔁"]
        feedback = answer.feedback
        assert feedback is not None
        assert feedback["positive_button"]["text"]["text"] == "👍"

        press = fake.feedback_actions(answer, positive=False)
        await fake.post_interactive(bot.url, press)
        await fake.wait_for(lambda: fake.ephemerals or None, WAIT)
        rows = await bot.store.db.fetch_all("SELECT platform, user_id, rating FROM chat_feedback")
        assert [(r["platform"], r["user_id"], r["rating"]) for r in rows] == [("slack", "U1", -1)]

        again = fake.block_actions(answer, answer.button("🔁")["action_id"])
        await fake.post_interactive(bot.url, again)
        await fake.wait_for(lambda: "replaced by a newer answer" in answer.shown or None, WAIT)
        newer = await fake.wait_for(
            lambda: next(
                (m for m in fake.bot_messages("D1") if m is not answer and m.feedback), None
            ),
            WAIT,
        )
        assert not newer.streaming and newer.markdown.startswith("the otter")
        assert answer.feedback is None and answer.buttons == []


async def test_an_app_that_is_not_an_agent_is_asked_for_a_session_once(tmp_path: Path) -> None:
    async with (
        serve(SimulatorConfig(time_scale=0.01)) as sim,
        FakeSlack(manifest=without(["features", "agent_view"])) as fake,
        slack_genbot(fake, sim, tmp_path / "g.db") as bot,
    ):
        question = fake.user_says("echo: foxes", channel="D1")
        await fake.post_event(bot.url, fake.event_callback(fake.message_event(question)))
        await fake.wait_for(lambda: answered(fake, "foxes"), WAIT)
        question = fake.user_says("echo: otters", channel="D1")
        await fake.post_event(bot.url, fake.event_callback(fake.message_event(question)))
        await fake.wait_for(lambda: answered(fake, "otters"), WAIT)
        refused = fake.calls_to("agents.sessions.setStatus")
        assert [call.response.get("error") for call in refused] == ["not_allowed"]
        assert fake.sessions == {}


async def test_stop_where_answers_are_posted_and_updated(tmp_path: Path) -> None:
    async with (
        serve(SimulatorConfig(time_scale=5)) as sim,
        FakeSlack() as fake,
        slack_genbot(fake, sim, tmp_path / "g.db") as bot,
    ):
        fake.streaming_refused[fake.team_id] = "feature_not_enabled"
        question = fake.user_says(f"echo: {WORDS}", channel="D1")
        await fake.post_event(bot.url, fake.event_callback(fake.message_event(question)))

        def streaming() -> FakeMessage | None:
            for message in fake.bot_messages("D1"):
                labels = [b["text"]["text"] for b in message.buttons]
                if "⏹ Stop" in labels and "otter3 " in message.shown:
                    return message
            return None

        answer = await fake.wait_for(streaming, WAIT)
        await fake.post_interactive(
            bot.url, fake.block_actions(answer, answer.button("⏹ Stop")["action_id"])
        )
        await fake.wait_for(lambda: STOPPED_NOTE.strip("_") in answer.shown or None, WAIT)
        assert "otter149" not in answer.shown
        sent = sim.state.stream_bytes[-1]
        await asyncio.sleep(0.5)
        assert sim.state.stream_bytes[-1] == sent, "the simulator sent nothing after the stop"
        assert answer.feedback is not None


async def test_an_edited_message_is_answered_again_on_a_branch(tmp_path: Path) -> None:
    async with (
        serve(SimulatorConfig(time_scale=0.01)) as sim,
        FakeSlack() as fake,
        slack_genbot(fake, sim, tmp_path / "g.db") as bot,
    ):
        question = fake.user_says("echo: foxes", channel="D1")
        await fake.post_event(bot.url, fake.event_callback(fake.message_event(question)))
        await fake.wait_for(lambda: answered(fake, "foxes"), WAIT)
        changed = fake.message_changed_event(question, "echo: otters")
        await fake.post_event(bot.url, fake.event_callback(changed))
        await fake.wait_for(lambda: answered(fake, "otters"), WAIT)
        rows = await bot.store.db.fetch_all(
            "SELECT role, content, branch FROM messages ORDER BY id"
        )
        assert [(r["role"], r["branch"] is None) for r in rows] == [
            ("user", False),
            ("assistant", False),
            ("user", True),
            ("assistant", True),
        ]
        assert [r["content"] for r in rows[:3]] == ["echo: foxes", "foxes", "echo: otters"]


async def test_slacks_own_stop_ends_a_natively_streamed_answer(tmp_path: Path) -> None:
    async with (
        serve(SimulatorConfig(time_scale=5)) as sim,
        FakeSlack() as fake,
        slack_genbot(fake, sim, tmp_path / "g.db") as bot,
    ):
        question = fake.user_says(f"echo: {WORDS}", channel="D1")
        await fake.post_event(bot.url, fake.event_callback(fake.message_event(question)))

        def streaming() -> FakeMessage | None:
            found = [m for m in fake.bot_messages("D1") if m.streaming and "otter3 " in m.markdown]
            return found[0] if found else None

        answer = await fake.wait_for(streaming, WAIT)
        assert fake.stop_showing("D1", answer.thread_ts)
        stopped = fake.agent_session_stopped_event(answer)
        await fake.post_event(bot.url, fake.event_callback(stopped))
        await fake.wait_for(lambda: STOPPED_NOTE.strip("_") in answer.shown or None, WAIT)
        assert "otter149" not in answer.shown
        sent = sim.state.stream_bytes[-1]
        await asyncio.sleep(0.5)
        assert sim.state.stream_bytes[-1] == sent, "the simulator sent nothing after the stop"
        assert answer.feedback is not None

        session = ("D1", str(answer.thread_ts))
        await fake.wait_for(lambda: fake.sessions[session] == "active" or None, WAIT)
        assert not fake.stop_showing(*session)
        assert fake.session_log == [(*session, "processing"), (*session, "active")]
