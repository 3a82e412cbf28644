"""Family A client: chat completions, whole or streamed, and the chunk accumulator."""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from types import TracebackType
from typing import Any, Protocol, TypeVar, cast

from pydantic import ValidationError

from bot.api.chat_errors import chat_refusal
from bot.api.chat_forms import ChatForms, InlineImagesRefused
from bot.api.errors import (
    ApiError,
    ApiTimeout,
    ConnectionFailed,
    InvalidRequest,
    InvalidResponse,
    StreamInterrupted,
)
from bot.api.http import AuthStyle, CallSafety, HttpResult, HttpTransport, StreamResponse
from bot.api.keys import KeyPool, key_failure
from bot.api.models_chat import (
    CHAT_MODELS,
    DEVELOPER_PLAN_MODELS,
    FINISH_REASONS,
    AssistantMessage,
    ChatChoice,
    ChatChunk,
    ChatCompletion,
    ChatRequest,
    FunctionCall,
)
from bot.api.ratelimit import RequestPacer
from bot.api.sse import SseEvent, SseParser, SseTooLarge
from bot.api.statuses import parse_json, provider_message

CHAT_PATH = "/v1/chat/completions"
DONE = "[DONE]"
WHOLE_LINES = frozenset({DONE})
"""The data that is a whole event by itself besides one JSON chunk: then it is one event even
when no blank line follows (docs/provider.md#sse-framing)."""
JSON_TYPE = "application/json"
FREE_PLAN = "free"
MAX_FORM_CHANGES = 2
"""A request is sent at most this many more times in other forms after refusals."""
SentT = TypeVar("SentT")
log = logging.getLogger("bot.api")


def allowed_chat_models(plan: str) -> list[str]:
    """The chat models a workspace on ``plan`` may use (docs/provider.md, "Chat"): ``llm-4*``
    models need the Developer plan or above, so the free plan gets the others. The one home of
    this rule."""
    if plan == FREE_PLAN:
        return [model for model in CHAT_MODELS if model not in DEVELOPER_PLAN_MODELS]
    return list(CHAT_MODELS)


def plan_allows(plan: str, model: str) -> bool:
    """Whether a workspace on ``plan`` may use the chat ``model``."""
    return model in allowed_chat_models(plan)


@dataclass
class ChoiceResult:
    """One choice assembled from stream chunks."""

    index: int
    role: str = "assistant"
    text: str = ""
    function_name: str = ""
    function_arguments: str = ""
    finish_reason: str | None = None
    tool_index: int | None = None
    """The ``index`` of the ``tool_calls`` entry being folded (the first one seen)."""

    @property
    def function_call(self) -> FunctionCall | None:
        """The function call the model made, if any."""
        if not self.function_name and not self.function_arguments:
            return None
        return FunctionCall(name=self.function_name, arguments=self.function_arguments)

    @property
    def calls_function(self) -> bool:
        """The choice is a whole function call: it names one, and ``max_tokens`` did not cut
        it (a provider may end a call with ``stop``; docs/provider.md#streamed-function-calls)."""
        return bool(self.function_name) and self.finish_reason != "length"


@dataclass(frozen=True, slots=True)
class _ChoiceDelta:
    """What one chunk adds to one choice."""

    index: int
    role: str | None
    content: str | None
    call_name: str | None
    call_arguments: str | None
    finish_reason: str | None
    call_index: int | None = None
    """The ``tool_calls`` index of the call piece (None for a ``function_call`` piece)."""


@dataclass(frozen=True, slots=True)
class _Chunk:
    """One chunk, read: its header and what it adds to each choice."""

    id: str
    model: str
    created: int
    choices: list[_ChoiceDelta]


def _plain(value: Any) -> bool:
    return value is None or type(value) is str


