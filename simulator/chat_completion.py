"""Building a chat completion and its stream of chunks (docs/provider.md, "Chat")."""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from typing import Any

from simulator.chat_answers import compose_answer
from simulator.chat_functions import choose_function_call
from simulator.chat_tokens import count_tokens, pieces, prompt_tokens, truncate_to_tokens
from simulator.chat_validation import ChatRequest, FunctionCall
from simulator.dialects import DEFAULT, DialectRules

TOKENS_PER_PIECE = 3
_ID_ALPHABET = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"


@dataclass(frozen=True)
class Choice:
    """One answered choice: text ``content`` or a ``function_call`` (then content is None)."""

    index: int
    content: str | None
    function_call: FunctionCall | None
    finish_reason: str

    @property
    def completion_tokens(self) -> int:
        if self.function_call is not None:
            return count_tokens(self.function_call.name) + count_tokens(
                self.function_call.arguments
            )
        return count_tokens(self.content or "")


@dataclass(frozen=True)
class Completion:
    """A whole completion, renderable as one JSON body or as stream chunks."""

    id: str
    created: int
    model: str
    choices: tuple[Choice, ...]
    prompt_tokens: int
    rules: DialectRules = DEFAULT

    def body(self) -> dict[str, Any]:
        """The non-streamed response body."""
        completion_tokens = sum(c.completion_tokens for c in self.choices)
        return {
            "id": self.id,
            "object": "chat.completion",
            "created": self.created,
            "model": self.model,
            "choices": [self._choice_body(c) for c in self.choices],
            "usage": {
                "prompt_tokens": self.prompt_tokens,
                "completion_tokens": completion_tokens,
                "total_tokens": self.prompt_tokens + completion_tokens,
            },
        }

    def chunk(self, index: int, delta: dict[str, Any], finish_reason: str | None) -> bytes:
        """One server-sent event ``data: <chunk JSON>\\n\\n`` (compact JSON, UTF-8; one line
        without the blank line when the dialect frames events so)."""
        chunk = {
            "id": self.id,
            "object": "chat.completion.chunk",
            "created": self.created,
            "model": self.model,
            "choices": [{"index": index, "delta": delta, "finish_reason": finish_reason}],
        }
        text = json.dumps(chunk, separators=(",", ":"), ensure_ascii=False)
        return event_line(text, self.rules)

    def done_event(self) -> bytes:
        """The terminator ``data: [DONE]``, framed like every event."""
        return event_line("[DONE]", self.rules)

    def stream_rounds(self) -> list[list[bytes]]:
        """The stream's events grouped in rounds; round k holds event k of every choice.

        Each choice's events: the opening delta, its content (or arguments) pieces, then an
        empty delta with the finish reason. ``data: [DONE]`` is not included.
        """
        per_choice = [self._choice_events(c) for c in self.choices]
        longest = max(len(events) for events in per_choice)
        return [[events[k] for events in per_choice if k < len(events)] for k in range(longest)]

    def _choice_events(self, choice: Choice) -> list[bytes]:
        call = choice.function_call
        if call is not None and self.rules.function_call_shape == "tool_calls":
            opening: dict[str, Any] = {
                "role": "assistant",
                "content": None,
                "tool_calls": [_tool_call(self.id, call.name, "", opening=True)],
            }
            deltas: list[dict[str, Any]] = [
                {"tool_calls": [_tool_call(self.id, "", piece, opening=False)]}
                for piece in pieces(call.arguments, TOKENS_PER_PIECE)
            ]
        elif call is not None:
            opening = {
                "role": "assistant",
                "content": None,
                "function_call": {"name": call.name, "arguments": ""},
            }
            deltas = [
                {"function_call": {"arguments": piece}}
                for piece in pieces(call.arguments, TOKENS_PER_PIECE)
            ]
        else:
            opening = {"role": "assistant", "content": ""}
            deltas = [
                {"content": piece} for piece in pieces(choice.content or "", TOKENS_PER_PIECE)
            ]
        return [
            self.chunk(choice.index, opening, None),
            *(self.chunk(choice.index, delta, None) for delta in deltas),
            self.chunk(choice.index, {}, self._finish_reason(choice)),
        ]

    def _finish_reason(self, choice: Choice) -> str:
        """The finish reason in the dialect's words: ``tool_calls`` for a call when calls are
        answered so; ``stop`` for a cut answer when the dialect knows no ``length``."""
        reason = choice.finish_reason
        if reason == "length" and not self.rules.length_finish_reason:
            return "stop"
        if reason == "function_call" and self.rules.function_call_shape == "tool_calls":
            return "tool_calls"
        return reason

    def _choice_body(self, choice: Choice) -> dict[str, Any]:
        message: dict[str, Any] = {"role": "assistant", "content": choice.content}
        call = choice.function_call
        if call is not None and self.rules.function_call_shape == "tool_calls":
            message["tool_calls"] = [_tool_call(self.id, call.name, call.arguments, opening=True)]
        elif call is not None:
            message["function_call"] = {"name": call.name, "arguments": call.arguments}
        return {
            "index": choice.index,
            "message": message,
            "finish_reason": self._finish_reason(choice),
        }


