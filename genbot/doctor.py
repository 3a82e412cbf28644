"""``genbot doctor``: check the configuration and reach every configured service."""

from __future__ import annotations

import asyncio
import socket
import uuid
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit, urlunsplit

import aiohttp

from bot.api.errors import InvalidRequest
from bot.api.validation import check_webhook_address
from genbot.doctor_storage import database_note, database_problem
from genbot.reasons import os_reason
from genbot.settings import Settings
from genbot.status import describe_process, inspect, schema_state
from genbot.webhooks import webhook_base_url
from storage import StorageError

TIMEOUT = aiohttp.ClientTimeout(total=10)
KEY_PROBE = {"model": "llm-3.5-turbo", "messages": []}
"""A chat body the provider refuses (400) once it has accepted the key (else 401): nothing runs,
nothing is charged."""
NOTHING_ENABLED = (
    "nothing to run: set [discord] token, [slack] bot_token or [web] enabled (or try genbot demo)"
)
PUBLIC_URL_NOTE = (
    "/describe and /blend need [webhook] public_url: the provider refuses chat-platform links "
    "and private files, so genbot must re-host images"
)

DERIVED_KEY_NOTE = (
    "a key derived from [api] key: set [storage] secret_key, or a new API key will need "
    "the old one as [storage] secret_key_previous (docs/operations.md)"
)


@dataclass(frozen=True)
class Finding:
    """One check: what was checked, whether it works, and what to do when it does not.
    A ``warning`` works but limits genbot (printed with ⚠; the exit status stays 0)."""

    name: str
    ok: bool
    detail: str
    warning: bool = False


Check = Callable[[aiohttp.ClientSession], Awaitable[list[Finding]]]


async def diagnose(settings: Settings) -> list[Finding]:
    """Run every check that applies to ``settings``; never raises for a failing service."""
    checks: list[Check] = [lambda session: check_provider(session, settings)]
    if settings.discord.token.get_secret_value():
        checks.append(lambda session: _listed(check_discord(session, settings)))
    if settings.slack.bot_token.get_secret_value():
        checks.append(lambda session: _listed(check_slack(session, settings)))
    elif settings.slack.distributed:
        checks.append(lambda session: _listed(check_slack_distribution(settings)))
    async with aiohttp.ClientSession(timeout=TIMEOUT) as session:
        reached = await asyncio.gather(*(check(session) for check in checks))
    findings = (
        await check_postgres(settings)
        if settings.storage.postgres_url is not None
        else [check_storage(settings)]
    )
    for found in reached:
        findings += found
    webhook = check_webhook(settings)
    if webhook is not None:
        findings.append(webhook)
    findings += check_sealing(settings)
    findings += check_playground_access(settings)
    findings += check_listeners(settings)
    findings += check_something_enabled(settings)
    return findings


def check_something_enabled(settings: Settings) -> list[Finding]:
    """✘ when ``genbot run`` would have nothing to run."""
    if (
        settings.discord.token.get_secret_value()
        or settings.slack.bot_token.get_secret_value()
        or settings.web.enabled
    ):
        return []
    return [Finding("adapters", False, NOTHING_ENABLED)]


async def _listed(finding: Awaitable[Finding]) -> list[Finding]:
    return [await finding]


def check_storage(settings: Settings) -> Finding:
    """The database folder exists and is writable, or can be created (``genbot run`` does);
    an existing database is one ``genbot run`` can use (:mod:`genbot.doctor_storage`)."""
    folder = Path(settings.storage.path).resolve().parent
    existing = next(p for p in (folder, *folder.parents) if p.exists())
    if not existing.is_dir():
        return Finding("storage", False, f"{existing} is a file, so {folder} cannot be created")
    probe = existing / f".genbot-doctor-{uuid.uuid4().hex}"
    try:
        probe.write_bytes(b"")
        probe.unlink()
    except OSError as error:
        return Finding("storage", False, f"cannot write in {existing}: {error.strerror}")
    if existing != folder:
        return Finding("storage", True, f"{folder} will be created for {settings.storage.path}")
    path = Path(settings.storage.path)
    if not path.exists():
        return Finding("storage", True, f"database at {path}")
    problem = database_problem(path)
    if problem is not None:
        return Finding("storage", False, problem)
    return Finding("storage", True, database_note(path))


