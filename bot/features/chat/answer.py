"""Answering a conversation: stream the model's reply through the renderer, run the tools it
calls, store every turn with its platform messages, and record token usage.

Nothing is posted before the row that makes it recoverable is committed: the reply's assistant
turn is stored (empty) before its first message is posted, and every message is linked to it
as soon as it is posted, so a reply to a partly posted answer — after a failure, a cancellation
or a restart — still finds its conversation. The text the messages show is stored at every
write (the turn ``streaming``); the final text replaces it at the end. An answer whose process
ended before that is settled by a process that outlives it
(:mod:`bot.features.chat.interrupted`).

One round is one streamed request, or one whole request when streaming is off for the
channel (``[chat] stream``, ``/settings stream``; non-streamed calls go through ``[api]
proxy_url``). With ``n`` > 1 the first choice is the reply and every choice is offered to pick
from (:mod:`bot.features.chat.alternatives`). When the reply is a function call (``finish_reason``
is ``function_call``), the call and the tool's result are stored as turns and the model is asked
again, at most ``ChatDefaults.max_function_rounds`` times; the last round offers no functions,
so it always ends in text. A whole answer's tokens are the provider's ``usage``; streams carry
none, so their tokens are counted with the offline tokenizer (the simulator's formula; the
provider documents none).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from typing import Any, Protocol, TypeVar

from bot.api import (
    ApiError,
    ChatCompletion,
    ChatRequest,
    ChatStream,
    ChoiceResult,
    FunctionCall,
    FunctionDefinition,
    InlineImagesRefused,
    ProviderClient,
    StreamInterrupted,
)
from bot.api.errors import ContextTooLong
from bot.api.ratelimit import observe_waits
from bot.features.chat.alternatives import offer_alternatives
from bot.features.chat.controls import final_buttons, live_buttons, retire_previous
from bot.features.chat.history import History, Turn
from bot.features.chat.image_links import ImageLinks
from bot.features.chat.renderer import RenderResult, StreamEnd, StreamRenderer, TextDeltas
from bot.features.chat.replies import StoredReply, WaitNotice
from bot.features.chat.requests import ChatDefaults, ChatParams, build_request, fit
from bot.features.chat.scoping import Target
from bot.features.chat.stops import StopRequests
from bot.features.chat.tokens import FittedHistory, count_functions, count_text
from bot.features.chat.tools import FUNCTIONS, ImageTools, ToolContext, run_tool
from bot.features.provider_waits import ShownWait
from bot.kernel import Place, User, UserError, _, metrics
from bot.outbox import Activity, Outbox, WritePolicy
from storage import AnswerFeedback, ConversationStore, UsageLedger

log = logging.getLogger(__name__)
T = TypeVar("T")


@dataclass(frozen=True)
class _Outcome:
    """One round: either a rendered reply or a function call, and its completion tokens."""

    rendered: RenderResult | None
    call: FunctionCall | None
    completion_tokens: int
    answers: tuple[str, ...] = ()
    """Every choice's text when the request asked for several (``n`` > 1), the reply first."""
    turn_id: int = 0
    """The stored assistant turn of a rendered reply."""
    prompt_tokens: int | None = None
    """The prompt tokens the provider counted, when it said (a whole answer's ``usage``)."""


class _WholeText:
    """A reply that arrived whole (not streamed), read as :class:`TextDeltas`."""

    def __init__(self, text: str, end: StreamEnd) -> None:
        self._left: list[str | StreamEnd] = [text, end]
        self.ended = asyncio.Event()
        self.ended.set()

    async def wait(self) -> None:
        return

    def read_nowait(self) -> list[str | StreamEnd]:
        left, self._left = self._left, []
        return left


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


@dataclass(frozen=True)
class _Asked:
    """One round's request: whom it answers, its model, its prompt tokens."""

    user: User
    model: str
    prompt_tokens: int


def answer_usage(turn_id: int) -> str:
    """The key of the usage recorded for the answer stored as turn ``turn_id`` (the ledger's
    ``job_id``): its completion tokens are set on it at the end, or when it is settled."""
    return f"chat-answer:{turn_id}"


def stored_reply(rendered: RenderResult) -> str:
    """What to keep of a rendered reply: the model's text exactly, or, when it was cut by
    ``max_tokens`` or an interrupted stream, the displayed text with its mark."""
    if rendered.interrupted or rendered.finish_reason == "length":
        return rendered.text
    return rendered.reply


