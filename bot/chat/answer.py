"""Answering a conversation: stream the model's reply through the renderer, run the tools it
calls, store every turn with its platform messages, and record token usage.

One round is one streamed request. When the reply is a function call (``finish_reason`` is
``function_call``), the call and the tool's result are stored as turns and the model is asked
again, at most ``ChatDefaults.max_function_rounds`` times; the last round offers no functions,
so it always ends in text. Streams carry no usage, so tokens are counted with the offline
tokenizer (the same formula the provider bills with).
"""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator
from dataclasses import dataclass

from bot.api import (
    ApiError,
    ChatRequest,
    ChatStream,
    ChoiceResult,
    FunctionCall,
    FunctionDefinition,
    ProviderClient,
    StreamInterrupted,
)
from bot.budget import RenderBudget
from bot.chat.prompting import ChatDefaults, ChatParams, api_turns, build_request, fit
from bot.chat.scoping import Target
from bot.chat.tools import FUNCTIONS, ImageTools, ToolContext, run_tool
from bot.events import Event, Place, RateLimited, Surface, SurfaceError, User
from bot.render import RenderResult, StreamEnd, StreamRenderer
from bot.tokens import count_message, count_text
from storage import Store


@dataclass(frozen=True)
class _Outcome:
    """One round: either a rendered reply or a function call, and its completion tokens."""

    rendered: RenderResult | None
    call: FunctionCall | None
    completion_tokens: int


def _first_choice(stream: ChatStream) -> ChoiceResult | None:
    results = stream.accumulator.results()
    return results[0] if results else None


async def _until_first_output(stream: ChatStream) -> StreamInterrupted | None:
    """Read chunks until the reply shows whether it is text or a function call (or ends);
    returns the interruption that ended the stream early, if any."""
    try:
        async for _ in stream:
            choice = _first_choice(stream)
            if choice is not None and (choice.text or choice.function_name or choice.finish_reason):
                return None
    except StreamInterrupted as error:
        return error
    return None


async def _text_deltas(
    stream: ChatStream, pending: StreamInterrupted | None
) -> AsyncIterator[str | StreamEnd]:
    """The reply's text as deltas (what was read while peeking first), then how it finished."""
    sent = 0
    text = stream.accumulator.text()
    if text:
        yield text
        sent = len(text)
    if pending is not None:
        raise pending
    async for _ in stream:
        text = stream.accumulator.text()
        if len(text) > sent:
            yield text[sent:]
            sent = len(text)
    choice = _first_choice(stream)
    yield StreamEnd(choice.finish_reason if choice else None)


def stored_reply(rendered: RenderResult) -> str:
    """What to keep of a rendered reply: the model's text exactly, or, when it was cut by
    ``max_tokens`` or an interrupted stream, the displayed text with its mark."""
    if rendered.interrupted or rendered.finish_reason == "length":
        return rendered.text
    return rendered.reply


class Answerer:
    """Produces the model's answer to a conversation's newest turn (see the module docstring)."""

    def __init__(
        self,
        store: Store,
        api: ProviderClient,
        budget: RenderBudget,
        defaults: ChatDefaults,
        tools: ImageTools | None = None,
        *,
        final_timeout: float = 60.0,
    ) -> None:
        self.store = store
        self.api = api
        self.budget = budget
        self.defaults = defaults
        self.tools = tools
        self.final_timeout = final_timeout

    def functions(self, *, last: bool = False) -> list[FunctionDefinition] | None:
        """The functions a round offers: none without tools, after the last allowed call, or
        when calls are disabled (``max_function_rounds`` 0)."""
        if self.tools is None or last or self.defaults.max_function_rounds <= 0:
            return None
        return list(FUNCTIONS)

    async def answer(
        self, surface: Surface, target: Target, user: User, params: ChatParams
    ) -> RenderResult:
        """Answer ``target``'s conversation as it is stored; returns the rendered reply."""
        conversation = target.conversation
        context = ToolContext(user, target.place, target.origin)
        rounds = self.defaults.max_function_rounds
        for round_number in range(rounds + 1):
            functions = self.functions(last=round_number == rounds)
            history = await self.store.conversation_history(conversation.id)
            fitted = fit(params, self.defaults, api_turns(history, params.model), functions)
            request = build_request(params, fitted.messages, functions)
            outcome = await self._round(surface, target.place, target.origin, request)
            await self.store.add_usage(
                target.place.platform,
                user.id,
                tokens_prompt=fitted.prompt_tokens,
                tokens_completion=outcome.completion_tokens,
                kind="chat",
            )
            if outcome.call is None or self.tools is None:
                assert outcome.rendered is not None
                await self._store_reply(target, outcome.rendered)
                return outcome.rendered
            await self._run_call(target, outcome.call, context, self.tools)
        raise AssertionError("the last round offers no functions, so it ends in text")

    async def _run_call(
        self, target: Target, call: FunctionCall, context: ToolContext, tools: ImageTools
    ) -> None:
        conversation_id = target.conversation.id
        call_body = {"name": call.name, "arguments": call.arguments}
        call_turn = {"role": "assistant", "content": None, "function_call": call_body}
        await self.store.append_message(
            conversation_id,
            "assistant",
            None,
            function_call=call_body,
            token_count=count_message(call_turn),
        )
        result = await run_tool(tools, call, context)
        result_turn = {"role": "function", "name": call.name, "content": result}
        await self.store.append_message(
            conversation_id,
            "function",
            result,
            name=call.name,
            token_count=count_message(result_turn),
        )

    async def _store_reply(self, target: Target, rendered: RenderResult) -> None:
        content = stored_reply(rendered)
        await self.store.append_message(
            target.conversation.id,
            "assistant",
            content,
            token_count=count_message({"role": "assistant", "content": content}),
            platform_message_ids=[ref.message_id for ref in rendered.messages],
            channel_id=target.place.channel_id,
        )

    async def _round(
        self, surface: Surface, place: Place, origin: Event | None, request: ChatRequest
    ) -> _Outcome:
        stream = self.api.chat.stream(request)
        with contextlib.suppress(RateLimited, SurfaceError):
            await surface.typing(place)
        async with stream:
            pending = await _until_first_output(stream)
            choice = _first_choice(stream)
            if pending is None and choice is not None and choice.function_name:
                try:
                    async for _ in stream:
                        pass
                except StreamInterrupted as error:
                    pending = error
                call = choice.function_call
                if pending is None and choice.finish_reason == "function_call" and call:
                    tokens = count_text(call.name) + count_text(call.arguments)
                    return _Outcome(None, call, tokens)
            renderer = StreamRenderer(
                surface,
                place,
                self.budget,
                origin=origin,
                final_timeout=self.final_timeout,
                interrupt_errors=(ApiError,),
            )
            rendered = await renderer.render(_text_deltas(stream, pending))
        return _Outcome(rendered, None, count_text(rendered.reply))