async def check_postgres(settings: Settings) -> list[Finding]:
    """PostgreSQL answers; its version, the schema state, and the live processes with their
    lease counts (read-only: nothing is migrated), judged and dated on the server's clock."""
    try:
        found = await inspect(settings)
    except StorageError as error:
        return [Finding("storage", False, f"{error} (check [storage] url)")]
    ok, schema = schema_state(found)
    findings = [Finding("storage", ok, f"{found.server} at {found.where}, {schema}")]
    live = found.live
    running = "; ".join(describe_process(p, found.now) for p in live) if live else "none running"
    findings.append(Finding("processes", True, f"{len(live)} live: {running}"))
    return findings


async def check_provider(session: aiohttp.ClientSession, settings: Settings) -> list[Finding]:
    """Whether ``[api] base_url``, each of ``backup_urls`` and ``proxy_url`` accept the first
    key of the pool, and ``base_url`` every other key of ``[[api.keys]]`` (each is its own
    account). The provider has no way to read a balance without spending it: credit is not
    checked (an account out of credit shows in ``genbot_provider_key_state``)."""
    pool = settings.api.pool()
    if not pool:
        return [
            Finding(
                "provider", False, "no API key: set [api] key (GENBOT_API__KEY) or [[api.keys]]"
            )
        ]
    first, others = pool[0], pool[1:]
    which = "[api] key" if not settings.api.keys else f"[[api.keys]] {first.name}"
    addresses = [("provider", settings.api.base_url, "[api] base_url")]
    addresses += [("backup", url, "[api] backup_urls") for url in settings.api.backup_urls if url]
    if settings.api.proxy_url:
        addresses.append(("proxy", settings.api.proxy_url, "[api] proxy_url"))
    found = await asyncio.gather(
        *(
            check_key_at(session, name, url, first.key.get_secret_value(), setting, which)
            for name, url, setting in addresses
        ),
        *(
            check_key_at(
                session,
                f"key {entry.name}",
                settings.api.base_url,
                entry.key.get_secret_value(),
                "[api] base_url",
                f"[[api.keys]] {entry.name}",
            )
            for entry in others
        ),
    )
    return list(found)


async def check_key_at(
    session: aiohttp.ClientSession,
    name: str,
    base_url: str,
    key: str,
    setting: str,
    which: str = "[api] key",
) -> Finding:
    """POST a chat body the provider must refuse, with the key (``which`` names it): 401 means
    the key is refused, 400 that the key was accepted (and the body refused, so nothing is
    charged)."""
    shown = shown_url(base_url)
    url = base_url.rstrip("/") + "/v1/chat/completions"
    try:
        async with session.post(
            url, json=KEY_PROBE, headers={"Authorization": f"Bearer {key}"}
        ) as response:
            status = response.status
            answer = await _json_or_none(response)
    except (aiohttp.ClientError, TimeoutError, ValueError) as error:
        refused = isinstance(error, aiohttp.ClientConnectorError)
        if name == "provider" and refused and _is_loopback_url(base_url):
            return Finding(name, False, _nothing_listens(shown, base_url))
        return Finding(name, False, f"cannot reach {shown}: {_reason(error)}")
    if status == 401:
        return Finding(name, False, f"{shown} refused the API key (401): check {which}")
    if status in (200, 400) and isinstance(answer, dict):
        accepted = "the key" if which == "[api] key" else which.removeprefix("[[api.keys]] ")
        return Finding(name, True, f"{shown} accepts {accepted}")
    if status >= 500:
        return Finding(name, False, f"{shown} answered HTTP {status}: try again later")
    return Finding(
        name, False, f"{shown} is not the provider's API (HTTP {status}): check {setting}"
    )


