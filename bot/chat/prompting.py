"""What one chat request carries: resolved settings, the plan rule, history within the model's
token budget, and vision content parts.

Settings are layered (first match wins):

- model: ``/chat model`` (sticks to the conversation) > the conversation's model > the user's
  ``/settings model`` > the channel's > the workspace's > ``ChatDefaults.model``;
- system prompt: ``/chat system`` (sticks to the conversation) > the channel's
  ``/settings system_prompt`` > the workspace's > ``ChatDefaults.system_prompt``;
- temperature: ``/chat temperature`` (this request) > the user's ``/settings temperature`` >
  the channel's > the workspace's > ``ChatDefaults.temperature``;
- max_tokens: ``/chat max_tokens`` (this request) > ``ChatDefaults.max_tokens``;
- top_p, presence_penalty, frequency_penalty, stop: ``ChatDefaults`` only (configuration).
  ``n`` is always 1 (one answer is posted) and ``logit_bias`` is not used.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from bot.api import (
    CHAT_MODELS,
    DEVELOPER_PLAN_MODELS,
    VISION_MODELS,
    ChatMessage,
    ChatRequest,
    FunctionDefinition,
)
from bot.core import UserError
from bot.events import Attachment, Place, User
from bot.tokens import FittedHistory, TurnTooLarge, context_size, count_functions, fit_history
from storage import ChatMessage as StoredMessage
from storage import Conversation, SettingValues, Store

DEFAULT_MODEL = "llm-3.5-turbo"
VISION_MODEL = "llm-4-vision-preview"
DEFAULT_SYSTEM_PROMPT = (
    "You are genbot, a helpful assistant in a team chat. Answer clearly and concisely; "
    "use Markdown where it helps."
)
IMAGE_EXTENSIONS = (".png", ".jpg", ".jpeg", ".gif", ".webp")


@dataclass(frozen=True)
class ChatDefaults:
    """Chat settings that come from configuration rather than from users.

    ``answer_reserve`` is the room (tokens) kept free for the answer when no ``max_tokens``
    applies; it is capped at a quarter of the model's context. ``max_function_rounds`` bounds
    the tool calls answered for one message.
    """

    model: str = DEFAULT_MODEL
    system_prompt: str = DEFAULT_SYSTEM_PROMPT
    temperature: float | None = None
    top_p: float | None = None
    presence_penalty: float | None = None
    frequency_penalty: float | None = None
    stop: tuple[str, ...] = ()
    max_tokens: int | None = None
    answer_reserve: int = 1024
    max_function_rounds: int = 3


@dataclass(frozen=True)
class ChatOverrides:
    """What ``/chat`` options set: ``model`` and ``system`` stick to the conversation,
    ``temperature`` and ``max_tokens`` apply to this request only."""

    model: str | None = None
    system: str | None = None
    temperature: float | None = None
    max_tokens: int | None = None


@dataclass(frozen=True)
class ChatParams:
    """The settings one request is made with; ``model_source`` tells where the model came from
    (``chat``, ``conversation``, ``user``, ``channel``, ``workspace`` or ``default``)."""

    model: str
    model_source: str
    system_prompt: str
    temperature: float | None
    max_tokens: int | None
    top_p: float | None
    presence_penalty: float | None
    frequency_penalty: float | None
    stop: tuple[str, ...]

    @property
    def sees_images(self) -> bool:
        return self.model in VISION_MODELS

    def answer_reserve(self, defaults: ChatDefaults) -> int:
        """Tokens kept free for the answer."""
        if self.max_tokens is not None:
            return self.max_tokens
        return min(defaults.answer_reserve, context_size(self.model) // 4)


async def resolve_params(
    store: Store,
    defaults: ChatDefaults,
    user: User,
    place: Place,
    conversation: Conversation | None,
    overrides: ChatOverrides | None = None,
) -> ChatParams:
    """Merge overrides, stored scopes and defaults (see the module docstring)."""
    extra = overrides or ChatOverrides()
    effective = await store.effective_settings(
        place.platform,
        user_id=user.id,
        channel_id=place.channel_id,
        workspace_id=place.workspace_id or None,
        defaults=SettingValues(
            model=defaults.model,
            system_prompt=defaults.system_prompt,
            temperature=defaults.temperature,
        ),
        conversation=conversation,
    )
    model = effective.model or defaults.model
    source: str = effective.sources.get("model", "default")
    if model not in CHAT_MODELS:
        model, source = defaults.model, "default"
    if extra.model is not None:
        model, source = extra.model, "chat"
    return ChatParams(
        model=model,
        model_source=source,
        system_prompt=extra.system or effective.system_prompt or defaults.system_prompt,
        temperature=extra.temperature if extra.temperature is not None else effective.temperature,
        max_tokens=extra.max_tokens if extra.max_tokens is not None else defaults.max_tokens,
        top_p=defaults.top_p,
        presence_penalty=defaults.presence_penalty,
        frequency_penalty=defaults.frequency_penalty,
        stop=defaults.stop,
    )


def allowed_models(plan: str) -> list[str]:
    """The chat models a workspace on ``plan`` may use."""
    if plan == "free":
        return [model for model in CHAT_MODELS if model not in DEVELOPER_PLAN_MODELS]
    return list(CHAT_MODELS)


def check_plan(model: str, plan: str, source: str = "chat") -> None:
    """Refuse an ``llm-4*`` model on the free plan with a sentence naming the way out."""
    if model in allowed_models(plan):
        return
    where = {
        "conversation": "This conversation is set to use",
        "user": "Your default model is",
        "channel": "This channel's default model is",
        "workspace": "This workspace's default model is",
    }.get(source, "You asked for")
    raise UserError(
        f"{where} {model}, which needs the Developer plan; this workspace is on the free plan. "
        f"Choose another model with `/settings model:<name>` (your default) or "
        f"`/chat model:<name>`: {', '.join(allowed_models(plan))}."
    )


def is_image(attachment: Attachment) -> bool:
    """Whether an attachment is a picture the vision model could look at."""
    if attachment.content_type:
        return attachment.content_type.lower().startswith("image/")
    return attachment.filename.lower().endswith(IMAGE_EXTENSIONS)


def image_parts(text: str, images: Sequence[Attachment]) -> list[dict[str, Any]]:
    """Vision content parts: the text (when any), then one ``image_url`` part per image."""
    parts: list[dict[str, Any]] = [{"type": "text", "text": text}] if text else []
    parts += [{"type": "image_url", "image_url": {"url": image.url}} for image in images]
    return parts


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


def api_turns(history: Sequence[StoredMessage], model: str) -> list[dict[str, Any]]:
    """Stored turns as request messages; vision parts become text for other models."""
    turns: list[dict[str, Any]] = []
    for message in history:
        turn = message.to_api()
        if message.parts is not None and model not in VISION_MODELS:
            turn["content"] = parts_as_text(message.parts)
        turns.append(turn)
    return turns


def fit(
    params: ChatParams,
    defaults: ChatDefaults,
    turns: Sequence[Mapping[str, Any]],
    functions: Sequence[FunctionDefinition] | None,
) -> FittedHistory:
    """The system prompt and the newest turns that fit the model's context with room for the
    answer; a turn too large for the model becomes a :class:`UserError`."""
    extra = count_functions([f.to_body() for f in functions]) if functions else 0
    try:
        return fit_history(
            params.system_prompt,
            turns,
            params.model,
            params.answer_reserve(defaults),
            extra_tokens=extra,
        )
    except TurnTooLarge as error:
        raise UserError(str(error)) from None


def build_request(
    params: ChatParams,
    messages: Sequence[Mapping[str, Any]],
    functions: Sequence[FunctionDefinition] | None,
) -> ChatRequest:
    """The chat request for ``messages`` with ``params`` (``stream`` is set by the client)."""
    stop: list[str] | None = list(params.stop) if params.stop else None
    return ChatRequest(
        model=params.model,
        messages=[ChatMessage(**dict(message)) for message in messages],
        functions=list(functions) if functions else None,
        temperature=params.temperature,
        top_p=params.top_p,
        presence_penalty=params.presence_penalty,
        frequency_penalty=params.frequency_penalty,
        stop=stop,
        max_tokens=params.max_tokens,
    )
