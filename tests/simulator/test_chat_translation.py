"""The simulator's translation into English: asked for by a system message, answered from its
phrase table, everything else kept — over HTTP."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest

from simulator.server import RunningSimulator
from tests.simulator.test_chat_support import answer_of, chat_simulator, post_chat

ASK = "Translate the user's image prompt into English. Keep placeholders such as [1]."


@pytest.fixture
async def sim() -> AsyncIterator[RunningSimulator]:
    async with chat_simulator(seed=5) as running:
        yield running


def translation(text: str, system: str = ASK) -> dict[str, object]:
    return {
        "model": "llm-3.5-turbo",
        "messages": [{"role": "system", "content": system}, {"role": "user", "content": text}],
        "temperature": 0,
    }


@pytest.mark.parametrize(
    ("text", "english"),
    [
        ("夕暮れの灯台", "a lighthouse at dusk"),
        ("[1] 猫と赤い狐 [2]", "[1] a cat and a red fox [2]"),
        ("ein Fuchs im Schnee", "a fox in the snow"),
        ("黄昏时的灯塔", "a lighthouse at dusk"),
        ("a red fox", "a red fox"),
        ("知らない言葉", "知らない言葉"),
    ],
)
async def test_a_translation_is_the_phrase_table_applied_and_the_rest_kept(
    sim: RunningSimulator, text: str, english: str
) -> None:
    reply = await post_chat(sim, translation(text))

    assert answer_of(reply.body) == english
    assert reply.body["usage"]["completion_tokens"] > 0


async def test_without_the_system_instruction_the_same_text_gets_a_simulated_answer(
    sim: RunningSimulator,
) -> None:
    reply = await post_chat(sim, translation("夕暮れの灯台", system="You are a helpful bot."))

    assert "a lighthouse at dusk" not in answer_of(reply.body)
