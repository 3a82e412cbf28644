"""A throwaway PostgreSQL cluster for the tests, from the machine's own PostgreSQL binaries.

The cluster lives in a temporary folder and listens only on a Unix socket there (no TCP port,
so parallel runs cannot collide). As root, the server runs as the ``postgres`` user (it refuses
root). :func:`start_cluster` raises :class:`PostgresUnavailable` with the reason when there is
no PostgreSQL here or it cannot start, so the tests that need it are skipped, not failed.
"""

from __future__ import annotations

import glob
import itertools
import os
import pwd
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import quote

import psycopg
import pytest

ROOT = Path(__file__).resolve().parent.parent
USER = "genbot"
START_TIMEOUT = 60
DURABLE_OPTIONS = (
    "-c listen_addresses='' -c fsync=off -c full_page_writes=off"
    " -c max_connections=300 -c shared_buffers=32MB"
)
"""A commit survives the server's crash (not the machine's): for tests that crash it."""
SERVER_OPTIONS = DURABLE_OPTIONS + " -c synchronous_commit=off"


class PostgresUnavailable(Exception):
    """No PostgreSQL server could be started here; the message says why."""


def binaries() -> Path:
    """The folder of ``initdb`` and ``pg_ctl``: ``pg_config --bindir``, else the newest
    ``/usr/lib/postgresql/*/bin``."""
    pg_config = shutil.which("pg_config")
    if pg_config:
        found = subprocess.run([pg_config, "--bindir"], capture_output=True, text=True)
        folder = Path(found.stdout.strip())
        if found.returncode == 0 and (folder / "initdb").exists():
            return folder
    candidates = sorted(
        glob.glob("/usr/lib/postgresql/*/bin"), key=lambda p: int(Path(p).parent.name)
    )
    for candidate in reversed(candidates):
        if (Path(candidate) / "initdb").exists():
            return Path(candidate)
    raise PostgresUnavailable(
        "PostgreSQL is not installed (make test installs Debian's postgresql when run as root)"
    )


@dataclass
class PostgresCluster:
    """A running throwaway cluster; :meth:`url` names a database in it."""

    folder: Path
    bindir: Path
    run_as: list[str]
    _names: itertools.count[int] = field(default_factory=itertools.count)
    _watch: subprocess.Popen[bytes] | None = None

    @property
    def socket_dir(self) -> Path:
        return self.folder

    def url(self, database: str = "postgres", *, schema: str | None = None) -> str:
        """A URL of ``database`` over the cluster's socket; with ``schema``, connections use
        that schema (``search_path``)."""
        url = f"postgresql://{USER}@/{database}?host={quote(str(self.socket_dir))}"
        if schema is not None:
            url += "&options=" + quote(f"-c search_path={schema}")
        return url

    def create_database(self) -> str:
        """A new empty database; its URL."""
        name = f"genbot_{os.getpid()}_{next(self._names)}"
        with psycopg.connect(self.url(), autocommit=True) as conn:
            conn.execute(f'CREATE DATABASE "{name}"')
        return self.url(name)

    def create_schema(self) -> str:
        """A new empty schema in the shared test database (cheaper than a database); a URL
        whose connections use it."""
        name = f"test_{next(self._names)}"
        with psycopg.connect(self.url("genbot"), autocommit=True) as conn:
            conn.execute(f'CREATE SCHEMA "{name}"')
        return self.url("genbot", schema=name)

    def stop_command(self) -> list[str]:
        """The command that stops the server at once."""
        return [*self.run_as, str(self.bindir / "pg_ctl"), "-D", str(self.folder / "data"),
                "-m", "immediate", "-w", "stop"]  # fmt: skip

    def restart(self) -> None:
        """Restart the server (``pg_ctl restart -m fast``): every connection to it fails."""
        subprocess.run(
            [*self.run_as, str(self.bindir / "pg_ctl"), "-D", str(self.folder / "data"),
             "-l", str(self.folder / "log"), "-m", "fast", "-w", "-t", str(START_TIMEOUT),
             "restart"],
            capture_output=True, timeout=START_TIMEOUT + 10, check=True,
        )  # fmt: skip

    def watch(self) -> None:
        """Start :mod:`tests.postgres_watch`: if this process dies without :meth:`stop` (a
        killed pytest), the watch stops the server and removes its folder."""
        self._watch = subprocess.Popen(
            [sys.executable, "-m", "tests.postgres_watch", str(os.getpid()), str(self.folder),
             *self.stop_command()],
            stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
            start_new_session=True, cwd=ROOT,
        )  # fmt: skip

    def stop(self) -> None:
        subprocess.run(self.stop_command(), capture_output=True, timeout=START_TIMEOUT)
        shutil.rmtree(self.folder, ignore_errors=True)
        if self._watch is not None:
            self._watch.wait(timeout=START_TIMEOUT)


def cluster_or_skip(options: str = SERVER_OPTIONS) -> Iterator[PostgresCluster]:
    """A started cluster (``options`` for its server) for a fixture to yield, stopped after;
    the test is skipped, with the reason, where none can start."""
    try:
        cluster = start_cluster(options)
    except PostgresUnavailable as error:
        pytest.skip(f"PostgreSQL unavailable: {error}")
    try:
        yield cluster
    finally:
        cluster.stop()


def _run_as() -> list[str]:
    if os.geteuid() != 0:
        return []
    try:
        pwd.getpwnam("postgres")
    except KeyError:
        raise PostgresUnavailable("running as root and there is no 'postgres' user") from None
    runuser = shutil.which("runuser")
    if runuser is None:
        raise PostgresUnavailable("running as root and there is no runuser command") from None
    return [runuser, "-u", "postgres", "--"]


def start_cluster(options: str = SERVER_OPTIONS) -> PostgresCluster:
    """Initialize and start a cluster in a new temporary folder (``genbot`` is its superuser
    and the database ``genbot`` exists) with the server ``options``."""
    bindir = binaries()
    run_as = _run_as()
    folder = Path(tempfile.mkdtemp(prefix="genbot-pg-"))
    if run_as:
        shutil.chown(folder, "postgres")
    cluster = PostgresCluster(folder, bindir, run_as)
    steps = (
        [str(bindir / "initdb"), "-D", str(folder / "data"), "-A", "trust", "-U", USER,
         "-E", "UTF8", "--locale=C.UTF-8", "--no-sync", "--no-instructions"],
        [str(bindir / "pg_ctl"), "-D", str(folder / "data"), "-l", str(folder / "log"), "-w",
         "-t", str(START_TIMEOUT), "start", "-o", f"-k {folder} {options}"],
    )  # fmt: skip
    try:
        for step in steps:
            try:
                done = subprocess.run(
                    [*run_as, *step], capture_output=True, text=True, timeout=START_TIMEOUT + 10
                )
            except (OSError, subprocess.TimeoutExpired) as error:
                raise PostgresUnavailable(f"{Path(step[0]).name} failed: {error}") from error
            if done.returncode != 0:
                log = folder / "log"
                detail = (done.stderr or done.stdout).strip().splitlines()[-1:] or [""]
                tail = log.read_text().strip().splitlines()[-1:] if log.exists() else []
                raise PostgresUnavailable(
                    f"{Path(step[0]).name} failed: {' '.join(detail + tail)}".strip()
                )
        cluster.watch()
        with psycopg.connect(cluster.url(), autocommit=True) as conn:
            conn.execute("CREATE DATABASE genbot")
    except BaseException:
        cluster.stop()
        raise
    return cluster
