"""A conversation's turns as one answer sees them: loaded once, counted once, fitted per round.

:func:`load_history` reads only the newest turns that can fit the model's context, by the token
counts stored with every turn (``ConversationStore.conversation_tail``); stored counts are
reused, so only new turns — and the rare turn whose stored count does not apply (vision parts
shown as text, a count of 0) — are tokenized. New turns of the same answer (the user's message,
a function call and its result) are added in memory as they are stored.

What a request carries (:meth:`History.request_turns`):

- an assistant turn with no text and no function call is left out (an answer that was being
  posted when the process stopped, before any text was stored);
- consecutive user turns are merged into one (texts joined by a blank line, an exact repeat
  kept once, vision parts concatenated). They happen when an answer failed — the provider
  refused the stream, the process stopped — or when a picture was not sent to a model that
  cannot see it, and the user wrote again: the model sees one question with everything asked.

:func:`fit` keeps the system prompt and everything from the newest user turn on, then adds older
turns newest first while they fit the model's context with room for the answer.
"""

from __future__ import annotations

import functools
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from bot.api import VISION_MODELS
from bot.features.chat.tokens import (
    CONTEXT_SIZES,
    REPLY_PRIMING_TOKENS,
    FittedHistory,
    context_size,
    count_message,
)
from bot.kernel import UserError, _
from storage import ChatMessage as StoredMessage
from storage import ConversationStore


@dataclass(frozen=True)
class Turn:
    """One request message (the spec's JSON shape) and the prompt tokens it costs."""

    message: dict[str, Any]
    tokens: int


def counted(message: Mapping[str, Any]) -> Turn:
    """A turn for ``message``, tokenized now."""
    return Turn(dict(message), count_message(message))


def parts_as_text(parts: Sequence[Mapping[str, Any]]) -> str:
    """Vision parts written as plain text, for models that take text only."""
    lines: list[str] = []
    for part in parts:
        if part.get("type") == "image_url":
            url = str((part.get("image_url") or {}).get("url", ""))
            shown = url if not url.startswith("data:") else "an inline image"
            lines.append(f"[image: {shown}]")
        else:
            lines.append(str(part.get("text") or ""))
    return "\n".join(line for line in lines if line)


def user_message(
    text: str, parts: Sequence[Mapping[str, Any]] | None, model: str
) -> dict[str, Any]:
    """A user turn as ``model`` takes it: vision parts for a vision model, else text."""
    if parts is None:
        return {"role": "user", "content": text}
    if model in VISION_MODELS:
        return {"role": "user", "content": [dict(part) for part in parts]}
    return {"role": "user", "content": parts_as_text(parts)}


def api_message(message: StoredMessage) -> dict[str, Any]:
    """A stored turn as the chat completion API takes it."""
    api: dict[str, Any] = {
        "role": message.role,
        "content": message.parts if message.parts is not None else message.content,
    }
    if message.name is not None:
        api["name"] = message.name
    if message.function_call is not None:
        api["function_call"] = message.function_call
    return api


def stored_turn(message: StoredMessage, model: str) -> Turn:
    """A stored turn as ``model`` takes it, with its stored count when that count applies."""
    api = api_message(message)
    if message.parts is not None:
        api["content"] = user_message("", message.parts, model)["content"]
        return counted(api)
    if message.token_count > 0:
        return Turn(api, message.token_count)
    return counted(api)


def _is_empty_answer(message: Mapping[str, Any]) -> bool:
    return (
        message.get("role") == "assistant"
        and not message.get("content")
        and not message.get("function_call")
    )


def _as_parts(content: Any) -> list[dict[str, Any]]:
    if isinstance(content, str):
        return [{"type": "text", "text": content}] if content else []
    return [dict(part) for part in content or []]


def _merge(first: Turn, second: Turn) -> Turn:
    earlier, later = first.message.get("content"), second.message.get("content")
    if not earlier:
        return second
    if not later or later == earlier:
        return first
    if isinstance(earlier, str) and isinstance(later, str):
        content: Any = f"{earlier}\n\n{later}"
    else:
        content = [*_as_parts(earlier), *_as_parts(later)]
    return counted({"role": "user", "content": content})


ALTERNATIVE_NAME = "alternative"
"""The ``name`` of a stored assistant turn that is one of several answers, not the reply."""


def is_alternative(message: StoredMessage) -> bool:
    """Whether a stored turn is an alternative answer (never sent to the model)."""
    return message.role == "assistant" and message.name == ALTERNATIVE_NAME


class History:
    """The turns of one conversation for one answer (see the module docstring)."""

    def __init__(
        self, model: str, turns: Iterable[Turn] = (), stored: Iterable[StoredMessage] = ()
    ) -> None:
        self.model = model
        self.turns: list[Turn] = list(turns)
        self.stored: tuple[StoredMessage, ...] = tuple(stored)
        """The stored turns it was read from, set-aside branches' among them included."""

    @classmethod
    def from_stored(cls, stored: Iterable[StoredMessage], model: str) -> History:
        """The history of stored turns (oldest first) as ``model`` takes them; stored
        alternative answers (see :mod:`bot.features.chat.alternatives`), replaced ones
        (:mod:`bot.features.chat.regenerate`) and those of set-aside branches are not part of
        it."""
        stored = tuple(stored)
        kept = (
            m
            for m in stored
            if m.branch is None and not is_alternative(m) and m.state != "replaced"
        )
        return cls(model, (stored_turn(message, model) for message in kept), stored)

    def add(self, message: Mapping[str, Any]) -> Turn:
        """Append a new turn (tokenized now) and return it."""
        turn = counted(message)
        self.turns.append(turn)
        return turn

    def request_turns(self) -> list[Turn]:
        """The turns a request carries: empty answers left out, consecutive user turns
        merged."""
        kept: list[Turn] = []
        for turn in self.turns:
            if _is_empty_answer(turn.message):
                continue
            if kept and turn.message.get("role") == "user" and kept[-1].message["role"] == "user":
                kept[-1] = _merge(kept[-1], turn)
            else:
                kept.append(turn)
        return kept