async def check_discord(session: aiohttp.ClientSession, settings: Settings) -> Finding:
    url = settings.discord.api_base.rstrip("/") + "/users/@me"
    headers = {"Authorization": f"Bot {settings.discord.token.get_secret_value()}"}
    try:
        async with session.get(url, headers=headers) as response:
            if response.status == 401:
                return Finding("discord", False, "the bot token was refused: check [discord] token")
            if response.status != 200:
                return Finding("discord", False, f"Discord answered HTTP {response.status}")
            user = await _json_or_none(response)
    except (aiohttp.ClientError, TimeoutError, ValueError) as error:
        return Finding("discord", False, f"cannot reach Discord: {_reason(error)}")
    if not isinstance(user, dict):
        return Finding(
            "discord", False, f"{shown_url(url)} is not Discord's API: check [discord] api_base"
        )
    return Finding("discord", True, f"logged in as {user.get('username', '?')}")


async def check_slack(session: aiohttp.ClientSession, settings: Settings) -> Finding:
    url = settings.slack.api_url.rstrip("/") + "/auth.test"
    headers = {"Authorization": f"Bearer {settings.slack.bot_token.get_secret_value()}"}
    try:
        async with session.post(url, headers=headers) as response:
            answer = await _json_or_none(response)
    except (aiohttp.ClientError, TimeoutError, ValueError) as error:
        return Finding("slack", False, f"cannot reach Slack: {_reason(error)}")
    if not isinstance(answer, dict):
        return Finding(
            "slack", False, f"{shown_url(url)} is not Slack's API: check [slack] api_url"
        )
    if not answer.get("ok"):
        return Finding("slack", False, f"auth.test refused the bot token: {answer.get('error')}")
    transport = "Socket Mode" if settings.slack.app_token.get_secret_value() else "HTTP mode"
    if transport == "HTTP mode" and not settings.slack.signing_secret.get_secret_value():
        return Finding("slack", False, "HTTP mode needs [slack] signing_secret (or set app_token)")
    return Finding(
        "slack", True, f"{answer.get('team', '?')} as {answer.get('user', '?')}, {transport}"
    )


async def check_slack_distribution(settings: Settings) -> Finding:
    """A Slack app installed by OAuth: no token to try until a workspace installs it, so
    only the settings it needs are checked."""
    slack = settings.slack
    if slack.app_token.get_secret_value():
        return Finding("slack", False, "installed by OAuth: leave [slack] app_token empty")
    if not slack.signing_secret.get_secret_value():
        return Finding("slack", False, "installed by OAuth: set [slack] signing_secret")
    where = f"http://{slack.http_host}:{slack.http_port}/slack/install"
    return Finding("slack", True, f"installed by OAuth: workspaces add genbot at {where}")


def check_webhook(settings: Settings) -> Finding | None:
    """``[webhook] public_url`` judged by the same rule the provider client applies; without
    one, a ⚠ note when a chat platform is configured (``None`` otherwise)."""
    public_url = settings.webhook.public_url.strip()
    if not public_url:
        chat_platform = settings.discord.token.get_secret_value() or (
            settings.slack.bot_token.get_secret_value()
        )
        return Finding("webhook", True, PUBLIC_URL_NOTE, warning=True) if chat_platform else None
    problem = webhook_problem(public_url, settings.webhook.allow_insecure_loopback)
    if problem is not None:
        return Finding("webhook", False, problem)
    return Finding("webhook", True, f"the provider will notify {shown_url(public_url)}")


def check_sealing(settings: Settings) -> list[Finding]:
    """When genbot keeps secrets in its database (a distributed Slack app's tokens, the jobs'
    webhook secrets), the key that seals them (:mod:`bot.kernel.sealer`): ✔ ``[storage]
    secret_key``; ⚠ a key derived from ``[api] key`` (changing that key then needs a step);
    ✘ no key."""
    kept = []
    if settings.slack.distributed:
        kept.append("the Slack tokens")
    if webhook_base_url(settings) is not None:
        kept.append("the webhook secrets")
    if not kept:
        return []
    what = " and ".join(kept)
    if settings.storage.secret_key.get_secret_value():
        previous = settings.storage.secret_key_previous.get_secret_value()
        also = ", and secret_key_previous still opens what it sealed" if previous else ""
        return [Finding("secrets", True, f"{what} are sealed with [storage] secret_key{also}")]
    if settings.api.first_key():
        return [Finding("secrets", True, f"{what} are sealed with {DERIVED_KEY_NOTE}", True)]
    return [Finding("secrets", False, f"{what} need a key: set [storage] secret_key")]


