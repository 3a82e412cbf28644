"""Resilience against hostile clients (issues 13 and 24): the red team's attacks on a real
``genbot run`` child (:mod:`tests.resilience.hostile`), part of ``python -m bench resilience``:
issue 13's listener attacks at their sizes, issue 24's per-client and per-user ones at a few
hundred requests. The baseline is the same process idle, just before each attack: its resident
memory (from ``/proc``); the red team's figures before the fixes are quoted in the notes.
"""

from __future__ import annotations

import tempfile
from collections.abc import Awaitable, Callable, Collection
from dataclasses import dataclass
from pathlib import Path

from bench.report import Table
from tests.fakes.slack import FakeSlack
from tests.resilience.hostile import (
    Outcome,
    blends_over_budget,
    chat_flood,
    event_stream_flood,
    slack_slow_bodies,
    slow_connections,
    upload_flood,
    webhook_flood,
)


@dataclass(frozen=True)
class HostileSize:
    """The attacks' sizes."""

    upload_browsers: int
    upload_files: int
    upload_file_mb: float
    upload_cache_mb: int
    webhook_requests: int
    webhook_body_mb: float
    slow_connections: int
    open_files: int
    slow_bodies: int
    event_streams: int
    chat_commands: int
    chat_words: int
    blends: int
    blend_images: int
    blend_image_mb: float


HOSTILE_FULL = HostileSize(40, 10, 8.0, 256, 3000, 1.0, 1100, 1024, 300, 300, 100, 3000, 30, 5, 7.3)
HOSTILE_QUICK = HostileSize(20, 4, 1.0, 8, 300, 1.0, 800, 512, 300, 100, 20, 1000, 6, 2, 0.5)
BEFORE_THE_FIXES = (
    "Before the fixes (red team, issue 13): 40 cookie-less clients × 10 × 8 MB uploads took "
    "the process from 116 MB to 3.4 GB and it stayed there; 3000 × 1 MB wrong-secret webhooks "
    "peaked at 3.2 GB (2.3 GB after) with one WARNING line each; 1100 half-sent requests "
    "stopped both listeners and asyncio wrote 3.17 M lines in a minute. Before the fixes of "
    "issue 24 (red team, main ffbfa8e): 1000 slow Slack bodies got every signed request 503 "
    "for 25+ s; one user's 1000 event streams got everyone else's page loads 503; 100 "
    "concurrent /chat words: 3000 sent 101 chat requests; 30 /blend of 5 × 7.3 MB images by a "
    "user over budget made 150 downloads (1.1 GB), RSS 122 → 329 MB, the media folder 249 of "
    "256 MB, and 0 jobs."
)


async def hostile_table(quick: bool, issues: Collection[int] = (13, 24)) -> Table:
    """The table of the attacks of ``issues`` (13: the listener attacks; 24: the per-client
    and per-user ones)."""
    size = HOSTILE_QUICK if quick else HOSTILE_FULL
    table = Table(
        "Hostile clients on genbot run (playground, webhook receiver, Slack HTTP listener)",
        [
            "attack",
            "attempts",
            "answered",
            "refused",
            "no answer",
            "RSS idle MB",
            "RSS after MB",
            "peak MB",
            "warning lines",
            "normal requests answered",
            "seconds",
        ],
        digits=1,
    )
    listener_attacks: list[tuple[str, Callable[[Path], Awaitable[Outcome]]]] = [
        (
            f"{size.upload_browsers} browsers × {size.upload_files} × "
            f"{size.upload_file_mb:g} MB uploads (cache {size.upload_cache_mb} MB)",
            lambda path: upload_flood(
                path,
                browsers=size.upload_browsers,
                files=size.upload_files,
                file_mb=size.upload_file_mb,
                cache_mb=size.upload_cache_mb,
            ),
        ),
        (
            f"{size.webhook_requests} × {size.webhook_body_mb:g} MB wrong-secret webhooks",
            lambda path: webhook_flood(
                path, requests=size.webhook_requests, body_mb=size.webhook_body_mb
            ),
        ),
        (
            f"{size.slow_connections} half-sent requests (open-file limit {size.open_files})",
            lambda path: slow_connections(
                path, connections=size.slow_connections, open_files=size.open_files
            ),
        ),
    ]
    per_client_attacks: list[tuple[str, Callable[[Path], Awaitable[Outcome]]]] = [
        (
            f"{size.slow_bodies} slow Slack bodies (signed-looking, a byte every 2 s)",
            lambda path: on_slack(
                lambda slack: slack_slow_bodies(path, connections=size.slow_bodies, slack=slack)
            ),
        ),
        (
            f"{size.event_streams} event streams of one playground user",
            lambda path: event_stream_flood(path, streams=size.event_streams),
        ),
        (
            f"{size.chat_commands} × /chat words: {size.chat_words} at once by one Slack user",
            lambda path: on_slack(
                lambda slack: chat_flood(
                    path, commands=size.chat_commands, words=size.chat_words, slack=slack
                )
            ),
        ),
        (
            f"{size.blends} × /blend of {size.blend_images} × {size.blend_image_mb:g} MB "
            "images over budget",
            lambda path: on_slack(
                lambda slack: blends_over_budget(
                    path,
                    blends=size.blends,
                    images=size.blend_images,
                    image_mb=size.blend_image_mb,
                    slack=slack,
                )
            ),
        ),
    ]
    attacks = (listener_attacks if 13 in issues else []) + (
        per_client_attacks if 24 in issues else []
    )
    for name, attack in attacks:
        with tempfile.TemporaryDirectory(prefix="genbot-hostile-") as directory:
            outcome = await attack(Path(directory))
        answers = outcome.answers
        accepted = sum(n for status, n in answers.items() if 200 <= status < 300)
        refused = sum(n for status, n in answers.items() if status >= 400)
        checks = ", ".join(f"{what} {'yes' if ok else 'NO'}" for what, ok in outcome.checks.items())
        table.add(
            name,
            outcome.attempts,
            accepted,
            refused,
            answers[0],
            outcome.rss_before_mb,
            outcome.rss_after_mb,
            outcome.peak_mb,
            outcome.warning_lines,
            checks,
            outcome.seconds,
        )
    table.notes.append(
        "Issue 24's rows: slow Slack bodies come from another loopback address than Slack's "
        "signed requests; refused are 408 (the body fell below the listener's pace floor after "
        "its grace) and 503 (beyond the 256 connections one client may hold). Event streams: "
        "answered are the streams opened (16 a user), refused the 429s; the checks are another "
        "user's page and stream. Chat: answered is the chat requests the provider received, "
        "refused the refusals shown to the user (every command is acknowledged). Blends: "
        "refused is the budget refusals shown; the checks count the downloads and the MB "
        "re-hosted."
    )
    table.notes.append(
        "Refused: 503 (upload cache full), 401 (wrong secret, answered before the body is read). "
        "No answer: for half-sent requests, the connections held open (closed by the header "
        "timeout or to make room for complete requests); otherwise connections closed before an "
        "answer. Warning lines: lines at WARNING or above the process wrote during the attack "
        "(refusals are summed up once a minute)."
    )
    table.notes.append(BEFORE_THE_FIXES)
    return table


async def on_slack(attack: Callable[[FakeSlack], Awaitable[Outcome]]) -> Outcome:
    """``attack`` on a genbot run on a fake Slack of its own."""
    async with FakeSlack() as slack:
        return await attack(slack)
