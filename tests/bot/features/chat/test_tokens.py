from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from bot.features.chat.tokens import (
    CONTEXT_SIZES,
    REPLY_PRIMING_TOKENS,
    TOKENS_PER_IMAGE,
    context_size,
    count_functions,
    count_message,
    count_messages,
    count_text,
    encoding,
    warm_up,
)
from bot.kernel import CHAT_MODELS
from tests.bot.features.chat.fitting import TurnTooLarge, fit_history

ROOT = Path(__file__).resolve().parents[4]


def user(text: str) -> dict[str, Any]:
    return {"role": "user", "content": text}


def assistant(text: str) -> dict[str, Any]:
    return {"role": "assistant", "content": text}


def test_counts_with_the_cl100k_tokenizer() -> None:
    assert count_text("hello world") == 2
    assert count_text("") == 0
    assert count_text("<|endoftext|>") > 1, "special tokens are counted as plain text"


def test_the_encoding_is_loaded_once_and_only_when_first_needed() -> None:
    assert encoding() is encoding()
    probe = (
        "import sys, bot.features.chat.tokens as t\n"
        "assert t._encoding is None and 'tiktoken' not in sys.modules\n"
        "t.count_text('x')\n"
        "assert t._encoding.name.startswith('cl100k_base')\n"
    )
    subprocess.run([sys.executable, "-c", probe], cwd=ROOT, check=True, timeout=60)


def test_warm_up_loads_the_encoding_off_the_event_loop_once() -> None:
    probe = (
        "import asyncio, sys, threading, bot.features.chat.tokens as t\n"
        "assert t._encoding is None and 'tiktoken' not in sys.modules\n"
        "loaders = []\n"
        "real = t.encoding\n"
        "t.encoding = lambda: loaders.append(threading.current_thread().name) or real()\n"
        "async def main():\n"
        "    await asyncio.to_thread(t.warm_up)\n"
        "asyncio.run(main())\n"
        "assert t._encoding is not None and 'tiktoken' in sys.modules\n"
        "assert loaders and loaders[0] != threading.main_thread().name, loaders\n"
        "loaded = t._encoding\n"
        "t.warm_up()\n"
        "assert t._encoding is loaded\n"
        "assert t.count_text('hello world') == 2\n"
    )
    subprocess.run([sys.executable, "-c", probe], cwd=ROOT, check=True, timeout=60)
    warm_up()
    assert encoding() is encoding()


def test_message_overhead_role_name_and_function_call() -> None:
    assert count_message(user("hello world")) == 3 + 1 + 2
    named = {"role": "user", "name": "ann", "content": "hello world"}
    assert count_message(named) == 6 + count_text("ann") + 1
    call = {
        "role": "assistant",
        "content": None,
        "function_call": {"name": "generate_image", "arguments": '{"prompt": "a fox"}'},
    }
    expected = 3 + count_text("assistant") + 3 + count_text("generate_image")
    assert count_message(call) == expected + count_text('{"prompt": "a fox"}')
    assert count_messages([user("hello world")]) == 6 + REPLY_PRIMING_TOKENS


def test_vision_parts_count_text_and_a_flat_cost_per_image() -> None:
    message = {
        "role": "user",
        "content": [
            {"type": "text", "text": "hello world"},
            {"type": "image_url", "image_url": {"url": "https://x.io/a.png"}},
            {"type": "image_url", "image_url": {"url": "https://x.io/b.png"}},
        ],
    }
    assert count_message(message) == 3 + 1 + 2 + 2 * TOKENS_PER_IMAGE


def test_functions_cost_their_compact_json() -> None:
    functions = [{"name": "f", "parameters": {"type": "object", "properties": {}}}]
    assert count_functions([]) == 0
    assert (
        count_functions(functions)
        == count_text('[{"name":"f","parameters":{"type":"object","properties":{}}}]') + 8
    )


