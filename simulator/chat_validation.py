"""Validation of chat completion request bodies (docs/provider.md, "Chat" and "Limits") into a
typed ``ChatRequest``.

Every rule failure raises ``ChatRequestError`` carrying the offending field, which the route turns
into a 400 with ``{"error": {"message", "type": "invalid_request_error", "param"}}``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Literal

from simulator.chat_messages import (
    NAME_PATTERN,
    VISION_MODEL,
    ChatMessage,
    ChatRequestError,
    FunctionCall,
    validate_messages,
)
from simulator.dialects import DEFAULT, DialectRules

__all__ = [
    "CHAT_MODELS",
    "VISION_MODEL",
    "ChatMessage",
    "ChatRequest",
    "ChatRequestError",
    "FunctionCall",
    "validate_chat_request",
]

CHAT_MODELS = (
    "llm-3.5-turbo",
    "llm-3.5-turbo-0301",
    "llm-3.5-turbo-0613",
    "llm-3.5-turbo-16k",
    "llm-3.5-turbo-16k-0613",
    "llm-3.5-turbo-1106",
    "llm-4",
    "llm-4-0613",
    "llm-4-1106-preview",
    "llm-4-vision-preview",
)
DATED_MODELS = {
    "llm-3.5-turbo": "llm-3.5-turbo-0613",
    "llm-3.5-turbo-16k": "llm-3.5-turbo-16k-0613",
    "llm-4": "llm-4-0613",
}
MAX_CHOICES = 10
MAX_STOP_SEQUENCES = 4
VOCABULARY_SIZE = 100277
JSON_SCHEMA_TYPES = ("string", "number", "integer", "boolean", "array", "object", "null")

_REQUEST_FIELDS = frozenset(
    {
        "model",
        "messages",
        "functions",
        "function_call",
        "temperature",
        "top_p",
        "n",
        "stream",
        "stop",
        "max_tokens",
        "presence_penalty",
        "frequency_penalty",
        "logit_bias",
    }
)


@dataclass(frozen=True)
class ChatRequest:
    """A chat completion request that passed every rule."""

    model: str
    messages: tuple[ChatMessage, ...]
    functions: tuple[dict[str, Any], ...]
    function_mode: Literal["none", "auto", "forced"]
    forced_function: str | None
    n: int
    stream: bool
    stop: tuple[str, ...]
    max_tokens: int | None

    @property
    def answered_model(self) -> str:
        """The dated model id answered in ``model`` (undated aliases resolve to ``-0613``)."""
        return DATED_MODELS.get(self.model, self.model)

    def function_named(self, name: str) -> dict[str, Any] | None:
        return next((f for f in self.functions if f["name"] == name), None)


def _is_number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value)


def _is_integer(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _number_in_range(body: dict[str, Any], field: str, low: float, high: float) -> None:
    value = body.get(field)
    if value is None:
        return
    if not _is_number(value):
        raise ChatRequestError(f"'{field}' must be a number, got {value!r}.", field)
    if not low <= value <= high:
        raise ChatRequestError(
            f"'{field}' must be between {low:g} and {high:g}, got {value!r}.", field
        )


def validate_chat_request(body: Any, rules: DialectRules = DEFAULT) -> ChatRequest:
    """Check ``body`` against every request rule of the dialect ``rules`` and return it typed
    (``rules.chat_ranges``: also the ranges the documentation does not state)."""
    if not isinstance(body, dict):
        raise ChatRequestError("The request body must be a JSON object.", None)
    unknown = sorted(set(body) - _REQUEST_FIELDS)
    if unknown:
        raise ChatRequestError(f"Unrecognized request argument supplied: {unknown[0]}", unknown[0])
    model = _validate_model(body.get("model"))
    _number_in_range(body, "temperature", 0, 2)
    if rules.chat_ranges:
        _number_in_range(body, "top_p", 0, 1)
    else:
        _number_in_range(body, "top_p", -math.inf, math.inf)
    _number_in_range(body, "presence_penalty", -2, 2)
    _number_in_range(body, "frequency_penalty", -2, 2)
    functions = _validate_functions(body.get("functions"))
    function_mode, forced = _validate_function_call(body.get("function_call"), functions)
    messages = validate_messages(body.get("messages"), model, rules)
    _validate_logit_bias(body.get("logit_bias"), ranges=rules.chat_ranges)
    stream = body.get("stream")
    if stream is not None and not isinstance(stream, bool):
        raise ChatRequestError(f"'stream' must be a boolean, got {stream!r}.", "stream")
    return ChatRequest(
        model=model,
        messages=messages,
        functions=functions,
        function_mode=function_mode,
        forced_function=forced,
        n=_validate_n(body.get("n"), cap=MAX_CHOICES if rules.chat_choice_cap else None),
        stream=bool(stream),
        stop=_validate_stop(body.get("stop")),
        max_tokens=_validate_max_tokens(body.get("max_tokens"), whole=rules.chat_ranges),
    )


def _validate_model(model: Any) -> str:
    if model is None:
        raise ChatRequestError("You must provide a model parameter.", "model")
    if not isinstance(model, str) or model not in CHAT_MODELS:
        raise ChatRequestError(
            f"The model {model!r} does not exist. Known models: {', '.join(CHAT_MODELS)}.",
            "model",
        )
    return model


def _validate_n(n: Any, cap: int | None) -> int:
    if n is None:
        return 1
    if not _is_integer(n):
        raise ChatRequestError(f"'n' must be an integer, got {n!r}.", "n")
    if n < 1:
        raise ChatRequestError(f"'n' must be at least 1, got {n}.", "n")
    if cap is not None and n > cap:
        raise ChatRequestError(f"'n' must be between 1 and {cap}, got {n}.", "n")
    return int(n)


def _validate_max_tokens(max_tokens: Any, *, whole: bool) -> int | None:
    """A positive number (``whole``: an integer); a fractional one counts its whole tokens."""
    if max_tokens is None:
        return None
    if not (_is_integer(max_tokens) if whole else _is_number(max_tokens)):
        kind = "an integer" if whole else "a number"
        raise ChatRequestError(f"'max_tokens' must be {kind}, got {max_tokens!r}.", "max_tokens")
    if max_tokens < 1:
        raise ChatRequestError(f"'max_tokens' must be at least 1, got {max_tokens}.", "max_tokens")
    return int(max_tokens)


def _validate_stop(stop: Any) -> tuple[str, ...]:
    if stop is None:
        return ()
    sequences = [stop] if isinstance(stop, str) else stop
    if not isinstance(sequences, list):
        raise ChatRequestError("'stop' must be a string or an array of strings.", "stop")
    if len(sequences) > MAX_STOP_SEQUENCES:
        raise ChatRequestError(
            f"'stop' accepts at most {MAX_STOP_SEQUENCES} sequences, got {len(sequences)}.",
            "stop",
        )
    for sequence in sequences:
        if not isinstance(sequence, str) or not sequence:
            raise ChatRequestError(
                f"Every stop sequence must be a non-empty string, got {sequence!r}.", "stop"
            )
    return tuple(sequences)


def _validate_logit_bias(logit_bias: Any, *, ranges: bool) -> None:
    if logit_bias is None:
        return
    if not isinstance(logit_bias, dict):
        raise ChatRequestError("'logit_bias' must be a map of token ids to numbers.", "logit_bias")
    if not ranges:
        for token, bias in logit_bias.items():
            if not _is_number(bias):
                raise ChatRequestError(
                    f"Invalid bias {bias!r} for token {token} in 'logit_bias'.", "logit_bias"
                )
        return
    for token, bias in logit_bias.items():
        if not (token.isascii() and token.isdigit()) or int(token) >= VOCABULARY_SIZE:
            raise ChatRequestError(
                f"Invalid key {token!r} in 'logit_bias': keys are token ids "
                f"(integers 0 to {VOCABULARY_SIZE - 1}) written as strings.",
                "logit_bias",
            )
        if not _is_number(bias) or not -100 <= bias <= 100:
            raise ChatRequestError(
                f"Invalid bias {bias!r} for token {token} in 'logit_bias': "
                "biases are numbers from -100 to 100.",
                "logit_bias",
            )


def _validate_functions(functions: Any) -> tuple[dict[str, Any], ...]:
    if functions is None:
        return ()
    if not isinstance(functions, list) or not functions:
        raise ChatRequestError(
            "'functions' must be a non-empty array of function definitions.", "functions"
        )
    seen: set[str] = set()
    for index, function in enumerate(functions):
        param = f"functions[{index}]"
        if not isinstance(function, dict):
            raise ChatRequestError(f"'{param}' must be an object.", param)
        unknown = sorted(set(function) - {"name", "description", "parameters"})
        if unknown:
            raise ChatRequestError(f"Unknown field '{unknown[0]}' in '{param}'.", param)
        name = function.get("name")
        if not isinstance(name, str) or not NAME_PATTERN.match(name):
            raise ChatRequestError(
                f"'{param}.name' must be 1 to 64 letters, digits, '_' or '-', got {name!r}.",
                f"{param}.name",
            )
        if name in seen:
            raise ChatRequestError(f"Function name {name!r} is given twice.", f"{param}.name")
        seen.add(name)
        _validate_parameters_schema(function.get("parameters"), f"{param}.parameters")
        if not isinstance(function.get("description"), str):
            raise ChatRequestError(
                f"'{param}.description' is required and must be a string.", f"{param}.description"
            )
    return tuple(functions)


def _validate_parameters_schema(schema: Any, param: str) -> None:
    if not isinstance(schema, dict):
        raise ChatRequestError(f"'{param}' must be a JSON schema object.", param)
    if schema.get("type") != "object":
        raise ChatRequestError(f"'{param}.type' must be \"object\".", f"{param}.type")
    properties = schema.get("properties", {})
    if not isinstance(properties, dict):
        raise ChatRequestError(f"'{param}.properties' must be an object.", f"{param}.properties")
    for key, prop in properties.items():
        where = f"{param}.properties.{key}"
        if not isinstance(prop, dict):
            raise ChatRequestError(f"'{where}' must be a schema object.", where)
        prop_type = prop.get("type")
        if prop_type is not None and prop_type not in JSON_SCHEMA_TYPES:
            raise ChatRequestError(
                f"'{where}.type' must be one of {', '.join(JSON_SCHEMA_TYPES)}, got {prop_type!r}.",
                f"{where}.type",
            )
        if "description" in prop and not isinstance(prop["description"], str):
            raise ChatRequestError(f"'{where}.description' must be a string.", where)
        if "enum" in prop and (not isinstance(prop["enum"], list) or not prop["enum"]):
            raise ChatRequestError(f"'{where}.enum' must be a non-empty array.", f"{where}.enum")
    required = schema.get("required", [])
    if not isinstance(required, list) or not all(isinstance(r, str) for r in required):
        raise ChatRequestError(
            f"'{param}.required' must be an array of property names.", f"{param}.required"
        )
    for name in required:
        if name not in properties:
            raise ChatRequestError(
                f"'{param}.required' names {name!r}, which is not in 'properties'.",
                f"{param}.required",
            )


def _validate_function_call(
    function_call: Any, functions: tuple[dict[str, Any], ...]
) -> tuple[Literal["none", "auto", "forced"], str | None]:
    if function_call is None:
        return ("auto" if functions else "none"), None
    if not functions:
        raise ChatRequestError(
            "'function_call' is only allowed when 'functions' are given.", "function_call"
        )
    if function_call == "none":
        return "none", None
    if function_call == "auto":
        return "auto", None
    if isinstance(function_call, dict) and set(function_call) == {"name"}:
        name = function_call["name"]
        if any(f["name"] == name for f in functions):
            return "forced", name
        raise ChatRequestError(
            f"'function_call' names {name!r}, which is not one of the given functions.",
            "function_call",
        )
    raise ChatRequestError(
        '\'function_call\' must be "none", "auto" or {"name": <a given function>}.',
        "function_call",
    )
