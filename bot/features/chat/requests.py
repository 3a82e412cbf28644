"""What one chat request carries: resolved settings, the plan rule, history within the model's
context, and vision content parts.

Settings are layered (first match wins):

- model: `{chat} model` (sticks to the conversation) > the conversation's model > the user's
  ``/settings model`` > the channel's > the workspace's > ``ChatDefaults.model``;
- system prompt: ``/chat system`` (sticks to the conversation) > the channel's
  ``/settings system_prompt`` > the workspace's > ``ChatDefaults.system_prompt``;
- temperature: ``/chat temperature`` (this request) > the user's ``/settings temperature`` >
  the channel's > the workspace's > ``ChatDefaults.temperature``;
- max_tokens: ``/chat max_tokens`` (this request) > ``ChatDefaults.max_tokens``;
- top_p, presence_penalty, frequency_penalty, stop, logit_bias: ``ChatDefaults`` only
  (configuration). ``n`` is always 1 (one answer is posted).

The plan rule (``llm-4*`` needs the Developer plan) is :func:`bot.api.chat.allowed_chat_models`;
here it is only worded for the user, before anything is stored or sent.
"""

from __future__ import annotations

import asyncio
import base64
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any, TypeVar

from bot.api import CHAT_MODELS, VISION_MODELS, ChatMessage, ChatRequest, FunctionDefinition
from bot.api.chat import allowed_chat_models, plan_allows
from bot.features.chat.history import Turn
from bot.features.chat.history import fit as fit_turns
from bot.features.chat.tokens import FittedHistory, context_size
from bot.kernel import N_, Attachment, Place, User, UserError, _, named
from bot.outbox import Outbox
from storage import Conversation, SettingsReader, SettingValues

T = TypeVar("T")

DEFAULT_MODEL = "llm-3.5-turbo"
VISION_MODEL = "llm-4-vision-preview"
DEFAULT_SYSTEM_PROMPT = (
    "You are genbot, a helpful assistant in a team chat. Answer clearly and concisely; "
    "use Markdown where it helps."
)


