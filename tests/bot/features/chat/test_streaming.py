"""Streamed answers: split at the platform limit, code fences intact, no pings, interrupted
streams marked and stored, typing first, and no rate-limit hits under the platform's windows."""

from __future__ import annotations

from pathlib import Path

from bot.features.chat.renderer import INTERRUPTED_NOTE
from bot.features.chat.scoping import dm_key
from bot.kernel import FENCE, Event, MessageRef, OutMessage, Place, PlatformProfile
from simulator.state import FaultKind, SimulatorConfig, SimulatorState
from tests.bot.features.chat.support import DM, ROOMY, ChatWorld, chat_world, sim_config
from tests.fakes.platform import FakePlatform
from tests.storage.helpers import conversation_history

STREAM_FAULTS: tuple[FaultKind, ...] = ("error_500", "reset", "slow", "cut_stream")


class RecordingPlatform(FakePlatform):
    """Records the order of typing indicators and posts."""

    def __init__(self) -> None:
        super().__init__(profile=ROOMY)
        self.log: list[str] = []

    async def typing(self, place: Place) -> None:
        self.log.append("typing")
        await super().typing(place)

    async def send(
        self, place: Place, message: OutMessage, *, origin: Event | None = None
    ) -> MessageRef:
        self.log.append("send")
        return await super().send(place, message, origin=origin)


def fence_lines(text: str) -> int:
    return sum(1 for line in text.splitlines() if line.lstrip(" ").startswith(FENCE))


async def test_a_long_answer_continues_in_new_messages(world: ChatWorld) -> None:
    await world.actor().say("words: 700")
    posted = world.posted_in(DM)
    assert len(posted) >= 2
    assert all(len(m.text) <= 2000 for m in posted)
    full = await world.replay(world.chat_bodies()[-1])
    assert len(full.split()) == 700
    assert "".join(m.text for m in posted) == full.rstrip()
    assert all(m.message.from_model for m in posted)


async def test_code_fences_stay_intact_across_the_split(world: ChatWorld) -> None:
    await world.actor().say("code: 150")
    posted = world.posted_in(DM)
    assert len(posted) >= 2
    for message in posted:
        assert fence_lines(message.text) % 2 == 0, message.text[-200:]
    assert posted[1].text.startswith(f"{FENCE}python\n")
    full = await world.replay(world.chat_bodies()[-1])
    assert full.startswith("Here is a simulated Python snippet of 150 lines:")
    assert posted[-1].text.rstrip().endswith(full.rstrip().splitlines()[-1])


async def test_model_text_never_pings(world: ChatWorld) -> None:
    await world.actor().say("echo: @everyone <@123> look here")
    (answer,) = world.posted_in(DM)
    assert answer.text == "@everyone <@123> look here"
    assert answer.message.from_model and answer.message.mention_user_id is None


async def test_typing_shows_before_the_first_token(tmp_path: Path) -> None:
    platform = RecordingPlatform()
    async with chat_world(tmp_path, platform=platform) as world:
        await world.actor().say("echo: hello")
    assert platform.log[0] == "typing" and "send" in platform.log


def seed_whose_first_stream_gets(fault: FaultKind) -> int:
    for seed in range(200):
        state = SimulatorState.create(SimulatorConfig(fault_rate=1.0, seed=seed))
        if state.draw_fault(STREAM_FAULTS) == fault:
            return seed
    raise AssertionError(f"no seed gives the first stream {fault}")


async def test_an_interrupted_stream_is_marked_and_stored(tmp_path: Path) -> None:
    config = sim_config(fault_rate=1.0, seed=seed_whose_first_stream_gets("cut_stream"))
    async with chat_world(tmp_path, config=config) as world:
        await world.actor().say("words: 120")
        (request,) = world.sim.state.requests_to("/v1/chat/completions")
        assert request.fault == "cut_stream"
        (answer,) = world.posted_in(DM)
        partial, _, note = answer.text.rpartition("\n\n")
        assert note == INTERRUPTED_NOTE
        assert 0 < len(partial.split()) < 120
        conversation = await world.store.conversations.find_conversation_by_message(
            "fake", DM.channel_id, answer.ref.message_id
        )
        assert conversation is not None
        turns = await conversation_history(world.store.conversations, conversation.id)
        assert [t.role for t in turns] == ["user", "assistant"]
        assert turns[-1].content == answer.text
        assert turns[-1].platform_message_ids == (answer.ref.message_id,)


async def test_a_provider_failure_is_reported_and_the_question_kept(tmp_path: Path) -> None:
    config = sim_config(fault_rate=1.0, seed=seed_whose_first_stream_gets("error_500"))
    async with chat_world(tmp_path, config=config) as world:
        await world.actor().say("echo: are you there?")
        (request,) = world.sim.state.requests_to("/v1/chat/completions")
        assert request.fault == "error_500"
        assert world.platform.ephemerals_for("alice") == [
            "The service is having trouble right now. Please try again later."
        ]
        assert world.posted_in(DM) == []
        conversation = await world.store.conversations.find_conversation(dm_key(DM))
        assert conversation is not None
        (turn,) = await conversation_history(world.store.conversations, conversation.id)
        assert (turn.role, turn.content) == ("user", "echo: are you there?")


async def test_streaming_respects_the_platform_windows(tmp_path: Path) -> None:
    profile = PlatformProfile(max_text=400, edits_per_window_per_channel=3, edit_window_seconds=0.4)
    platform = FakePlatform(profile=profile, enforce_windows=True)
    async with chat_world(tmp_path, platform=platform, config=sim_config(time_scale=1.0)) as world:
        await world.actor().say("words: 160")
        posted = world.posted_in(DM)
        full = await world.replay(world.chat_bodies()[-1])
    assert platform.rate_limited == 0
    assert len(posted) >= 2
    assert "".join(m.text for m in posted) == full.rstrip()
    assert sum(len(m.history) for m in posted) > len(posted), "the answer was edited as it grew"
