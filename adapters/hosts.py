"""Which ``Host`` a listener answers: the one check against DNS rebinding, shared by the
playground (:mod:`adapters.web.access`) and the ops listener (:mod:`genbot.ops`).

A web page on a name of its own that the attacker's DNS then points at this machine (DNS
rebinding) is, to the browser, the same site as that name: it may read what it asks for there.
Its requests carry that name as ``Host``, so a listener that answers only the names it was
given (loopback names, its configured names) and refuses every other one with 421 (Misdirected
Request) gives such a page nothing.
"""

from __future__ import annotations

import ipaddress
from collections.abc import Iterable
from dataclasses import dataclass
from urllib.parse import urlsplit

LOOPBACK_NAMES = frozenset({"127.0.0.1", "localhost", "::1"})


@dataclass(frozen=True)
class HostName:
    """A host name with an optional port (None: any port)."""

    name: str
    port: int | None


def parse_host(value: str) -> HostName | None:
    """``example.org:8080`` → ``HostName("example.org", 8080)``; None when it is not a host."""
    value = value.strip()
    if not value or any(c in value for c in "/?#@ \t"):
        return None
    try:
        parts = urlsplit("//" + value)
        port = parts.port
    except ValueError:
        return None
    if not parts.hostname:
        return None
    return HostName(parts.hostname.lower(), port)


def allowed_hosts(entries: Iterable[str]) -> list[HostName]:
    """The loopback names (any port) and each of ``entries`` that is a host (``name`` or
    ``name:port``)."""
    loopback = [HostName(name, None) for name in LOOPBACK_NAMES]
    return loopback + [host for entry in entries if (host := parse_host(entry))]


def host_allowed(header: str | None, allowed: Iterable[HostName]) -> bool:
    """Whether a request with this ``Host`` header names one of ``allowed``."""
    host = parse_host(header or "")
    if host is None:
        return False
    return any(host.name == entry.name and entry.port in (None, host.port) for entry in allowed)


def is_address(host: HostName) -> bool:
    """Whether ``host`` is an IP address (which no rebinding page can be served from)."""
    try:
        ipaddress.ip_address(host.name)
    except ValueError:
        return False
    return True
