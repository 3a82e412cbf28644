"""Who may use the playground, and as whom.

- **Host.** A request whose ``Host`` is not ``127.0.0.1``, ``localhost`` or ``[::1]`` (any
  port), the host of ``[web] public_url`` or one of ``[web] allowed_hosts`` gets 421 and runs
  nothing, so a web page on another name that resolves to this machine (DNS rebinding) cannot
  drive the playground (the check is :mod:`adapters.hosts`', shared with the ops listener).
- **Access token.** With ``[web] access_token`` set (required when ``[web] host`` is not a
  loopback address, see :func:`exposure_problem`), every request presents it: a browser once,
  as ``/?token=…`` (which sets an HttpOnly, SameSite=Strict cookie and redirects to ``/``), API
  clients as ``Authorization: Bearer …``. The cookie is the browser's own (a random id and the
  time it was given, signed with a key derived from the token): it expires after
  :data:`ACCESS_COOKIE_SECONDS`, and changing the token revokes every one given before. Cookies
  are ``Secure`` when ``[web] public_url`` is ``https://``.
- **Identity.** A browser's user is created when the page loads: a session cookie signed with a
  key kept in the playground's history file, so it survives restarts. Requests to the API
  without a valid session cookie are refused (401). A page load without one starts a new user,
  with fresh per-user caps, so each client address (an IPv6 one by its /64) may start at most
  ``[web] new_sessions_per_hour`` of them in any hour (0: no limit); past that, a page load
  without a valid session gets 429 with ``Retry-After`` and starts nobody, while a browser that
  keeps its cookie is never refused. Dropping cookies thus buys at most that many fresh
  budgets an hour per address (per process; the newest 4096 addresses are remembered). The
  address is the connection's, unless that is one of ``[web] trusted_proxies``: then it is
  the right-most ``X-Forwarded-For`` entry that is not a trusted proxy (:func:`client_address`).
  With none trusted (the default), ``X-Forwarded-For`` is ignored, and behind a reverse proxy
  every client shares the proxy's allowance. An API client with the Bearer token and no
  session is the user ``web-api``.
- **Admins** are the users named in ``[web] admin_ids``. Nobody is an admin because of their
  address. ``genbot demo`` (``admin_link``) prints an admin link, ``/?admin=<random token>``:
  the browser that opens it becomes an admin (until the demo stops); everyone else is not.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import ipaddress
import math
import re
import secrets
import time
from collections.abc import Callable
from urllib.parse import urlsplit

from adapters.hosts import HostName, allowed_hosts, host_allowed
from adapters.web.settings import WebSettings, proxy_network
from bot.kernel import RateWindow

SESSION_COOKIE = "genbot_session"
ACCESS_COOKIE = "genbot_access"
API_USER_ID = "web-api"
MIN_TOKEN_LENGTH = 16
ACCESS_COOKIE_SECONDS = 30 * 24 * 3600
NEW_SESSION_WINDOW_SECONDS = 3600.0
"""The window of ``[web] new_sessions_per_hour``."""
"""How long a browser keeps access after presenting the token (then it presents it again)."""
_SESSION = re.compile(r"^([A-Za-z0-9_-]{24})\.([A-Za-z0-9_-]{22})$")
_ACCESS = re.compile(r"^([0-9]{1,12})\.([A-Za-z0-9_-]{16})\.([A-Za-z0-9_-]{22})$")


def is_loopback_host(host: str) -> bool:
    """Whether ``host`` (a ``[web] host`` value) only accepts connections from this machine."""
    if host.strip().lower() == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip().strip("[]")).is_loopback
    except ValueError:
        return False


def exposure_problem(settings: WebSettings) -> str | None:
    """Why the playground must not start with ``settings``, or None when it may."""
    token = settings.access_token.get_secret_value()
    if token and len(token) < MIN_TOKEN_LENGTH:
        return (
            f"[web] access_token is too short: use at least {MIN_TOKEN_LENGTH} random "
            "characters (for example the output of `openssl rand -hex 24`)"
        )
    if not is_loopback_host(settings.host) and not token:
        return (
            f"the playground would listen on {settings.host or 'every address'} without "
            "[web] access_token: set one (at least 16 random characters), or set [web] host "
            "to 127.0.0.1 and put a TLS proxy in front"
        )
    return None


class Access:
    """The playground's trust rules (see the module docstring) for one adapter."""

    def __init__(
        self,
        settings: WebSettings,
        *,
        admin_link: bool = False,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self.admin_ids = set(settings.admin_ids)
        self.admin_token = secrets.token_urlsafe(18) if admin_link else ""
        """The token of the admin link (``""``: there is none)."""
        self.secure_cookies = settings.public_url.strip().lower().startswith("https://")
        self._clock = clock
        self.session_key = secrets.token_bytes(32)
        self.new_sessions_per_hour = settings.new_sessions_per_hour
        self._new_sessions = RateWindow(settings.new_sessions_per_hour, NEW_SESSION_WINDOW_SECONDS)
        self.trusted_proxies = [
            network
            for entry in settings.trusted_proxies
            if (network := proxy_network(entry)) is not None
        ]
        """The reverse proxies whose ``X-Forwarded-For`` is believed (``[web]
        trusted_proxies``)."""
        self._token = settings.access_token.get_secret_value()
        public = urlsplit(settings.public_url.strip()).hostname if settings.public_url else None
        self._allowed = allowed_hosts(settings.allowed_hosts)
        if public:
            self._allowed.append(HostName(public.lower(), None))

    # ----- Host -----

    def host_allowed(self, header: str | None) -> bool:
        """Whether a request with this ``Host`` header may be served."""
        return host_allowed(header, self._allowed)

    # ----- access token -----

    @property
    def token_required(self) -> bool:
        return bool(self._token)

    def token_matches(self, given: str) -> bool:
        """Whether ``given`` is the access token (constant time)."""
        return bool(self._token) and hmac.compare_digest(given.encode(), self._token.encode())

    def access_cookie(self) -> str:
        """A new cookie value for a browser that presented the token: its own random id and
        the time, signed with a key derived from the token (never the token)."""
        given = f"{int(self._clock())}.{secrets.token_urlsafe(12)}"
        return f"{given}.{self._access_mac(given)}"

    def access_cookie_matches(self, value: str) -> bool:
        """Whether ``value`` is an access cookie given under the current token that has not
        expired."""
        match = _ACCESS.match(value)
        if not self._token or match is None:
            return False
        given = f"{match[1]}.{match[2]}"
        if not hmac.compare_digest(match[3], self._access_mac(given)):
            return False
        return 0 <= self._clock() - int(match[1]) < ACCESS_COOKIE_SECONDS

    def _access_mac(self, given: str) -> str:
        key = hmac.new(self._token.encode(), b"genbot playground access", hashlib.sha256)
        digest = hmac.new(key.digest(), given.encode(), hashlib.sha256).digest()
        return base64.urlsafe_b64encode(digest).decode()[:22]

    def bearer_matches(self, authorization: str | None) -> bool:
        """Whether an ``Authorization`` header carries the access token."""
        scheme, _, credentials = (authorization or "").partition(" ")
        return scheme.lower() == "bearer" and self.token_matches(credentials.strip())

    def client_address(self, peer: str | None, forwarded_for: list[str]) -> str | None:
        """Who sent a request that came from ``peer`` with these ``X-Forwarded-For`` headers
        (see :func:`client_address`)."""
        return client_address(peer, forwarded_for, self.trusted_proxies)

    # ----- sessions -----

    def new_session(self) -> str:
        """A new signed session cookie value."""
        return self.cookie_for(secrets.token_urlsafe(18))

    def new_session_wait(self, remote: str | None) -> int:
        """Count a new session for the client at ``remote`` (:meth:`client_address`) and
        return 0; or, when that client has started ``[web] new_sessions_per_hour`` in the last
        hour, count nothing and return the whole seconds until it may start one."""
        if not self.new_sessions_per_hour:
            return 0
        client = client_key(remote)
        if self._new_sessions.allow(client):
            return 0
        return max(1, math.ceil(self._new_sessions.retry_after(client)))

    def cookie_for(self, session_id: str) -> str:
        """The signed cookie value of ``session_id`` (24 URL-safe characters)."""
        return f"{session_id}.{self._mac(session_id)}"

    def session_of(self, cookie: str | None) -> str | None:
        """The session id of a validly signed cookie value, else None."""
        match = _SESSION.match(cookie or "")
        if match is None or not hmac.compare_digest(match[2], self._mac(match[1])):
            return None
        return match[1]

    def is_admin(self, user_id: str) -> bool:
        """Whether ``user_id`` may use admin commands."""
        return user_id in self.admin_ids

    def admin_link_matches(self, given: str) -> bool:
        """Whether ``given`` is the admin link's token (constant time; never without a link)."""
        return bool(self.admin_token) and hmac.compare_digest(
            given.encode(), self.admin_token.encode()
        )

    def make_admin(self, user_id: str) -> None:
        """Make ``user_id`` an admin (it opened the admin link)."""
        self.admin_ids.add(user_id)

    def _mac(self, session_id: str) -> str:
        digest = hmac.new(self.session_key, session_id.encode(), hashlib.sha256).digest()
        return base64.urlsafe_b64encode(digest).decode()[:22]


Network = ipaddress.IPv4Network | ipaddress.IPv6Network


def client_address(
    peer: str | None, forwarded_for: list[str], trusted: list[Network]
) -> str | None:
    """The client's address: ``peer`` (the connection's), unless it is in ``trusted`` (a
    reverse proxy's): then, reading the ``X-Forwarded-For`` entries (``forwarded_for``: its
    headers in order, each a comma-separated list) from the right, the first that is not in
    ``trusted`` (each proxy appends whom it heard from; what a client wrote itself stands to
    the left of what the trusted proxies appended, so it is never believed). When every entry
    is trusted, the left-most; when that entry is not an address (a proxy wrote ``unknown``),
    or there is none, ``peer``."""
    if not trusted or not _trusted(_address(peer), trusted):
        return peer
    hops = [hop.strip() for header in forwarded_for for hop in header.split(",") if hop.strip()]
    for hop in reversed(hops):
        address = _address(hop)
        if address is None:
            return peer
        if not _trusted(address, trusted):
            return str(address)
    first = _address(hops[0]) if hops else None
    return peer if first is None else str(first)


def _address(value: str | None) -> ipaddress.IPv4Address | ipaddress.IPv6Address | None:
    """The address ``value`` names (an IPv4-mapped IPv6 one as IPv4; a port after it, as some
    proxies write, left out), or None."""
    text = (value or "").strip()
    if text.startswith("["):
        text = text[1:].partition("]")[0]
    elif text.count(":") == 1:
        text = text.partition(":")[0]
    try:
        address = ipaddress.ip_address(text)
    except ValueError:
        return None
    if isinstance(address, ipaddress.IPv6Address) and address.ipv4_mapped is not None:
        return address.ipv4_mapped
    return address


def _trusted(
    address: ipaddress.IPv4Address | ipaddress.IPv6Address | None, trusted: list[Network]
) -> bool:
    return address is not None and any(address in network for network in trusted)


def client_key(remote: str | None) -> str:
    """Whose allowance a connection from ``remote`` spends: its IPv4 address (an IPv4-mapped
    IPv6 one too), the /64 of an IPv6 one (what one household or host is given), else
    ``remote`` itself."""
    try:
        address = ipaddress.ip_address(remote or "")
    except ValueError:
        return remote or ""
    if isinstance(address, ipaddress.IPv6Address):
        if address.ipv4_mapped is not None:
            return str(address.ipv4_mapped)
        return str(ipaddress.IPv6Network((address, 64), strict=False))
    return str(address)


def user_id_for(session_id: str) -> str:
    """The user id of a session: stable for the session, and not the session itself."""
    return "web-" + hashlib.sha256(session_id.encode()).hexdigest()[:12]


def display_name(user_id: str) -> str:
    """What others call a playground user (``guest 3fa2``: the end of their id; the page says
    "you" to the user themself). genbot's own messages name users so."""
    return "api" if user_id == API_USER_ID else f"guest {user_id[-4:]}"
