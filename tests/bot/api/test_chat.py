"""Family A through ChatClient against the simulator (see simulator/CHAT.md for its rules)."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any

import aiohttp
import pytest
from aiohttp import web
from hypothesis import given, settings
from hypothesis import strategies as st

from bot.api import (
    CHAT_MODELS,
    AuthenticationError,
    BadRequest,
    ChatAccumulator,
    ChatChunk,
    ChatCompletion,
    ChatMessage,
    ChatRequest,
    FunctionCall,
    FunctionDefinition,
    ImagePart,
    ImageUrl,
    InvalidRequest,
    PermissionDenied,
    ProviderClient,
    ServerError,
    StreamEnd,
    StreamInterrupted,
    TextPart,
)
from bot.api.chat import _plain_chunk, allowed_chat_models, plan_allows, read_chunk
from bot.api.sse import MAX_LINE_CHARS
from simulator.server import RunningSimulator, serve
from tests.bot.api.support import FAST_RETRY, FREE_KEY, KEY, settings_for, sim_config
from tests.fakes.deltas import read_all

IMAGE_FUNCTION = {
    "name": "generate_image",
    "description": "Draw a picture",
    "parameters": {
        "type": "object",
        "properties": {"prompt": {"type": "string", "description": "what to draw"}},
        "required": ["prompt"],
    },
}


@pytest.fixture
async def variant_sim() -> AsyncIterator[RunningSimulator]:
    """The variant dialect (docs/provider.md: single-line events, tool_calls, no function
    role)."""
    async with serve(sim_config(dialect="variant")) as running:
        yield running


@pytest.fixture
async def variant(variant_sim: RunningSimulator) -> AsyncIterator[ProviderClient]:
    async with ProviderClient(settings_for(variant_sim.base_url), retry=FAST_RETRY) as client:
        yield client


def ask(text: str, **fields: Any) -> ChatRequest:
    return ChatRequest(
        model="llm-3.5-turbo", messages=[ChatMessage(role="user", content=text)], **fields
    )


async def test_complete(sim: RunningSimulator, api: ProviderClient) -> None:
    answer = await api.chat.complete(ask("echo: Hi there, friend.", temperature=0.2))
    assert answer.text == "Hi there, friend."
    assert answer.object == "chat.completion"
    assert answer.choices[0].finish_reason == "stop"
    assert answer.usage is not None and answer.usage.total_tokens > 0
    body = sim.state.requests_to("/v1/chat/completions")[-1].body
    assert body["stream"] is False and body["temperature"] == 0.2


async def test_stream_yields_text_deltas_until_done(api: ProviderClient) -> None:
    pieces: list[str] = []
    async with api.chat.stream(ask("echo: one two three four five six seven")) as stream:
        async for piece in stream:
            pieces.append(piece)
    assert pieces[0] == pieces[-1] == "", "the role chunk and the last chunk add no text"
    assert len([piece for piece in pieces if piece]) > 1
    assert "".join(pieces) == stream.text == "one two three four five six seven"
    (result,) = stream.accumulator.results()
    assert (result.role, result.finish_reason) == ("assistant", "stop")


async def test_a_read_starts_with_what_was_read_and_ends_with_the_finish(
    api: ProviderClient,
) -> None:
    async with api.chat.stream(ask("echo: one two three four five six seven")) as stream:
        read = [await anext(stream) for _ in range(2)]
        deltas = await read_all(stream)
    assert read == ["", "one two three"]
    assert str(deltas[0]).startswith("one two three") and "" not in deltas
    assert "".join(str(d) for d in deltas[:-1]) == "one two three four five six seven"
    assert deltas[-1] == StreamEnd("stop")


async def test_what_arrived_is_read_at_once_without_waiting(api: ProviderClient) -> None:
    async with api.chat.stream(ask("echo: one two three four five six seven")) as stream:
        async with asyncio.timeout(10):
            await stream.ended.wait()
        assert stream.read_nowait() == ["one two three four five six seven", StreamEnd("stop")]
        await stream.wait()
        assert stream.read_nowait() == []


async def test_stream_keeps_n_choices_apart(api: ProviderClient) -> None:
    async with api.chat.stream(ask("words: 25", n=3)) as stream:
        async for _ in stream:
            pass
    results = stream.accumulator.results()
    assert [r.index for r in results] == [0, 1, 2]
    assert all(len(r.text.split()) == 25 for r in results)
    assert all(r.finish_reason == "stop" for r in results)
    whole = await api.chat.complete(ask("words: 25", n=3))
    assert [c.message.content for c in whole.choices] == [r.text for r in results]


async def test_function_call_whole_and_streamed(api: ProviderClient) -> None:
    request = ask("draw a red fox in the snow", functions=[IMAGE_FUNCTION], function_call="auto")
    answer = await api.chat.complete(request)
    choice = answer.choices[0]
    assert choice.finish_reason == "function_call" and choice.message.content is None
    assert choice.message.function_call is not None
    assert choice.message.function_call.parsed_arguments() == {"prompt": "a red fox in the snow"}

    async with api.chat.stream(request) as stream:
        async for _ in stream:
            pass
    (result,) = stream.accumulator.results()
    assert result.finish_reason == "function_call"
    assert result.function_call == choice.message.function_call
    assert stream.accumulator.completion().choices[0].message.content is None


async def test_a_function_that_takes_nothing_is_sent_with_an_empty_schema(
    api: ProviderClient,
) -> None:
    clock = FunctionDefinition(name="current_time", description="The time now")
    request = ask("what time is it", functions=[clock], function_call={"name": "current_time"})
    answer = await api.chat.complete(request)
    assert answer.choices[0].message.function_call == FunctionCall(
        name="current_time", arguments="{}"
    )
    assert clock.to_body()["parameters"] == {"type": "object", "properties": {}, "required": []}


def after_a_call(result: str) -> ChatRequest:
    """A request whose last message is ``generate_image``'s ``result``."""
    return ChatRequest(
        model="llm-3.5-turbo",
        messages=[
            ChatMessage(role="user", content="draw a fox"),
            ChatMessage(
                role="assistant",
                content=None,
                function_call=FunctionCall(name="generate_image", arguments='{"prompt": "fox"}'),
            ),
            ChatMessage(role="function", name="generate_image", content=result),
        ],
        functions=[FunctionDefinition.model_validate(IMAGE_FUNCTION)],
    )


