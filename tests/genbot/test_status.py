"""``genbot status`` and ``genbot doctor`` on the database: the processes sharing it (live or
gone, platforms, shards, lease counts), the jobs by state and owner, the server and schema
state — read-only, one line when the server cannot be reached."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from pathlib import Path

import pytest
from pydantic import SecretStr

from bot.kernel import StorageSettings
from genbot.doctor import diagnose
from genbot.settings import Settings
from genbot.status import format_status, inspect
from storage import ProcessInfo
from storage.postgres import PostgresStore
from tests.genbot.test_cli_errors import invoke
from tests.postgres import PostgresCluster
from tests.storage.conftest import new_job
from tests.storage.helpers import create_job


async def two_processes(url: str) -> tuple[str, str]:
    """A live process holding two jobs (shards 0 of 2) and a dead one holding one; their ids."""
    async with (
        await PostgresStore.open(url) as live,
        await PostgresStore.open(url, clock=lambda: time.time() - 60) as dead,
    ):
        for _ in range(2):
            await create_job(live.admission, new_job(status="processing"))
        await create_job(dead.admission, new_job(status="finished", platform="slack"))
        now = 1.0
        await live.leasing.heartbeat(ProcessInfo("h1", 11, ("discord",), now, shards="0 of 2"))
        await dead.leasing.heartbeat(ProcessInfo("h2", 22, ("slack",), now))
        return live.owner.process_id, dead.owner.process_id


def test_status_lists_processes_and_jobs_by_state_and_owner(
    postgres: PostgresCluster, tmp_path: Path
) -> None:
    url = postgres.create_database()
    live, dead = asyncio.run(two_processes(url))
    result = invoke("status", env={"GENBOT_STORAGE__URL": url}, cwd=tmp_path)
    assert result.exit_code == 0, result.output
    lines = result.output.splitlines()
    assert lines[0].startswith("storage: PostgreSQL ")
    assert lines[0].endswith("(up to date)")
    assert lines[1] == "processes: 1 live, 2 known"
    assert f"{live} (pid 11 on h1; discord; shards 0 of 2; 2 leases; seen" in lines[2]
    assert f"{dead} (pid 22 on h2; slack; 1 lease; gone, last seen" in lines[3]
    assert lines[4] == "unfinished jobs: 3"
    assert any(line.split() == ["finished", dead, "1"] for line in lines[5:])
    assert any(line.split() == ["processing", live, "2"] for line in lines[5:])


HOUR = 3600.0
HOST_TIME = time.time
"""This host's wall clock, as it was before a test set ``time.time`` off by an hour."""


def host_clock(off_by: float) -> Callable[[], float]:
    """The wall clock of a host ``off_by`` seconds off the database server's."""
    return lambda: HOST_TIME() + off_by


def seen_ago(line: str, before: str) -> float:
    """The seconds printed after ``before`` in ``line`` (``…; seen 3 s ago)``)."""
    return float(line.removesuffix(" s ago)").rsplit(before, 1)[1])


async def test_processes_are_judged_and_dated_on_the_database_servers_clock_not_this_hosts(
    postgres: PostgresCluster, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The processes stamp their leases on the database server's clock: judged on this host's,
    a host an hour ahead showed every live process gone and one an hour behind showed a
    process dead for a minute live; dated on it, "seen 3600 s ago" for one seen a moment ago,
    or "last seen 0 s ago" for one gone a minute. This host's clock is both the one
    ``inspect`` is given and what ``time.time`` reads."""
    url = postgres.create_database()
    live, dead = await two_processes(url)
    settings = Settings(storage=StorageSettings(url=SecretStr(url), lease_seconds=30.0))
    lease = settings.storage.lease_seconds
    for off_by in (HOUR, -HOUR):
        monkeypatch.setattr(time, "time", host_clock(off_by))
        found = await inspect(settings, clock=host_clock(off_by))
        assert [(p.id, p.live) for p in found.processes] == [(live, True), (dead, False)]
        lines = format_status(found).splitlines()
        assert lines[1] == "processes: 1 live, 2 known"
        assert seen_ago(lines[2], "; seen ") <= lease, lines[2]
        assert 60 <= seen_ago(lines[3], "; gone, last seen ") < HOUR, lines[3]
        doctor = {f.name: f for f in await diagnose(settings)}["processes"].detail
        assert doctor.startswith(f"1 live: {live} (pid 11"), doctor
        assert seen_ago(doctor, "; seen ") <= lease, doctor


def test_status_of_a_new_sqlite_database(tmp_path: Path) -> None:
    result = invoke("status", env={"GENBOT_STORAGE__PATH": "genbot.db"}, cwd=tmp_path)
    assert result.exit_code == 0, result.output
    assert "empty: genbot run creates the schema" in result.output
    assert "processes: 0 live, 0 known" in result.output
    assert not (tmp_path / "genbot.db").exists()


def test_an_unreachable_server_is_one_error_line(postgres: PostgresCluster, tmp_path: Path) -> None:
    url = f"postgresql://genbot:never-print-pw@/nowhere?host={postgres.socket_dir}"
    result = invoke("status", env={"GENBOT_STORAGE__URL": url}, cwd=tmp_path)
    assert result.exit_code == 1
    [line] = [line for line in result.output.splitlines() if line]
    assert line.startswith("Error: cannot reach the database at ") and "never-print" not in line


async def test_doctor_shows_the_server_schema_and_live_processes(
    postgres: PostgresCluster, tmp_path: Path
) -> None:
    url = postgres.create_database()
    live, _ = await two_processes(url)
    settings = Settings(storage=StorageSettings(url=SecretStr(url)))
    findings = {f.name: f for f in await diagnose(settings)}
    assert findings["storage"].ok and findings["storage"].detail.startswith("PostgreSQL ")
    assert "up to date" in findings["storage"].detail
    assert findings["processes"].detail.startswith(f"1 live: {live} (pid 11")

    empty = Settings(storage=StorageSettings(url=SecretStr(postgres.create_database())))
    found = {f.name: f for f in await diagnose(empty)}
    assert found["storage"].ok and "empty: genbot run creates the schema" in found["storage"].detail
    assert found["processes"].detail == "0 live: none running"
