"""Validation of chat messages and their content (message shape, vision arrays)."""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from simulator.dialects import DialectRules

VISION_MODEL = "llm-4-vision-preview"
ROLES = ("system", "user", "assistant", "function")
IMAGE_DETAILS = ("low", "high", "auto")
NAME_PATTERN = re.compile(r"^[A-Za-z0-9_-]{1,64}$")
_MESSAGE_FIELDS = frozenset({"role", "content", "name", "function_call"})


class ChatRequestError(Exception):
    """A request body that breaks a documented request rule; ``param`` names the field."""

    def __init__(self, message: str, param: str | None) -> None:
        super().__init__(message)
        self.message = message
        self.param = param


@dataclass(frozen=True)
class FunctionCall:
    """A function call made by the assistant: ``arguments`` is JSON text."""

    name: str
    arguments: str


@dataclass(frozen=True)
class ChatMessage:
    """One validated conversation message; ``text`` joins the text parts of array content."""

    role: str
    text: str | None
    image_urls: tuple[str, ...] = ()
    text_parts: tuple[str, ...] = ()
    name: str | None = None
    function_call: FunctionCall | None = None


def validate_messages(messages: Any, model: str, rules: DialectRules) -> tuple[ChatMessage, ...]:
    """Check the ``messages`` array (roles, names, content types, calls) for ``model`` in the
    dialect ``rules`` (``function_role``: the ``function`` role and ``name`` exist;
    ``data_urls``: images may be ``data:`` URLs)."""
    if messages is None:
        raise ChatRequestError("You must provide 'messages'.", "messages")
    if not isinstance(messages, list) or not messages:
        raise ChatRequestError("'messages' must be a non-empty array.", "messages")
    return tuple(
        _validate_message(m, f"messages[{i}]", model, rules) for i, m in enumerate(messages)
    )


def _validate_message(message: Any, param: str, model: str, rules: DialectRules) -> ChatMessage:
    if not isinstance(message, dict):
        raise ChatRequestError(f"'{param}' must be an object with 'role' and 'content'.", param)
    role = message.get("role")
    roles = ROLES if rules.function_role else tuple(r for r in ROLES if r != "function")
    if role not in roles:
        raise ChatRequestError(
            f"'{param}.role' must be one of {', '.join(roles)}, got {role!r}.", f"{param}.role"
        )
    fields = _MESSAGE_FIELDS if rules.function_role else _MESSAGE_FIELDS - {"name"}
    unknown = sorted(set(message) - fields)
    if unknown:
        raise ChatRequestError(f"Unknown field '{unknown[0]}' in '{param}'.", param)
    name = message.get("name")
    if name is not None and (not isinstance(name, str) or not NAME_PATTERN.match(name)):
        raise ChatRequestError(
            f"'{param}.name' must be 1 to 64 letters, digits, '_' or '-'.", f"{param}.name"
        )
    if role == "function" and name is None:
        raise ChatRequestError(
            f"'{param}.name' is required for role 'function' (the function's name).",
            f"{param}.name",
        )
    function_call = _validate_message_function_call(message, role, param)
    if "content" not in message:
        raise ChatRequestError(f"'{param}.content' is required.", f"{param}.content")
    content = message["content"]
    if content is None:
        if function_call is None:
            raise ChatRequestError(
                f"'{param}.content' may be null only in an assistant message with a function_call.",
                f"{param}.content",
            )
        return ChatMessage(role, None, name=name, function_call=function_call)
    if isinstance(content, str):
        text_parts = (content,)
        return ChatMessage(role, content, (), text_parts, name, function_call)
    if isinstance(content, list):
        if model != VISION_MODEL:
            raise ChatRequestError(
                f"'{param}.content' is an array, which only {VISION_MODEL} accepts; "
                f"send a string to {model}.",
                f"{param}.content",
            )
        if role not in ("user", "system"):
            raise ChatRequestError(
                f"'{param}.content' may be an array only in user or system messages.",
                f"{param}.content",
            )
        texts, urls = _validate_content_parts(content, f"{param}.content", rules.data_urls)
        return ChatMessage(role, "\n".join(texts), urls, texts, name, function_call)
    raise ChatRequestError(
        f"'{param}.content' must be a string"
        + (" or an array of content parts." if model == VISION_MODEL else "."),
        f"{param}.content",
    )


def _validate_message_function_call(
    message: dict[str, Any], role: str, param: str
) -> FunctionCall | None:
    call = message.get("function_call")
    if call is None:
        return None
    where = f"{param}.function_call"
    if role != "assistant":
        raise ChatRequestError(f"'{where}' is allowed only in assistant messages.", where)
    if (
        not isinstance(call, dict)
        or set(call) != {"name", "arguments"}
        or not isinstance(call["name"], str)
        or not isinstance(call["arguments"], str)
    ):
        raise ChatRequestError(
            f"'{where}' must be an object with string 'name' and string 'arguments'.", where
        )
    return FunctionCall(call["name"], call["arguments"])


def _validate_content_parts(
    parts: list[Any], param: str, data_urls: bool
) -> tuple[tuple[str, ...], tuple[str, ...]]:
    if not parts:
        raise ChatRequestError(f"'{param}' must not be an empty array.", param)
    texts: list[str] = []
    urls: list[str] = []
    for index, part in enumerate(parts):
        where = f"{param}[{index}]"
        kind = part.get("type") if isinstance(part, dict) else None
        if kind == "text" and set(part) == {"type", "text"} and isinstance(part["text"], str):
            texts.append(part["text"])
        elif kind == "image_url" and set(part) == {"type", "image_url"}:
            urls.append(_validate_image_url(part["image_url"], where, data_urls))
        else:
            raise ChatRequestError(
                f'\'{where}\' must be {{"type": "text", "text": <string>}} or '
                f'{{"type": "image_url", "image_url": {{"url": <http(s) or data URL>}}}}.',
                where,
            )
    return tuple(texts), tuple(urls)


def _validate_image_url(image_url: Any, where: str, data_urls: bool) -> str:
    if not isinstance(image_url, dict) or not set(image_url) <= {"url", "detail"}:
        raise ChatRequestError(
            f"'{where}.image_url' must be an object with 'url' (and optional 'detail').",
            f"{where}.image_url",
        )
    url = image_url.get("url")
    pattern = r"^(https?://\S+|data:image/[\w.+-]+;base64,)" if data_urls else r"^https?://\S+"
    if not isinstance(url, str) or not re.match(pattern, url):
        allowed = "an http(s) URL" + (" or a data:image/...;base64, URL" if data_urls else "")
        raise ChatRequestError(
            f"'{where}.image_url.url' must be {allowed}.", f"{where}.image_url.url"
        )
    detail = image_url.get("detail")
    if detail is not None and detail not in IMAGE_DETAILS:
        raise ChatRequestError(
            f"'{where}.image_url.detail' must be one of {', '.join(IMAGE_DETAILS)}.",
            f"{where}.image_url.detail",
        )
    return url