async def test_function_result_round_trip(api: ProviderClient) -> None:
    answer = await api.chat.complete(after_a_call("task 42 started"))
    assert "task 42 started" in answer.text


async def test_a_refused_function_role_is_sent_as_a_user_message_from_then_on(
    variant_sim: RunningSimulator, variant: ProviderClient, caplog: pytest.LogCaptureFixture
) -> None:
    assert (await variant.chat.complete(after_a_call("task 42 started"))).choices
    async with variant.chat.stream(after_a_call("task 43 started")) as stream:
        async for _ in stream:
            pass
    assert stream.text
    sent = variant_sim.state.requests_to("/v1/chat/completions")
    assert [r.status for r in sent] == [400, 200, 200]
    assert [m["role"] for m in sent[-1].body["messages"]] == ["user", "assistant", "user"]
    assert sent[-1].body["messages"][-1]["content"] == (
        "[Result of the function generate_image]\ntask 43 started"
    )
    assert not variant.chat.forms.function_role
    warnings = [r for r in caplog.records if "refused a chat request form" in r.message]
    assert len(warnings) == 1 and "tool results go as user messages" in warnings[0].message


async def test_a_function_role_refusal_is_learnt_only_once_the_other_form_is_accepted(
    variant: ProviderClient,
) -> None:
    bad = after_a_call("x")
    bad.messages.insert(0, ChatMessage(role="user", content="draw", name="alice"))
    with pytest.raises(BadRequest) as refused:
        await variant.chat.complete(bad)
    assert "name" in refused.value.provider_message
    assert variant.chat.forms.function_role, "nothing was learnt from a refusal kept twice"


async def test_vision_model_takes_array_content(api: ProviderClient) -> None:
    answer = await api.chat.complete(
        ChatRequest(
            model="llm-4-vision-preview",
            messages=[
                ChatMessage(
                    role="user",
                    content=[
                        TextPart(text="what is this"),
                        ImagePart(image_url=ImageUrl(url="https://e.com/a.png")),
                    ],
                )
            ],
        )
    )
    assert "https://e.com/a.png" in answer.text


