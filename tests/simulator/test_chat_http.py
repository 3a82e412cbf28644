"""Chat completions over real HTTP: auth, plans, response and stream shapes, limits, faults."""

from __future__ import annotations

import asyncio
import json
import re
from collections.abc import AsyncIterator

import aiohttp
import pytest

from simulator.server import RunningSimulator
from tests.simulator.test_chat_support import (
    CHAT_URL_PATH,
    CLOCK_START,
    ENCODING,
    FREE_KEY,
    KEY,
    chat_simulator,
    chunks,
    error_of,
    events,
    post_chat,
    request,
    streamed_content,
    tokens,
)


@pytest.fixture
async def sim() -> AsyncIterator[RunningSimulator]:
    async with chat_simulator(seed=7) as running:
        yield running


@pytest.mark.parametrize(
    "headers",
    [{}, {"Authorization": "Bearer wrong-key"}, {"Authorization": "sim-key"}, {"X-API-KEY": KEY}],
)
async def test_requests_without_a_valid_bearer_key_get_401(
    sim: RunningSimulator, headers: dict[str, str]
) -> None:
    reply = await post_chat(sim, request("hello"), key=None, headers=headers)

    assert reply.status == 401
    error = error_of(reply)
    assert error["code"] == "invalid_api_key"
    assert "Bearer" in error["message"]
    assert "wrong-key" not in reply.raw.decode()


@pytest.mark.parametrize(
    "model", ["llm-4", "llm-4-0613", "llm-4-1106-preview", "llm-4-vision-preview"]
)
async def test_free_plan_key_is_refused_llm_4_models_with_403(
    sim: RunningSimulator, model: str
) -> None:
    reply = await post_chat(sim, request("hello", model=model), key=FREE_KEY)

    assert reply.status == 403
    error = error_of(reply)
    assert error["param"] == "model"
    assert error["code"] == "model_not_available"
    assert "Developer plan" in error["message"]


async def test_free_plan_key_may_use_llm_3_5_and_developer_key_llm_4(
    sim: RunningSimulator,
) -> None:
    free = await post_chat(sim, request("hello", model="llm-3.5-turbo-16k"), key=FREE_KEY)
    developer = await post_chat(sim, request("hello", model="llm-4"), key=KEY)

    assert (free.status, developer.status) == (200, 200)


async def test_non_stream_response_has_exactly_the_documented_shape(
    sim: RunningSimulator,
) -> None:
    reply = await post_chat(sim, request("echo: Hello, simulator!"))

    assert reply.status == 200
    assert reply.headers["Content-Type"].startswith("application/json")
    body = reply.body
    assert re.fullmatch(r"chatcmpl-[A-Za-z0-9]{29}", body["id"])
    prompt = 3 + tokens("user") + tokens("echo: Hello, simulator!") + 3
    assert body == {
        "id": body["id"],
        "object": "chat.completion",
        "created": CLOCK_START,
        "model": "llm-3.5-turbo-0613",
        "choices": [
            {
                "index": 0,
                "message": {"role": "assistant", "content": "Hello, simulator!"},
                "finish_reason": "stop",
            }
        ],
        "usage": {
            "prompt_tokens": prompt,
            "completion_tokens": tokens("Hello, simulator!"),
            "total_tokens": prompt + tokens("Hello, simulator!"),
        },
    }


@pytest.mark.parametrize(
    ("asked", "answered"),
    [
        ("llm-3.5-turbo", "llm-3.5-turbo-0613"),
        ("llm-3.5-turbo-16k", "llm-3.5-turbo-16k-0613"),
        ("llm-4", "llm-4-0613"),
        ("llm-3.5-turbo-0301", "llm-3.5-turbo-0301"),
        ("llm-3.5-turbo-0613", "llm-3.5-turbo-0613"),
        ("llm-3.5-turbo-16k-0613", "llm-3.5-turbo-16k-0613"),
        ("llm-3.5-turbo-1106", "llm-3.5-turbo-1106"),
        ("llm-4-0613", "llm-4-0613"),
        ("llm-4-1106-preview", "llm-4-1106-preview"),
        ("llm-4-vision-preview", "llm-4-vision-preview"),
    ],
)
async def test_model_is_answered_as_its_dated_variant(
    sim: RunningSimulator, asked: str, answered: str
) -> None:
    reply = await post_chat(sim, request("hi", model=asked))
    stream = await post_chat(sim, request("hi", model=asked, stream=True))

    assert reply.body["model"] == answered
    assert {c["model"] for c in chunks(stream.raw)} == {answered}


