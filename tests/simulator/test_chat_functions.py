"""Function calling over HTTP: the auto rules, forcing, none, arguments, streams, results."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from typing import Any

import pytest

from simulator.server import RunningSimulator
from tests.simulator.test_chat_support import (
    answer_of,
    chat_simulator,
    chunks,
    post_chat,
    request,
    tokens,
)

GENERATE_IMAGE: dict[str, Any] = {
    "name": "generate_image",
    "description": "Create an image from a prompt",
    "parameters": {
        "type": "object",
        "properties": {
            "prompt": {"type": "string", "description": "What to draw"},
            "aspect_ratio": {"type": "string", "enum": ["1:1", "16:9", "9:16"]},
            "count": {"type": "integer", "minimum": 1, "maximum": 4},
        },
        "required": ["prompt", "aspect_ratio"],
    },
}
DESCRIBE_IMAGE: dict[str, Any] = {
    "name": "describe_image",
    "description": "Prompts for an image",
    "parameters": {
        "type": "object",
        "properties": {"image_url": {"type": "string"}},
        "required": ["image_url"],
    },
}
GET_WEATHER: dict[str, Any] = {
    "name": "get_weather",
    "description": "Weather for a city",
    "parameters": {
        "type": "object",
        "properties": {
            "city": {"type": "string"},
            "unit": {"type": "string", "enum": ["celsius", "fahrenheit"]},
            "days": {"type": "integer", "minimum": 2},
            "hourly": {"type": "boolean"},
            "note": {"type": "string"},
        },
        "required": ["city", "unit", "days", "hourly"],
    },
}
JSON_TYPES: dict[str, type | tuple[type, ...]] = {
    "string": str,
    "integer": int,
    "number": (int, float),
    "boolean": bool,
    "array": list,
    "object": dict,
}


def assert_valid_arguments(arguments: str, schema: dict[str, Any]) -> dict[str, Any]:
    parsed = json.loads(arguments)
    assert isinstance(parsed, dict)
    assert set(schema.get("required", [])) <= set(parsed)
    for name, value in parsed.items():
        prop = schema["properties"][name]
        if "enum" in prop:
            assert value in prop["enum"]
        if "type" in prop:
            assert isinstance(value, JSON_TYPES[prop["type"]])
        if "minimum" in prop:
            assert value >= prop["minimum"]
    return parsed


@pytest.fixture
async def sim() -> AsyncIterator[RunningSimulator]:
    async with chat_simulator(seed=5) as running:
        yield running


@pytest.mark.parametrize(
    ("message", "prompt"),
    [
        ("draw a red fox in the snow", "a red fox in the snow"),
        ("Imagine a castle made of glass", "a castle made of glass"),
        ("paint  sunflowers at dusk ", "sunflowers at dusk"),
    ],
)
async def test_auto_calls_generate_image_for_draw_imagine_paint(
    sim: RunningSimulator, message: str, prompt: str
) -> None:
    body = request(message, functions=[GET_WEATHER, GENERATE_IMAGE, DESCRIBE_IMAGE])

    reply = await post_chat(sim, body)

    choice = reply.body["choices"][0]
    assert choice["finish_reason"] == "function_call"
    assert choice["message"]["content"] is None
    assert choice["message"]["function_call"]["name"] == "generate_image"
    arguments = assert_valid_arguments(
        choice["message"]["function_call"]["arguments"], GENERATE_IMAGE["parameters"]
    )
    assert arguments == {"prompt": prompt, "aspect_ratio": "1:1"}


async def test_auto_calls_describe_image_for_describe_with_an_image_url(
    sim: RunningSimulator,
) -> None:
    body = request(
        "Please describe https://img.test/photos/cat.png for me",
        functions=[GENERATE_IMAGE, DESCRIBE_IMAGE],
    )

    reply = await post_chat(sim, body)

    call = reply.body["choices"][0]["message"]["function_call"]
    assert call["name"] == "describe_image"
    assert json.loads(call["arguments"]) == {"image_url": "https://img.test/photos/cat.png"}


@pytest.mark.parametrize(
    ("message", "functions"),
    [
        ("draw a cat", [DESCRIBE_IMAGE, GET_WEATHER]),
        ("describe this for me", [DESCRIBE_IMAGE]),
        ("what is the weather in Oslo?", [GET_WEATHER]),
        ("I like to draw cats", [GENERATE_IMAGE]),
    ],
)
async def test_auto_answers_normally_when_no_rule_matches_an_offered_function(
    sim: RunningSimulator, message: str, functions: list[dict[str, Any]]
) -> None:
    reply = await post_chat(sim, request(message, functions=functions))

    choice = reply.body["choices"][0]
    assert choice["finish_reason"] == "stop"
    assert "function_call" not in choice["message"]
    assert isinstance(choice["message"]["content"], str)


async def test_function_call_none_never_calls(sim: RunningSimulator) -> None:
    body = request("draw a cat", functions=[GENERATE_IMAGE], function_call="none")

    reply = await post_chat(sim, body)

    assert reply.body["choices"][0]["finish_reason"] == "stop"
    assert "function_call" not in reply.body["choices"][0]["message"]


async def test_forced_function_gets_schema_valid_arguments(sim: RunningSimulator) -> None:
    body = request(
        "Oslo please",
        functions=[GENERATE_IMAGE, GET_WEATHER],
        function_call={"name": "get_weather"},
    )

    reply = await post_chat(sim, body)

    choice = reply.body["choices"][0]
    assert choice["finish_reason"] == "function_call"
    assert choice["message"]["function_call"]["name"] == "get_weather"
    arguments = assert_valid_arguments(
        choice["message"]["function_call"]["arguments"], GET_WEATHER["parameters"]
    )
    assert arguments == {"city": "Oslo please", "unit": "celsius", "days": 2, "hourly": False}


async def test_forced_generate_image_uses_the_whole_message_as_prompt(
    sim: RunningSimulator,
) -> None:
    body = request(
        "a quiet harbour at dawn",
        functions=[GENERATE_IMAGE],
        function_call={"name": "generate_image"},
    )

    reply = await post_chat(sim, body)

    call = reply.body["choices"][0]["message"]["function_call"]
    assert json.loads(call["arguments"])["prompt"] == "a quiet harbour at dawn"


async def test_function_call_usage_counts_name_and_arguments(sim: RunningSimulator) -> None:
    reply = await post_chat(sim, request("draw a cat", functions=[GENERATE_IMAGE], n=2))

    call = reply.body["choices"][0]["message"]["function_call"]
    per_choice = tokens(call["name"]) + tokens(call["arguments"])
    assert reply.body["usage"]["completion_tokens"] == 2 * per_choice


async def test_streamed_function_call_chunk_shapes(sim: RunningSimulator) -> None:
    body = request("draw a cat", functions=[GENERATE_IMAGE], stream=True)
    plain = await post_chat(sim, {**body, "stream": False})

    reply = await post_chat(sim, body)

    deltas = [
        (c["choices"][0]["delta"], c["choices"][0]["finish_reason"]) for c in chunks(reply.raw)
    ]
    assert deltas[0] == (
        {
            "role": "assistant",
            "content": None,
            "function_call": {"name": "generate_image", "arguments": ""},
        },
        None,
    )
    assert deltas[-1] == ({}, "function_call")
    middle = deltas[1:-1]
    assert len(middle) > 1
    assert all(
        set(d) == {"function_call"} and set(d["function_call"]) == {"arguments"} for d, _ in middle
    )
    arguments = "".join(d["function_call"]["arguments"] for d, _ in middle)
    assert arguments == plain.body["choices"][0]["message"]["function_call"]["arguments"]


async def test_function_result_round_trip_uses_the_result(sim: RunningSimulator) -> None:
    first = await post_chat(sim, request("draw a lighthouse", functions=[GENERATE_IMAGE]))
    call = first.body["choices"][0]["message"]["function_call"]
    result = '{"task_id": "0b7c-42", "status": "success"}'
    body = {
        "model": "llm-3.5-turbo",
        "functions": [GENERATE_IMAGE],
        "messages": [
            {"role": "user", "content": "draw a lighthouse"},
            {"role": "assistant", "content": None, "function_call": call},
            {"role": "function", "name": "generate_image", "content": result},
        ],
    }

    reply = await post_chat(sim, body)

    choice = reply.body["choices"][0]
    assert choice["finish_reason"] == "stop"
    assert "generate_image" in choice["message"]["content"]
    assert f"\n{result}\n" in choice["message"]["content"]


async def test_forced_function_is_called_even_after_a_result(sim: RunningSimulator) -> None:
    body = {
        "model": "llm-3.5-turbo",
        "functions": [GENERATE_IMAGE],
        "function_call": {"name": "generate_image"},
        "messages": [
            {"role": "user", "content": "draw a boat"},
            {"role": "function", "name": "generate_image", "content": "done"},
        ],
    }

    reply = await post_chat(sim, body)

    assert reply.body["choices"][0]["finish_reason"] == "function_call"


async def test_vision_describe_calls_describe_image_with_the_part_url(
    sim: RunningSimulator,
) -> None:
    parts = [
        {"type": "text", "text": "describe it"},
        {"type": "image_url", "image_url": {"url": "https://img.test/dog.webp"}},
    ]
    body = request(parts, model="llm-4-vision-preview", functions=[DESCRIBE_IMAGE])

    reply = await post_chat(sim, body)

    call = reply.body["choices"][0]["message"]["function_call"]
    assert json.loads(call["arguments"]) == {"image_url": "https://img.test/dog.webp"}


async def test_a_function_result_never_triggers_another_auto_call(sim: RunningSimulator) -> None:
    body = {
        "model": "llm-3.5-turbo",
        "functions": [GENERATE_IMAGE],
        "messages": [
            {"role": "user", "content": "draw a boat"},
            {"role": "function", "name": "generate_image", "content": "draw queued as task 42"},
        ],
    }

    reply = await post_chat(sim, body)

    assert reply.body["choices"][0]["finish_reason"] == "stop"
    assert "draw queued as task 42" in answer_of(reply.body)


@pytest.mark.parametrize(("message", "prompt"), [("draw dog", "dog"), ("draw a unicorn", "cat")])
async def test_rule_values_respect_an_enum(
    sim: RunningSimulator, message: str, prompt: str
) -> None:
    function = {
        "name": "generate_image",
        "description": "Create an image from a prompt",
        "parameters": {
            "type": "object",
            "properties": {"prompt": {"type": "string", "enum": ["cat", "dog"]}},
            "required": ["prompt"],
        },
    }

    reply = await post_chat(sim, request(message, functions=[function]))

    call = reply.body["choices"][0]["message"]["function_call"]
    assert json.loads(call["arguments"]) == {"prompt": prompt}


async def test_rule_value_goes_to_the_first_plain_string_property_when_unnamed(
    sim: RunningSimulator,
) -> None:
    function = {
        "name": "generate_image",
        "description": "Create an image from a prompt",
        "parameters": {
            "type": "object",
            "properties": {
                "style": {"type": "string", "enum": ["photo", "sketch"]},
                "description": {"type": "string"},
            },
            "required": ["style"],
        },
    }

    reply = await post_chat(sim, request("imagine a tiny robot", functions=[function]))

    call = reply.body["choices"][0]["message"]["function_call"]
    assert json.loads(call["arguments"]) == {"description": "a tiny robot", "style": "photo"}