async def load_history(
    store: ConversationStore, conversation_id: int, model: str, max_tokens: int
) -> History:
    """The newest stored turns that can fit ``max_tokens`` tokens (see the module docstring),
    read with the set-aside branches' turns among them (:attr:`History.stored`)."""
    stored = await store.conversation_tail(
        conversation_id, max_tokens=max(max_tokens, 0), set_aside=True
    )
    return History.from_stored(stored, model)


@functools.lru_cache(maxsize=256)
def system_tokens(system_prompt: str) -> int:
    """Prompt tokens of the system message (cached: the same prompts recur)."""
    return count_message({"role": "system", "content": system_prompt}) if system_prompt else 0


def _newest_user_index(turns: Sequence[Turn]) -> int:
    for index in range(len(turns) - 1, -1, -1):
        if turns[index].message.get("role") == "user":
            return index
    return max(len(turns) - 1, 0)


def too_large(model: str, needed: int, reserve: int, max_tokens: int | None) -> str:
    """Why a request cannot be made: ``max_tokens`` too large for the model's context (with
    the largest value that works), or a message too long for the model."""
    context = context_size(model)
    room = context - needed
    if max_tokens is not None and room >= 1:
        if max_tokens >= context:
            return _(
                "max_tokens {max_tokens} is more than {model}'s whole context of {context} "
                "tokens, which the prompt and the answer share. With this conversation the "
                "largest max_tokens that fits is {room}.",
                max_tokens=max_tokens,
                model=model,
                context=context,
                room=room,
            )
        return _(
            "max_tokens {max_tokens} does not fit: {model}'s context is {context} tokens and "
            "the system prompt and your message take about {needed}, so the largest "
            "max_tokens that fits is {room}.",
            max_tokens=max_tokens,
            model=model,
            context=context,
            needed=needed,
            room=room,
        )
    bigger = [name for name, size in CONTEXT_SIZES.items() if size > context]
    values = {"model": model, "needed": needed, "context": context}
    if room < 1:
        if bigger:
            return _(
                "Your message is too long for {model}: it needs about {needed} tokens and the "
                "model's whole context is {context}. Shorten it or pick a model with a larger "
                "context ({bigger}).",
                bigger=bigger[0],
                **values,
            )
        return _(
            "Your message is too long for {model}: it needs about {needed} tokens and the "
            "model's whole context is {context}. Shorten it.",
            **values,
        )
    values["fit"] = max(context - reserve, 0)
    if bigger:
        return _(
            "Your message is too long for {model}: it needs about {needed} tokens but only "
            "{fit} fit with room for the answer. Shorten it or pick a model with a larger "
            "context ({bigger}).",
            bigger=bigger[0],
            **values,
        )
    return _(
        "Your message is too long for {model}: it needs about {needed} tokens but only "
        "{fit} fit with room for the answer. Shorten it.",
        **values,
    )


def fit(
    model: str,
    system_prompt: str,
    turns: Sequence[Turn],
    *,
    reserve: int,
    max_tokens: int | None,
    extra_tokens: int = 0,
    max_history_tokens: int | None = None,
) -> FittedHistory:
    """The system prompt and the newest turns that fit ``model``'s context with ``reserve``
    tokens left for the answer; the kept history never starts with an assistant or function
    turn. ``extra_tokens`` (the functions offered) count toward ``prompt_tokens``; at most
    ``max_history_tokens`` of older turns are kept (after the provider refused more). A
    request that cannot fit is a :class:`UserError` saying why (see :func:`too_large`)."""
    head = [{"role": "system", "content": system_prompt}] if system_prompt else []
    newest = _newest_user_index(turns)
    required, older = turns[newest:], turns[:newest]
    needed = (
        system_tokens(system_prompt)
        + sum(turn.tokens for turn in required)
        + extra_tokens
        + REPLY_PRIMING_TOKENS
    )
    available = context_size(model) - reserve
    if needed > available:
        raise UserError(too_large(model, needed, reserve, max_tokens))
    used = needed
    kept_from = len(older)
    for index in range(len(older) - 1, -1, -1):
        cost = older[index].tokens
        over_limit = max_history_tokens is not None and used - needed + cost > max_history_tokens
        if used + cost > available or over_limit:
            break
        used += cost
        kept_from = index
    while kept_from < len(older) and older[kept_from].message.get("role") != "user":
        used -= older[kept_from].tokens
        kept_from += 1
    messages: list[Mapping[str, Any]] = [*head, *(turn.message for turn in older[kept_from:])]
    messages += [turn.message for turn in required]
    return FittedHistory(messages, used, kept_from, used - needed)