async def test_usage_counts_every_message_name_call_and_function_with_the_tokenizer(
    sim: RunningSimulator,
) -> None:
    functions = [
        {
            "name": "generate_image",
            "description": "Make a picture",
            "parameters": {
                "type": "object",
                "properties": {"prompt": {"type": "string"}},
                "required": ["prompt"],
            },
        }
    ]
    messages = [
        {"role": "system", "content": "You are terse."},
        {"role": "user", "content": "draw a lighthouse", "name": "ada"},
        {
            "role": "assistant",
            "content": None,
            "function_call": {"name": "generate_image", "arguments": '{"prompt": "a lighthouse"}'},
        },
        {"role": "function", "name": "generate_image", "content": '{"task_id": "t-1"}'},
    ]
    body = {"model": "llm-3.5-turbo", "messages": messages, "functions": functions}

    reply = await post_chat(sim, body)

    expected_prompt = (
        (3 + tokens("system") + tokens("You are terse."))
        + (3 + tokens("user") + tokens("draw a lighthouse") + tokens("ada") + 1)
        + (
            3
            + tokens("assistant")
            + tokens("generate_image")
            + tokens('{"prompt": "a lighthouse"}')
        )
        + 3
        + (3 + tokens("function") + tokens('{"task_id": "t-1"}') + tokens("generate_image") + 1)
        + tokens(json.dumps(functions, separators=(",", ":")))
        + 8
        + 3
    )
    content = reply.body["choices"][0]["message"]["content"]
    assert reply.body["usage"] == {
        "prompt_tokens": expected_prompt,
        "completion_tokens": tokens(content),
        "total_tokens": expected_prompt + tokens(content),
    }


async def test_vision_prompt_counts_85_tokens_per_image(sim: RunningSimulator) -> None:
    parts = [
        {"type": "text", "text": "compare these"},
        {"type": "image_url", "image_url": {"url": "https://img.test/a.png"}},
        {"type": "image_url", "image_url": {"url": "https://img.test/b.png", "detail": "low"}},
    ]

    reply = await post_chat(sim, request(parts, model="llm-4-vision-preview"))

    assert (
        reply.body["usage"]["prompt_tokens"]
        == 3 + tokens("user") + tokens("compare these") + 2 * 85 + 3
    )


async def test_stream_sends_exactly_these_bytes(sim: RunningSimulator) -> None:
    reply = await post_chat(sim, request("echo: Hi there, friend.", stream=True))

    assert reply.status == 200
    assert reply.headers["Content-Type"] == "text/event-stream"
    head = (
        '{"id":"chatcmpl-bTCxxkoq5Tgb7gztalZ50o94edKGI","object":"chat.completion.chunk",'
        '"created":1700000000,"model":"llm-3.5-turbo-0613","choices":[{"index":0,'
    )
    assert (
        reply.raw
        == (
            f'data: {head}"delta":{{"role":"assistant","content":""}},"finish_reason":null}}]}}\n\n'
            f'data: {head}"delta":{{"content":"Hi there,"}},"finish_reason":null}}]}}\n\n'
            f'data: {head}"delta":{{"content":" friend."}},"finish_reason":null}}]}}\n\n'
            f'data: {head}"delta":{{}},"finish_reason":"stop"}}]}}\n\n'
            "data: [DONE]\n\n"
        ).encode()
    )


