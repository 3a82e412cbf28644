"""Slack's HTTP listener refuses what cannot be a signed Slack request from its headers alone,
before reading a byte of its body (adapters/slack/transport.py): a missing or stale
timestamp, a missing signature."""

from __future__ import annotations

import asyncio
import time

import pytest
from yarl import URL

from adapters.slack.transport import unsigned_reason
from tests.adapters.slack.conftest import RecordingCore
from tests.fakes.slack import FakeSlack

ANSWER_WAIT = 5.0
"""Well under the listener's body timeout (60 s): the answer cannot have waited for a body."""
SIGNATURE = "v0=" + "a" * 64


async def answer_without_body(url: str, headers: dict[str, str]) -> bytes:
    """Send a request head announcing a large body, send none, and read the answer."""
    target = URL(url)
    assert target.port is not None
    reader, writer = await asyncio.open_connection(target.host, target.port)
    head = f"POST {target.path} HTTP/1.1\r\nHost: x\r\nContent-Length: 900000\r\n"
    head += "".join(f"{name}: {value}\r\n" for name, value in headers.items())
    writer.write(f"{head}\r\n".encode())
    try:
        async with asyncio.timeout(ANSWER_WAIT):
            return await reader.read()
    finally:
        writer.close()


@pytest.mark.parametrize(
    "headers",
    [
        {},
        {"X-Slack-Signature": SIGNATURE},
        {"X-Slack-Request-Timestamp": "1000", "X-Slack-Signature": SIGNATURE},
        {"X-Slack-Request-Timestamp": "now"},
        {"X-Slack-Request-Timestamp": "{now}"},
        {"X-Slack-Request-Timestamp": "{now}", "X-Slack-Signature": "v0=short"},
    ],
    ids=["none", "no timestamp", "stale", "not a time", "no signature", "bad signature"],
)
async def test_a_request_that_cannot_be_signed_is_refused_before_its_body(
    fake: FakeSlack, url: str, core: RecordingCore, headers: dict[str, str]
) -> None:
    now = str(int(time.time()))
    sent = {name: value.replace("{now}", now) for name, value in headers.items()}
    answer = await answer_without_body(url, sent)
    assert answer.startswith(b"HTTP/1.1 401"), answer[:80]
    assert core.events == []


async def test_a_fresh_stamp_and_a_signature_shape_wait_for_the_body_and_bolt() -> None:
    now = time.time()
    fresh = {"X-Slack-Request-Timestamp": str(int(now)), "X-Slack-Signature": SIGNATURE}
    assert unsigned_reason(fresh, now) is None
    assert unsigned_reason(fresh, now + 301) == "with a stale timestamp"
