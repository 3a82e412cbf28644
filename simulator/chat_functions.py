"""The simulator's function-calling rules and schema-valid argument generation.

- ``function_call: "none"`` never calls.
- ``function_call: {"name": F}`` always calls ``F``.
- ``function_call: "auto"`` (the default when functions are given) calls only when the last
  message is a user message and: it starts with ``draw ``, ``imagine `` or ``paint ``
  (case-insensitive) and ``generate_image`` is offered → ``{"prompt": <the rest>}``; or it
  contains ``describe`` and an image URL and ``describe_image`` is offered →
  ``{"image_url": <the first URL>}``. Any other offered function is called only when named.
"""

from __future__ import annotations

import json
import re
from typing import Any

from simulator.chat_validation import ChatMessage, ChatRequest, FunctionCall

DRAW_PREFIXES = ("draw ", "imagine ", "paint ")
_URL = re.compile(r"https?://[^\s<>\"')\]]+")


def last_user_message(request: ChatRequest) -> ChatMessage | None:
    return next((m for m in reversed(request.messages) if m.role == "user"), None)


def image_urls_in(message: ChatMessage) -> list[str]:
    """Image URLs of a message: its ``image_url`` parts, then URLs written in its text."""
    return [*message.image_urls, *_URL.findall(message.text or "")]


def _draw_prompt(text: str) -> str | None:
    stripped = text.strip()
    for prefix in DRAW_PREFIXES:
        if stripped.lower().startswith(prefix):
            return stripped[len(prefix) :].strip()
    return None


def _rule_hints(name: str, message: ChatMessage | None) -> dict[str, str]:
    text = (message.text or "") if message else ""
    if name == "generate_image":
        prompt = _draw_prompt(text)
        return {"prompt": prompt if prompt is not None else text.strip()}
    if name == "describe_image" and message is not None:
        urls = image_urls_in(message)
        if urls:
            return {"image_url": urls[0]}
    return {}


def _auto_choice(request: ChatRequest) -> str | None:
    last = request.messages[-1]
    if last.role != "user":
        return None
    text = last.text or ""
    if _draw_prompt(text) is not None and request.function_named("generate_image"):
        return "generate_image"
    if (
        "describe" in text.lower()
        and image_urls_in(last)
        and request.function_named("describe_image")
    ):
        return "describe_image"
    return None


def choose_function_call(request: ChatRequest) -> FunctionCall | None:
    """The function call the simulated model makes for ``request``, if any."""
    if request.function_mode == "none":
        return None
    name = request.forced_function if request.function_mode == "forced" else _auto_choice(request)
    if name is None:
        return None
    function = request.function_named(name)
    assert function is not None
    message = last_user_message(request)
    arguments = build_arguments(
        function.get("parameters", {}),
        _rule_hints(name, message),
        ((message.text or "") if message else "").strip(),
    )
    return FunctionCall(name, json.dumps(arguments, ensure_ascii=False))


def build_arguments(
    schema: dict[str, Any], hints: dict[str, str], fallback_text: str
) -> dict[str, Any]:
    """Arguments valid against ``schema``: hinted values placed, every required property filled.

    A hint goes to the property of its name; when the schema lacks that property, to the first
    string property without an enum (or under its own name when the schema has no properties).
    Values of a property with an ``enum`` are always one of the enum's values.
    """
    properties: dict[str, Any] = schema.get("properties", {})
    arguments: dict[str, Any] = {}
    for key, value in hints.items():
        target = key if key in properties or not properties else _free_string_property(properties)
        if target is not None and target not in arguments:
            arguments[target] = _fit(value, properties.get(target, {}), fallback_text)
    for name in schema.get("required", []):
        if name not in arguments:
            arguments[name] = _default_value(properties.get(name, {}), fallback_text)
    return arguments


def _free_string_property(properties: dict[str, Any]) -> str | None:
    return next(
        (
            name
            for name, prop in properties.items()
            if prop.get("type", "string") == "string" and "enum" not in prop
        ),
        None,
    )


def _fit(value: str, prop: dict[str, Any], fallback_text: str) -> Any:
    if "enum" in prop:
        return value if value in prop["enum"] else prop["enum"][0]
    if prop.get("type", "string") != "string":
        return _default_value(prop, fallback_text)
    return value


def _default_value(prop: dict[str, Any], fallback_text: str) -> Any:
    if "enum" in prop:
        return prop["enum"][0]
    kind = prop.get("type", "string")
    if kind in ("integer", "number"):
        low, high = prop.get("minimum"), prop.get("maximum")
        value = low if isinstance(low, int | float) else 1
        if isinstance(high, int | float) and value > high:
            value = high
        return int(value) if kind == "integer" else value
    defaults: dict[str, Any] = {"boolean": False, "array": [], "object": {}, "null": None}
    if kind in defaults:
        return defaults[kind]
    return fallback_text or "simulated value"
