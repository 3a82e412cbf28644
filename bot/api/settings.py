"""The ``[api]`` settings section: where the provider lives and how genbot authenticates.

It lives beside the client that reads it, so ``bot/api/`` needs nothing from the rest of the
core; :mod:`bot.kernel.settings` re-exports it with the other sections.
"""

from __future__ import annotations

from typing import Annotated, Literal, Self

from pydantic import AfterValidator, BaseModel, ConfigDict, Field, SecretStr, model_validator

from bot.api.validation import DEFAULT_UPSTREAM_CDN_HOSTS

Plan = Literal["free", "developer", "pro"]
KeyMode = Literal["relax", "fast", "turbo"]
SINGLE_KEY_NAME = "default"
"""The name of the pool of one that a lone ``[api] key`` makes."""
ControlnetImageField = Literal["auto", "control_image", "controlnet_image"]


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
    """Base of every settings section: unknown keys are errors, so typos are caught; ``inf``
    and ``nan`` are refused for every number (a timeout or an interval that never ends, or
    compares false with everything)."""

    model_config = ConfigDict(extra="forbid", allow_inf_nan=False)


class KeySettings(Section):
    """One ``[[api.keys]]`` entry: a provider account's key, its ``name`` (what logs, metrics,
    jobs and the admin page show: never the key), its ``weight`` among the keys with room,
    ``max_concurrent`` tasks in flight (0: no cap), ``daily_tasks`` created per UTC day (0: no
    cap) and the ``modes`` it may run new image tasks in (empty: every mode)."""

    name: str = Field(pattern=r"^[A-Za-z0-9_.-]{1,32}$")
    key: SecretStr
    weight: float = Field(default=1.0, gt=0)
    max_concurrent: int = Field(default=0, ge=0)
    daily_tasks: int = Field(default=0, ge=0)
    modes: list[KeyMode] = Field(default_factory=list)


class ApiSettings(Section):
    """``[api]``: where the provider lives and how genbot authenticates. A provider rate limit
    (429) is waited out for up to ``rate_limit_max_wait`` seconds per call; chat requests are
    paced to ``chat_requests_per_minute`` / ``chat_requests_per_day`` when set (0: unpaced).
    ``diffusion_models`` are the provider's checkpoint model ids, offered to users (the first
    is the default of ControlNet, which needs one)."""

    base_url: Address = "http://127.0.0.1:8787"
    backup_urls: list[Address] = Field(default_factory=list)
    proxy_url: Address = ""
    key: SecretStr = SecretStr("")
    plan: Plan = "developer"
    connect_timeout: float = Field(default=10.0, gt=0)
    read_timeout: float = Field(default=120.0, gt=0)
    stream_idle_timeout: float = Field(default=60.0, gt=0)
    """No timeout is documented; these are genbot's (docs/provider.md#timeouts)."""
    rate_limit_max_wait: float = Field(default=60.0, ge=0)
    chat_requests_per_minute: int = Field(default=0, ge=0)
    chat_requests_per_day: int = Field(default=0, ge=0)
    upstream_cdn_hosts: list[str] = Field(default_factory=lambda: list(DEFAULT_UPSTREAM_CDN_HOSTS))
    """Hosts whose links describe and blend refuse ("the upstream chat-platform CDN"); such
    images are re-hosted or refused before sending (docs/provider.md#upstream-cdn)."""
    controlnet_image_field: ControlnetImageField = "auto"
    """The name controlnet's control image is sent under: ``auto`` sends ``control_image`` and
    switches to ``controlnet_image`` if the provider refuses it
    (docs/provider.md#controlnet-image)."""
    diffusion_models: list[str] = Field(default_factory=list)
    keys: list[KeySettings] = Field(default_factory=list)
    """The pool of provider keys (docs/operations.md#a-pool-of-provider-keys); empty: ``key``
    alone, as a pool of one named ``default``."""
    key_out_seconds: float = Field(default=900.0, gt=0)
    """How long a key the provider refused (401, 403, insufficient credit) is left out of the
    choice of new jobs before it is tried again."""

    @model_validator(mode="after")
    def _one_pool(self) -> Self:
        names = [entry.name for entry in self.keys]
        if len(set(names)) != len(names):
            raise ValueError("[[api.keys]] names must be unique")
        if self.keys and self.key.get_secret_value():
            raise ValueError(
                "set either [api] key or [[api.keys]], not both: a lone key is a pool of one"
            )
        return self

    def pool(self) -> list[KeySettings]:
        """The configured keys: ``[[api.keys]]``, else ``[api] key`` as a pool of one named
        ``default`` (none when neither is set)."""
        if self.keys:
            return list(self.keys)
        if not self.key.get_secret_value():
            return []
        return [KeySettings(name=SINGLE_KEY_NAME, key=self.key)]

    def first_key(self) -> str:
        """The secret of the first key of the pool ("" when there is none): what sealing
        derives from when ``[storage] secret_key`` is empty."""
        keys = self.pool()
        return keys[0].key.get_secret_value() if keys else ""