async def test_stream_pieces_never_split_a_character(sim: RunningSimulator) -> None:
    text = "Grüße aus Köln 🎉 und Bonn"

    reply = await post_chat(sim, request(f"echo: {text}", stream=True))

    pieces = [c["choices"][0]["delta"].get("content") for c in chunks(reply.raw)][1:-1]
    assert pieces == ["Grüße", " aus Köln", " 🎉", " und Bonn"]


async def test_n_choices_without_stream(sim: RunningSimulator) -> None:
    reply = await post_chat(sim, request("tell me about gardens", n=3))

    choices = reply.body["choices"]
    assert [c["index"] for c in choices] == [0, 1, 2]
    assert all(c["finish_reason"] == "stop" for c in choices)
    assert reply.body["usage"]["completion_tokens"] == sum(
        tokens(c["message"]["content"]) for c in choices
    )


async def test_n_choices_in_a_stream_match_the_non_streamed_answers(
    sim: RunningSimulator,
) -> None:
    plain = await post_chat(sim, request("tell me about gardens", n=3))
    stream = await post_chat(sim, request("tell me about gardens", n=3, stream=True))

    stream_chunks = chunks(stream.raw)
    assert len({c["id"] for c in stream_chunks}) == 1
    for index in range(3):
        own = [c["choices"][0] for c in stream_chunks if c["choices"][0]["index"] == index]
        assert own[0]["delta"] == {"role": "assistant", "content": ""}
        assert own[-1] == {"index": index, "delta": {}, "finish_reason": "stop"}
        assert all(c["finish_reason"] is None for c in own[:-1])
        assert len(own) > 3
        expected = plain.body["choices"][index]["message"]["content"]
        assert streamed_content(stream_chunks, index) == expected
    assert all(len(c["choices"]) == 1 for c in stream_chunks)


async def test_max_tokens_truncates_with_finish_reason_length(sim: RunningSimulator) -> None:
    full = await post_chat(sim, request("words: 40"))
    cut = await post_chat(sim, request("words: 40", max_tokens=5))
    cut_stream = await post_chat(sim, request("words: 40", max_tokens=5, stream=True))

    full_text = full.body["choices"][0]["message"]["content"]
    expected = ENCODING.decode(ENCODING.encode(full_text)[:5])
    assert cut.body["choices"][0] == {
        "index": 0,
        "message": {"role": "assistant", "content": expected},
        "finish_reason": "length",
    }
    assert cut.body["usage"]["completion_tokens"] == 5
    stream_chunks = chunks(cut_stream.raw)
    assert streamed_content(stream_chunks) == expected
    assert stream_chunks[-1]["choices"][0]["finish_reason"] == "length"


async def test_max_tokens_larger_than_the_answer_changes_nothing(sim: RunningSimulator) -> None:
    reply = await post_chat(sim, request("echo: short", max_tokens=100))

    assert reply.body["choices"][0]["message"]["content"] == "short"
    assert reply.body["choices"][0]["finish_reason"] == "stop"


@pytest.mark.parametrize(
    ("stop", "expected"),
    [
        ("STOP", "alpha "),
        (["END", "STOP"], "alpha "),
        (["beta"], "alpha STOP "),
        (["absent"], "alpha STOP beta END"),
    ],
)
async def test_stop_sequences_cut_the_answer_before_the_first_one(
    sim: RunningSimulator, stop: str | list[str], expected: str
) -> None:
    reply = await post_chat(sim, request("echo: alpha STOP beta END", stop=stop))
    stream = await post_chat(sim, request("echo: alpha STOP beta END", stop=stop, stream=True))

    assert reply.body["choices"][0]["message"]["content"] == expected
    assert reply.body["choices"][0]["finish_reason"] == "stop"
    assert reply.body["usage"]["completion_tokens"] == tokens(expected)
    assert streamed_content(chunks(stream.raw)) == expected


async def test_stop_applies_before_max_tokens(sim: RunningSimulator) -> None:
    reply = await post_chat(
        sim, request("echo: one two three four five six", stop="three", max_tokens=3)
    )

    assert reply.body["choices"][0]["message"]["content"] == "one two "
    assert reply.body["choices"][0]["finish_reason"] == "stop"


