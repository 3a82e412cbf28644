"""History fitting with stored counts agrees with the tokenizer-based reference, and the turns a
request carries alternate (empty answers left out, consecutive user turns merged)."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from bot.features.chat.history import History, Turn, api_message, counted, fit, too_large
from bot.features.chat.tokens import count_message
from bot.kernel import UserError
from storage import ChatMessage
from tests.bot.features.chat.fitting import fit_history

ROLES = st.sampled_from(["user", "assistant", "function"])
WORDS = st.lists(st.sampled_from(["harbour", "light", "fox", "ship", "tide"]), max_size=400)


def message(role: str, words: list[str]) -> dict[str, Any]:
    built: dict[str, Any] = {"role": role, "content": " ".join(words)}
    if role == "function":
        built["name"] = "generate_image"
    return built


@settings(deadline=None, max_examples=60)
@given(
    turns=st.lists(st.tuples(ROLES, WORDS), max_size=25),
    reserve=st.integers(min_value=0, max_value=3500),
    extra=st.integers(min_value=0, max_value=300),
)
def test_fitting_counted_turns_equals_the_reference(
    turns: list[tuple[str, list[str]]], reserve: int, extra: int
) -> None:
    messages = [message(role, words) for role, words in turns]
    try:
        expected = fit_history("be brief", messages, "llm-3.5-turbo", reserve, extra_tokens=extra)
    except ValueError:
        with pytest.raises(UserError):
            fit(
                "llm-3.5-turbo",
                "be brief",
                [counted(m) for m in messages],
                reserve=reserve,
                max_tokens=None,
                extra_tokens=extra,
            )
        return
    fitted = fit(
        "llm-3.5-turbo",
        "be brief",
        [counted(m) for m in messages],
        reserve=reserve,
        max_tokens=None,
        extra_tokens=extra,
    )
    assert fitted == expected


def test_stored_counts_are_trusted_not_recounted() -> None:
    old = Turn({"role": "user", "content": "tiny"}, 5000)
    new = counted({"role": "user", "content": "echo: now"})
    answer = counted({"role": "assistant", "content": "ok"})
    fitted = fit("llm-3.5-turbo", "", [old, answer, new], reserve=100, max_tokens=None)
    assert fitted.messages == [new.message]


def test_request_turns_skip_empty_answers_and_merge_user_turns() -> None:
    history = History("llm-3.5-turbo")
    history.add({"role": "user", "content": "first"})
    history.add({"role": "assistant", "content": ""})
    history.add({"role": "user", "content": "first"})
    history.add({"role": "user", "content": "second"})
    history.add({"role": "assistant", "content": None, "function_call": {"name": "f"}})
    history.add({"role": "function", "name": "f", "content": "done"})
    history.add({"role": "assistant", "content": "answer"})
    history.add({"role": "user", "content": [{"type": "text", "text": "look"}]})
    history.add({"role": "user", "content": "and this"})
    turns = history.request_turns()
    assert [t.message for t in turns] == [
        {"role": "user", "content": "first\n\nsecond"},
        {"role": "assistant", "content": None, "function_call": {"name": "f"}},
        {"role": "function", "name": "f", "content": "done"},
        {"role": "assistant", "content": "answer"},
        {
            "role": "user",
            "content": [{"type": "text", "text": "look"}, {"type": "text", "text": "and this"}],
        },
    ]
    assert all(t.tokens == count_message(t.message) for t in turns)
    assert len(history.turns) == 9, "the stored turns themselves are untouched"


def test_too_large_tells_which_limit_was_hit() -> None:
    assert too_large("llm-3.5-turbo", 96, 100000, 100000).startswith(
        "max_tokens 100000 is more than llm-3.5-turbo's whole context of 4096 tokens"
    )
    assert too_large("llm-4", 8000, 1000, 1000).endswith("the largest max_tokens that fits is 192.")
    assert too_large("llm-4", 9000, 1000, 1000) == (
        "Your message is too long for llm-4: it needs about 9000 tokens and the model's whole "
        "context is 8192. Shorten it or pick a model with a larger context (llm-3.5-turbo-16k)."
    )
    assert too_large("llm-4-vision-preview", 127500, 1024, None) == (
        "Your message is too long for llm-4-vision-preview: it needs about 127500 tokens but "
        "only 126976 fit with room for the answer. Shorten it."
    )


def test_a_stored_turn_goes_to_the_api_with_its_parts_call_or_name() -> None:
    parts = [{"type": "text", "text": "what is this?"}]
    call = {"name": "generate_image", "arguments": "{}"}
    stored = [
        ChatMessage(1, 1, "system", "be brief", None, None, None, 3, (), 0.0),
        ChatMessage(2, 1, "user", None, parts, None, None, 9, ("m1",), 0.0),
        ChatMessage(3, 1, "assistant", None, None, call, None, 4, (), 0.0),
        ChatMessage(4, 1, "function", '{"job": "abc"}', None, None, "generate_image", 2, (), 0.0),
    ]
    assert [api_message(turn) for turn in stored] == [
        {"role": "system", "content": "be brief"},
        {"role": "user", "content": parts},
        {"role": "assistant", "content": None, "function_call": call},
        {"role": "function", "content": '{"job": "abc"}', "name": "generate_image"},
    ]
