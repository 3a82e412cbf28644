"""Assemble the core from settings: job engines, chat, account commands, one shared budget."""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from bot.api import ProviderClient
from bot.features.account import AccountFeature
from bot.features.chat import DEFAULT_SYSTEM_PROMPT, ChatDefaults, ChatEngine
from bot.features.chat.caps import ChatCaps
from bot.features.chat.tools import ChatImageTools
from bot.features.home import HomeFeature
from bot.features.jobs import JobEngines, build_job_engines
from bot.kernel import ChatSettings, CoreSettings, Surface, SurfaceRegistry
from bot.outbox import Outbox, Pacer
from bot.refs import Refs
from bot.router import Router
from storage import SettingValues, Store


def chat_defaults(chat: ChatSettings) -> ChatDefaults:
    """The chat engine's defaults from the ``[chat]`` section."""
    return ChatDefaults(
        model=chat.model,
        system_prompt=chat.system_prompt or DEFAULT_SYSTEM_PROMPT,
        temperature=chat.temperature,
        top_p=chat.top_p,
        presence_penalty=chat.presence_penalty,
        frequency_penalty=chat.frequency_penalty,
        stop=tuple(chat.stop),
        max_tokens=chat.max_tokens,
        logit_bias=dict(chat.logit_bias) or None,
        answer_reserve=chat.answer_reserve,
        max_function_rounds=chat.max_function_rounds,
        stream=chat.stream,
    )


def build_core(
    settings: CoreSettings,
    store: Store,
    provider: ProviderClient,
    surfaces: Iterable[Surface],
    *,
    open_channels: Mapping[str, frozenset[str]] | None = None,
    shards: str | None = None,
) -> tuple[Router, JobEngines]:
    """The core with every feature, answering on ``surfaces`` (one per platform), and the job
    engines (for tests and benchmarks to inspect). ``open_channels``: per platform, the channels
    whose job buttons anyone may press (:class:`bot.refs.Refs`); ``shards``: see
    :func:`bot.features.jobs.build_job_engines`.

    One :class:`~bot.outbox.Outbox` (with one :class:`~bot.outbox.Pacer`) writes for every
    feature, so chat streams and job messages together stay within each platform's windows.
    """
    registry = SurfaceRegistry(surfaces)
    outbox = Outbox(registry, Pacer(shared=store if store.shared else None))
    jobs = build_job_engines(settings, store, provider, outbox, shards=shards)
    chat = ChatEngine(
        store,
        provider,
        outbox,
        tools=ChatImageTools(jobs.chat_jobs),
        defaults=chat_defaults(settings.chat),
        image_host=jobs.media_host.put_bytes if jobs.media_host is not None else None,
        caps=ChatCaps(
            settings.limits.max_concurrent_chats_per_user,
            settings.limits.chat_answers_per_minute_per_user,
        ),
    )
    home = HomeFeature(
        store,
        outbox,
        jobs.delivery.results,
        defaults=SettingValues(model=settings.chat.model, temperature=settings.chat.temperature),
        daily_credit_budget=settings.limits.daily_credit_budget_per_user,
    )
    models = jobs.diffusion.models
    account = AccountFeature(
        store,
        outbox,
        plan=settings.api.plan,
        daily_credit_budget=settings.limits.daily_credit_budget_per_user,
        home=home,
        diffusion_models=models.known,
    )
    router = Router(
        outbox,
        [*jobs.features, chat, account, home],
        conversations=chat,
        services=jobs.services,
        plan=settings.api.plan,
        home=home,
        refs=Refs(store, open_channels),
        diffusion_models=models.known,
    )
    return router, jobs
