"""End to end, an answer's controls on Discord: the real discord.py against the fake Discord, the
real core on a tmp SQLite database and the simulator over HTTP. ⏹ Stop while the answer streams
(the simulator sends nothing more, the message gets one more edit), then 👍 and 👎, drawn chosen
for the user the answer is for, and 🔁."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from bot.features.chat.renderer import STOPPED_NOTE
from simulator.server import serve
from simulator.state import SimulatorConfig
from tests.adapters.discord.harness import Harness
from tests.adapters.discord.real_core import (
    QUICK_BUCKET,
    QUICK_WINDOW,
    ephemeral_texts,
    finished,
    newest,
    real_genbot,
)
from tests.fakes.discord import FakeMessage

pytestmark = pytest.mark.parametrize("fake", [QUICK_BUCKET], indirect=True)
WORDS = " ".join(f"fox{number}" for number in range(150))
ONE_EVENT = 250
"""More than one event of the stream takes (``data: {…"content":"fox12 "…}``)."""


def labels(message: FakeMessage) -> list[str]:
    return [str(button.get("label")) for button in message.buttons]


def chosen(message: FakeMessage) -> list[str]:
    """The labels of the buttons drawn chosen (Discord's primary style)."""
    return [str(button.get("label")) for button in message.buttons if button.get("style") == 1]


async def test_stop_regenerate_and_feedback_on_discord(harness: Harness, tmp_path: Path) -> None:
    fake = harness.fake
    alice = fake.user("alice")
    dm = fake.dm_channel(alice)
    async with (
        serve(SimulatorConfig(time_scale=5, seed=5)) as sim,
        real_genbot(harness, sim, tmp_path / "genbot.db", edit_window_seconds=QUICK_WINDOW) as bot,
    ):
        await fake.user_message(alice, dm, f"echo: {WORDS}")

        def streaming() -> FakeMessage | None:
            message = newest(fake.bot_messages(dm.id), lambda m: "⏹ Stop" in labels(m))
            return message if message is not None and "fox3 " in message.content else None

        answer = await fake.wait_for(streaming, 20.0, "the answer streaming with ⏹ Stop")
        edits = len(answer.history)
        await fake.press(alice, answer, "⏹ Stop")
        pressed_at = sim.state.stream_bytes[-1]
        stopped = await fake.wait_for(
            lambda: answer if answer.content.endswith(STOPPED_NOTE) else None, 10.0, "stopped"
        )
        assert labels(stopped) == ["🔁", "👍", "👎"]
        assert len(stopped.history) <= edits + 1
        await asyncio.sleep(0.5)
        assert sim.state.stream_bytes[-1] - pressed_at <= ONE_EVENT
        assert "fox149" not in stopped.content

        rated = len(stopped.history)
        await fake.press(alice, stopped, "👍")
        await fake.wait_for(lambda: chosen(stopped) == ["👍"] or None, 10.0, "👍 chosen")
        assert labels(stopped) == ["🔁", "👍", "👎"]
        rows = await bot.store.db.fetch_all("SELECT platform, rating FROM chat_feedback")
        assert [(row["platform"], row["rating"]) for row in rows] == [("discord", 1)]
        await fake.press(alice, stopped, "👍")
        await fake.press(alice, stopped, "👎")
        await fake.wait_for(lambda: chosen(stopped) == ["👎"] or None, 10.0, "👎 chosen")
        assert len(stopped.history) == rated + 2, "the same 👍 again drew nothing"
        assert ephemeral_texts(fake, alice) == [], "the answer's user is answered by the buttons"

        await fake.press(alice, stopped, "🔁")
        await fake.wait_for(
            lambda: "replaced by a newer answer" in stopped.content or None, 10.0, "replaced"
        )
        assert stopped.buttons == []
        assert len(stopped.history) == rated + 3, "nothing more drew the rated answer"
        again = await fake.wait_for(
            lambda: newest(
                fake.bot_messages(dm.id), lambda m: m.id != stopped.id and "⏹ Stop" in labels(m)
            ),
            20.0,
            "the new answer, streaming",
        )
        await fake.press(alice, again, "⏹ Stop")
        await fake.wait_for(
            lambda: again.content.endswith(STOPPED_NOTE) or None, 10.0, "the new answer stopped"
        )
        assert again.id > stopped.id and len(sim.state.stream_bytes) == 2


async def test_an_edited_dm_message_is_answered_again_on_a_branch(
    harness: Harness, tmp_path: Path
) -> None:
    fake = harness.fake
    bob = fake.user("bob")
    dm = fake.dm_channel(bob)
    async with (
        serve(SimulatorConfig(time_scale=0.003, seed=5)) as sim,
        real_genbot(harness, sim, tmp_path / "genbot.db", edit_window_seconds=QUICK_WINDOW) as bot,
    ):
        first = await fake.user_message(bob, dm, "echo: foxes")
        await fake.wait_for(lambda: newest(fake.bot_messages(dm.id), finished), 10.0, "one")
        await fake.user_edits(first, "echo: otters")

        def otters() -> FakeMessage | None:
            return newest(fake.bot_messages(dm.id), lambda m: finished(m) and "otters" in m.content)

        await fake.wait_for(otters, 10.0, "the answer to the edit")
        await fake.user_message(bob, dm, "what was my first message")
        await fake.wait_for(
            lambda: newest(fake.bot_messages(dm.id), lambda m: "echo: otters" in m.content),
            10.0,
            "the next turn continuing the edited branch",
        )
        rows = await bot.store.db.fetch_all("SELECT content FROM messages WHERE branch IS NOT NULL")
        assert [r["content"] for r in rows] == ["echo: foxes", "foxes"]