async def test_wrong_bearer_key(sim: RunningSimulator) -> None:
    async with ProviderClient(settings_for(sim.base_url, key="wrong"), retry=FAST_RETRY) as api:
        with pytest.raises(AuthenticationError):
            await api.chat.complete(ask("echo: x"))
        with pytest.raises(AuthenticationError):
            async with api.chat.stream(ask("echo: x")) as stream:
                async for _ in stream:
                    pass


async def test_plan_mismatch_reported_by_the_provider(sim: RunningSimulator) -> None:
    settings = settings_for(sim.base_url, key=FREE_KEY, plan="developer")
    async with ProviderClient(settings, retry=FAST_RETRY) as api:
        with pytest.raises(PermissionDenied) as caught:
            await api.chat.complete(
                ChatRequest(model="llm-4", messages=[ChatMessage(role="user", content="x")])
            )
    assert "plan" in caught.value.user_message


async def test_leaving_a_stream_early_closes_it(api: ProviderClient) -> None:
    async with api.chat.stream(ask("words: 400")) as stream:
        async for _ in stream:
            break
        assert not stream.closed
    assert stream.closed
    assert stream.text == ""
    with pytest.raises(StopAsyncIteration):
        await stream.__anext__()
    assert (await api.chat.complete(ask("echo: still fine"))).text == "still fine"


async def test_stream_without_async_with_closes_at_the_end(api: ProviderClient) -> None:
    stream = api.chat.stream(ask("echo: plain loop"))
    pieces = [piece async for piece in stream]
    assert "".join(pieces) == "plain loop"
    assert stream.closed


@contextlib.asynccontextmanager
async def chat_provider(
    handler: Callable[[web.Request], Awaitable[web.StreamResponse]],
) -> AsyncIterator[str]:
    """A stand-in provider on 127.0.0.1 answering chat completions with ``handler``."""
    app = web.Application()
    app.router.add_post("/v1/chat/completions", handler)
    runner = web.AppRunner(app, shutdown_timeout=0.1)
    await runner.setup()
    await web.TCPSite(runner, "127.0.0.1", 0).start()
    try:
        yield f"http://127.0.0.1:{runner.addresses[0][1]}"
    finally:
        await runner.cleanup()


@pytest.fixture
async def stalling_server() -> AsyncIterator[str]:
    """A provider that sends the opening and one piece of a stream, then goes silent."""
    release = asyncio.Event()

    async def handler(request: web.Request) -> web.StreamResponse:
        response = web.StreamResponse(headers={"Content-Type": "text/event-stream"})
        await response.prepare(request)
        opening = '{"choices":[{"index":0,"delta":{"role":"assistant","content":""}}]}'
        piece = '{"choices":[{"index":0,"delta":{"content":"Half a"}}]}'
        await response.write(
            f": keep-alive\r\n\r\ndata: {opening}\r\n\r\ndata: {piece}\r\n\r\n".encode()
        )
        await release.wait()
        return response

    async with chat_provider(handler) as url:
        try:
            yield url
        finally:
            release.set()


async def test_stalled_stream_raises_interrupted_with_partial_text(stalling_server: str) -> None:
    settings = settings_for(stalling_server, stream_idle_timeout=0.2)
    async with ProviderClient(settings, retry=FAST_RETRY) as api:
        seen: list[str] = []
        with pytest.raises(StreamInterrupted) as caught:
            async with asyncio.timeout(10), api.chat.stream(ask("hi")) as stream:
                async for chunk in stream:
                    seen.append(chunk)
    assert seen == ["", "Half a"]
    assert caught.value.partial_text == "Half a"
    assert "no data" in caught.value.reason


