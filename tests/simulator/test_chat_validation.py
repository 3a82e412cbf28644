"""Every documented request rule answers 400 with a JSON error naming the field."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import pytest

from simulator.server import RunningSimulator
from tests.simulator.test_chat_support import (
    chat_simulator,
    error_of,
    post_chat,
    request,
)

IMAGE_PART = {"type": "image_url", "image_url": {"url": "https://img.test/cat.png"}}
GENERATE = {
    "name": "generate_image",
    "description": "Draw a picture",
    "parameters": {
        "type": "object",
        "properties": {"prompt": {"type": "string"}},
        "required": ["prompt"],
    },
}


def with_functions(*functions: Any, **fields: Any) -> dict[str, Any]:
    return request("hi", functions=list(functions), **fields)


def vision(content: Any) -> dict[str, Any]:
    return request(content, model="llm-4-vision-preview")


def messages(*items: Any) -> dict[str, Any]:
    return {"model": "llm-3.5-turbo", "messages": list(items)}


INVALID: list[tuple[str, Any, str | None]] = [
    ("not an object", [1, 2], None),
    ("unknown field", request("hi", temprature=1), "temprature"),
    ("missing model", {"messages": [{"role": "user", "content": "hi"}]}, "model"),
    ("unknown model", request("hi", model="llm-5"), "model"),
    ("model not a string", request("hi", model=4), "model"),
    ("missing messages", {"model": "llm-4"}, "messages"),
    ("empty messages", messages(), "messages"),
    ("messages not an array", {"model": "llm-4", "messages": "hi"}, "messages"),
    ("message not an object", messages("hi"), "messages[0]"),
    ("unknown role", messages({"role": "bot", "content": "hi"}), "messages[0].role"),
    ("missing role", messages({"content": "hi"}), "messages[0].role"),
    ("missing content", messages({"role": "user"}), "messages[0].content"),
    ("null user content", messages({"role": "user", "content": None}), "messages[0].content"),
    ("numeric content", messages({"role": "user", "content": 5}), "messages[0].content"),
    (
        "unknown message field",
        messages({"role": "user", "content": "hi", "mood": "happy"}),
        "messages[0]",
    ),
    (
        "bad message name",
        messages({"role": "user", "content": "hi", "name": "a b"}),
        "messages[0].name",
    ),
    (
        "function message without name",
        messages({"role": "function", "content": "{}"}),
        "messages[0].name",
    ),
    (
        "function_call on a user message",
        messages(
            {"role": "user", "content": "hi", "function_call": {"name": "f", "arguments": ""}}
        ),
        "messages[0].function_call",
    ),
    (
        "function_call arguments not a string",
        messages(
            {"role": "assistant", "content": None, "function_call": {"name": "f", "arguments": {}}}
        ),
        "messages[0].function_call",
    ),
    ("temperature above 2", request("hi", temperature=2.01), "temperature"),
    ("temperature below 0", request("hi", temperature=-0.1), "temperature"),
    ("temperature as string", request("hi", temperature="1"), "temperature"),
    ("top_p above 1", request("hi", top_p=1.5), "top_p"),
    ("top_p below 0", request("hi", top_p=-0.5), "top_p"),
    ("presence_penalty above 2", request("hi", presence_penalty=2.5), "presence_penalty"),
    ("presence_penalty below -2", request("hi", presence_penalty=-2.5), "presence_penalty"),
    ("frequency_penalty above 2", request("hi", frequency_penalty=3), "frequency_penalty"),
    ("frequency_penalty below -2", request("hi", frequency_penalty=-3), "frequency_penalty"),
    ("n zero", request("hi", n=0), "n"),
    ("n above the cap", request("hi", n=11), "n"),
    ("n not an integer", request("hi", n=1.5), "n"),
    ("n boolean", request("hi", n=True), "n"),
    ("stream not a boolean", request("hi", stream="yes"), "stream"),
    ("five stop sequences", request("hi", stop=["a", "b", "c", "d", "e"]), "stop"),
    ("stop not a string", request("hi", stop=[1]), "stop"),
    ("empty stop sequence", request("hi", stop=""), "stop"),
    ("stop as object", request("hi", stop={"a": 1}), "stop"),
    ("max_tokens zero", request("hi", max_tokens=0), "max_tokens"),
    ("max_tokens fractional", request("hi", max_tokens=2.5), "max_tokens"),
    ("logit_bias not a map", request("hi", logit_bias=[1]), "logit_bias"),
    ("logit_bias key not a token id", request("hi", logit_bias={"abc": 1}), "logit_bias"),
    ("logit_bias key with a non-ASCII digit", request("hi", logit_bias={"²": 1}), "logit_bias"),
    ("logit_bias key beyond vocabulary", request("hi", logit_bias={"999999": 1}), "logit_bias"),
    ("logit_bias value too large", request("hi", logit_bias={"50256": 101}), "logit_bias"),
    ("logit_bias value not a number", request("hi", logit_bias={"50256": "1"}), "logit_bias"),
    ("functions empty", request("hi", functions=[]), "functions"),
    ("functions not an array", request("hi", functions={"name": "f"}), "functions"),
    ("function not an object", with_functions("f"), "functions[0]"),
    (
        "function without name",
        with_functions({"parameters": {"type": "object"}}),
        "functions[0].name",
    ),
    (
        "function name with spaces",
        with_functions({"name": "make image", "parameters": {"type": "object"}}),
        "functions[0].name",
    ),
    ("duplicate function names", with_functions(GENERATE, GENERATE), "functions[1].name"),
    ("function without parameters", with_functions({"name": "f"}), "functions[0].parameters"),
    (
        "parameters not of type object",
        with_functions({"name": "f", "parameters": {"type": "string"}}),
        "functions[0].parameters.type",
    ),
    (
        "property of unknown type",
        with_functions(
            {"name": "f", "parameters": {"type": "object", "properties": {"x": {"type": "text"}}}}
        ),
        "functions[0].parameters.properties.x.type",
    ),
    (
        "empty enum",
        with_functions(
            {"name": "f", "parameters": {"type": "object", "properties": {"x": {"enum": []}}}}
        ),
        "functions[0].parameters.properties.x.enum",
    ),
    (
        "required names a missing property",
        with_functions({"name": "f", "parameters": {"type": "object", "required": ["x"]}}),
        "functions[0].parameters.required",
    ),
    (
        "function description not a string",
        with_functions({"name": "f", "description": 3, "parameters": {"type": "object"}}),
        "functions[0].description",
    ),
    (
        "function without description",
        with_functions({"name": "f", "parameters": {"type": "object"}}),
        "functions[0].description",
    ),
    (
        "function description null",
        with_functions({"name": "f", "description": None, "parameters": {"type": "object"}}),
        "functions[0].description",
    ),
    (
        "second function without description",
        with_functions(GENERATE, {"name": "f", "parameters": {"type": "object"}}),
        "functions[1].description",
    ),
    ("function_call without functions", request("hi", function_call="auto"), "function_call"),
    (
        "function_call naming an unknown function",
        with_functions(GENERATE, function_call={"name": "other"}),
        "function_call",
    ),
    ("function_call bad string", with_functions(GENERATE, function_call="always"), "function_call"),
    (
        "function_call object with extra keys",
        with_functions(GENERATE, function_call={"name": "generate_image", "x": 1}),
        "function_call",
    ),
    ("array content for a non-vision model", request(["hi"]), "messages[0].content"),
    (
        "array content for llm-4",
        request([{"type": "text", "text": "hi"}], model="llm-4"),
        "messages[0].content",
    ),
    ("empty content array", vision([]), "messages[0].content"),
    ("unknown part type", vision([{"type": "audio", "audio": "x"}]), "messages[0].content[0]"),
    ("text part without text", vision([{"type": "text"}]), "messages[0].content[0]"),
    (
        "image part with a bare string",
        vision([{"type": "image_url", "image_url": "https://img.test/cat.png"}]),
        "messages[0].content[0].image_url",
    ),
    (
        "image part with a non-URL",
        vision([{"type": "image_url", "image_url": {"url": "cat.png"}}]),
        "messages[0].content[0].image_url.url",
    ),
    (
        "image part with a bad detail",
        vision(
            [{"type": "image_url", "image_url": {"url": "https://a.test/x.png", "detail": "max"}}]
        ),
        "messages[0].content[0].image_url.detail",
    ),
    (
        "array content in an assistant message",
        {
            "model": "llm-4-vision-preview",
            "messages": [{"role": "assistant", "content": [{"type": "text", "text": "hi"}]}],
        },
        "messages[0].content",
    ),
]


@pytest.fixture
async def sim() -> AsyncIterator[RunningSimulator]:
    async with chat_simulator() as running:
        yield running


@pytest.mark.parametrize(
    ("body", "param"), [(body, param) for _, body, param in INVALID], ids=[n for n, _, _ in INVALID]
)
async def test_invalid_request_is_400_naming_the_field(
    sim: RunningSimulator, body: dict[str, Any], param: str | None
) -> None:
    reply = await post_chat(sim, body)

    assert reply.status == 400
    error = error_of(reply)
    assert error["type"] == "invalid_request_error"
    assert error["param"] == param


async def test_invalid_json_is_400(sim: RunningSimulator) -> None:
    reply = await post_chat(sim, None, raw_body=b"{not json")

    assert reply.status == 400
    assert error_of(reply)["message"] == "The request body is not valid JSON."


async def test_authentication_is_checked_before_validation(sim: RunningSimulator) -> None:
    reply = await post_chat(sim, request("hi", temperature=9), key="nope")

    assert reply.status == 401


async def test_error_messages_name_the_limit(sim: RunningSimulator) -> None:
    reply = await post_chat(sim, request("hi", stop=["a", "b", "c", "d", "e"]))

    assert "at most 4" in error_of(reply)["message"]


ACCEPTED: list[tuple[str, dict[str, Any]]] = [
    ("bounds", request("hi", temperature=0, top_p=1, presence_penalty=-2, frequency_penalty=2)),
    ("upper temperature", request("hi", temperature=2, top_p=0)),
    ("ten choices and four stops", request("hi", n=10, stop=["a", "b", "c", "d"])),
    ("nulls mean defaults", request("hi", stop=None, max_tokens=None, n=None, stream=None)),
    ("logit bias", request("hi", logit_bias={"50256": -100, "15339": 5.5})),
    ("function_call none with functions", with_functions(GENERATE, function_call="none")),
    (
        "function with an empty description",
        with_functions({"name": "f", "description": "", "parameters": {"type": "object"}}),
    ),
    (
        "assistant function call with null content",
        messages(
            {"role": "user", "content": "draw a cat"},
            {
                "role": "assistant",
                "content": None,
                "function_call": {"name": "generate_image", "arguments": '{"prompt":"a cat"}'},
            },
            {"role": "function", "name": "generate_image", "content": "ok"},
        ),
    ),
    (
        "vision parts",
        vision(
            [
                {"type": "text", "text": "what is it?"},
                IMAGE_PART,
                {"type": "image_url", "image_url": {"url": "data:image/png;base64,iVBORw0KGgo="}},
            ]
        ),
    ),
    (
        "vision system message array",
        {
            "model": "llm-4-vision-preview",
            "messages": [
                {"role": "system", "content": [{"type": "text", "text": "be brief"}]},
                {"role": "user", "content": "hi"},
            ],
        },
    ),
]


@pytest.mark.parametrize("body", [b for _, b in ACCEPTED], ids=[n for n, _ in ACCEPTED])
async def test_valid_edge_values_are_accepted(sim: RunningSimulator, body: dict[str, Any]) -> None:
    reply = await post_chat(sim, body)

    assert reply.status == 200, reply.body
