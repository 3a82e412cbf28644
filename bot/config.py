"""genbot settings: one TOML file, every key overridable by ``GENBOT_<SECTION>__<KEY>``.

The file is found at ``--config PATH``, else ``$GENBOT_CONFIG``, else ``./genbot.toml`` when
present. Environment variables win over the file. Secrets are ``SecretStr`` so that ``repr`` and
logs never show them.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import AfterValidator, BaseModel, ConfigDict, Field, SecretStr, model_validator
from pydantic_settings import (
    BaseSettings,
    PydanticBaseSettingsSource,
    SettingsConfigDict,
    TomlConfigSettingsSource,
)

Plan = Literal["free", "developer", "pro"]


def no_credentials(address: str) -> str:
    """``address`` unchanged; ``ValueError`` when it carries a user name or password
    (``https://user:password@host``): it would be logged and sent where it does not belong."""
    authority = address.strip().partition("://")[2].split("/", 1)[0]
    if "@" in authority:
        raise ValueError(
            "the address holds credentials (user:password@…); take them out: secrets have "
            "settings of their own and are never part of an address"
        )
    return address


Address = Annotated[str, AfterValidator(no_credentials)]
"""A configured URL: refused at load when it carries credentials (naming the setting only)."""


class Section(BaseModel):
    """Base of every settings section: unknown keys are errors, so typos are caught."""

    model_config = ConfigDict(extra="forbid")


class ApiSettings(Section):
    """``[api]``: where the provider lives and how genbot authenticates. A provider rate limit
    (429) is waited out for up to ``rate_limit_max_wait`` seconds per call; chat requests are
    paced to ``chat_requests_per_minute`` / ``chat_requests_per_day`` when set (0: unpaced)."""

    base_url: Address = "http://127.0.0.1:8787"
    backup_urls: list[Address] = Field(default_factory=list)
    proxy_url: Address = ""
    key: SecretStr = SecretStr("")
    plan: Plan = "developer"
    connect_timeout: float = 10.0
    read_timeout: float = 120.0
    stream_idle_timeout: float = 60.0
    rate_limit_max_wait: float = Field(default=60.0, ge=0)
    chat_requests_per_minute: int = Field(default=0, ge=0)
    chat_requests_per_day: int = Field(default=0, ge=0)


class ChatSettings(Section):
    """``[chat]``: defaults for every chat request (users override model, temperature and the
    channel's system prompt with ``/settings``; ``/chat`` options override per conversation)."""

    model: str = "llm-3.5-turbo"
    system_prompt: str = ""
    temperature: float | None = None
    top_p: float | None = None
    presence_penalty: float | None = None
    frequency_penalty: float | None = None
    stop: list[str] = Field(default_factory=list)
    max_tokens: int | None = None
    logit_bias: dict[str, float] = Field(default_factory=dict)
    answer_reserve: int = 1024
    max_function_rounds: int = 3
    stream: bool = True


class StorageSettings(Section):
    """``[storage]``: where jobs, conversations and links live. ``url`` (a
    ``postgresql://user[:password]@host:port/database`` address) selects PostgreSQL, which
    several genbot processes share; without it, the SQLite file at ``path`` (one process).
    A process holds its jobs for ``lease_seconds`` past its last heartbeat."""

    path: Path = Path("genbot.db")
    url: SecretStr = SecretStr("")
    pool_size: int = Field(default=10, ge=1, le=100)
    lease_seconds: float = Field(default=10.0, gt=0, le=3600)

    @property
    def postgres_url(self) -> str | None:
        """The PostgreSQL address when one is set, else None (SQLite)."""
        return self.url.get_secret_value().strip() or None


class DiscordSettings(Section):
    """``[discord]``: the Discord adapter (started when ``token`` is set)."""

    token: SecretStr = SecretStr("")
    guild_ids: list[int] = Field(default_factory=list)
    admin_ids: list[int] = Field(default_factory=list)
    allowed_channel_ids: list[int] = Field(default_factory=list)
    open_channel_ids: list[int] = Field(default_factory=list)
    api_base: Address = "https://discord.com/api/v10"
    gateway_url: Address = "wss://gateway.discord.gg/"
    result_cards: bool = True
    """genbot's own messages (progress, results) as Components V2 cards; false: classic
    content, attachments and button rows."""
    shard_count: int | None = Field(default=None, ge=1)
    shard_ids: list[int] | None = None

    @model_validator(mode="after")
    def _shards_within_count(self) -> DiscordSettings:
        if self.shard_ids is None:
            return self
        if self.shard_count is None:
            raise ValueError("[discord] shard_ids needs shard_count")
        outside = [n for n in self.shard_ids if not 0 <= n < self.shard_count]
        if outside or not self.shard_ids or len(set(self.shard_ids)) != len(self.shard_ids):
            raise ValueError(
                f"[discord] shard_ids must be distinct shards 0–{self.shard_count - 1}"
            )
        return self

    def shards(self) -> str | None:
        """The shards this process runs, for the cluster's view (None: all it is given)."""
        if self.shard_count is None:
            return None
        ids = self.shard_ids if self.shard_ids is not None else range(self.shard_count)
        return f"{','.join(map(str, ids))} of {self.shard_count}"


class SlackSettings(Section):
    """``[slack]``: the Slack adapter, started when ``bot_token`` is set (one workspace) or
    ``client_id`` and ``client_secret`` are (installed by OAuth into any number of workspaces;
    ``redirect_uri`` is the public address of ``/slack/oauth_redirect`` when Slack has more
    than one on file)."""

    bot_token: SecretStr = SecretStr("")
    app_token: SecretStr = SecretStr("")
    signing_secret: SecretStr = SecretStr("")
    client_id: str = ""
    client_secret: SecretStr = SecretStr("")
    redirect_uri: Address = ""
    api_url: Address = "https://slack.com/api/"
    http_host: str = "127.0.0.1"
    http_port: int = Field(default=3000, ge=0, le=65535)
    admin_ids: list[str] = Field(default_factory=list)
    open_channel_ids: list[str] = Field(default_factory=list)

    @property
    def distributed(self) -> bool:
        """Whether genbot is installed by OAuth (``client_id`` and ``client_secret`` set)."""
        return bool(self.client_id and self.client_secret.get_secret_value())

    @property
    def configured(self) -> bool:
        """Whether the Slack adapter runs (a bot token, or OAuth credentials)."""
        return bool(self.bot_token.get_secret_value()) or self.distributed


class WebSettings(Section):
    """``[web]``: the browser playground.

    Requests are served only for the ``Host`` names ``127.0.0.1``, ``localhost``, ``[::1]``,
    the host of ``public_url`` and ``allowed_hosts``. ``access_token`` is required when ``host``
    is not a loopback address; ``admin_ids`` are playground user ids (``web-…``).
    """

    enabled: bool = False
    host: str = "127.0.0.1"
    port: int = Field(default=8080, ge=0, le=65535)
    public_url: Address = ""
    allowed_hosts: list[str] = Field(default_factory=list)
    access_token: SecretStr = SecretStr("")
    admin_ids: list[str] = Field(default_factory=list)
    upload_cache_mb: int = Field(default=256, ge=1)


class WebhookSettings(Section):
    """``[webhook]``: the receiver for provider task notifications.

    ``public_url`` is the https address the provider calls (it must end up at ``host:port``);
    when empty, genbot does not ask for webhooks and relies on polling alone.
    ``allow_insecure_loopback`` admits ``http://127.0.0.1`` addresses (the demo and tests, with
    ``genbot sim --insecure-webhooks``); real providers accept https on port 443 only.
    ``media_cache_mb`` bounds the images re-hosted for the provider (files beside the database,
    kept an hour).
    """

    public_url: Address = ""
    host: str = "127.0.0.1"
    port: int = Field(default=8788, ge=0, le=65535)
    path: str = "/webhooks/tasks"
    allow_insecure_loopback: bool = False
    media_cache_mb: int = Field(default=256, ge=1)


class LimitsSettings(Section):
    """``[limits]``: caps and budgets that protect a workspace's credits."""

    max_concurrent_jobs_per_user: int = 3
    daily_credit_budget_per_user: int = 200
    poll_interval_min: float = 1.0
    poll_interval_max: float = 10.0
    job_timeout_seconds: float = 1800.0
    discord_edits_per_window: int = 5
    discord_edit_window_seconds: float = 5.0
    slack_updates_per_minute: int = 50
    slack_message_updates_per_second: float = 1.0
    max_upload_bytes: int = 8 * 1024 * 1024
    progress_tick_seconds: float = Field(default=5.0, gt=0)
    """How often running jobs' progress messages move (their time shows in these steps)."""


class RuntimeSettings(Section):
    """``[runtime]``: how the process stops. On SIGTERM genbot takes no new events, lets what
    is running (handlers, chat streams, result deliveries) finish for up to ``drain_seconds``,
    then stops; what was cut short resumes at the next start."""

    drain_seconds: float = Field(default=20.0, ge=0)


class OpsSettings(Section):
    """``[ops]``: the operations listener (``/healthz``, ``/readyz``, ``/metrics``).

    ``/readyz`` wants the provider to have answered within ``provider_fresh_seconds``; when it
    has not, it asks the provider a free question, at most once per ``probe_interval_seconds``.
    """

    enabled: bool = False
    host: str = "127.0.0.1"
    port: int = Field(default=9108, ge=0, le=65535)
    provider_fresh_seconds: float = Field(default=300.0, gt=0)
    probe_interval_seconds: float = Field(default=30.0, ge=0)


class LoggingSettings(Section):
    """``[logging]``: ``format = "json"`` writes one JSON object per line (for log shippers);
    ``"text"`` is for people."""

    format: Literal["text", "json"] = "text"


class Settings(BaseSettings):
    """All of genbot's settings."""

    model_config = SettingsConfigDict(
        env_prefix="GENBOT_",
        env_nested_delimiter="__",
        extra="forbid",
    )

    api: ApiSettings = Field(default_factory=ApiSettings)
    chat: ChatSettings = Field(default_factory=ChatSettings)
    storage: StorageSettings = Field(default_factory=StorageSettings)
    discord: DiscordSettings = Field(default_factory=DiscordSettings)
    slack: SlackSettings = Field(default_factory=SlackSettings)
    web: WebSettings = Field(default_factory=WebSettings)
    webhook: WebhookSettings = Field(default_factory=WebhookSettings)
    limits: LimitsSettings = Field(default_factory=LimitsSettings)
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


def resolve_config_path(explicit: str | os.PathLike[str] | None) -> Path | None:
    """The TOML file to read: ``explicit``, else ``$GENBOT_CONFIG``, else ``./genbot.toml``."""
    if explicit:
        return Path(explicit)
    from_env = os.environ.get("GENBOT_CONFIG")
    if from_env:
        return Path(from_env)
    local = Path("genbot.toml")
    return local if local.is_file() else None


def load_settings(config: str | os.PathLike[str] | None = None, **overrides: Any) -> Settings:
    """Read settings from the TOML file (see :func:`resolve_config_path`) and the environment.

    Raises ``FileNotFoundError`` when an explicitly named file does not exist.
    """
    path = resolve_config_path(config)
    if path is not None and not path.is_file():
        raise FileNotFoundError(f"configuration file not found: {path}")

    class FileSettings(Settings):
        model_config = SettingsConfigDict(toml_file=path)

    return FileSettings(**overrides)
