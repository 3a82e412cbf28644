"""The first chat engine's history fit (``fit_history``), kept as the reference that
:func:`bot.features.chat.history.fit` is compared against (tests/bot/features/chat/test_history.py):
the newest turns that fit a model's context, the system prompt and the newest user turn always
kept."""

from __future__ import annotations

from collections.abc import Sequence

from bot.features.chat.tokens import (
    CONTEXT_SIZES,
    ChatMessage,
    FittedHistory,
    context_size,
    count_message,
    count_messages,
)


class TurnTooLarge(ValueError):
    """The system prompt and the newest user turn alone leave no room for the answer.

    ``str(error)`` is a short sentence for the user.
    """

    def __init__(self, model: str, needed: int, available: int) -> None:
        self.model = model
        self.needed = needed
        self.available = available
        bigger = [m for m, size in CONTEXT_SIZES.items() if size > context_size(model)]
        hint = f" or pick a model with a larger context ({bigger[0]})" if bigger else ""
        super().__init__(
            f"Your message is too long for {model}: it needs about {needed} tokens but only "
            f"{available} fit with room for the answer. Shorten it{hint}."
        )


def _newest_user_index(turns: Sequence[ChatMessage]) -> int:
    for index in range(len(turns) - 1, -1, -1):
        if turns[index].get("role") == "user":
            return index
    return max(len(turns) - 1, 0)


def fit_history(
    system: str | ChatMessage | None,
    turns: Sequence[ChatMessage],
    model: str,
    reserve_for_answer: int,
    *,
    extra_tokens: int = 0,
) -> FittedHistory:
    """Keep the newest turns that fit ``model``'s context with ``reserve_for_answer`` to spare.

    The system prompt and everything from the newest user turn on (a function call and its
    result included) are always kept; older turns are dropped oldest first, and the kept history
    never starts with an assistant or function message. ``extra_tokens`` counts what else the
    request carries (``count_functions(functions)``); it is included in ``prompt_tokens``.
    Raises :class:`TurnTooLarge` when the kept part alone does not fit.
    """
    available = context_size(model) - reserve_for_answer
    head: list[ChatMessage] = []
    if isinstance(system, str):
        head = [{"role": "system", "content": system}] if system else []
    elif system is not None:
        head = [system]
    newest = _newest_user_index(turns)
    required = list(turns[newest:])
    older = list(turns[:newest])
    used = count_messages([*head, *required]) + extra_tokens
    if used > available:
        raise TurnTooLarge(model, used, max(available, 0))
    kept_from = len(older)
    for index in range(len(older) - 1, -1, -1):
        cost = count_message(older[index])
        if used + cost > available:
            break
        used += cost
        kept_from = index
    while kept_from < len(older) and older[kept_from].get("role") != "user":
        used -= count_message(older[kept_from])
        kept_from += 1
    messages = [*head, *older[kept_from:], *required]
    return FittedHistory(messages, used, kept_from)