def _plain_choice(part: Any) -> _ChoiceDelta | None:
    """``part`` (one item of ``choices``) when it has the plain shape the spec gives (see
    :func:`read_chunk`), else ``None``."""
    if type(part) is not dict:
        return None
    index, delta, finish = part.get("index"), part.get("delta"), part.get("finish_reason")
    if not (index is None or type(index) is int) or not _plain(finish):
        return None
    if delta is None:
        return _ChoiceDelta(index or 0, None, None, None, None, finish)
    if type(delta) is not dict or delta.get("tool_calls") is not None:
        return None
    role, content, call = delta.get("role"), delta.get("content"), delta.get("function_call")
    if not (_plain(role) and _plain(content)):
        return None
    name = arguments = None
    if call is not None:
        if type(call) is not dict:
            return None
        name, arguments = call.get("name"), call.get("arguments")
        if not (_plain(name) and _plain(arguments)):
            return None
    return _ChoiceDelta(index or 0, role, content, name, arguments, finish)


def _plain_chunk(payload: Any) -> _Chunk | None:
    """``payload`` read directly when every field has its plain JSON type, else ``None``."""
    if type(payload) is not dict:
        return None
    id_, model, created = payload.get("id"), payload.get("model"), payload.get("created")
    choices = payload.get("choices")
    if not (_plain(id_) and _plain(model) and _plain(payload.get("object"))):
        return None
    if not (created is None or type(created) is int) or not (
        choices is None or type(choices) is list
    ):
        return None
    parts = [_plain_choice(part) for part in choices or ()]
    if None in parts:
        return None
    return _Chunk(id_ or "", model or "", created or 0, cast(list[_ChoiceDelta], parts))


def read_chunk(payload: Any) -> _Chunk:
    """One stream chunk (parsed JSON) read; ``ValueError`` when it is not a chunk's shape.

    A chunk in the plain shape the spec gives (2.4: strings, integers, objects, ``null`` where
    a field is absent) is read directly, so a streamed reply costs no model validation per
    chunk; anything else (a number sent as text, ``tool_calls`` pieces, an unknown shape) is
    read by :class:`ChatChunk`, the one definition of what a chunk may be, which the plain
    reading agrees with wherever it applies (tests/bot/api/test_chat.py)."""
    plain = _plain_chunk(payload)
    if plain is not None:
        return plain
    chunk = ChatChunk.model_validate(payload)
    parts = []
    for part in chunk.choices:
        call = part.delta.call
        parts.append(
            _ChoiceDelta(
                part.index,
                part.delta.role,
                part.delta.content,
                call.name if call else None,
                call.arguments if call else None,
                part.finish_reason,
                part.delta.call_index,
            )
        )
    return _Chunk(chunk.id, chunk.model, chunk.created, parts)


@dataclass
class ChatAccumulator:
    """Folds stream chunks into per-choice results (text, function call, finish reason);
    choices of ``n`` > 1 are kept apart by their index. A call streamed as ``tool_calls``
    pieces folds like ``function_call`` pieces (the first call only, whatever its index), and
    finish reason
    ``tool_calls`` is ``function_call`` (docs/provider.md#streamed-function-calls)."""

    id: str = ""
    model: str = ""
    created: int = 0
    _choices: dict[int, ChoiceResult] = field(default_factory=dict)

    def add(self, payload: Any) -> str:
        """Fold one chunk (parsed JSON) in; returns the text it adds to choice 0. Raises
        ``ValueError`` when ``payload`` is not a chunk's shape (see :func:`read_chunk`)."""
        chunk = read_chunk(payload)
        self.id = self.id or chunk.id
        self.model = self.model or chunk.model
        self.created = self.created or chunk.created
        added = ""
        for part in chunk.choices:
            choice = self._choices.setdefault(part.index, ChoiceResult(part.index))
            if part.role:
                choice.role = part.role
            if part.content:
                choice.text += part.content
                if part.index == 0:
                    added += part.content
            if choice.tool_index is None:
                choice.tool_index = part.call_index
            if (part.call_name is not None or part.call_arguments is not None) and (
                part.call_index in (None, choice.tool_index)
            ):
                name = part.call_name or ""
                if name.startswith(choice.function_name):
                    choice.function_name = name
                else:
                    choice.function_name += name
                choice.function_arguments += part.call_arguments or ""
            if part.finish_reason:
                choice.finish_reason = FINISH_REASONS.get(part.finish_reason, part.finish_reason)
        return added

    def results(self) -> list[ChoiceResult]:
        """Every choice seen, by index."""
        return [self._choices[index] for index in sorted(self._choices)]

    def text(self, index: int = 0) -> str:
        """The text of one choice so far."""
        choice = self._choices.get(index)
        return choice.text if choice else ""

    def texts(self) -> dict[int, str]:
        """The text of every choice so far, by index."""
        return {index: choice.text for index, choice in sorted(self._choices.items())}

    def completion(self) -> ChatCompletion:
        """The same shape :meth:`ChatClient.complete` returns (``usage`` is not streamed)."""
        choices = [
            ChatChoice(
                index=result.index,
                message=AssistantMessage(
                    role=result.role,
                    content=None if result.function_call and not result.text else result.text,
                    function_call=result.function_call,
                ),
                finish_reason=result.finish_reason,
            )
            for result in self.results()
        ]
        return ChatCompletion(id=self.id, created=self.created, model=self.model, choices=choices)


