"""Text logs never show a configured secret: not in messages, exception text or tracebacks,
including a PostgreSQL address's password."""

from __future__ import annotations

import logging

import pytest
from pydantic import SecretStr

from adapters.web.settings import WebSettings
from bot.api.settings import KeySettings
from bot.kernel import ApiSettings, StorageSettings
from genbot.logs import configure_logging
from genbot.redaction import settings_secrets
from genbot.settings import Settings

KEY = "sk-traceback-secret-4242"
DB_PASSWORD = "pg-pass/with@odd"
DB_URL = "postgresql://genbot:pg-pass%2Fwith%40odd@db.example.com/genbot"
TOKEN = "playground-token-abcdef0123456789"


def failing_with(text: str) -> None:
    try:
        try:
            raise ValueError(f"inner cause mentions {text}")
        except ValueError as inner:
            raise RuntimeError(f"the provider refused {text}") from inner
    except RuntimeError:
        logging.getLogger("genbot.test").exception("a call failed (key %s)", text)


def test_exception_text_and_tracebacks_are_redacted(
    restored_logging: None, capsys: pytest.CaptureFixture[str]
) -> None:
    settings = Settings(
        api=ApiSettings(key=SecretStr(KEY)),
        storage=StorageSettings(url=SecretStr(DB_URL)),
        web=WebSettings(access_token=SecretStr(TOKEN)),
    )
    configure_logging(settings, verbose=False)

    for secret in (KEY, DB_URL, DB_PASSWORD, "pg-pass%2Fwith%40odd", TOKEN):
        failing_with(secret)

    written = capsys.readouterr().err
    assert written.count("Traceback (most recent call last)") == 10
    assert written.count("[redacted]") == 15
    for secret in (KEY, DB_PASSWORD, "pg-pass%2Fwith%40odd", TOKEN):
        assert secret not in written
    assert {DB_URL, DB_PASSWORD, TOKEN} <= set(settings_secrets(settings))


def test_every_key_of_the_pool_is_a_secret_to_redact() -> None:
    pool = [KeySettings(name=name, key=SecretStr(f"{name}-secret-value")) for name in ("a", "b")]
    secrets = settings_secrets(Settings(api=ApiSettings(keys=pool)))
    assert {"a-secret-value", "b-secret-value"} <= set(secrets)
