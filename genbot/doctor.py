"""``genbot doctor``: check the configuration and reach every configured service."""

from __future__ import annotations

import asyncio
import ipaddress
import uuid
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import aiohttp

from bot.config import Settings

TIMEOUT = aiohttp.ClientTimeout(total=10)


@dataclass(frozen=True)
class Finding:
    """One check: what was checked, whether it works, and what to do when it does not."""

    name: str
    ok: bool
    detail: str


Check = Callable[[aiohttp.ClientSession], Awaitable[Finding]]


async def diagnose(settings: Settings) -> list[Finding]:
    """Run every check that applies to ``settings``; never raises for a failing service."""
    checks: list[Check] = [lambda session: check_provider(session, settings)]
    if settings.discord.token.get_secret_value():
        checks.append(lambda session: check_discord(session, settings))
    if settings.slack.bot_token.get_secret_value():
        checks.append(lambda session: check_slack(session, settings))
    if settings.webhook.public_url:
        checks.append(lambda _: check_webhook_address(settings))
    async with aiohttp.ClientSession(timeout=TIMEOUT) as session:
        reached = await asyncio.gather(*(check(session) for check in checks))
    return [check_storage(settings), *reached]


def check_storage(settings: Settings) -> Finding:
    """The database folder exists and is writable, or can be created (``genbot run`` does)."""
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
    return Finding("storage", True, f"database at {settings.storage.path}")


async def check_provider(session: aiohttp.ClientSession, settings: Settings) -> Finding:
    key = settings.api.key.get_secret_value()
    if not key:
        return Finding("provider", False, "no API key: set [api] key or GENBOT_API__KEY")
    url = settings.api.base_url.rstrip("/") + "/gen/v2/multi_fetch"
    body = {"task_ids": [str(uuid.uuid4())]}
    try:
        async with session.post(url, json=body, headers={"X-API-KEY": key}) as response:
            status = response.status
    except (aiohttp.ClientError, TimeoutError) as error:
        return Finding("provider", False, f"cannot reach {settings.api.base_url}: {_reason(error)}")
    if status == 401:
        return Finding("provider", False, "the API key was refused (401): check [api] key")
    if status >= 400:
        return Finding("provider", False, f"{settings.api.base_url} answered HTTP {status}")
    return Finding("provider", True, f"{settings.api.base_url} accepts the key")


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
    except (aiohttp.ClientError, TimeoutError) as error:
        return Finding("discord", False, f"cannot reach Discord: {_reason(error)}")
    if not isinstance(user, dict):
        return Finding("discord", False, f"{url} is not Discord's API: check [discord] api_base")
    return Finding("discord", True, f"logged in as {user.get('username', '?')}")


async def check_slack(session: aiohttp.ClientSession, settings: Settings) -> Finding:
    url = settings.slack.api_url.rstrip("/") + "/auth.test"
    headers = {"Authorization": f"Bearer {settings.slack.bot_token.get_secret_value()}"}
    try:
        async with session.post(url, headers=headers) as response:
            answer = await _json_or_none(response)
    except (aiohttp.ClientError, TimeoutError) as error:
        return Finding("slack", False, f"cannot reach Slack: {_reason(error)}")
    if not isinstance(answer, dict):
        return Finding("slack", False, f"{url} is not Slack's API: check [slack] api_url")
    if not answer.get("ok"):
        return Finding("slack", False, f"auth.test refused the bot token: {answer.get('error')}")
    transport = "Socket Mode" if settings.slack.app_token.get_secret_value() else "HTTP mode"
    if transport == "HTTP mode" and not settings.slack.signing_secret.get_secret_value():
        return Finding("slack", False, "HTTP mode needs [slack] signing_secret (or set app_token)")
    return Finding(
        "slack", True, f"{answer.get('team', '?')} as {answer.get('user', '?')}, {transport}"
    )


async def check_webhook_address(settings: Settings) -> Finding:
    problem = webhook_address_problem(
        settings.webhook.public_url, settings.webhook.allow_insecure_loopback
    )
    if problem:
        return Finding("webhook", False, problem)
    return Finding("webhook", True, f"the provider will notify {settings.webhook.public_url}")


def webhook_address_problem(url: str, allow_insecure_loopback: bool) -> str | None:
    """Why the provider would refuse ``url`` as a webhook address, or ``None``."""
    parts = urlsplit(url)
    if allow_insecure_loopback and parts.scheme == "http" and _is_loopback(parts.hostname):
        return None
    if parts.scheme != "https" or not parts.hostname:
        return f"[webhook] public_url must look like https://your.domain (got {url!r})"
    if parts.port not in (None, 443):
        return f"[webhook] public_url may only use port 443 (got {parts.port})"
    return None


def _is_loopback(host: str | None) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host or "").is_loopback
    except ValueError:
        return False


async def _json_or_none(response: aiohttp.ClientResponse) -> Any:
    try:
        return await response.json(content_type=None)
    except ValueError:
        return None


def _reason(error: BaseException) -> str:
    return str(error) or type(error).__name__


def report(findings: list[Finding]) -> tuple[str, bool]:
    """The printed report and whether everything works."""
    lines = [f"{'✔' if f.ok else '✘'} {f.name:<9} {f.detail}" for f in findings]
    healthy = all(f.ok for f in findings)
    lines.append(
        "everything works" if healthy else "fix the ✘ lines above, then run genbot doctor again"
    )
    return "\n".join(lines), healthy