@pytest.fixture
async def endless_line_server() -> AsyncIterator[str]:
    """A provider whose stream is one line that never ends (more than the parser's cap)."""

    async def handler(request: web.Request) -> web.StreamResponse:
        response = web.StreamResponse(headers={"Content-Type": "text/event-stream"})
        await response.prepare(request)
        opening = '{"choices":[{"index":0,"delta":{"role":"assistant","content":"Hi"}}]}'
        await response.write(f"data: {opening}\n\ndata: ".encode())
        piece = b"x" * (64 * 1024)
        for _ in range(MAX_LINE_CHARS // len(piece) + 2):
            await response.write(piece)
        return response

    async with chat_provider(handler) as url:
        yield url


async def test_a_read_raises_an_earlier_interruption_after_the_text(
    stalling_server: str,
) -> None:
    settings = settings_for(stalling_server, stream_idle_timeout=0.2)
    async with (
        ProviderClient(settings, retry=FAST_RETRY) as api,
        asyncio.timeout(10),
        api.chat.stream(ask("hi")) as stream,
    ):
        with pytest.raises(StreamInterrupted):
            async for _ in stream:
                pass
        await stream.wait()
        assert stream.read_nowait() == ["Half a"]
        with pytest.raises(StreamInterrupted) as caught:
            stream.read_nowait()
    assert caught.value.partial_text == "Half a"


async def test_a_stalled_stream_reads_nothing_at_once_and_its_wait_times_out(
    stalling_server: str,
) -> None:
    settings = settings_for(stalling_server, stream_idle_timeout=0.2)
    async with (
        ProviderClient(settings, retry=FAST_RETRY) as api,
        asyncio.timeout(10),
        api.chat.stream(ask("hi")) as stream,
    ):
        await stream.wait()
        assert stream.read_nowait() == ["Half a"]
        assert stream.read_nowait() == [] and not stream.ended.is_set()
        await stream.wait()
        assert stream.ended.is_set() and stream.closed
        with pytest.raises(StreamInterrupted, match="no data"):
            stream.read_nowait()


async def test_an_oversized_stream_line_interrupts_the_stream(endless_line_server: str) -> None:
    async with ProviderClient(settings_for(endless_line_server), retry=FAST_RETRY) as api:
        with pytest.raises(StreamInterrupted) as caught:
            async with asyncio.timeout(10), api.chat.stream(ask("hi")) as stream:
                async for _ in stream:
                    pass
    assert caught.value.partial_text == "Hi"
    assert "longer than" in caught.value.reason
    assert stream.closed


async def test_a_refused_stream_whose_body_stalls_is_refused_within_the_read_timeout() -> None:
    release = asyncio.Event()

    async def handler(request: web.Request) -> web.StreamResponse:
        response = web.StreamResponse(status=500, headers={"Content-Type": "application/json"})
        response.content_length = 200
        await response.prepare(request)
        await response.write(b'{"error": {"message": "overloa')
        await release.wait()
        return response

    async with chat_provider(handler) as url:
        try:
            settings = settings_for(url, read_timeout=0.3)
            async with ProviderClient(settings, retry=FAST_RETRY) as api:
                with pytest.raises(ServerError):
                    async with asyncio.timeout(10), api.chat.stream(ask("hi")) as stream:
                        async for _ in stream:
                            pass
        finally:
            release.set()


async def test_whole_choices_are_read_in_the_order_of_their_index() -> None:
    async def handler(request: web.Request) -> web.Response:
        choices = [
            {"index": i, "message": {"role": "assistant", "content": f"answer {i}"}}
            for i in (2, 0, 1)
        ]
        return web.json_response({"object": "chat.completion", "choices": choices})

    async with (
        chat_provider(handler) as url,
        ProviderClient(settings_for(url), retry=FAST_RETRY) as api,
    ):
        answer = await api.chat.complete(ask("hi", n=3))
    assert [choice.message.content for choice in answer.choices] == [
        "answer 0",
        "answer 1",
        "answer 2",
    ]


@pytest.mark.parametrize("plan", ["free", "developer"])
@pytest.mark.parametrize("model", CHAT_MODELS)
async def test_one_plan_rule_decides_what_the_client_sends(
    sim: RunningSimulator, plan: str, model: str
) -> None:
    settings = settings_for(sim.base_url, key=FREE_KEY if plan == "free" else "sim-key", plan=plan)
    async with ProviderClient(settings, retry=FAST_RETRY) as api:
        request = ChatRequest(model=model, messages=[ChatMessage(role="user", content="echo: ok")])
        allowed = plan_allows(plan, model)
        assert allowed == (model in allowed_chat_models(plan))
        assert allowed == (plan != "free" or not model.startswith("llm-4"))
        if allowed:
            api.chat.check(request)
        else:
            with pytest.raises(InvalidRequest, match="Developer plan"):
                api.chat.check(request)


async def test_a_stream_of_single_line_events_is_read_whole(variant: ProviderClient) -> None:
    async with variant.chat.stream(ask("echo: one two three four five six seven")) as stream:
        chunks = [chunk async for chunk in stream]
    assert len(chunks) > 3
    assert stream.text == "one two three four five six seven"
    assert stream.accumulator.results()[0].finish_reason == "stop"


async def test_a_call_answered_as_tool_calls_reads_as_a_function_call(
    variant_sim: RunningSimulator, variant: ProviderClient
) -> None:
    request = ask("draw a red fox in the snow", functions=[IMAGE_FUNCTION], function_call="auto")
    answer = await variant.chat.complete(request)
    choice = answer.choices[0]
    assert choice.finish_reason == "function_call" and choice.message.content is None
    assert choice.message.function_call is not None
    assert choice.message.function_call.parsed_arguments() == {"prompt": "a red fox in the snow"}

    body = {**request.to_body(), "stream": True}
    headers = {"Authorization": f"Bearer {KEY}"}
    url = f"{variant_sim.base_url}/v1/chat/completions"
    async with (
        aiohttp.ClientSession() as session,
        session.post(url, json=body, headers=headers) as raw,
    ):
        assert '"tool_calls"' in await raw.text(), "the variant streams tool_calls pieces"
    async with variant.chat.stream(request) as stream:
        assert [piece async for piece in stream if piece] == []
    (result,) = stream.accumulator.results()
    assert result.finish_reason == "function_call" and result.calls_function
    assert result.function_call == choice.message.function_call


def test_streamed_tool_calls_fold_the_first_call_whatever_its_index() -> None:
    def piece(index: int, **function: str) -> dict[str, Any]:
        call: dict[str, Any] = {"index": index, "function": function}
        if "name" in function:
            call |= {"id": f"call_{index}", "type": "function"}
        return {"choices": [{"index": 0, "delta": {"tool_calls": [call]}}]}

    accumulator = ChatAccumulator()
    for chunk in (
        piece(1, name="generate_image", arguments=""),
        piece(1, arguments='{"prompt": '),
        piece(2, name="describe_image", arguments='{"image_url": "https://x/y.png"}'),
        piece(1, arguments='"a fox"}'),
        {"choices": [{"index": 0, "delta": {}, "finish_reason": "tool_calls"}]},
    ):
        accumulator.add(chunk)
    (result,) = accumulator.results()
    assert result.calls_function
    assert result.function_call == FunctionCall(
        name="generate_image", arguments='{"prompt": "a fox"}'
    )
    calls = [
        {"index": 2, "function": {"name": "describe_image"}},
        {"index": 1, "function": {"name": "generate_image"}},
    ]
    whole = ChatCompletion.model_validate({"choices": [{"message": {"tool_calls": calls}}]})
    assert whole.choices[0].message.function_call == FunctionCall(name="generate_image")


def test_a_named_call_that_ends_with_stop_is_a_call_unless_cut() -> None:
    def chunk(delta: dict[str, Any], finish: str | None = None) -> dict[str, Any]:
        return {"choices": [{"index": 0, "delta": delta, "finish_reason": finish}]}

    opening = chunk({"function_call": {"name": "generate_image", "arguments": '{"prompt"'}})
    for finish, calls in (("stop", True), ("length", False), ("tool_calls", True)):
        accumulator = ChatAccumulator()
        for piece in (opening, chunk({"function_call": {"arguments": ': "a fox"}'}}, finish)):
            accumulator.add(piece)
        (result,) = accumulator.results()
        assert result.calls_function is calls, finish


ODD = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(-3, 3),
    st.floats(allow_nan=True),
    st.sampled_from(["", "x", "3", " 4 ", "2.5", "stop", "tool_calls"]),
    st.lists(st.integers(), max_size=1),
    st.dictionaries(st.sampled_from(["a", "name", "index"]), st.integers(0, 1), max_size=1),
)
TOOL_CALL = {"index": 0, "function": {"name": "f", "arguments": "{}"}}