def check_playground_access(settings: Settings) -> list[Finding]:
    """✘ when the playground would be reachable beyond this machine without an access token
    (``genbot run`` refuses to start it then)."""
    if not settings.web.enabled:
        return []
    from adapters.web.access import exposure_problem

    problem = exposure_problem(settings.web)
    if problem is not None:
        return [Finding("access", False, problem)]
    if settings.web.access_token.get_secret_value():
        return [Finding("access", True, "the playground asks for its access token")]
    return [Finding("access", True, "the playground answers this machine only (loopback)")]


def check_listeners(settings: Settings) -> list[Finding]:
    """The addresses ``genbot run`` will listen on — the playground when ``[web] enabled``, the
    webhook receiver when webhooks are on, the ops listener when ``[ops] enabled`` — can be
    bound now (port 0 picks a free one)."""
    listeners: list[tuple[str, str, str, str, int]] = []
    if settings.web.enabled:
        web = settings.web
        listeners.append(("web", "the playground", "[web]", web.host, web.port))
    if webhook_base_url(settings) is not None:
        hook = settings.webhook
        listeners.append(("receiver", "the webhook receiver", "[webhook]", hook.host, hook.port))
    if settings.ops.enabled:
        ops = settings.ops
        listeners.append(("ops", "the ops listener", "[ops]", ops.host, ops.port))
    return [_bindable(*listener) for listener in listeners]


def _bindable(name: str, what: str, section: str, host: str, port: int) -> Finding:
    where = f"{host}:{port}" if port else f"{host} (any free port)"
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    try:
        with socket.create_server((host, port), family=family):
            pass
    except OSError as error:
        reason = f"{what} cannot listen on {where} ({os_reason(error)})"
        return Finding(name, False, f"{reason}; choose another {section} port or host")
    return Finding(name, True, f"{what} can listen on {where}")


def webhook_problem(public_url: str, allow_insecure: bool) -> str | None:
    """Why the provider client would refuse ``public_url`` (a password in it is never shown)."""
    try:
        check_webhook_address("[webhook] public_url", public_url, allow_insecure=allow_insecure)
    except InvalidRequest:
        pass
    else:
        return None
    try:
        check_webhook_address(
            "[webhook] public_url", shown_url(public_url), allow_insecure=allow_insecure
        )
    except InvalidRequest as error:
        return error.message
    return "[webhook] public_url is not an address the provider accepts"


def shown_url(url: str) -> str:
    """``url`` without the password of its user part (``https://user:***@host``)."""
    try:
        parts = urlsplit(url)
        if parts.password is None:
            return url
        host = parts.netloc.rpartition("@")[2]
        return urlunsplit(parts._replace(netloc=f"{parts.username}:***@{host}"))
    except ValueError:
        return url


async def _json_or_none(response: aiohttp.ClientResponse) -> Any:
    try:
        return await response.json(content_type=None)
    except ValueError:
        return None


def _is_loopback_url(url: str) -> bool:
    from adapters.web.access import is_loopback_host

    try:
        return is_loopback_host(urlsplit(url).hostname or "")
    except ValueError:
        return False


def _nothing_listens(shown: str, base_url: str) -> str:
    try:
        port = urlsplit(base_url).port or 80
    except ValueError:
        port = 8787
    return (
        f"cannot reach {shown}: nothing listens there; start the provider simulator with "
        f"`genbot sim --port {port}` (or point [api] base_url at the provider)"
    )


def _reason(error: BaseException) -> str:
    return str(error) or type(error).__name__


def report(findings: list[Finding]) -> tuple[str, bool]:
    """The printed report and whether everything works (⚠ notes do not count as failures)."""
    lines = [f"{_mark(f)} {f.name:<9} {f.detail}" for f in findings]
    healthy = all(f.ok for f in findings)
    if not healthy:
        lines.append("fix the ✘ lines above, then run genbot doctor again")
    elif any(f.warning for f in findings):
        lines.append("everything works; see the ⚠ note above")
    else:
        lines.append("everything works")
    return "\n".join(lines), healthy


def _mark(finding: Finding) -> str:
    if not finding.ok:
        return "✘"
    return "⚠" if finding.warning else "✔"
