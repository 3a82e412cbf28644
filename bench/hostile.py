"""Resilience against hostile clients (issue 13): the red team's listener attacks at their sizes
on a real ``genbot run`` child (:mod:`tests.resilience.hostile`), part of ``python -m bench
resilience``. The baseline is the same process idle, just before each attack: its resident
memory (from ``/proc``); the red team's figures before the fixes are quoted in the notes.
"""

from __future__ import annotations

import tempfile
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path

from bench.report import Table
from tests.resilience.hostile import Outcome, slow_connections, upload_flood, webhook_flood


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


HOSTILE_FULL = HostileSize(40, 10, 8.0, 256, 3000, 1.0, 1100, 1024)
HOSTILE_QUICK = HostileSize(20, 4, 1.0, 8, 300, 1.0, 800, 512)
BEFORE_THE_FIXES = (
    "Before the fixes (red team, issue 13): 40 cookie-less clients × 10 × 8 MB uploads took "
    "the process from 116 MB to 3.4 GB and it stayed there; 3000 × 1 MB wrong-secret webhooks "
    "peaked at 3.2 GB (2.3 GB after) with one WARNING line each; 1100 half-sent requests "
    "stopped both listeners and asyncio wrote 3.17 M lines in a minute."
)


async def hostile_table(quick: bool) -> Table:
    size = HOSTILE_QUICK if quick else HOSTILE_FULL
    table = Table(
        "Hostile clients on genbot run (playground + webhook receiver)",
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
    attacks: list[tuple[str, Callable[[Path], Awaitable[Outcome]]]] = [
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
        "Refused: 503 (upload cache full), 401 (wrong secret, answered before the body is read). "
        "No answer: for half-sent requests, the connections held open (closed by the header "
        "timeout or to make room for complete requests); otherwise connections closed before an "
        "answer. Warning lines: lines at WARNING or above the process wrote during the attack "
        "(refusals are summed up once a minute)."
    )
    table.notes.append(BEFORE_THE_FIXES)
    return table
