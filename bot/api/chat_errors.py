"""Chat refusals by meaning, where the API documentation leaves the statuses open.

The documentation lists 401 for an incorrect key and says ``llm-4*`` models need the Developer
plan, without saying how a plan refusal looks. So for a chat request:

- 403 is a plan or permission refusal of the model (:class:`ModelNotAllowed`);
- 401 for an ``llm-4*`` model is one too when the provider's message speaks of a plan, a model
  or access, or when this key has already been accepted by the provider; otherwise it is the key
  (:class:`AuthenticationError`);
- 400 naming the context, tokens or length is :class:`ContextTooLong` (the chat engine trims
  older turns and tries once more).

See docs/provider.md#plan-refusal and docs/provider.md#context-sizes for these assumptions and
how they degrade.
"""

from __future__ import annotations

import re

from bot.api.errors import (
    ApiError,
    AuthenticationError,
    BadRequest,
    ContextTooLong,
    ModelNotAllowed,
    PermissionDenied,
)
from bot.api.models_chat import DEVELOPER_PLAN_MODELS

_PLAN_WORDS = re.compile(r"\b(plan|model|access|permission|upgrade|subscription)", re.IGNORECASE)
_CONTEXT_WORDS = re.compile(
    r"context|too many tokens|maximum (?:number of )?tokens|token limit|tokens? exceed"
    r"|(?:prompt|input|message|messages|request|conversation) (?:is |are )?too long",
    re.IGNORECASE,
)
_CONTEXT_CODES = frozenset({"context_length_exceeded", "string_above_max_length"})
_LIMIT = re.compile(r"(?:context length|context|limit) (?:is|of) (\d+) tokens", re.IGNORECASE)
_USED = re.compile(r"(?:resulted in|requested|have|got) (\d+) tokens", re.IGNORECASE)


def _error_code(body: object) -> str:
    if isinstance(body, dict):
        error = body.get("error")
        if isinstance(error, dict) and isinstance(error.get("code"), str):
            return str(error["code"])
        if isinstance(body.get("code"), str):
            return str(body["code"])
    return ""


def is_context_refusal(error: BadRequest) -> bool:
    """Whether a 400 says the request is longer than the model's context."""
    if _error_code(error.body) in _CONTEXT_CODES:
        return True
    return bool(_CONTEXT_WORDS.search(error.provider_message))


def excess_tokens(provider_message: str) -> int | None:
    """By how many tokens a refused prompt was too long, when the message gives the limit and
    the count (``maximum context length is 4097 tokens … resulted in 5000 tokens``)."""
    limit, used = _LIMIT.search(provider_message), _USED.search(provider_message)
    if limit is None or used is None:
        return None
    return max(int(used.group(1)) - int(limit.group(1)), 0)


def chat_refusal(error: ApiError, model: str, plan: str, *, key_accepted: bool) -> ApiError:
    """``error`` (raised for a chat request with ``model``) as what it means (see the module
    docstring); other errors are returned unchanged."""
    if isinstance(error, PermissionDenied):
        return ModelNotAllowed(model, plan, error.provider_message, 403)
    about_the_plan = key_accepted or bool(
        _PLAN_WORDS.search(getattr(error, "provider_message", ""))
    )
    if isinstance(error, AuthenticationError) and model in DEVELOPER_PLAN_MODELS and about_the_plan:
        return ModelNotAllowed(model, plan, error.provider_message, 401)
    if isinstance(error, BadRequest) and is_context_refusal(error):
        return ContextTooLong(model, error.provider_message, excess_tokens(error.provider_message))
    return error