@dataclass(frozen=True)
class ChatDefaults:
    """Chat settings that come from configuration rather than from users.

    ``answer_reserve`` is the room (tokens) kept free for the answer when no ``max_tokens``
    applies; it is capped at a quarter of the model's context. ``max_function_rounds`` bounds
    the tool calls answered for one message. ``logit_bias`` maps token ids (``"50256"``) to a
    bias in -100..100 (docs/provider.md#numeric-rules).
    """

    model: str = DEFAULT_MODEL
    system_prompt: str = DEFAULT_SYSTEM_PROMPT
    temperature: float | None = None
    top_p: float | None = None
    presence_penalty: float | None = None
    frequency_penalty: float | None = None
    stop: tuple[str, ...] = ()
    max_tokens: int | None = None
    logit_bias: Mapping[str, float] | None = None
    answer_reserve: int = 1024
    max_function_rounds: int = 3
    stream: bool = True

    def __post_init__(self) -> None:
        for token, bias in (self.logit_bias or {}).items():
            if not str(token).isdigit():
                raise ValueError(f"logit_bias keys are token ids (digits), got {token!r}")
            if not -100 <= bias <= 100:
                raise ValueError(f"logit_bias values lie in -100..100, got {bias!r} for {token}")


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
    logit_bias: Mapping[str, float] | None = None
    stream: bool = True
    n: int = 1

    @property
    def sees_images(self) -> bool:
        return self.model in VISION_MODELS

    def answer_reserve(self, defaults: ChatDefaults) -> int:
        """Tokens kept free for the answer."""
        if self.max_tokens is not None:
            return self.max_tokens
        return min(defaults.answer_reserve, context_size(self.model) // 4)


async def resolve_params(
    store: SettingsReader,
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
        top_p=_first(effective.top_p, defaults.top_p),
        presence_penalty=_first(effective.presence_penalty, defaults.presence_penalty),
        frequency_penalty=_first(effective.frequency_penalty, defaults.frequency_penalty),
        stop=effective.stop_sequences if effective.stop is not None else defaults.stop,
        logit_bias=defaults.logit_bias,
        stream=_first(effective.stream, defaults.stream),
        n=effective.n or 1,
    )


def _first(value: T | None, default: T) -> T:
    return default if value is None else value


def check_plan(model: str, plan: str, source: str = "chat") -> None:
    """Refuse an ``llm-4*`` model on the free plan with a sentence naming the way out."""
    if plan_allows(plan, model):
        return
    values = {
        "model": model,
        "settings": named("settings"),
        "chat": named("chat"),
        "models": ", ".join(allowed_chat_models(plan)),
    }
    # Translators: the same refusal, once per place the model was chosen in.
    texts = {
        "conversation": N_(
            "This conversation is set to use {model}, which needs the Developer plan; this "
            "workspace is on the free plan. Choose another model with {settings} model "
            "(your default) or {chat} model (this conversation): {models}."
        ),
        "user": N_(
            "Your default model is {model}, which needs the Developer plan; this workspace is "
            "on the free plan. Choose another model with {settings} model (your default) or "
            "{chat} model (this conversation): {models}."
        ),
        "channel": N_(
            "This channel's default model is {model}, which needs the Developer plan; this "
            "workspace is on the free plan. Choose another model with {settings} model "
            "(your default) or {chat} model (this conversation): {models}."
        ),
        "workspace": N_(
            "This workspace's default model is {model}, which needs the Developer plan; this "
            "workspace is on the free plan. Choose another model with {settings} model "
            "(your default) or {chat} model (this conversation): {models}."
        ),
    }
    asked = N_(
        "You asked for {model}, which needs the Developer plan; this workspace is on the free "
        "plan. Choose another model with {settings} model (your default) or {chat} model "
        "(this conversation): {models}."
    )
    raise UserError(_(texts.get(source, asked), **values))


DOWNLOAD_TIMEOUT_SECONDS = 30.0


async def shareable_images(
    outbox: Outbox,
    place: Place,
    images: Sequence[Attachment],
    timeout: float = DOWNLOAD_TIMEOUT_SECONDS,
) -> list[Attachment]:
    """``images`` with URLs the provider can open: a private file (whose URL needs the
    platform's credentials) is downloaded from ``place``'s platform and passed on as a
    ``data:`` URL of its bytes."""
    shareable: list[Attachment] = []
    for image in images:
        if not image.private:
            shareable.append(image)
            continue
        data = image.data
        if data is None:
            async with asyncio.timeout(timeout):
                data = await outbox.download(place, image)
        encoded = base64.b64encode(data).decode("ascii")
        url = f"data:{image.content_type or 'image/png'};base64,{encoded}"
        shareable.append(replace(image, url=url, data=None))
    return shareable


def image_parts(text: str, images: Sequence[Attachment]) -> list[dict[str, Any]]:
    """Vision content parts: the text (when any), then one ``image_url`` part per image."""
    parts: list[dict[str, Any]] = [{"type": "text", "text": text}] if text else []
    parts += [{"type": "image_url", "image_url": {"url": image.url}} for image in images]
    return parts


def history_tokens(params: ChatParams, defaults: ChatDefaults) -> int:
    """The most tokens of history a request with ``params`` could carry."""
    return context_size(params.model) - params.answer_reserve(defaults)


def fit(
    params: ChatParams,
    defaults: ChatDefaults,
    turns: Sequence[Turn],
    extra_tokens: int = 0,
    max_history_tokens: int | None = None,
) -> FittedHistory:
    """The system prompt and the newest turns that fit the model's context with room for the
    answer (see :func:`bot.features.chat.history.fit`; ``max_history_tokens`` caps the older turns
    kept); a request that cannot fit is a :class:`UserError` naming the way out."""
    return fit_turns(
        params.model,
        params.system_prompt,
        turns,
        reserve=params.answer_reserve(defaults),
        max_tokens=params.max_tokens,
        extra_tokens=extra_tokens,
        max_history_tokens=max_history_tokens,
    )


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
        logit_bias=dict(params.logit_bias) if params.logit_bias else None,
        n=params.n if params.n > 1 else None,
    )
