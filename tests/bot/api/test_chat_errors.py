"""Chat refusals by meaning: a rejected key, a model the plan lacks, a context too long."""

from __future__ import annotations

import pytest

from bot.api import (
    AuthenticationError,
    BadRequest,
    ChatMessage,
    ChatRequest,
    ContextTooLong,
    ModelNotAllowed,
    PermissionDenied,
    ProviderClient,
)
from bot.api.chat_errors import chat_refusal
from simulator.server import serve
from simulator.state import Dialect
from tests.bot.api.support import FAST_RETRY, FREE_KEY, settings_for, sim_config


def ask(text: str, model: str = "llm-3.5-turbo") -> ChatRequest:
    return ChatRequest(model=model, messages=[ChatMessage(role="user", content=text)])


@pytest.mark.parametrize(("dialect", "status"), [("default", 403), ("spec", 401)])
async def test_a_plan_refusal_names_the_model_and_the_plan(dialect: Dialect, status: int) -> None:
    # genbot believes it is on the developer plan; the key is a free one.
    async with (
        serve(sim_config(dialect=dialect)) as sim,
        ProviderClient(settings_for(sim.base_url, key=FREE_KEY), retry=FAST_RETRY) as api,
    ):
        for call in (api.chat.complete, _streamed(api)):
            with pytest.raises(ModelNotAllowed) as refused:
                await call(ask("hi", model="llm-4"))
            assert refused.value.status == status
            message = refused.value.user_message
            assert "llm-4" in message and "'developer'" in message and "Developer plan" in message


def _streamed(api: ProviderClient):  # type: ignore[no-untyped-def]
    async def call(request: ChatRequest) -> None:
        async with api.chat.stream(request) as stream:
            async for _ in stream:
                pass

    return call


async def test_a_wrong_key_is_the_key_even_for_llm_4() -> None:
    async with (
        serve(sim_config(dialect="spec")) as sim,
        ProviderClient(settings_for(sim.base_url, key="not-a-key"), retry=FAST_RETRY) as api,
    ):
        for model in ("llm-3.5-turbo", "llm-4"):
            with pytest.raises(AuthenticationError) as refused:
                await api.chat.complete(ask("hi", model=model))
            assert refused.value.user_message == (
                "The service rejected genbot's API key. An admin needs to check it."
            )


def test_a_bare_401_on_llm_4_is_the_plan_once_the_key_has_worked() -> None:
    bare = AuthenticationError("Unauthorized")
    assert chat_refusal(bare, "llm-4", "developer", key_accepted=False) is bare
    assert isinstance(chat_refusal(bare, "llm-4", "developer", key_accepted=True), ModelNotAllowed)
    assert chat_refusal(bare, "llm-3.5-turbo", "developer", key_accepted=True) is bare
    worded = AuthenticationError("Your plan does not include this model")
    assert isinstance(chat_refusal(worded, "llm-4", "free", key_accepted=False), ModelNotAllowed)
    assert isinstance(
        chat_refusal(PermissionDenied(""), "llm-3.5-turbo", "free", key_accepted=False),
        ModelNotAllowed,
    )


@pytest.mark.parametrize(
    ("message", "body", "context"),
    [
        ("This model's maximum context length is 4097 tokens.", None, True),
        ("Too many tokens in the prompt", None, True),
        ("prompt is too long", None, True),
        ("bad", {"error": {"code": "context_length_exceeded"}}, True),
        ("'temperature' must be at most 2", None, False),
        ("'max_tokens' must be an integer, got 'x'.", None, False),
        ("name too long", None, False),
    ],
)
def test_a_context_refusal_is_told_apart_from_other_400s(
    message: str, body: object, context: bool
) -> None:
    meaning = chat_refusal(BadRequest(message, body), "llm-4", "developer", key_accepted=True)
    assert isinstance(meaning, ContextTooLong) is context


async def test_the_simulator_can_refuse_a_long_prompt() -> None:
    async with (
        serve(sim_config(context_tokens=20)) as sim,
        ProviderClient(settings_for(sim.base_url), retry=FAST_RETRY) as api,
    ):
        await api.chat.complete(ask("short"))
        with pytest.raises(ContextTooLong) as refused:
            await api.chat.complete(ask("word " * 40))
        assert "maximum context length is 20 tokens" in refused.value.provider_message
