"""``[storage] url`` selects PostgreSQL: several genbot processes share it (no SQLite lock),
``/metrics`` shows how far the database server's clock is from this host's, and a server that
cannot be reached is one startup line without the password."""

from __future__ import annotations

from pathlib import Path

import pytest
from pydantic import SecretStr

from bot.api import ProviderRateLimited
from bot.kernel import OpsSettings, StorageSettings, metrics
from genbot.reasons import StartupError
from genbot.runtime import running
from genbot.settings import Settings
from storage.postgres import PostgresStore
from tests.genbot.test_ops import scrape, value
from tests.postgres import PostgresCluster


def on_postgres(url: str, tmp_path: Path) -> Settings:
    return Settings(storage=StorageSettings(path=tmp_path / "unused.db", url=SecretStr(url)))


async def test_two_processes_run_on_one_postgres_database(
    postgres: PostgresCluster, tmp_path: Path
) -> None:
    settings = on_postgres(postgres.create_database(), tmp_path)
    async with running(settings) as first, running(settings) as second:
        assert isinstance(first.store, PostgresStore) and isinstance(second.store, PostgresStore)
        assert await first.store.schema_version() == await second.store.schema_version()
    assert not (tmp_path / "unused.db").exists()
    assert not (tmp_path / "unused.db.lock").exists()


async def test_processes_on_one_database_share_the_chat_pacing(
    postgres: PostgresCluster, tmp_path: Path
) -> None:
    settings = on_postgres(postgres.create_database(), tmp_path)
    settings = settings.model_copy(
        update={"api": settings.api.model_copy(update={"chat_requests_per_minute": 1})}
    )
    async with running(settings) as first, running(settings) as second:
        await first.provider.chat.pacer.acquire(max_wait=1.0)
        with pytest.raises(ProviderRateLimited):
            await second.provider.chat.pacer.acquire(max_wait=1.0)


async def test_metrics_show_the_database_servers_clock_minus_this_hosts(
    postgres: PostgresCluster, tmp_path: Path
) -> None:
    """What the process measured when it opened the store (the server runs on this host: next
    to nothing), not what was set before (an hour)."""
    settings = on_postgres(postgres.create_database(), tmp_path)
    settings = settings.model_copy(update={"ops": OpsSettings(enabled=True, port=0)})
    metrics.set_clock_offset(3600.0)
    async with running(settings) as runtime:
        samples = await scrape(runtime)
    assert ("genbot_clock_offset_seconds", frozenset()) in samples
    assert abs(value(samples, "genbot_clock_offset_seconds")) < 60


async def test_an_unreachable_postgres_is_one_line_without_the_password(
    postgres: PostgresCluster, tmp_path: Path
) -> None:
    url = f"postgresql://genbot:never-print-pw@/missing_db?host={postgres.socket_dir}"
    with pytest.raises(StartupError) as raised:
        async with running(on_postgres(url, tmp_path)):
            pass
    message = str(raised.value)
    assert message.startswith("cannot open the database at ")
    assert message.endswith("(check [storage] url)")
    assert "missing_db" in message and "never-print" not in message and "\n" not in message


def test_the_url_comes_from_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("GENBOT_STORAGE__URL", "postgresql://bot@db:5432/genbot")
    assert Settings().storage.postgres_url == "postgresql://bot@db:5432/genbot"
    monkeypatch.setenv("GENBOT_STORAGE__URL", "  ")
    assert Settings().storage.postgres_url is None
