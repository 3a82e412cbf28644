"""``POST /v1/chat/completions``: auth, plan gating, validation, JSON or SSE answers, cut streams.

Rules are documented in ``simulator/CHAT.md``; the pieces live in ``chat_validation`` (request
rules), ``chat_answers`` / ``chat_functions`` (what the simulated model says) and
``chat_completion`` (response and chunk shapes).
"""

from __future__ import annotations

import asyncio
import itertools
import json
import math
from collections.abc import Iterator
from typing import Any

from aiohttp import web

from simulator.chat_completion import Completion, build_completion
from simulator.chat_tokens import prompt_tokens
from simulator.chat_validation import ChatRequestError, validate_chat_request
from simulator.state import STATE, Account, SimulatorState, bearer_key

CHAT_PATH = "/v1/chat/completions"
PIECE_DELAY_SECONDS = 0.02
MINUTE = 60.0
COMPLETION_COUNTER: web.AppKey[Iterator[int]] = web.AppKey("genbot_simulator_chat_counter")
_UNPARSABLE = object()


def add_chat_routes(app: web.Application) -> None:
    """Register ``POST /v1/chat/completions`` on ``app`` (which must already hold ``STATE``)."""
    app[COMPLETION_COUNTER] = itertools.count(1)
    app.router.add_post(CHAT_PATH, chat_completions)


def error_response(
    status: int,
    message: str,
    param: str | None = None,
    *,
    error_type: str = "invalid_request_error",
    code: str | None = None,
) -> web.Response:
    """``{"error": {"message", "type", "param", "code"}}`` with ``status``."""
    error = {"message": message, "type": error_type, "param": param, "code": code}
    return web.json_response({"error": error}, status=status)


class _Refused(Exception):
    def __init__(self, response: web.Response) -> None:
        super().__init__(response.status)
        self.response = response


async def _read_json(request: web.Request) -> Any:
    raw = await request.read()
    try:
        return json.loads(raw)
    except ValueError:
        return _UNPARSABLE


def _completion_for(request: web.Request, state: SimulatorState, body: Any) -> Completion:
    account = state.account_for(bearer_key(request))
    if account is None:
        raise _Refused(
            error_response(
                401,
                "Incorrect or missing API key. Send the header 'Authorization: Bearer <API_KEY>'.",
                code="invalid_api_key",
            )
        )
    if body is _UNPARSABLE:
        raise _Refused(error_response(400, "The request body is not valid JSON."))
    try:
        chat = validate_chat_request(body, state.config.rules)
    except ChatRequestError as error:
        raise _Refused(error_response(400, error.message, error.param)) from None
    limited = _rate_limited(state, account)
    if limited is not None:
        raise _Refused(limited)
    context = state.config.context_tokens
    if context > 0 and (used := prompt_tokens(chat)) > context:
        raise _Refused(
            error_response(
                400,
                f"This model's maximum context length is {context} tokens. However, your "
                f"messages resulted in {used} tokens. Please reduce the length of the messages.",
                "messages",
                code="context_length_exceeded",
            )
        )
    if chat.model.startswith("llm-4") and account.plan == "free":
        raise _Refused(
            error_response(
                state.config.rules.plan_refusal_status,
                f"The model {chat.model} requires the Developer plan or above; "
                "this API key is on the free plan.",
                "model",
                error_type="permission_error",
                code="model_not_available",
            )
        )
    if state.config.chat_rpm > 0:
        account.chat_times.append(state.now())
    counter = request.app[COMPLETION_COUNTER]
    number = next(counter)
    return build_completion(chat, state.config.seed, number, int(state.now()), state.config.rules)


def _rate_limited(state: SimulatorState, account: Account) -> web.Response | None:
    """A 429 with ``Retry-After`` (whole seconds) when the key already made ``chat_rpm``
    answered requests within the last minute (× time scale). Nothing is counted here: a request
    is counted once it is answered (refused requests are not)."""
    limit = state.config.chat_rpm
    if limit <= 0:
        return None
    now = state.now()
    window = MINUTE * state.config.time_scale if state.config.time_scale > 0 else MINUTE
    account.chat_times = [t for t in account.chat_times if t > now - window]
    if len(account.chat_times) < limit:
        return None
    wait = account.chat_times[0] + window - now
    response = error_response(
        429,
        f"Rate limit reached for requests: {limit} per minute. Try again later.",
        error_type="requests",
        code="rate_limit_exceeded",
    )
    response.headers["Retry-After"] = str(max(1, math.ceil(wait)))
    return response


async def chat_completions(request: web.Request) -> web.StreamResponse:
    """Answer one chat completion request (docs/provider.md, "Chat").

    The fault middleware logs the request and draws its fault; ``roll_fault`` hands this handler
    that draw when it is ``cut_stream`` (only streamed requests can get it).
    """
    state = request.app[STATE]
    body = await _read_json(request)
    try:
        completion = _completion_for(request, state, body)
    except _Refused as refused:
        return refused.response
    if not (isinstance(body, dict) and body.get("stream") is True):
        return web.json_response(completion.body())
    cut = state.roll_fault(("cut_stream",)) == "cut_stream"
    delay = PIECE_DELAY_SECONDS * state.config.time_scale
    return await _stream(request, completion, delay, cut=cut)


async def _stream(
    request: web.Request, completion: Completion, delay: float, *, cut: bool
) -> web.StreamResponse:
    """Send the chunks as server-sent events; when ``cut``, drop the connection halfway."""
    response = web.StreamResponse(
        headers={"Content-Type": "text/event-stream", "Cache-Control": "no-cache"}
    )
    await response.prepare(request)
    rounds = completion.stream_rounds()
    cut_after = max(1, (len(rounds) - 1) // 2)
    counted = request.app[STATE].stream_bytes
    stream = len(counted)
    counted.append(0)
    for number, events in enumerate(rounds):
        if cut and number == cut_after:
            if request.transport is not None:
                request.transport.close()
            return response
        if number > 0 and delay > 0:
            await asyncio.sleep(delay)
        body = b"".join(events)
        if request.transport is None or request.transport.is_closing():
            return response
        try:
            await response.write(body)
        except ConnectionError:
            return response
        counted[stream] += len(body)
    await response.write(completion.done_event())
    await response.write_eof()
    return response