STOPPED = "stopped"
"""The finish reason of a stream its reader stopped (:meth:`ChatStream.stop`): not the
provider's, which never sends it."""


@dataclass(frozen=True)
class StreamEnd:
    """The last item of a reply's text deltas: how the model finished (``stop``, ``length``…)."""

    finish_reason: str | None = None


class TextDeltas(Protocol):
    """A reply's text as it arrives, read only when its reader is about to show it (the chat
    renderer waits for something to arrive, then for room to write, and only then reads).
    A read gives what arrived since the last: text pieces, then a :class:`StreamEnd` once the
    reply ended, then ``[]``; a broken source raises from a read, after its text was given."""

    @property
    def ended(self) -> asyncio.Event:
        """Set once everything has arrived (the next read gives the rest and the end; after
        it, an empty read means the source is over), for a reader waiting on something else."""
        ...

    async def wait(self) -> None:
        """Until something arrived that was not read, or the source is over (then
        :attr:`ended` is set); bounded by the source. Reads nothing and raises nothing."""
        ...

    def read_nowait(self) -> list[str | StreamEnd]:
        """What arrived since the last read, without waiting (``[]``: nothing did)."""
        ...


class ChatStream:
    """A streamed completion: ``async with`` it, then ``async for text in stream`` (each chunk
    read gives the text it adds to the first choice, ``""`` when none), or read the first
    choice's text as :class:`TextDeltas` (:meth:`wait`, :meth:`read_nowait`, :attr:`ended`).

    The request is sent when the context is entered (or at the first read). Leaving the
    ``async with`` block (normally, by ``break``, an exception or cancellation) closes the
    connection. Iteration ends after ``data: [DONE]``; a stream that ends, stalls longer than
    the idle timeout or breaks before it raises :class:`StreamInterrupted` with the text so far.
    :attr:`accumulator` holds everything received.
    """

    def __init__(self, opener: Callable[[], Awaitable[StreamResponse]]) -> None:
        self._opener = opener
        self._response: StreamResponse | None = None
        self._parser = SseParser(whole_lines=WHOLE_LINES)
        self._pending: list[SseEvent] = []
        self._finished = False
        self._complete = False
        self._interruption: StreamInterrupted | None = None
        self._unparsed: bytes | None = None
        self._given = 0
        self._end_given = False
        self._stopped = False
        self._idle = 0.0
        self._event_due = 0.0
        self._kept_alive = False
        self._whole_body: list[bytes] | None = None
        self.ended = asyncio.Event()
        """Set once the provider's answer arrived whole, or the stream was closed."""
        self.accumulator = ChatAccumulator()

    async def __aenter__(self) -> ChatStream:
        await self.open()
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        await self.aclose()

    def __aiter__(self) -> ChatStream:
        return self

    async def __anext__(self) -> str:
        if self._finished:
            raise StopAsyncIteration
        await self.open()
        try:
            while not self._pending:
                received, self._unparsed = self._unparsed, None
                self._feed(await self._receive() if received is None else received)
            added = self._add(self._pending.pop(0))
        except StreamInterrupted as interruption:
            self._interrupt(interruption)
            raise
        except BaseException:
            self._close()
            raise
        if self._complete:
            raise StopAsyncIteration
        return added

    async def wait(self) -> None:
        """Until bytes arrived that were not read (kept unparsed for :meth:`read_nowait`),
        or the stream is over; a stall or a break ends the stream (the next read raises)."""
        await self.open()
        if self._finished or self._unparsed is not None or self._pending:
            return
        if len(self.accumulator.text()) > self._given:
            return
        try:
            self._unparsed = await self._receive()
        except StreamInterrupted as interruption:
            self._interrupt(interruption)

    def read_nowait(self) -> list[str | StreamEnd]:
        """The first choice's text since the last read (at first, what was read while a
        caller looked at the first chunks), without waiting: every byte received is parsed;
        a :class:`StreamEnd` with the finish reason after ``[DONE]``, then ``[]``. An
        interruption is raised after the text read until it."""
        try:
            self._add_pending()
            if not self._finished and self._response is not None:
                now = self._response.bytes_now()
                received = (self._unparsed or b"") + (now or b"")
                body_ended = b"" in (now, self._unparsed)
                self._unparsed = None
                if received:
                    self._feed(received)
                    self._add_pending()
                if body_ended and not self._finished:
                    self._feed(b"")
                    self._add_pending()
        except StreamInterrupted as interruption:
            self._interrupt(interruption)
        return self._unread()

    def _add_pending(self) -> None:
        while self._pending and not self._finished:
            self._add(self._pending.pop(0))

    def _unread(self) -> list[str | StreamEnd]:
        """What a read gives: the text not given yet, the end once it came."""
        text = self.accumulator.text()
        arrived: list[str | StreamEnd] = [text[self._given :]] if len(text) > self._given else []
        self._given = len(text)
        if not arrived and self._interruption is not None:
            raise self._interruption
        if self._complete and not self._end_given:
            self._end_given = True
            results = self.accumulator.results()
            finish = results[0].finish_reason if results else None
            arrived.append(StreamEnd(STOPPED if self._stopped else finish))
        return arrived

    def stop(self) -> None:
        """End the answer here, at once: the connection is closed (nothing more is read, so
        nothing more is generated or billed), the text parsed so far stays to be read, then a
        :class:`StreamEnd` whose reason is :data:`STOPPED`. Nothing when it is over already."""
        if self._finished:
            return
        self._stopped = self._complete = True
        self._pending.clear()
        self._unparsed = None
        self._close()

    async def aclose(self) -> None:
        """Close the connection; further iteration ends at once."""
        self._close()

    def _close(self) -> None:
        self._finished = True
        self.ended.set()
        if self._response is not None:
            self._response.close()

    def _interrupt(self, interruption: StreamInterrupted) -> None:
        if self._stopped:
            return
        self._interruption = interruption
        self._close()

    @property
    def closed(self) -> bool:
        """The stream is over (finished, failed or closed) and holds no connection."""
        return self._finished and (self._response is None or self._response.closed)

    @property
    def text(self) -> str:
        """Text of choice 0 received so far."""
        return self.accumulator.text()

    async def open(self) -> None:
        """Send the request (waiting for the pacer and any 429 first) unless it was sent."""
        if self._response is None and not self._finished:
            self._response = await self._opener()
            self._idle = self._response.idle_timeout
            self._event_due = time.monotonic() + self._idle
            if self._response.content_type == JSON_TYPE:
                self._whole_body = []
            self._response.on_end(self.ended.set)

    def _interrupted(self, reason: str) -> StreamInterrupted:
        return StreamInterrupted(reason, self.accumulator.text(), self.accumulator.texts())

    async def _receive(self) -> bytes:
        """The next bytes received (``b""`` at the end); a stall or a break interrupts, and so
        do keep-alives alone (comments, empty events) for the idle timeout: the bound is
        between two events, not two reads."""
        assert self._response is not None
        left = self._event_due - time.monotonic()
        try:
            if left <= 0:
                raise TimeoutError
            async with asyncio.timeout(left):
                return await self._response.next_bytes()
        except ApiTimeout as error:
            raise self._interrupted(str(error)) from None
        except TimeoutError:
            idle = f"{self._idle:g} s"
            if self._kept_alive:
                raise self._interrupted(f"no event for {idle}, only keep-alives") from None
            raise self._interrupted(f"no data for {idle}") from None
        except ConnectionFailed as error:
            raise self._interrupted(f"connection broken ({error})") from None

    def _feed(self, received: bytes) -> None:
        """Parse ``received`` (``b""``: the end of the body) into pending events."""
        if self._whole_body is not None:
            self._feed_whole(received)
            return
        if not received:
            with contextlib.suppress(SseTooLarge):
                self._parser.close()
            raise self._interrupted("stream ended before [DONE]")
        try:
            events = self._parser.feed(received)
        except SseTooLarge as error:
            raise self._interrupted(str(error)) from None
        self._kept_alive = True
        for event in events:
            if event.data.strip():
                self._event_due = time.monotonic() + self._idle
                self._kept_alive = False
            self._pending.append(event)

    def _feed_whole(self, received: bytes) -> None:
        """A stream answered as one JSON body: kept until it ends, then read as the events
        of the same answer streamed (a completion), or as an error event."""
        assert self._whole_body is not None
        if received:
            self._whole_body.append(received)
            if sum(map(len, self._whole_body)) > self._parser.max_event_chars:
                raise self._interrupted("a JSON answer to a stream is too large")
            return
        data = b"".join(self._whole_body).decode("utf-8", errors="replace")
        self._whole_body = None
        self._pending.extend(_whole_answer_events(data))

    def _add(self, event: SseEvent) -> str:
        """Fold one event's data in; returns the text it adds to choice 0 (``[DONE]``
        completes the stream and adds none; an event without data is a keep-alive). An
        ``error`` event, or data holding an ``error`` and no choices, interrupts the stream
        with the provider's words."""
        data = event.data
        if not data.strip():
            return ""
        if event.event == "error":
            raise self._interrupted(f"provider error: {_error_words(data)}")
        if data.strip() == DONE:
            self._complete = True
            self._close()
            return ""
        try:
            payload = json.loads(data)
        except ValueError:
            raise self._interrupted("a chunk was not valid JSON") from None
        if isinstance(payload, dict) and "error" in payload and "choices" not in payload:
            raise self._interrupted(f"provider error: {_error_words(data)}")
        try:
            return self.accumulator.add(payload)
        except ValueError:
            raise self._interrupted("a chunk did not have the chunk shape") from None


