"""The simulator's documented answer rules and vision answers, over HTTP."""

from __future__ import annotations

import re
from collections.abc import AsyncIterator

import pytest

from simulator.server import RunningSimulator
from tests.simulator.test_chat_support import (
    answer_of,
    chat_simulator,
    chunks,
    post_chat,
    request,
    streamed_content,
)


@pytest.fixture
async def sim() -> AsyncIterator[RunningSimulator]:
    async with chat_simulator(seed=5) as running:
        yield running


@pytest.mark.parametrize(
    ("message", "expected"),
    [
        ("echo: Hello there", "Hello there"),
        ("please echo: exactly  this,\nwith a newline ", "exactly  this,\nwith a newline "),
        ("Echo: case does not matter", "case does not matter"),
        ("echo:no space", "no space"),
    ],
)
async def test_echo_answers_exactly_the_text(
    sim: RunningSimulator, message: str, expected: str
) -> None:
    reply = await post_chat(sim, request(message))

    assert answer_of(reply.body) == expected


@pytest.mark.parametrize("count", [1, 2, 17, 250])
async def test_words_answers_exactly_n_words(sim: RunningSimulator, count: int) -> None:
    reply = await post_chat(sim, request(f"give me words: {count} please"))

    assert len(answer_of(reply.body).split()) == count


async def test_words_zero_answers_nothing(sim: RunningSimulator) -> None:
    reply = await post_chat(sim, request("words: 0"))

    assert answer_of(reply.body) == ""


@pytest.mark.parametrize("lines", [1, 4, 12])
async def test_code_answers_a_python_block_of_n_lines_between_sentences(
    sim: RunningSimulator, lines: int
) -> None:
    reply = await post_chat(sim, request(f"code: {lines}"))

    match = re.fullmatch(
        r"(?P<before>[^\n`]+\.|[^\n`]+:)\n\n```python\n(?P<code>.*)\n```\n\n(?P<after>[^\n`]+\.)",
        answer_of(reply.body),
        re.DOTALL,
    )
    assert match is not None
    assert len(match["code"].split("\n")) == lines
    compile(match["code"], "<simulated>", "exec")


async def test_first_message_is_quoted_verbatim(sim: RunningSimulator) -> None:
    first = "My name is  Ada, and I like *graphs*."
    body = {
        "model": "llm-3.5-turbo",
        "messages": [
            {"role": "system", "content": "Be kind."},
            {"role": "user", "content": first},
            {"role": "assistant", "content": "Nice to meet you."},
            {"role": "user", "content": "What was my first message?"},
        ],
    }

    reply = await post_chat(sim, body)

    assert answer_of(reply.body) == f'Your first message was: "{first}"'


async def test_rule_order_echo_before_words(sim: RunningSimulator) -> None:
    reply = await post_chat(sim, request("echo: words: 3"))

    assert answer_of(reply.body) == "words: 3"


PROMPTS = [
    "How do I bake sourdough bread at home?",
    "What are good names for a grey cat?",
    "Explain recursion to a child.",
    "Which databases suit small projects?",
    "Plan a weekend in Lisbon for me.",
    "Why is the sky blue during the day?",
]


async def test_generic_answers_are_readable_simulated_and_quote_the_user(
    sim: RunningSimulator,
) -> None:
    answers = [answer_of((await post_chat(sim, request(p))).body) for p in PROMPTS]

    for prompt, answer in zip(PROMPTS, answers, strict=True):
        assert "simulat" in answer.lower()
        assert f'"{prompt.rstrip("?.")}"' in answer
        assert answer.count("\n\n") >= 2
        assert re.search(r"[.!)]$", answer)
    assert len(set(answers)) == len(answers)
    assert any("**" in a or "\n- " in a or "\n1. " in a or "`" in a for a in answers)


async def test_long_messages_are_quoted_in_part(sim: RunningSimulator) -> None:
    message = " ".join(f"word{i}" for i in range(30))

    reply = await post_chat(sim, request(message))

    assert '"word0 word1 word2 word3 word4 word5 word6 word7 word8 word9 word10 word11…"' in (
        answer_of(reply.body)
    )


async def test_vision_answer_names_images_and_text(sim: RunningSimulator) -> None:
    parts = [
        {"type": "text", "text": "What differs between these?"},
        {"type": "image_url", "image_url": {"url": "https://img.test/a.png"}},
        {"type": "image_url", "image_url": {"url": "https://img.test/b.png", "detail": "high"}},
    ]

    reply = await post_chat(sim, request(parts, model="llm-4-vision-preview"))

    answer = answer_of(reply.body)
    assert answer.startswith(
        "I see 2 images: https://img.test/a.png and https://img.test/b.png, "
        'and your text: "What differs between these?".'
    )
    assert "Simulated" in answer


async def test_vision_answer_for_one_inline_image_without_text(sim: RunningSimulator) -> None:
    parts = [{"type": "image_url", "image_url": {"url": "data:image/jpeg;base64,/9j/4AAQ"}}]

    reply = await post_chat(sim, request(parts, model="llm-4-vision-preview"))

    assert answer_of(reply.body).startswith(
        "I see 1 image: an inline image/jpeg image, and no text."
    )


async def test_vision_rules_still_apply_to_the_text_part(sim: RunningSimulator) -> None:
    parts = [
        {"type": "text", "text": "echo: just this"},
        {"type": "image_url", "image_url": {"url": "https://img.test/a.png"}},
    ]

    reply = await post_chat(sim, request(parts, model="llm-4-vision-preview"))

    assert answer_of(reply.body) == "just this"


async def test_streamed_answer_equals_the_non_streamed_one(sim: RunningSimulator) -> None:
    plain = await post_chat(sim, request("code: 5"))
    stream = await post_chat(sim, request("code: 5", stream=True))

    assert streamed_content(chunks(stream.raw)) == answer_of(plain.body)