@dataclass(frozen=True)
class AnswerStorage:
    """What answering uses: the conversation's turns, the usage ledger and the answers'
    ratings (None: controls drawn again show none)."""

    conversations: ConversationStore
    ledger: UsageLedger
    feedback: AnswerFeedback | None = None


class ScreensAnswers(Protocol):
    """What moderates an answer as it streams (moderation)."""

    async def screened(self, place: Place, deltas: TextDeltas) -> TextDeltas:
        """``deltas`` as they may be shown in ``place``."""
        ...

    async def kept_answers(self, place: Place, texts: Sequence[str]) -> tuple[tuple[str, ...], str]:
        """The other answers ``texts`` that may be offered in ``place``, and a notice for those
        withheld ("" when none was)."""
        ...


class Answerer:
    """Produces the model's answer to a conversation's newest turn (see the module docstring)."""

    def __init__(
        self,
        store: AnswerStorage,
        api: ProviderClient,
        outbox: Outbox,
        defaults: ChatDefaults,
        tools: ImageTools | None = None,
        *,
        final_timeout: float = 60.0,
        image_links: ImageLinks | None = None,
        moderation: ScreensAnswers | None = None,
        stops: StopRequests | None = None,
    ) -> None:
        self.store = store
        self.stops = stops or StopRequests()
        self.moderation = moderation
        self.api = api
        self.outbox = outbox
        self.defaults = defaults
        self.tools = tools
        self.final_timeout = final_timeout
        self.image_links = image_links or ImageLinks(None)
        offered = self.functions()
        self._function_tokens = count_functions([f.to_body() for f in offered]) if offered else 0
        self._prompt_ceilings: dict[str, int] = {}
        """Model → prompt tokens (as genbot counts them) above which the provider refused a
        request as too long for the context: later requests are trimmed under it up front."""

    def functions(self, *, last: bool = False) -> list[FunctionDefinition] | None:
        """The functions a round offers: none without tools, after the last allowed call, or
        when calls are disabled (``max_function_rounds`` 0)."""
        if self.tools is None or last or self.defaults.max_function_rounds <= 0:
            return None
        return list(FUNCTIONS)

    def function_tokens(self, *, last: bool = False) -> int:
        """Prompt tokens of the functions a round offers."""
        return self._function_tokens if self.functions(last=last) else 0

    async def answer(
        self, target: Target, user: User, params: ChatParams, history: History
    ) -> RenderResult:
        """Answer ``target``'s conversation, whose stored turns ``history`` holds (turns added
        while answering are appended to it); returns the rendered reply. The "thinking"
        status shown while waiting for the model is cleared when it is done."""
        thought = Activity("thinking", target.origin, ended=True)
        try:
            rendered = await self._answer(target, user, params, history)
        except Exception:
            await self.outbox.write(target.place, thought, WritePolicy.BEST_EFFORT)
            raise
        await self.outbox.write(target.place, thought, WritePolicy.BEST_EFFORT)
        return rendered

    async def _answer(
        self, target: Target, user: User, params: ChatParams, history: History
    ) -> RenderResult:
        context = ToolContext(user, target.place, target.origin)
        rounds = self.defaults.max_function_rounds
        for round_number in range(rounds + 1):
            last = round_number == rounds
            functions = self.functions(last=last)
            turns, extra = history.request_turns(), self.function_tokens(last=last)
            fitted = self._fit(params, turns, extra)
            request = await self._request(params, fitted, functions)
            try:
                outcome = await self._round(target, request, user, params, fitted)
            except InlineImagesRefused:
                request = await self._request(params, fitted, functions)
                outcome = await self._round(target, request, user, params, fitted)
            except ContextTooLong as refused:
                fitted = self._shorter(params, turns, extra, fitted, refused)
                request = await self._request(params, fitted, functions)
                outcome = await self._round(target, request, user, params, fitted)
            prompt_tokens = (
                fitted.prompt_tokens if outcome.prompt_tokens is None else outcome.prompt_tokens
            )
            if outcome.turn_id:
                await self.store.ledger.complete_usage(
                    answer_usage(outcome.turn_id),
                    outcome.completion_tokens,
                    tokens_prompt=outcome.prompt_tokens,
                )
            else:
                await self.store.ledger.add_usage(
                    target.place.platform,
                    user.id,
                    tokens_prompt=prompt_tokens,
                    tokens_completion=outcome.completion_tokens,
                    kind="chat",
                )
            metrics.chat_tokens(prompt_tokens, outcome.completion_tokens)
            if outcome.call is None or self.tools is None:
                assert outcome.rendered is not None
                await self._retire_previous(target, outcome.turn_id, history)
                others, withheld = outcome.answers[1:], ""
                if self.moderation is not None and others:
                    others, withheld = await self.moderation.kept_answers(target.place, others)
                if others or withheld:
                    await offer_alternatives(
                        self.store.conversations,
                        self.outbox,
                        target,
                        outcome.turn_id,
                        (outcome.rendered.reply, *others),
                        withheld=withheld,
                    )
                return outcome.rendered
            await self._run_call(target, outcome.call, context, self.tools, history)
        raise AssertionError("the last round offers no functions, so it ends in text")

    async def _request(
        self,
        params: ChatParams,
        fitted: FittedHistory,
        functions: list[FunctionDefinition] | None,
    ) -> ChatRequest:
        """The request for ``fitted``; its inline images as links once the provider refused
        them inline (:mod:`bot.features.chat.image_links`)."""
        messages: list[dict[str, Any]] = [dict(message) for message in fitted.messages]
        if not self.api.chat.forms.inline_images:
            messages = await self.image_links.linked(messages)
        return build_request(params, messages, functions)

    def _fit(self, params: ChatParams, turns: list[Turn], extra: int) -> FittedHistory:
        """The request's turns, trimmed under the context the provider showed for the model."""
        fitted = fit(params, self.defaults, turns, extra)
        ceiling = self._prompt_ceilings.get(params.model)
        if ceiling is None or fitted.prompt_tokens <= ceiling or fitted.history_tokens <= 0:
            return fitted
        kept = max(fitted.history_tokens - (fitted.prompt_tokens - ceiling), 0)
        return fit(params, self.defaults, turns, extra, max_history_tokens=kept)

    def _shorter(
        self,
        params: ChatParams,
        turns: list[Turn],
        extra: int,
        fitted: FittedHistory,
        refused: ContextTooLong,
    ) -> FittedHistory:
        """The request without older turns — at least half of them, and as many as the
        provider said it was over by, plus a tenth — after it was refused as too long for the
        model; :class:`UserError` when the message alone was refused."""
        if fitted.history_tokens <= 0:
            raise UserError(
                _(
                    "Your message is too long for {model}: the service refused it as longer "
                    "than the model's context. Shorten it, or pick a model with a larger "
                    "context.",
                    model=params.model,
                )
            )
        log.info("the provider refused the context as too long (%s); trimming", refused)
        over = refused.excess or 0
        ceiling = fitted.prompt_tokens - (over + over // 10 + 16 if over else 1)
        known = self._prompt_ceilings.get(params.model, ceiling)
        self._prompt_ceilings[params.model] = min(known, ceiling)
        cut = max(fitted.history_tokens // 2 + 1, over + over // 10 + 16)
        kept = max(fitted.history_tokens - cut, 0)
        return fit(params, self.defaults, turns, extra, max_history_tokens=kept)

    async def _run_call(
        self,
        target: Target,
        call: FunctionCall,
        context: ToolContext,
        tools: ImageTools,
        history: History,
    ) -> None:
        conversation_id = target.conversation.id
        call_body = {"name": call.name, "arguments": call.arguments}
        call_turn = history.add({"role": "assistant", "content": None, "function_call": call_body})
        await self.store.conversations.append_message(
            conversation_id,
            "assistant",
            None,
            function_call=call_body,
            token_count=call_turn.tokens,
        )
        result = await run_tool(tools, call, context)
        result_turn = history.add({"role": "function", "name": call.name, "content": result})
        await self.store.conversations.append_message(
            conversation_id,
            "function",
            result,
            name=call.name,
            token_count=result_turn.tokens,
        )

    async def _round(
        self,
        target: Target,
        request: ChatRequest,
        user: User,
        params: ChatParams,
        fitted: FittedHistory,
    ) -> _Outcome:
        thinking = Activity("thinking", target.origin)
        await self.outbox.write(target.place, thinking, WritePolicy.BEST_EFFORT)
        asked = _Asked(user, request.model, fitted.prompt_tokens)
        if not params.stream:
            completion = await self._waiting(target, self.api.chat.complete(request))
            return await self._whole(target, completion, asked)
        return await self._streamed(target, self.api.chat.stream(request), asked)

    async def _waiting(self, target: Target, call: Awaitable[T]) -> T:
        """``call``'s result; rate-limit waits meanwhile are shown (:class:`WaitNotice`), and
        once it returns or fails the notice says which."""
        notice = WaitNotice(self.outbox, target)
        shown = ShownWait(notice.write)
        through = False
        try:
            with observe_waits(shown):
                result = await call
            through = True
            return result
        finally:
            await shown.close()
            await notice.finish(through=through)

    async def _whole(self, target: Target, completion: ChatCompletion, asked: _Asked) -> _Outcome:
        """A non-streamed answer: a function call, or the text rendered at once. Its tokens
        are the provider's ``usage`` when it gives one, else counted here."""
        first = completion.choices[0]
        call = first.message.function_call
        usage = completion.usage
        if usage is not None and usage.prompt_tokens <= 0 and usage.completion_tokens <= 0:
            usage = None
        prompt = usage.prompt_tokens if usage is not None else None
        if call is not None and call.name and first.finish_reason != "length":
            counted = count_text(call.name) + count_text(call.arguments)
            tokens = usage.completion_tokens if usage is not None else counted
            return _Outcome(None, call, tokens, prompt_tokens=prompt)
        answers = tuple(choice.message.content or "" for choice in completion.choices)
        finish = StreamEnd(first.finish_reason)
        whole = _WholeText(answers[0], finish)
        rendered, turn_id = await self._render(target, whole, asked)
        counted = sum(count_text(answer) for answer in answers)
        tokens = usage.completion_tokens if usage is not None else counted
        return _Outcome(rendered, None, tokens, answers, turn_id, prompt)

    async def _streamed(self, target: Target, stream: ChatStream, asked: _Asked) -> _Outcome:
        await self._waiting(target, stream.open())
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
                if pending is None and choice.calls_function and call:
                    tokens = count_text(call.name) + count_text(call.arguments)
                    return _Outcome(None, call, tokens)
            rendered, turn_id = await self._render(target, stream, asked, stream.stop)
        answers = (rendered.reply, *(c.text for c in stream.accumulator.results()[1:]))
        tokens = sum(count_text(answer) for answer in answers)
        return _Outcome(rendered, None, tokens, answers, turn_id)

    async def _render(
        self,
        target: Target,
        deltas: TextDeltas,
        asked: _Asked,
        stop: Callable[[], None] | None = None,
    ) -> tuple[RenderResult, int]:
        """Render the reply with its turn stored first: each posted message is linked to the
        turn as soon as it is posted, the text shown stored at each write, the final text at
        the end. A reply that never got posted leaves no turn behind. The usage of its request
        is recorded with its prompt tokens as it begins (:func:`answer_usage`; the completion
        tokens once it is done, or by whoever settles it). A streamed reply (``stop``
        ends it) carries ⏹ Stop while it streams; every reply its controls once complete
        (:mod:`bot.features.chat.controls`)."""
        if self.moderation is not None:
            deltas = await self.moderation.screened(target.place, deltas)
        user = asked.user
        reply = StoredReply(self.store.conversations, target)
        await reply.begin(asked.model, user.id)
        await self.store.ledger.add_usage(
            target.place.platform,
            user.id,
            tokens_prompt=asked.prompt_tokens,
            kind="chat",
            job_id=answer_usage(reply.turn_id),
        )
        conversation_id = target.conversation.id
        live = live_buttons(conversation_id, reply.turn_id) if stop is not None else ()
        renderer = StreamRenderer(
            self.outbox,
            target.place,
            origin=target.origin,
            final_timeout=self.final_timeout,
            interrupt_errors=(ApiError,),
            on_posted=reply.posted,
            on_shown=reply.shown,
            recipient=user,
            live_buttons=live,
            final_buttons=final_buttons(conversation_id, reply.turn_id),
        )
        try:
            with self.stops.streaming(reply.turn_id, stop) if stop else contextlib.nullcontext():
                rendered = await renderer.render(deltas)
        except BaseException:
            await reply.abandon(renderer.result)
            raise
        await reply.finish(stored_reply(rendered), stopped=rendered.stopped)
        return rendered, reply.turn_id

    async def _retire_previous(self, target: Target, turn_id: int, history: History) -> None:
        """Take 🔁 off the answer shown before turn ``turn_id``, found among the turns
        ``history`` was read from when they hold it; a failure is logged."""
        try:
            await retire_previous(
                self.store.conversations,
                self.store.feedback,
                self.outbox,
                target.place,
                target.conversation.id,
                turn_id,
                read=history.stored,
            )
        except Exception as error:
            log.warning("could not take 🔁 off the answer before turn %d: %r", turn_id, error)