def _whole_answer_events(data: str) -> list[SseEvent]:
    """The events of a completion sent whole (``data``, its JSON): one chunk holding every
    choice's message as its delta, then ``[DONE]``; anything else is an ``error`` event."""
    try:
        payload = json.loads(data)
    except ValueError:
        payload = None
    if not (isinstance(payload, dict) and isinstance(payload.get("choices"), list)):
        return [SseEvent(data=data or "an empty answer", event="error")]
    choices = [
        {
            "index": choice.get("index"),
            "delta": choice.get("message"),
            "finish_reason": choice.get("finish_reason"),
        }
        for choice in payload["choices"]
        if isinstance(choice, dict)
    ]
    chunk = {key: payload.get(key) for key in ("id", "model", "created")}
    return [SseEvent(data=json.dumps({**chunk, "choices": choices})), SseEvent(data=DONE)]


def _error_words(data: str) -> str:
    """What an error event's data says, read like an error body (docs/provider.md#error-body)."""
    raw = data.encode()
    return provider_message(parse_json(raw), raw) or "no message"


class ChatClient:
    """Chat completions (docs/provider.md, "Chat") with the plan rule applied before sending.

    Non-streamed requests go to ``proxy_url`` when configured (else ``base_url``). Neither kind
    is retried once sent (see :mod:`bot.api.http`); only a connection that could not be made
    fails over to the next address, and a 429 is waited out. ``pacer`` queues requests to the
    configured rate (see :mod:`bot.api.ratelimit`).
    """

    def __init__(
        self,
        transport: HttpTransport,
        keys: KeyPool,
        plan: str,
        pacer: RequestPacer | None = None,
    ) -> None:
        self._transport = transport
        self.keys = keys
        self._plan = plan
        self.pacer = pacer or RequestPacer()
        self.forms = ChatForms()
        """The request forms learnt from the provider's refusals (:mod:`bot.api.chat_forms`)."""

    def check(self, request: ChatRequest) -> None:
        """Raise :class:`InvalidRequest` if the workspace's plan cannot use the model."""
        if not plan_allows(self._plan, request.model):
            allowed = allowed_chat_models(self._plan)
            raise InvalidRequest(
                "model",
                ", ".join(allowed),
                f"model {request.model} needs the Developer plan or above; on the free plan "
                f"use one of {', '.join(allowed)}",
            )

    async def complete(self, request: ChatRequest) -> ChatCompletion:
        """One whole completion (``stream`` is sent as false)."""
        self.check(request)
        body = request.to_body()
        body["stream"] = False

        async def post(sent: dict[str, Any], key: str) -> HttpResult:
            return await self._transport.post(
                CHAT_PATH,
                sent,
                auth=AuthStyle.BEARER,
                safety=CallSafety.CREATE,
                via_proxy=True,
                key=self.keys.secret(key),
            )

        result = await self._send(body, request.model, post)
        try:
            completion = ChatCompletion.model_validate(result.body)
        except ValidationError as error:
            raise InvalidResponse(f"chat completion has an unexpected shape: {error}") from None
        if not completion.choices:
            raise InvalidResponse("chat completion has no choices")
        return completion

    def stream(self, request: ChatRequest) -> ChatStream:
        """A streamed completion; use as ``async with client.stream(req) as s: async for ...``.

        The plan rule is checked here, before anything is sent.
        """
        self.check(request)
        body = request.to_body()
        body["stream"] = True

        async def open_stream(sent: dict[str, Any], key: str) -> StreamResponse:
            return await self._transport.open_stream(
                CHAT_PATH, sent, auth=AuthStyle.BEARER, key=self.keys.secret(key)
            )

        return ChatStream(lambda: self._send(body, request.model, open_stream))

    async def _send(
        self,
        body: dict[str, Any],
        model: str,
        send: Callable[[dict[str, Any], str], Awaitable[SentT]],
    ) -> SentT:
        """``send`` ``body`` in the forms learnt so far (:mod:`bot.api.chat_forms`), paced,
        with a key of the pool (:meth:`bot.api.keys.KeyPool.for_chat`); a refusal of a form
        genbot can change is sent once more in the other form, which is kept once the provider
        accepts it, and a refusal of the key (which takes it out) once more with another key.
        Other refusals are raised by meaning."""
        forms = self.forms
        key = self.keys.for_chat()
        tried = {key}
        changes = 0
        while True:
            await self.pacer.acquire(self._transport.rate_limits.max_wait)
            sent = forms.body(body)
            try:
                answer = await send(sent, key)
            except ApiError as error:
                meant = self.meaning(error, model, key)
                self.keys.observe(key, meant)
                other = self.keys.for_chat() if key_failure(meant) is not None else key
                if other not in tried:
                    key = other
                    tried.add(key)
                    continue
                newer = forms.after(meant, sent) if changes < MAX_FORM_CHANGES else None
                if newer is None:
                    raise meant from None
                if not newer.inline_images and forms.inline_images:
                    self._adopt(newer)
                    raise InlineImagesRefused(str(meant)) from None
                forms = newer
                changes += 1
                continue
            self._adopt(forms)
            self.keys.observe(key, None)
            return answer

    def _adopt(self, forms: ChatForms) -> None:
        """Keep ``forms`` for every later request, saying once what changed."""
        if forms != self.forms:
            log.warning("the provider refused a chat request form: %s", self.forms.changes(forms))
            self.forms = forms

    def meaning(self, error: ApiError, model: str, key: str = "") -> ApiError:
        """A refusal of a request for ``model`` sent with ``key`` as what it means (see
        :mod:`bot.api.chat_errors`)."""
        accepted = (key or (self.keys.names or [""])[0]) in self.keys.accepted
        return chat_refusal(error, model, self._plan, key_accepted=accepted)
