"""The core's settings sections: one TOML file, every key overridable by
``GENBOT_<SECTION>__<KEY>``.

The file is found at ``--config PATH``, else ``$GENBOT_CONFIG``, else ``./genbot.toml`` when
present (:func:`genbot.settings.load_settings`, which adds each adapter's own section).
Environment variables win over the file. Secrets are ``SecretStr`` so that ``repr`` and logs
never show them.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Literal

from pydantic import (
    AfterValidator,
    BeforeValidator,
    Field,
    SecretStr,
    ValidationInfo,
    field_validator,
)
from pydantic_core import PydanticCustomError
from pydantic_settings import (
    BaseSettings,
    PydanticBaseSettingsSource,
    SettingsConfigDict,
    TomlConfigSettingsSource,
)

from bot.api import CHAT_MODELS, MAX_STOP_SEQUENCES
from bot.api.settings import Address as Address
from bot.api.settings import ApiSettings as ApiSettings
from bot.api.settings import Plan as Plan
from bot.api.settings import Section as Section
from bot.api.settings import no_credentials as no_credentials

TokenId = Annotated[str, Field(pattern=r"^[0-9]+$")]


def _chat_model(model: str) -> str:
    if model not in CHAT_MODELS:
        raise PydanticCustomError(
            "chat_model",
            "Input should be a chat model genbot knows: {models}",
            {"models": ", ".join(CHAT_MODELS)},
        )
    return model


def _chat_model_or_empty(model: str) -> str:
    if model and model not in CHAT_MODELS:
        raise PydanticCustomError(
            "chat_model",
            "Input should be empty (to use [chat] model) or a chat model genbot knows: {models}",
            {"models": ", ".join(CHAT_MODELS)},
        )
    return model


ChatModel = Annotated[str, AfterValidator(_chat_model)]
"""A chat model id the provider documents (:data:`bot.api.CHAT_MODELS`)."""
ChatModelOrEmpty = Annotated[str, AfterValidator(_chat_model_or_empty)]
"""A chat model id, or empty for ``[chat] model``."""


class ChatSettings(Section):
    """``[chat]``: defaults for every chat request (users override model, temperature and the
    channel's system prompt with ``/settings``; ``/chat`` options override per conversation).
    The sampling parameters, ``stop``, ``max_tokens`` and ``logit_bias`` are refused at load
    outside the ranges every request is held to (docs/provider.md#numeric-rules)."""

    model: ChatModel = "llm-3.5-turbo"
    system_prompt: str = ""
    temperature: float | None = Field(default=None, ge=0, le=2)
    top_p: float | None = Field(default=None, ge=0, le=1)
    presence_penalty: float | None = Field(default=None, ge=-2, le=2)
    frequency_penalty: float | None = Field(default=None, ge=-2, le=2)
    stop: list[Annotated[str, Field(min_length=1)]] = Field(
        default_factory=list, max_length=MAX_STOP_SEQUENCES
    )
    max_tokens: int | None = Field(default=None, ge=1)
    logit_bias: dict[TokenId, Annotated[float, Field(ge=-100, le=100)]] = Field(
        default_factory=dict
    )
    answer_reserve: int = Field(default=1024, ge=1)
    max_function_rounds: int = Field(default=3, ge=0)
    stream: bool = True
    documents_max_mb: float = Field(default=10.0, gt=0, le=100)
    documents_max_pages: int = Field(default=500, ge=1, le=10_000)
    documents_max_files: int = Field(default=5, ge=1, le=20)
    documents_share: float = Field(default=0.75, gt=0, le=1)


MIN_SECRET_KEY = 32


def _secret_key(key: SecretStr) -> SecretStr:
    if 0 < len(key.get_secret_value()) < MIN_SECRET_KEY:
        raise ValueError(
            f"a key of at least {MIN_SECRET_KEY} characters, for example the output of "
            "`python3 -c 'import secrets; print(secrets.token_urlsafe(32))'`"
        )
    return key


SecretKey = Annotated[SecretStr, AfterValidator(_secret_key)]


class KeepDays(Section):
    """``[storage.keep_days]``: how many days genbot keeps each kind of data before one process
    of the cluster purges it each hour (0: until deleted). ``audit``: the audit log's
    entries; ``conversations``: chats, by their last message; ``job_results``: finished
    jobs (prompt, parameters, result links: what /jobs, /show and ℹ️ read), by when they were
    asked for; ``images``: the images the playground stores; ``uploads``: images users
    attached, hosted for the provider (kept an hour at most in any case). A plain number
    (``keep_days = 90``, as before) sets ``audit`` alone."""

    audit: float = Field(default=90.0, gt=0, le=3650)
    conversations: float = Field(default=0.0, ge=0, le=3650)
    job_results: float = Field(default=0.0, ge=0, le=3650)
    images: float = Field(default=0.0, ge=0, le=3650)
    uploads: float = Field(default=0.0, ge=0, le=3650)


def _audit_days(value: object) -> object:
    return {"audit": value} if isinstance(value, int | float | str) else value


class StorageSettings(Section):
    """``[storage]``: where jobs, conversations and links live. ``url`` (a
    ``postgresql://user[:password]@host:port/database`` address) selects PostgreSQL, which
    several genbot processes share; without it, the SQLite file at ``path`` (one process).
    A process holds its jobs for ``lease_seconds`` past its last heartbeat. A database call
    taking longer than ``statement_timeout`` seconds is cancelled and fails (0: unbounded).
    ``secret_key`` seals the secrets kept in the database (Slack tokens, webhook secrets; when
    empty, a key derived from ``[api] key``); ``secret_key_previous`` still opens what the key
    before it sealed (:mod:`bot.kernel.sealer`). ``keep_days``: how long each kind of data is
    kept (:class:`KeepDays`)."""

    path: Path = Path("genbot.db")
    url: SecretStr = SecretStr("")
    secret_key: SecretKey = SecretStr("")
    secret_key_previous: SecretKey = SecretStr("")
    pool_size: int = Field(default=10, ge=1, le=100)
    lease_seconds: float = Field(default=10.0, gt=0, le=3600)
    statement_timeout: float = Field(default=15.0, ge=0, le=3600)
    keep_days: Annotated[KeepDays, BeforeValidator(_audit_days)] = Field(default_factory=KeepDays)

    @property
    def postgres_url(self) -> str | None:
        """The PostgreSQL address when one is set, else None (SQLite)."""
        return self.url.get_secret_value().strip() or None


class WebhookSettings(Section):
    """``[webhook]``: the receiver for provider task notifications.

    ``public_url`` is the https address the provider calls (it must end up at ``host:port``);
    when empty, genbot does not ask for webhooks and relies on polling alone.
    ``allow_insecure_loopback`` admits ``http://127.0.0.1`` addresses (the demo and tests, with
    ``genbot sim --insecure-webhooks``); real providers accept https on port 443 only.
    ``media_cache_mb`` bounds the images re-hosted for the provider (files beside the database,
    kept an hour), ``media_cache_mb_per_user`` one user's share of them (their newest stay).
    """

    public_url: Address = ""
    host: str = "127.0.0.1"
    port: int = Field(default=8788, ge=0, le=65535)
    path: str = "/webhooks/tasks"
    allow_insecure_loopback: bool = False
    media_cache_mb: int = Field(default=256, ge=1)
    media_cache_mb_per_user: int = Field(default=64, ge=1)


DIFFUSION_ENDPOINT_NAMES = ("txt2img", "img2img", "upscale", "controlnet")
DEFAULT_DIFFUSION_CREDITS: dict[str, int] = {
    "txt2img": 2,
    "img2img": 2,
    "upscale": 1,
    "controlnet": 3,
}


def _diffusion_credits(prices: dict[str, int]) -> dict[str, int]:
    unknown = sorted(set(prices) - set(DIFFUSION_ENDPOINT_NAMES))
    if unknown:
        raise ValueError(f"no diffusion endpoint {unknown[0]!r}; the endpoints are txt2img, "
                         "img2img, upscale and controlnet")  # fmt: skip
    if any(price < 0 for price in prices.values()):
        raise ValueError("diffusion prices are credits, 0 or more")
    return {**DEFAULT_DIFFUSION_CREDITS, **prices}


class LimitsSettings(Section):
    """``[limits]``: caps and the credit budget that protect a workspace's credits.

    ``diffusion_credits``: what genbot records a diffusion job as costing, per endpoint (the
    provider does not say what it charged; these are estimates, and ``/usage`` says so —
    docs/provider.md#diffusion-prices). Endpoints left out keep their defaults.
    """

    max_concurrent_jobs_per_user: int = Field(default=3, ge=0)
    """Image jobs one user may have running at once (``0``: no cap)."""
    daily_credit_budget_per_user: int = Field(default=200, ge=0)
    """Credits one user may spend per UTC day (``0``: no budget)."""
    max_concurrent_chats_per_user: int = Field(default=3, ge=0)
    """Chat answers genbot writes for one user at once (``0``: no cap;
    :mod:`bot.features.chat.caps`)."""
    chat_answers_per_minute_per_user: int = Field(default=20, ge=0)
    """Chat answers one user may start per minute (``0``: no cap)."""
    poll_interval_min: float = Field(default=1.0, gt=0)
    poll_interval_max: float = Field(default=10.0, gt=0)
    """At least ``poll_interval_min``."""
    job_timeout_seconds: float = Field(default=1800.0, gt=0)
    max_upload_bytes: int = Field(default=8 * 1024 * 1024, ge=1)
    progress_tick_seconds: float = Field(default=5.0, gt=0)
    """How often running jobs' progress messages move (their time shows in these steps)."""
    diffusion_credits: Annotated[dict[str, int], AfterValidator(_diffusion_credits)] = Field(
        default_factory=lambda: dict(DEFAULT_DIFFUSION_CREDITS)
    )
    max_jobs_per_command: int = Field(default=10, ge=1, le=100)
    """The most jobs one command may start (``{a, b}`` permutations times ``--repeat``)."""
    confirm_above_credits: int = Field(default=50, ge=0)
    """A command whose jobs are estimated to cost more than this first shows a preview with
    Run and Cancel (``0``: only commands of several jobs do)."""

    @field_validator("poll_interval_max")
    @classmethod
    def _no_shorter_than_min(cls, longest: float, info: ValidationInfo) -> float:
        shortest = info.data.get("poll_interval_min")
        if shortest is not None and longest < shortest:
            raise PydanticCustomError(
                "poll_interval_order",
                "Input should be at least poll_interval_min ({shortest})",
                {"shortest": f"{shortest:g}"},
            )
        return longest


def _categories(lists: dict[str, list[str]]) -> dict[str, list[str]]:
    empty = [name for name in lists if not name.strip()]
    if empty:
        raise ValueError("a moderation category needs a name")
    return lists


class ModerationSettings(Section):
    """``[moderation]``: what prompts and chat messages may not say, for every workspace
    (admins add their workspace's own with ``/admin moderation``; :mod:`bot.features.moderation`).

    ``words`` and ``patterns`` map a category (what a refusal names) to words or phrases, and to
    regular expressions. ``ban_minutes``: the ban a user's 1st, 2nd, 3rd… refused prompt of a
    UTC day earns (the last again for any after). ``model_check``: prompts the lists are unsure
    of (a listed word inside another word) are classified by ``model_check_model`` (default:
    ``[chat] model``) within ``model_check_seconds``; when it cannot answer, the prompt is refused
    (``model_check_fails = "closed"``) or let through (``"open"``).
    """

    words: Annotated[dict[str, list[str]], AfterValidator(_categories)] = Field(
        default_factory=dict
    )
    patterns: Annotated[dict[str, list[str]], AfterValidator(_categories)] = Field(
        default_factory=dict
    )
    ban_minutes: list[Annotated[int, Field(ge=0)]] = Field(default_factory=lambda: [60, 120, 600])
    model_check: bool = False
    model_check_model: ChatModelOrEmpty = ""
    model_check_seconds: float = Field(default=5.0, gt=0, le=60)
    model_check_fails: Literal["closed", "open"] = "closed"


class PromptsSettings(Section):
    """``[prompts]``: what genbot does with an ``/imagine`` prompt before sending it.

    ``translate``: ``"off"`` sends every prompt as written; ``"auto"`` translates a prompt that
    is not in English (told on the spot, without any network call:
    :mod:`bot.features.jobs.prompt_language`) into English with the provider's chat model
    ``translate_model`` (default: ``[chat] model``), its ``--`` parameters, links, references
    and ``{a, b}`` kept as written, and the job shows both prompts; ``"ask"`` offers the user
    "Translate to English?" or "Run as written" first. The chat call's tokens count in the
    user's usage (and a tier's chat budget); when it fails, answers nothing usable or takes
    longer than ``translate_seconds``, the prompt is sent as written and the user is told.
    """

    translate: Literal["off", "auto", "ask"] = "off"
    translate_model: ChatModelOrEmpty = ""
    translate_seconds: float = Field(default=10.0, gt=0, le=60)


def _tier_model(model: str) -> str:
    if model.startswith("llm-"):
        return _chat_model(model)
    return model


TierModel = Annotated[str, AfterValidator(_tier_model)]
"""A tier's model: a chat model genbot knows (any ``llm-…``), else a diffusion checkpoint (any
id: users may ask for one ``[api] diffusion_models`` does not offer)."""

MEMBER_PATTERN = r"^[a-z]+:\S+$"
Member = Annotated[str, Field(pattern=MEMBER_PATTERN)]
ProcessMode = Literal["relax", "mixed", "fast", "turbo"]


class TierSettings(Section):
    """One ``[[quotas.tiers]]``: what its members may spend and use.

    ``daily_credits`` (image credits) and ``daily_chat_tokens`` refill at 00:00 UTC
    (``refill = "daily"``) or hour by hour over the last 24 hours (``"hourly"``);
    ``concurrent_jobs`` image jobs at once; ``0`` is no limit. ``modes`` (process modes) and
    ``models`` (chat models and diffusion checkpoints) it may use; empty: all. Members:
    ``roles`` (``"discord:<role id>"``, ``"slack:<user group id>"``) and ``users``
    (``"<platform>:<user id>"``). A tier named ``default`` is the tier of everyone in no other.
    """

    name: str = Field(min_length=1, max_length=40)
    daily_credits: int = Field(default=0, ge=0)
    daily_chat_tokens: int = Field(default=0, ge=0)
    concurrent_jobs: int = Field(default=0, ge=0)
    modes: list[ProcessMode] = Field(default_factory=list)
    models: list[TierModel] = Field(default_factory=list)
    refill: Literal["daily", "hourly"] = "daily"
    roles: list[Member] = Field(default_factory=list)
    users: list[Member] = Field(default_factory=list)


def _distinct_names(tiers: list[TierSettings]) -> list[TierSettings]:
    names = [tier.name for tier in tiers]
    twice = sorted({name for name in names if names.count(name) > 1})
    if twice:
        raise ValueError(f"two tiers are named {twice[0]!r}")
    return tiers


class QuotasSettings(Section):
    """``[quotas]``: the tiers (:class:`TierSettings`; :mod:`bot.features.jobs.admission`).
    Without tiers, everyone is in one ``default`` tier made of ``[limits]``'s
    ``daily_credit_budget_per_user`` and ``max_concurrent_jobs_per_user``."""

    tiers: Annotated[list[TierSettings], AfterValidator(_distinct_names)] = Field(
        default_factory=list
    )

    def maps_roles_of(self, platform: str) -> bool:
        """Whether a tier's members include roles of ``platform`` (its adapter then reads
        them)."""
        return any(role.startswith(f"{platform}:") for tier in self.tiers for role in tier.roles)


class RuntimeSettings(Section):
    """``[runtime]``: how the process stops. On SIGTERM genbot takes no new events, lets what
    is running (handlers, chat streams, result deliveries) finish for up to ``drain_seconds``,
    then stops; what was cut short resumes at the next start."""

    drain_seconds: float = Field(default=20.0, ge=0)


class OpsSettings(Section):
    """``[ops]``: the operations listener (``/healthz``, ``/readyz``, ``/metrics``).

    ``/readyz`` wants the provider to have answered within ``provider_fresh_seconds``; when it
    has not, it asks the provider a free question, at most once per ``probe_interval_seconds``.
    It answers a request whose ``Host`` is a loopback name, an IP address it listens on (any,
    when ``host`` is every address) or one of ``allowed_hosts`` (``name`` or ``name:port``,
    such as the service name a Prometheus scrapes it by); any other gets 421.
    """

    enabled: bool = False
    host: str = "127.0.0.1"
    port: int = Field(default=9108, ge=0, le=65535)
    allowed_hosts: list[str] = Field(default_factory=list)
    provider_fresh_seconds: float = Field(default=300.0, gt=0)
    probe_interval_seconds: float = Field(default=30.0, ge=0)


class LoggingSettings(Section):
    """``[logging]``: ``format = "json"`` writes one JSON object per line (for log shippers);
    ``"text"`` is for people."""

    format: Literal["text", "json"] = "text"


class CoreSettings(BaseSettings):
    """The core's settings (the sections :mod:`bot` reads); genbot's whole configuration adds
    each adapter's own section (:class:`genbot.settings.Settings`)."""

    model_config = SettingsConfigDict(
        env_prefix="GENBOT_",
        env_nested_delimiter="__",
        extra="forbid",
    )

    api: ApiSettings = Field(default_factory=ApiSettings)
    chat: ChatSettings = Field(default_factory=ChatSettings)
    storage: StorageSettings = Field(default_factory=StorageSettings)
    webhook: WebhookSettings = Field(default_factory=WebhookSettings)
    limits: LimitsSettings = Field(default_factory=LimitsSettings)
    moderation: ModerationSettings = Field(default_factory=ModerationSettings)
    prompts: PromptsSettings = Field(default_factory=PromptsSettings)
    quotas: QuotasSettings = Field(default_factory=QuotasSettings)
    runtime: RuntimeSettings = Field(default_factory=RuntimeSettings)
    ops: OpsSettings = Field(default_factory=OpsSettings)
    logging: LoggingSettings = Field(default_factory=LoggingSettings)

    @classmethod
    def settings_customise_sources(
        cls,
        settings_cls: type[BaseSettings],
        init_settings: PydanticBaseSettingsSource,
        env_settings: PydanticBaseSettingsSource,
        dotenv_settings: PydanticBaseSettingsSource,
        file_secret_settings: PydanticBaseSettingsSource,
    ) -> tuple[PydanticBaseSettingsSource, ...]:
        return (init_settings, env_settings, TomlConfigSettingsSource(settings_cls))
