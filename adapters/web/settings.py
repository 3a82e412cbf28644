"""``[web]``: the browser playground's settings."""

from __future__ import annotations

from pydantic import Field, SecretStr

from bot.kernel import Address, Section


class WebSettings(Section):
    """``[web]``: the browser playground.

    Requests are served only for the ``Host`` names ``127.0.0.1``, ``localhost``, ``[::1]``,
    the host of ``public_url`` and ``allowed_hosts``. ``access_token`` is required when ``host``
    is not a loopback address; ``admin_ids`` are playground user ids (``web-…``). Each channel
    keeps its latest ``messages_per_channel`` messages; a shared channel (not a DM, nor a
    default one) no message was made in for ``channel_idle_days`` goes with its messages (0:
    kept). One client address (an IPv6 one by its /64) starts at most ``new_sessions_per_hour``
    identities (0: no limit).
    """

    enabled: bool = False
    host: str = "127.0.0.1"
    port: int = Field(default=8080, ge=0, le=65535)
    public_url: Address = ""
    allowed_hosts: list[str] = Field(default_factory=list)
    access_token: SecretStr = SecretStr("")
    admin_ids: list[str] = Field(default_factory=list)
    upload_cache_mb: int = Field(default=256, ge=1)
    messages_per_channel: int = Field(default=500, ge=10, le=100_000)
    channel_idle_days: int = Field(default=30, ge=0)
    new_sessions_per_hour: int = Field(default=5, ge=0)