@st.composite
def chunks(draw: st.DrawFn) -> Any:
    """A chunk of the spec's shape (2.4) with a function call piece, then up to three of its
    fields (or itself) replaced by odd values or left out."""
    delta = {"role": "assistant", "content": "Hi", "function_call": {"name": "f", "arguments": ""}}
    choice = {"index": 0, "delta": delta, "finish_reason": None}
    chunk: Any = {"id": "c", "object": "o", "created": 1, "model": "m", "choices": [choice]}
    places: list[tuple[Any, str]] = [(chunk, key) for key in list(chunk)]
    places += [(choice, key) for key in list(choice)] + [(delta, key) for key in list(delta)]
    places += [(delta["function_call"], "name"), (delta["function_call"], "arguments")]
    for _ in range(draw(st.integers(0, 3))):
        container, key = draw(st.sampled_from(places))
        odd: Any = draw(st.one_of(ODD, st.just([TOOL_CALL]), st.just({})))
        if draw(st.booleans()):
            container.pop(key, None)
        else:
            container[key] = odd
    return draw(st.one_of(st.just(chunk), ODD)) if draw(st.integers(0, 9)) == 0 else chunk


def _as_the_model_reads(payload: Any) -> str:
    chunk = ChatChunk.model_validate(payload)
    parts = []
    for part in chunk.choices:
        call = part.delta.call
        name, arguments = (call.name, call.arguments) if call else (None, None)
        delta = part.delta
        parts.append((part.index, delta.role, delta.content, name, arguments, part.finish_reason))
    return repr((chunk.id, chunk.model, chunk.created, parts))