async def test_every_request_is_recorded_once_with_its_body(sim: RunningSimulator) -> None:
    body = request("echo: logged")
    await post_chat(sim, body)
    await post_chat(sim, request("x", temperature=9))
    await post_chat(sim, body, key=None)

    recorded = sim.state.requests_to(CHAT_URL_PATH)
    assert [(r.method, r.body) for r in recorded] == [
        ("POST", body),
        ("POST", request("x", temperature=9)),
        ("POST", body),
    ]


async def _read_until_cut(sim: RunningSimulator, body: dict[str, object]) -> bytes | None:
    """The bytes of a stream that ended with a payload error; None when it ended otherwise."""
    received = b""
    async with asyncio.timeout(10), aiohttp.ClientSession() as session:
        try:
            async with session.post(
                sim.base_url + CHAT_URL_PATH, json=body, headers={"Authorization": f"Bearer {KEY}"}
            ) as response:
                async for data in response.content.iter_any():
                    received += data
        except aiohttp.ClientPayloadError:
            return received
        except aiohttp.ClientConnectionError:
            return None
    return None


async def test_cut_stream_fault_sends_some_content_then_drops_without_done() -> None:
    body = request("words: 60", stream=True)
    async with chat_simulator(seed=3, fault_rate=1.0) as sim:
        outcomes = []
        for _ in range(30):
            outcomes.append(await _read_until_cut(sim, body))
            if sim.state.requests[-1].fault == "cut_stream":
                break
        entries = sim.state.requests_to(CHAT_URL_PATH)

    assert entries[-1].fault == "cut_stream"
    assert [o is not None for o in outcomes] == [e.fault == "cut_stream" for e in entries]
    received = outcomes[-1]
    assert received is not None
    assert b"[DONE]" not in received
    text = received.decode()
    first, rest = text.split("\n\n", 1)
    assert json.loads(first.removeprefix("data: "))["choices"][0]["delta"] == {
        "role": "assistant",
        "content": "",
    }
    assert '"finish_reason":"stop"' not in text
    async with chat_simulator(seed=3) as calm:
        full = (await post_chat(calm, {**body, "stream": False})).body
    partial = "".join(
        json.loads(event.removeprefix("data: "))["choices"][0]["delta"]["content"]
        for event in rest.removesuffix("\n\n").split("\n\n")
    )
    answer = full["choices"][0]["message"]["content"]
    assert partial and answer.startswith(partial) and len(partial) < len(answer)


async def test_streams_are_not_cut_without_faults(sim: RunningSimulator) -> None:
    reply = await post_chat(sim, request("words: 60", stream=True))

    assert events(reply.raw)[-1] == "[DONE]"
    assert [r.fault for r in sim.state.requests_to(CHAT_URL_PATH)] == [None]


async def test_answers_are_deterministic_under_a_seed() -> None:
    body = request("how should I plan a long walking trip?", n=2)
    async with chat_simulator(seed=11) as first, chat_simulator(seed=11) as second:
        one = await post_chat(first, body)
        two = await post_chat(second, body)
    async with chat_simulator(seed=12) as other:
        three = await post_chat(other, body)

    assert one.body["id"] == two.body["id"]
    assert one.body["choices"] == two.body["choices"]
    assert one.body["choices"] != three.body["choices"]
    assert one.body["choices"][0]["message"] != one.body["choices"][1]["message"]


async def test_stream_pieces_are_paced_by_the_time_scale() -> None:
    async with (
        asyncio.timeout(10),
        chat_simulator(time_scale=5) as sim,
        aiohttp.ClientSession() as session,
        session.post(
            sim.base_url + CHAT_URL_PATH,
            json=request("words: 30", stream=True),
            headers={"Authorization": f"Bearer {KEY}"},
        ) as response,
    ):
        first = await response.content.readuntil(b"\n\n")
        pending = response.content.read_nowait()

    assert b'"role":"assistant"' in first
    assert b"[DONE]" not in first + pending
