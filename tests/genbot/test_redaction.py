"""Secrets genbot learns while running are redacted on sight, in every logger's records and
through every handler, not only the configured ones."""

from __future__ import annotations

import io
import logging

import pytest
from pydantic import SecretStr

from bot.kernel import ApiSettings
from genbot.logs import configure_logging
from genbot.redaction import redact
from genbot.settings import Settings

LEARNED = {
    "bot token": "xoxb-1111-2222-abcdefABCDEF",
    "rotated bot token": "xoxe.xoxb-1-MS0yLTExMTEtMjIyMg",
    "refresh token": "xoxe-1-My0xLTIyMjItMzMzMy00NDQ0",
    "user token": "xoxp-1111-2222-3333-abcdef",
    "app token": "xapp-1-A111-2222-abcdef0123",
    "discord token": "MTIzNDU2Nzg5MDEyMzQ1Njc4OQ.GAbCdE.abcdefghijklmnopqrstuvwxyz0123",
    "oauth code": "4724469134.4644010092847.232b4e2fb0db2ea1",
    "client secret": "3c2f0e9b8a7d6c5b4a39281706f5e4d3",
    "webhook secret": "k9XgVh2pQ0aZ_3rTt8mWb1yLcN5",
}
SHAPES = [
    "data: {{'code': '{oauth code}'}}, headers: {{}}",
    "request: {{'code': ['{oauth code}'], 'state': ['s']}}",
    "GET /slack/oauth_redirect?code={oauth code}&state=s HTTP/1.1",
    "body: {{'ok': True, 'access_token': '{rotated bot token}', "
    "'refresh_token': '{refresh token}'}}",
    '{{"ok": true, "authed_user": {{"access_token": "{user token}"}}}}',
    "client_id=1.2&client_secret={client secret}&code={oauth code}",
    "connecting with {app token}, then {bot token}",
    "headers: {{'Authorization': 'Bot {discord token}'}}",
    "POST /webhooks/tasks/job1 {{'x-webhook-secret': '{webhook secret}'}}",
    '"{{\\"webhook_secret\\": \\"{webhook secret}\\"}}"',
]


@pytest.mark.parametrize("shape", SHAPES)
def test_a_secret_learned_at_run_time_is_redacted_in_the_shapes_libraries_print(
    shape: str,
) -> None:
    text = shape.format_map(LEARNED)

    redacted = redact(text)

    assert [name for name, secret in LEARNED.items() if secret in redacted] == []
    assert "[redacted]" in redacted


def test_ordinary_words_and_short_values_are_left_alone() -> None:
    text = "exit code=1, HTTP status code 200, error_code=rate_limited; Bot accounts; token expired"

    assert redact(text) == text


@pytest.mark.parametrize(
    "logger",
    [
        "slack_sdk.web.async_base_client",
        "slack_bolt.App",
        "aiohttp.client",
        "discord.http",
        "psycopg.pool",
        "genbot.test",
    ],
)
def test_every_logger_and_every_handler_writes_redacted_records(
    restored_logging: None, logger: str, capsys: pytest.CaptureFixture[str]
) -> None:
    configure_logging(Settings(api=ApiSettings(key=SecretStr("sk-configured"))), verbose=True)
    own = io.StringIO()
    library_handler = logging.StreamHandler(own)
    logging.getLogger(logger).addHandler(library_handler)
    try:
        try:
            raise RuntimeError(f"refused {LEARNED['refresh token']}")
        except RuntimeError:
            logging.getLogger(logger).warning(
                "answer %s", {"access_token": LEARNED["bot token"]}, exc_info=True
            )
    finally:
        logging.getLogger(logger).removeHandler(library_handler)

    written = {"root's handler": capsys.readouterr().err, "a library's handler": own.getvalue()}
    for where, text in written.items():
        assert "answer" in text and "RuntimeError: refused" in text, where
        assert LEARNED["bot token"] not in text and LEARNED["refresh token"] not in text, where


def test_a_short_configured_secret_is_redacted_where_it_is_printed_never_as_a_word() -> None:
    refusal = "Error: [web] access_token is too short: use at least 16 random characters"
    assert redact(refusal, ["short"]) == refusal
    assert redact("a test of the tests: testing", ["test"]) == "a test of the tests: testing"
    for printed in (
        "key=test",
        "api_key: test",
        "{'key': 'test'}",
        '{"key": "test"}',
        "Authorization: Bearer test",
        "postgresql://genbot:test@db/genbot",
    ):
        assert redact(printed, ["test"]) == printed.replace("test", "[redacted]", 1)
    assert redact("xtestx and test-1 and test", ["testing1"]) == "xtestx and test-1 and test"
    assert redact("a sk-long-secret-1 inside", ["sk-long-secret-1"]) == "a [redacted] inside"