def _as_read(payload: Any) -> str:
    chunk = read_chunk(payload)
    parts = []
    for part in chunk.choices:
        call = (part.call_name, part.call_arguments)
        parts.append((part.index, part.role, part.content, *call, part.finish_reason))
    return repr((chunk.id, chunk.model, chunk.created, parts))


@settings(max_examples=400, deadline=None)
@given(payload=chunks())
def test_a_chunk_is_read_as_the_chunk_model_reads_it(payload: Any) -> None:
    # The plain reading (no model validation per chunk) agrees with ChatChunk, types included.
    try:
        expected = _as_the_model_reads(payload)
    except ValueError:
        with pytest.raises(ValueError):
            read_chunk(payload)
        return
    assert _as_read(payload) == expected


def test_a_plain_chunk_is_read_without_the_models() -> None:
    spec_chunk = {
        "id": "c",
        "object": "chat.completion.chunk",
        "created": 1,
        "model": "llm-3.5-turbo",
        "choices": [{"index": 0, "delta": {"content": "Hi"}, "finish_reason": None}],
    }
    assert _plain_chunk(spec_chunk) is not None
    assert _plain_chunk({**spec_chunk, "created": "1"}) is None


def sse_provider(*events: str, then: Callable[[], Awaitable[None]] | None = None) -> Any:
    """A stand-in provider's handler that streams ``events`` (raw text), then awaits ``then``."""

    async def handler(request: web.Request) -> web.StreamResponse:
        response = web.StreamResponse(headers={"Content-Type": "text/event-stream"})
        await response.prepare(request)
        for event in events:
            await response.write(event.encode())
        if then is not None:
            await then()
        return response

    return handler


OPENING = 'data: {"choices":[{"index":0,"delta":{"role":"assistant","content":""}}]}\n\n'
FINISH = 'data: {"choices":[{"index":0,"delta":{},"finish_reason":"stop"}]}\n\ndata: [DONE]\n\n'


def piece(text: str) -> str:
    return f'data: {{"choices":[{{"index":0,"delta":{{"content":"{text}"}}}}]}}\n\n'


async def test_an_empty_data_event_is_a_keep_alive_not_a_broken_chunk() -> None:
    handler = sse_provider(OPENING, piece("Hel"), "data:\n\n", "data: \n\n", piece("lo"), FINISH)
    async with (
        chat_provider(handler) as url,
        ProviderClient(settings_for(url), retry=FAST_RETRY) as api,
        asyncio.timeout(10),
        api.chat.stream(ask("hi")) as stream,
    ):
        assert "".join([text async for text in stream]) == "Hello"
    assert stream.accumulator.results()[0].finish_reason == "stop"


