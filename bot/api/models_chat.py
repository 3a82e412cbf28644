"""Family A, chat completion: request, response and stream chunk (docs/provider.md, "Chat")."""

from __future__ import annotations

import json
from typing import Annotated, Any, Literal

from pydantic import ConfigDict, Field, field_validator, model_validator

from bot.api.errors import N_, FunctionArgumentsError, InvalidRequest
from bot.api.models_common import LenientInt, ResponseModel
from bot.api.validation import RequestModel, check_at_least, check_non_empty, check_range, shown

CHAT_MODELS: tuple[str, ...] = (
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
"""Every documented chat model id."""

DEVELOPER_PLAN_MODELS: tuple[str, ...] = tuple(m for m in CHAT_MODELS if m.startswith("llm-4"))
"""Models available only on the Developer plan and above."""

VISION_MODELS: tuple[str, ...] = ("llm-4-vision-preview",)
"""Models that accept array-valued message content."""

MAX_STOP_SEQUENCES = 4

Role = Literal["system", "user", "assistant", "function"]


class FunctionCall(ResponseModel):
    """A function call produced by the model: ``arguments`` is JSON text, parsed on demand."""

    name: str = ""
    arguments: str = ""

    def parsed_arguments(self) -> dict[str, Any]:
        """``arguments`` as a dict; raises :class:`FunctionArgumentsError` for invalid JSON."""
        if not self.arguments.strip():
            return {}
        try:
            value = json.loads(self.arguments)
        except json.JSONDecodeError as error:
            raise FunctionArgumentsError(self.name, self.arguments, str(error)) from None
        if not isinstance(value, dict):
            raise FunctionArgumentsError(
                self.name, self.arguments, f"got {type(value).__name__}, expected an object"
            )
        return value


class TextPart(RequestModel):
    """A text part of array-valued content (vision model only)."""

    type: Literal["text"] = "text"
    text: str


class ImageUrl(RequestModel):
    """The image of an ``image_url`` content part."""

    url: str
    detail: Literal["auto", "low", "high"] | None = None


class ImagePart(RequestModel):
    """An image part of array-valued content (vision model only)."""

    type: Literal["image_url"] = "image_url"
    image_url: ImageUrl


ContentPart = Annotated[TextPart | ImagePart, Field(discriminator="type")]


class ChatMessage(RequestModel):
    """One message of the conversation (``content`` may be null only next to a function call)."""

    role: Role
    content: str | list[ContentPart] | None = None
    name: str | None = None
    function_call: FunctionCall | None = None


class FunctionProperty(RequestModel):
    """One property of a function's parameter schema (extra JSON-schema keys are kept)."""

    model_config = ConfigDict(extra="allow", validate_assignment=True)

    type: str | None = None
    description: str | None = None
    enum: list[Any] | None = None


class FunctionParameters(RequestModel):
    """The object schema of a function's parameters."""

    model_config = ConfigDict(extra="allow", validate_assignment=True)

    type: Literal["object"] = "object"
    properties: dict[str, FunctionProperty] = Field(default_factory=dict)
    required: list[str] = Field(default_factory=list)

    @model_validator(mode="after")
    def _required_are_properties(self) -> FunctionParameters:
        unknown = [name for name in self.required if name not in self.properties]
        if unknown:
            raise InvalidRequest(
                "parameters.required",
                "names of declared properties",
                f"parameters.required names undeclared properties: {', '.join(unknown)}",
            )
        return self


class FunctionDefinition(RequestModel):
    """A function the model may call. Each function has a ``description`` and ``parameters``
    (docs/provider.md, "Chat"): a function that takes none is sent with an empty object schema."""

    name: str
    description: str
    parameters: FunctionParameters = Field(default_factory=FunctionParameters)

    @field_validator("name")
    @classmethod
    def _name_present(cls, value: str) -> str:
        return check_non_empty("functions.name", value)


class FunctionCallName(RequestModel):
    """``function_call`` as an object: force the named function."""

    name: str


class ChatRequest(RequestModel):
    """Body of ``POST /v1/chat/completions`` checked against the documented limits.

    ``stream`` is set by :class:`bot.api.chat.ChatClient` according to the method called.
    The plan rule for ``llm-4*`` models is checked by the client, which knows the plan.
    """

    model: str
    messages: list[ChatMessage]
    functions: list[FunctionDefinition] | None = None
    function_call: Literal["none", "auto"] | FunctionCallName | None = None
    temperature: float | None = None
    top_p: float | None = None
    n: int | None = None
    stream: bool = False
    stop: str | list[str] | None = None
    max_tokens: int | None = None
    presence_penalty: float | None = None
    frequency_penalty: float | None = None
    logit_bias: dict[str, float] | None = None

    @field_validator("model")
    @classmethod
    def _known_model(cls, value: str) -> str:
        if value not in CHAT_MODELS:
            raise InvalidRequest(
                "model",
                ", ".join(CHAT_MODELS),
                N_("{field} must be one of {expected} (got {got})"),
                field="model",
                expected=", ".join(CHAT_MODELS),
                got=shown(value),
            )
        return value

    @field_validator("temperature")
    @classmethod
    def _temperature(cls, value: float | None) -> float | None:
        return check_range("temperature", value, 0, 2)

    @field_validator("top_p")
    @classmethod
    def _top_p(cls, value: float | None) -> float | None:
        """A probability mass, so 0–1 (docs/provider.md#numeric-rules)."""
        return check_range("top_p", value, 0, 1)

    @field_validator("presence_penalty")
    @classmethod
    def _presence_penalty(cls, value: float | None) -> float | None:
        return check_range("presence_penalty", value, -2, 2)

    @field_validator("frequency_penalty")
    @classmethod
    def _frequency_penalty(cls, value: float | None) -> float | None:
        return check_range("frequency_penalty", value, -2, 2)

    @field_validator("n")
    @classmethod
    def _n(cls, value: int | None) -> int | None:
        return check_at_least("n", value, 1)

    @field_validator("max_tokens")
    @classmethod
    def _max_tokens(cls, value: int | None) -> int | None:
        return check_at_least("max_tokens", value, 1)

    @field_validator("stop")
    @classmethod
    def _stop(cls, value: str | list[str] | None) -> str | list[str] | None:
        if isinstance(value, list) and len(value) > MAX_STOP_SEQUENCES:
            raise InvalidRequest(
                "stop",
                f"at most {MAX_STOP_SEQUENCES} sequences",
                N_("stop may hold at most {most} sequences (got {got})"),
                most=MAX_STOP_SEQUENCES,
                got=len(value),
            )
        if value == "" or (isinstance(value, list) and "" in value):
            raise InvalidRequest("stop", "non-empty text", N_("stop sequences must not be empty"))
        return value

    @model_validator(mode="after")
    def _consistent(self) -> ChatRequest:
        if not self.messages:
            raise InvalidRequest("messages", "at least one message", "messages must not be empty")
        for position, message in enumerate(self.messages):
            self._check_message(position, message)
        if self.functions is not None and not self.functions:
            raise InvalidRequest(
                "functions", "at least one function", "functions must not be an empty list"
            )
        if self.function_call is not None and not self.functions:
            raise InvalidRequest(
                "function_call", "only with functions", "function_call needs functions to call"
            )
        names = [function.name for function in self.functions or []]
        if len(set(names)) != len(names):
            raise InvalidRequest("functions", "unique names", "functions must have distinct names")
        if isinstance(self.function_call, FunctionCallName) and self.function_call.name not in (
            names
        ):
            allowed = ", ".join(names) or "none offered"
            raise InvalidRequest(
                "function_call",
                allowed,
                f"function_call names {shown(self.function_call.name)}, which is not among "
                f"the functions offered ({allowed})",
            )
        return self

    def _check_message(self, position: int, message: ChatMessage) -> None:
        field = f"messages[{position}].content"
        if isinstance(message.content, list) and self.model not in VISION_MODELS:
            raise InvalidRequest(
                field,
                "text",
                f"{field} may be a list of parts only with {', '.join(VISION_MODELS)}; "
                f"{self.model} takes text",
            )
        if message.content is None and not (
            message.role == "assistant" and message.function_call is not None
        ):
            raise InvalidRequest(
                field,
                "text",
                f"{field} may be empty only in an assistant message carrying a function call",
            )
        if message.role == "function" and not message.name:
            raise InvalidRequest(
                f"messages[{position}].name",
                "the function's name",
                f"messages[{position}].name is required for a function result message",
            )

    def to_body(self) -> dict[str, Any]:
        body = super().to_body()
        for message, sent in zip(self.messages, body["messages"], strict=True):
            if message.content is None:
                sent["content"] = None
        return body


class Usage(ResponseModel):
    """Token counts of a completion."""

    prompt_tokens: LenientInt = 0
    completion_tokens: LenientInt = 0
    total_tokens: LenientInt = 0


TOOL_CALLS = "tool_calls"
"""The finish reason of a provider that answers calls as ``tool_calls``; genbot reads it as
``function_call`` (docs/provider.md#streamed-function-calls)."""


FINISH_REASONS = {TOOL_CALLS: "function_call"}
"""Finish reasons genbot reads in its own words (the rest are read as they are)."""


def finish_reason_of(reason: str | None) -> str | None:
    """A finish reason in genbot's words: ``tool_calls`` is ``function_call``."""
    return FINISH_REASONS.get(reason, reason) if reason is not None else None


class ToolCall(ResponseModel):
    """One entry of ``tool_calls``, the other way a provider may answer a function call; genbot
    makes one call per round, so only the first is used."""

    index: LenientInt = 0
    id: str = ""
    type: str = "function"
    function: FunctionCall = Field(default_factory=FunctionCall)


class AssistantMessage(ResponseModel):
    """The message of a completion choice (``content`` is null when a function is called). A
    call answered as ``tool_calls`` is read into ``function_call``."""

    role: str = "assistant"
    content: str | None = None
    function_call: FunctionCall | None = None
    tool_calls: list[ToolCall] | None = None

    @model_validator(mode="after")
    def _first_tool_call(self) -> AssistantMessage:
        if self.function_call is None and self.tool_calls:
            self.function_call = min(self.tool_calls, key=lambda call: call.index).function
        return self


class ChatChoice(ResponseModel):
    """One choice of a non-streamed completion (``finish_reason`` ``tool_calls`` reads as
    ``function_call``)."""

    index: LenientInt = 0
    message: AssistantMessage = Field(default_factory=AssistantMessage)
    finish_reason: str | None = None

    @field_validator("finish_reason")
    @classmethod
    def _finish_reason(cls, value: str | None) -> str | None:
        return finish_reason_of(value)


class ChatCompletion(ResponseModel):
    """A non-streamed completion; ``choices`` are in the order of their ``index`` (the spec
    gives each an index, not their order in the list)."""

    id: str = ""
    object: str = "chat.completion"
    created: LenientInt = 0
    model: str = ""
    choices: list[ChatChoice] = Field(default_factory=list)
    usage: Usage | None = None

    @field_validator("choices")
    @classmethod
    def _by_index(cls, value: list[ChatChoice]) -> list[ChatChoice]:
        return sorted(value, key=lambda choice: choice.index)

    @property
    def text(self) -> str:
        """The content of the first choice ("" when it is a function call)."""
        first = min(self.choices, key=lambda choice: choice.index, default=None)
        return (first.message.content or "") if first else ""


class FunctionCallDelta(ResponseModel):
    """A piece of a streamed function call; pieces of ``arguments`` are concatenated."""

    name: str | None = None
    arguments: str | None = None


class ToolCallDelta(ResponseModel):
    """A piece of a streamed ``tool_calls`` entry: the first carries the call's ``id`` and
    name, later ones pieces of ``arguments``."""

    index: LenientInt = 0
    id: str | None = None
    type: str | None = None
    function: FunctionCallDelta = Field(default_factory=FunctionCallDelta)


class ChunkDelta(ResponseModel):
    """What one chunk adds to a choice (empty in the last chunk). A provider may stream a call
    as ``function_call`` pieces or as ``tool_calls`` pieces; :attr:`call` is either."""

    role: str | None = None
    content: str | None = None
    function_call: FunctionCallDelta | None = None
    tool_calls: list[ToolCallDelta] | None = None

    @property
    def call(self) -> FunctionCallDelta | None:
        """This chunk's piece of a function call, in either shape: of ``tool_calls``, the
        entry of the lowest index (:attr:`call_index`)."""
        if self.function_call is not None:
            return self.function_call
        piece = self._first_tool_piece()
        return piece.function if piece is not None else None

    @property
    def call_index(self) -> int | None:
        """The ``tool_calls`` index of :attr:`call` (None for a ``function_call`` piece)."""
        if self.function_call is not None:
            return None
        piece = self._first_tool_piece()
        return piece.index if piece is not None else None

    def _first_tool_piece(self) -> ToolCallDelta | None:
        return min(self.tool_calls or (), key=lambda piece: piece.index, default=None)


class ChunkChoice(ResponseModel):
    """One choice's part of a stream chunk."""

    index: LenientInt = 0
    delta: ChunkDelta = Field(default_factory=ChunkDelta)
    finish_reason: str | None = None


class ChatChunk(ResponseModel):
    """One server-sent event of a streamed completion."""

    id: str = ""
    object: str = "chat.completion.chunk"
    created: LenientInt = 0
    model: str = ""
    choices: list[ChunkChoice] = Field(default_factory=list)
