"""``[web]``: the browser playground's settings."""

from __future__ import annotations

import ipaddress

from pydantic import Field, SecretStr, field_validator
from pydantic_core import PydanticCustomError

from bot.kernel import Address, Section


class WebSettings(Section):
    """``[web]``: the browser playground.

    Requests are served only for the ``Host`` names ``127.0.0.1``, ``localhost``, ``[::1]``,
    the host of ``public_url`` and ``allowed_hosts``. ``access_token`` is required when ``host``
    is not a loopback address; ``admin_ids`` are playground user ids (``web-…``). Each channel
    keeps its latest ``messages_per_channel`` messages; a shared channel (not a DM, nor a
    default one) no message was made in for ``channel_idle_days`` goes with its messages (0:
    kept). One client address (an IPv6 one by its /64) starts at most ``new_sessions_per_hour``
    identities (0: no limit). ``trusted_proxies`` (addresses or CIDR networks) are the reverse
    proxies whose ``X-Forwarded-For`` says who the client is (see
    :func:`adapters.web.access.client_address`); none by default.
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
    trusted_proxies: list[str] = Field(default_factory=list)

    @field_validator("trusted_proxies")
    @classmethod
    def _networks(cls, entries: list[str]) -> list[str]:
        wrong = [str(n) for n, entry in enumerate(entries, 1) if proxy_network(entry) is None]
        if wrong:
            many = len(wrong) > 1
            problem = (
                "are not IP addresses or networks" if many else "is not an IP address or network"
            )
            raise PydanticCustomError(
                "trusted_proxies",
                "{which} of {count}: write each as an address (10.0.0.5, ::1) or a CIDR"
                " network (10.0.0.0/8, fd00::/8)",
                {
                    "which": f"{'entries' if many else 'entry'} {', '.join(wrong)}",
                    "count": f"{len(entries)} {problem}",
                },
            )
        return entries


def proxy_network(entry: str) -> ipaddress.IPv4Network | ipaddress.IPv6Network | None:
    """The network a ``[web] trusted_proxies`` entry names (an address: just it), or None when
    it names none."""
    try:
        return ipaddress.ip_network(entry.strip(), strict=False)
    except ValueError:
        return None