async def test_keep_alive_comments_do_not_keep_a_stream_without_events_open() -> None:
    release = asyncio.Event()

    async def handler(request: web.Request) -> web.StreamResponse:
        response = web.StreamResponse(headers={"Content-Type": "text/event-stream"})
        await response.prepare(request)
        await response.write((OPENING + piece("Half a")).encode())
        with contextlib.suppress(ConnectionError):
            while not release.is_set():
                await response.write(b": keep-alive\n\n")
                await asyncio.sleep(0.02)
        return response

    try:
        async with chat_provider(handler) as url:
            settings = settings_for(url, stream_idle_timeout=0.3)
            async with ProviderClient(settings, retry=FAST_RETRY) as api:
                with pytest.raises(StreamInterrupted) as caught:
                    async with asyncio.timeout(5), api.chat.stream(ask("hi")) as stream:
                        async for _ in stream:
                            pass
    finally:
        release.set()
    assert caught.value.partial_text == "Half a"
    assert "no event" in caught.value.reason


@pytest.mark.parametrize(
    "error_event",
    [
        'event: error\ndata: {"message": "The server is overloaded"}\n\n',
        "event: error\ndata: The server is overloaded\n\n",
        'data: {"error": {"message": "The server is overloaded", "type": "server_error"}}\n\n',
    ],
)
async def test_an_error_event_mid_stream_interrupts_with_the_providers_words(
    error_event: str,
) -> None:
    handler = sse_provider(OPENING, piece("Hal"), error_event)
    async with (
        chat_provider(handler) as url,
        ProviderClient(settings_for(url), retry=FAST_RETRY) as api,
    ):
        with pytest.raises(StreamInterrupted) as caught:
            async with asyncio.timeout(10), api.chat.stream(ask("hi")) as stream:
                async for _ in stream:
                    pass
    assert caught.value.partial_text == "Hal"
    assert caught.value.reason == "provider error: The server is overloaded"


def json_provider(body: dict[str, Any]) -> Any:
    """A stand-in provider's handler that answers a stream request with one JSON body."""

    async def handler(request: web.Request) -> web.StreamResponse:
        return web.json_response(body)

    return handler


async def test_a_stream_answered_as_one_json_completion_is_read_whole(
    sim: RunningSimulator, api: ProviderClient
) -> None:
    whole = (await api.chat.complete(ask("echo: Hi there, friend.", n=2))).model_dump()
    async with (
        chat_provider(json_provider(whole)) as url,
        ProviderClient(settings_for(url), retry=FAST_RETRY) as other,
        asyncio.timeout(10),
        other.chat.stream(ask("echo: Hi there, friend.", n=2)) as stream,
    ):
        assert "".join([text async for text in stream]) == "Hi there, friend."
    assert stream.accumulator.texts() == {0: "Hi there, friend.", 1: "Hi there, friend."}
    assert [r.finish_reason for r in stream.accumulator.results()] == ["stop", "stop"]


async def test_a_stream_answered_with_a_json_error_interrupts_with_its_words() -> None:
    body = {"error": {"message": "Upstream model is busy", "type": "server_error"}}
    async with (
        chat_provider(json_provider(body)) as url,
        ProviderClient(settings_for(url), retry=FAST_RETRY) as api,
    ):
        with pytest.raises(StreamInterrupted) as caught:
            async with asyncio.timeout(10), api.chat.stream(ask("hi")) as stream:
                async for _ in stream:
                    pass
    assert caught.value.reason == "provider error: Upstream model is busy"


async def test_a_json_answer_to_a_stream_is_read_as_deltas_too(api: ProviderClient) -> None:
    whole = (await api.chat.complete(ask("echo: Hi there, friend."))).model_dump()
    async with (
        chat_provider(json_provider(whole)) as url,
        ProviderClient(settings_for(url), retry=FAST_RETRY) as other,
        asyncio.timeout(10),
        other.chat.stream(ask("echo: Hi there, friend.")) as stream,
    ):
        assert await read_all(stream) == ["Hi there, friend.", StreamEnd("stop")]