def event_line(data: str, rules: DialectRules) -> bytes:
    """One server-sent event: ``data: <data>`` and a blank line, or the line alone."""
    return f"data: {data}\n{chr(10) if rules.sse_blank_lines else ''}".encode()


def _tool_call(completion: str, name: str, arguments: str, *, opening: bool) -> dict[str, Any]:
    """One entry of ``tool_calls``: the first piece carries the call's id, type and name."""
    function: dict[str, Any] = {"arguments": arguments}
    if opening:
        function = {"name": name, "arguments": arguments}
        return {"index": 0, "id": "call_" + completion[-24:], "type": "function",
                "function": function}  # fmt: skip
    return {"index": 0, "function": function}


def completion_id(seed: int, number: int) -> str:
    """``chatcmpl-`` and 29 letters/digits, derived from the seed and the request's number."""
    value = int.from_bytes(hashlib.sha256(f"chat:{seed}:{number}".encode()).digest(), "big")
    letters = []
    for _ in range(29):
        value, digit = divmod(value, len(_ID_ALPHABET))
        letters.append(_ID_ALPHABET[digit])
    return "chatcmpl-" + "".join(letters)


def cut_at_stop(text: str, stops: tuple[str, ...]) -> tuple[str, bool]:
    """``text`` up to (not including) the earliest stop sequence; whether one was found."""
    positions = [p for p in (text.find(s) for s in stops) if p >= 0]
    if not positions:
        return text, False
    return text[: min(positions)], True


def _answer_choice(request: ChatRequest, seed: int, index: int) -> Choice:
    call = choose_function_call(request)
    if call is not None:
        arguments, cut = call.arguments, False
        if request.max_tokens is not None:
            budget = max(0, request.max_tokens - count_tokens(call.name))
            arguments, cut = truncate_to_tokens(call.arguments, budget)
        return Choice(
            index, None, FunctionCall(call.name, arguments), "length" if cut else "function_call"
        )
    text, _ = cut_at_stop(compose_answer(request, seed, index), request.stop)
    cut = False
    if request.max_tokens is not None:
        text, cut = truncate_to_tokens(text, request.max_tokens)
    return Choice(index, text, None, "length" if cut else "stop")


def build_completion(
    request: ChatRequest, seed: int, number: int, created: int, rules: DialectRules = DEFAULT
) -> Completion:
    """The completion of ``request``: ``n`` choices, dated model id, prompt token count, in
    the dialect ``rules``."""
    return Completion(
        id=completion_id(seed, number),
        created=created,
        model=request.answered_model,
        choices=tuple(_answer_choice(request, seed, i) for i in range(request.n)),
        prompt_tokens=prompt_tokens(request),
        rules=rules,
    )
