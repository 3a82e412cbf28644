"""The red team's listener attacks, small, on a real ``genbot run`` child (see
:mod:`tests.resilience.hostile`): memory stays bounded (the child's RSS, from ``/proc``), a
normal request is still answered, and refusals cost a few log lines, not one each."""

from __future__ import annotations

from pathlib import Path

from tests.fakes.slack import FakeSlack
from tests.resilience.hostile import slow_connections, upload_flood, webhook_flood


async def test_an_upload_flood_stays_within_the_upload_cache(tmp_path: Path) -> None:
    outcome = await upload_flood(tmp_path, browsers=40, files=4, file_mb=1, cache_mb=8)

    assert 1 <= outcome.answers[201] <= 2, outcome
    assert outcome.answers[201] + outcome.answers[503] + outcome.answers[0] == 40
    assert outcome.answers[503] >= 30, outcome.answers
    assert outcome.peak_growth_mb < 8 + 50, outcome
    assert outcome.checks == {"page after": True}
    assert outcome.warning_lines <= 3, outcome.warning_lines


async def test_wrong_secret_webhooks_are_refused_before_their_bodies_are_read(
    tmp_path: Path,
) -> None:
    outcome = await webhook_flood(tmp_path, requests=200, body_mb=1)

    # 0: still sending its megabyte when the refused connection closed (a reset)
    assert set(outcome.answers) <= {401, 0} and outcome.answers[401] > 0, outcome
    # reading every body before checking the secret held 200 MiB at once
    assert outcome.peak_growth_mb < 60, outcome
    assert outcome.checks == {"receiver after": True}
    assert outcome.warning_lines <= 3, outcome.warning_lines


async def test_slow_connections_do_not_stop_either_listener(tmp_path: Path) -> None:
    async with FakeSlack() as slack:
        outcome = await slow_connections(tmp_path, connections=800, open_files=512, slack=slack)

    assert outcome.checks == {
        "playground": True,
        "webhook receiver": True,
        "ops listener": True,
        "slack listener": True,
    }, outcome
    # accepting failed for want of files: asyncio then stops accepting on that listener for a
    # second, and a normal request to the webhook receiver or ops listener waits behind it
    assert outcome.accept_failures == 0, outcome
    assert outcome.warning_lines <= 7, outcome.warning_lines