def test_every_chat_model_has_its_documented_context_size() -> None:
    assert set(CONTEXT_SIZES) == set(CHAT_MODELS)
    assert context_size("llm-3.5-turbo") == 4096
    assert context_size("llm-3.5-turbo-0613") == 4096
    assert context_size("llm-3.5-turbo-16k-0613") == 16385
    assert context_size("llm-3.5-turbo-1106") == 16385
    assert context_size("llm-4-0613") == 8192
    assert context_size("llm-4-vision-preview") == 128000
    with pytest.raises(ValueError, match="known models"):
        context_size("gpt-5")


def test_fit_history_drops_the_oldest_turns_and_keeps_the_system_prompt() -> None:
    turns = []
    for index in range(40):
        turns += [user(f"question {index} " + "word " * 60), assistant("answer " * 60)]
    turns.append(user("the newest question"))
    fitted = fit_history("be brief", turns, "llm-3.5-turbo", 500)
    assert fitted.messages[0] == {"role": "system", "content": "be brief"}
    assert fitted.messages[-1] == user("the newest question")
    assert fitted.dropped > 0
    kept = fitted.messages[1:]
    assert kept == turns[fitted.dropped :]
    assert kept[0]["role"] == "user"
    assert fitted.prompt_tokens == count_messages(fitted.messages)
    assert fitted.prompt_tokens <= 4096 - 500
    one_more = [fitted.messages[0], *turns[fitted.dropped - 2 :]]
    assert one_more[1]["role"] == "user"
    assert count_messages(one_more) > 4096 - 500


def test_fit_history_keeps_everything_that_fits() -> None:
    turns = [user("hi"), assistant("hello"), user("how are you?")]
    fitted = fit_history(None, turns, "llm-4", 1000)
    assert fitted.messages == turns and fitted.dropped == 0


def test_a_function_call_after_the_newest_user_turn_is_kept_whole() -> None:
    call = {"role": "assistant", "content": None, "function_call": {"name": "f", "arguments": "{}"}}
    result = {"role": "function", "name": "f", "content": "done"}
    turns = [user("old " * 5000), assistant("ok"), user("draw a fox"), call, result]
    fitted = fit_history({"role": "system", "content": "s"}, turns, "llm-3.5-turbo", 200)
    assert fitted.messages[1:] == [user("draw a fox"), call, result]
    assert fitted.dropped == 2


def test_a_newest_turn_too_large_on_its_own_is_a_clear_error() -> None:
    with pytest.raises(TurnTooLarge) as caught:
        fit_history("system", [user("word " * 5000)], "llm-3.5-turbo", 500)
    assert caught.value.model == "llm-3.5-turbo"
    assert caught.value.available == 4096 - 500
    assert caught.value.needed > 5000
    assert "too long for llm-3.5-turbo" in str(caught.value)
    assert "llm-3.5-turbo-16k" in str(caught.value)


def test_extra_tokens_count_against_the_context() -> None:
    turns = [user("a " * 1000), assistant("b " * 1000), user("c")]
    roomy = fit_history(None, turns, "llm-3.5-turbo", 1000)
    tight = fit_history(None, turns, "llm-3.5-turbo", 1000, extra_tokens=1500)
    assert roomy.dropped == 0 and tight.dropped == 2
    assert tight.prompt_tokens == count_messages(tight.messages) + 1500


turn_sizes = st.lists(st.tuples(st.sampled_from(["user", "assistant"]), st.integers(0, 900)))


@settings(max_examples=60, deadline=None)
@given(turn_sizes, st.integers(0, 400), st.integers(100, 2000))
def test_fit_history_keeps_the_longest_suffix_that_fits(
    sizes: list[tuple[str, int]], newest: int, reserve: int
) -> None:
    turns = [{"role": role, "content": "x " * size} for role, size in sizes]
    turns.append(user("y " * newest))
    fitted = fit_history("sys", turns, "llm-3.5-turbo", reserve)
    available = 4096 - reserve
    assert fitted.prompt_tokens == count_messages(fitted.messages) <= available
    assert fitted.messages[1:] == turns[fitted.dropped :]
    head = fitted.messages[:1]
    for start in range(fitted.dropped):
        if turns[start]["role"] == "user":
            assert count_messages([*head, *turns[start:]]) > available
