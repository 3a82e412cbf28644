"""Family A client: chat completions, whole or streamed, and the chunk accumulator."""

from __future__ import annotations

import contextlib
import json
import logging
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from types import TracebackType
from typing import Any, TypeVar

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
from bot.api.models_chat import (
    CHAT_MODELS,
    DEVELOPER_PLAN_MODELS,
    AssistantMessage,
    ChatChoice,
    ChatChunk,
    ChatCompletion,
    ChatRequest,
    FunctionCall,
    finish_reason_of,
)
from bot.api.ratelimit import RequestPacer
from bot.api.sse import SseParser, SseTooLarge

CHAT_PATH = "/v1/chat/completions"
DONE = "[DONE]"
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


@dataclass
class ChatAccumulator:
    """Folds stream chunks into per-choice results (text, function call, finish reason);
    choices of ``n`` > 1 are kept apart by their index. A call streamed as ``tool_calls``
    pieces folds like ``function_call`` pieces (the first call only), and finish reason
    ``tool_calls`` is ``function_call`` (docs/provider.md#streamed-function-calls)."""

    id: str = ""
    model: str = ""
    created: int = 0
    _choices: dict[int, ChoiceResult] = field(default_factory=dict)

    def add(self, chunk: ChatChunk) -> None:
        """Fold one chunk in."""
        self.id = self.id or chunk.id
        self.model = self.model or chunk.model
        self.created = self.created or chunk.created
        for part in chunk.choices:
            choice = self._choices.setdefault(part.index, ChoiceResult(part.index))
            delta = part.delta
            if delta.role:
                choice.role = delta.role
            if delta.content:
                choice.text += delta.content
            call = delta.call
            if call is not None:
                name = call.name or ""
                if name.startswith(choice.function_name):
                    choice.function_name = name
                else:
                    choice.function_name += name
                choice.function_arguments += call.arguments or ""
            if part.finish_reason:
                choice.finish_reason = finish_reason_of(part.finish_reason)

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


def _whole_payload(data: str) -> bool:
    """Whether an event's data so far is a whole chunk (a JSON object) or the terminator: then
    it is one event even when no blank line follows (docs/provider.md#sse-framing)."""
    text = data.strip()
    if text == DONE:
        return True
    if not (text.startswith("{") and text.endswith("}")):
        return False
    try:
        json.loads(text)
    except ValueError:
        return False
    return True


class ChatStream:
    """A streamed completion: ``async with`` it, then ``async for chunk in stream``.

    The request is sent when the context is entered (or at the first iteration). Leaving the
    ``async with`` block (normally, by ``break``, an exception or cancellation) closes the
    connection. Iteration ends after ``data: [DONE]``; a stream that ends, stalls longer than
    the idle timeout or breaks before it raises :class:`StreamInterrupted` with the text so far.
    :attr:`accumulator` holds everything received.
    """

    def __init__(self, opener: Callable[[], Awaitable[StreamResponse]]) -> None:
        self._opener = opener
        self._response: StreamResponse | None = None
        self._parser = SseParser(complete=_whole_payload)
        self._pending: list[str] = []
        self._finished = False
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

    async def __anext__(self) -> ChatChunk:
        if self._finished:
            raise StopAsyncIteration
        await self.open()
        try:
            return await self._next_chunk()
        except BaseException:
            await self.aclose()
            raise

    async def aclose(self) -> None:
        """Close the connection; further iteration ends at once."""
        self._finished = True
        if self._response is not None:
            self._response.close()

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

    def _interrupted(self, reason: str) -> StreamInterrupted:
        return StreamInterrupted(reason, self.accumulator.text(), self.accumulator.texts())

    async def _next_chunk(self) -> ChatChunk:
        assert self._response is not None
        while True:
            while self._pending:
                data = self._pending.pop(0)
                if data.strip() == DONE:
                    await self.aclose()
                    raise StopAsyncIteration
                chunk = self._parse(data)
                self.accumulator.add(chunk)
                return chunk
            try:
                received = await self._response.next_bytes()
            except ApiTimeout as error:
                raise self._interrupted(str(error)) from None
            except ConnectionFailed as error:
                raise self._interrupted(f"connection broken ({error})") from None
            if not received:
                with contextlib.suppress(SseTooLarge):
                    self._parser.close()
                raise self._interrupted("stream ended before [DONE]")
            try:
                events = self._parser.feed(received)
            except SseTooLarge as error:
                raise self._interrupted(str(error)) from None
            self._pending.extend(event.data for event in events)

    def _parse(self, data: str) -> ChatChunk:
        try:
            payload = json.loads(data)
        except ValueError:
            raise self._interrupted("a chunk was not valid JSON") from None
        if isinstance(payload, dict) and "error" in payload and "choices" not in payload:
            error = payload["error"]
            message = error.get("message") if isinstance(error, dict) else error
            raise self._interrupted(f"provider error: {message}")
        try:
            return ChatChunk.model_validate(payload)
        except ValidationError:
            raise self._interrupted("a chunk did not have the chunk shape") from None


class ChatClient:
    """Chat completions (docs/provider.md, "Chat") with the plan rule applied before sending.

    Non-streamed requests go to ``proxy_url`` when configured (else ``base_url``). Neither kind
    is retried once sent (see :mod:`bot.api.http`); only a connection that could not be made
    fails over to the next address, and a 429 is waited out. ``pacer`` queues requests to the
    configured rate (see :mod:`bot.api.ratelimit`).
    """

    def __init__(
        self, transport: HttpTransport, plan: str, pacer: RequestPacer | None = None
    ) -> None:
        self._transport = transport
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

        async def post(sent: dict[str, Any]) -> HttpResult:
            return await self._transport.post(
                CHAT_PATH, sent, auth=AuthStyle.BEARER, safety=CallSafety.CREATE, via_proxy=True
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

        async def open_stream(sent: dict[str, Any]) -> StreamResponse:
            return await self._transport.open_stream(CHAT_PATH, sent, auth=AuthStyle.BEARER)

        return ChatStream(lambda: self._send(body, request.model, open_stream))

    async def _send(
        self,
        body: dict[str, Any],
        model: str,
        send: Callable[[dict[str, Any]], Awaitable[SentT]],
    ) -> SentT:
        """``send`` ``body`` in the forms learnt so far (:mod:`bot.api.chat_forms`), paced;
        a refusal of a form genbot can change is sent once more in the other form, which is
        kept once the provider accepts it. Other refusals are raised by meaning."""
        forms = self.forms
        for attempt in range(MAX_FORM_CHANGES + 1):
            await self.pacer.acquire(self._transport.rate_limits.max_wait)
            sent = forms.body(body)
            try:
                answer = await send(sent)
            except ApiError as error:
                meant = self.meaning(error, model)
                newer = forms.after(meant, sent) if attempt < MAX_FORM_CHANGES else None
                if newer is None:
                    raise meant from None
                if not newer.inline_images and forms.inline_images:
                    self._adopt(newer)
                    raise InlineImagesRefused(str(meant)) from None
                forms = newer
                continue
            self._adopt(forms)
            return answer
        raise AssertionError("the last attempt raises or returns")

    def _adopt(self, forms: ChatForms) -> None:
        """Keep ``forms`` for every later request, saying once what changed."""
        if forms != self.forms:
            log.warning("the provider refused a chat request form: %s", self.forms.changes(forms))
            self.forms = forms

    def meaning(self, error: ApiError, model: str) -> ApiError:
        """A refusal of a request for ``model`` as what it means (see
        :mod:`bot.api.chat_errors`)."""
        return chat_refusal(error, model, self._plan, key_accepted=self._transport.key_accepted)
