"""Suite-wide guard: no API key, token or signing secret appears in any log line of any test.

Every log record (DEBUG included, tracebacks included) is checked as it is emitted against every
secret the suite hands to genbot, the simulator and the platform fakes.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator

import pytest

from tests.postgres import PostgresCluster, cluster_or_skip
from tests.resilience.support import SECRETS as RESILIENCE_SECRETS

SUITE_SECRETS: tuple[str, ...] = (
    "sim-key",
    "free-key",
    "fake-bot-token",
    "xapp-fake-app-token",
    "fake-signing-secret",
    "never-print",
    *RESILIENCE_SECRETS,
)
"""The simulator's and the fakes' default keys and tokens, and every deliberately distinctive
secret of individual tests (they contain ``never-print``)."""


class SecretScanner(logging.Handler):
    """Remembers every emitted record that contains a secret."""

    def __init__(self) -> None:
        super().__init__(logging.DEBUG)
        self.leaks: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        try:
            text = record.getMessage()
        except Exception:
            text = str(record.msg)
        if record.exc_info is not None:
            text += "\n" + logging.Formatter().formatException(record.exc_info)
        if any(secret in text for secret in SUITE_SECRETS):
            self.leaks.append(f"{record.name}: {text[:500]}")


@pytest.fixture(autouse=True)
def no_secret_in_any_log_line() -> Iterator[None]:
    scanner = SecretScanner()
    root = logging.getLogger()
    level = root.level
    root.addHandler(scanner)
    root.setLevel(logging.DEBUG)
    try:
        yield
    finally:
        root.removeHandler(scanner)
        root.setLevel(level)
    assert not scanner.leaks, "secrets in log lines:\n" + "\n".join(scanner.leaks)


@pytest.fixture(scope="session")
def postgres() -> Iterator[PostgresCluster]:
    """One throwaway PostgreSQL cluster for the whole run, started on first use; the tests
    that need it are skipped, with the reason, where it cannot start."""
    yield from cluster_or_skip()


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption(
        "--heavy", action="store_true", help="also run the tests marked heavy (make test-heavy)"
    )


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers", "heavy: a test at the issue's full size, too slow for make test"
    )
    config.addinivalue_line(
        "markers",
        "slow: a test of make test that takes tens of seconds; run first, so that the workers"
        " of a parallel run (make test) do not end waiting on it",
    )


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    items.sort(key=lambda item: item.get_closest_marker("slow") is None)
    if config.getoption("--heavy"):
        return
    skip = pytest.mark.skip(reason="heavy: runs in make test-heavy")
    for item in items:
        if "heavy" in item.keywords:
            item.add_marker(skip)
