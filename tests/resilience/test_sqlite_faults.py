"""SQLite faults under a real ``genbot run``: a full disk refuses commands with a clear JSON
answer and makes ``/readyz`` not ready; once there is room again, commands are taken and
answered. The database sits on a small tmpfs of its own (mounting needs root: skipped
elsewhere)."""

from __future__ import annotations

import asyncio
import contextlib
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import aiohttp
import pytest

from bot.kernel import DATABASE_FULL_TEXT
from genbot.demo import free_port
from simulator.server import serve
from tests.genbot.process import CHILD_WAIT
from tests.resilience.crash import genbot_env
from tests.resilience.process import GenbotProcess, Playground, load_page
from tests.resilience.support import sim_config

DISK = "8m"
CHUNK = b"\0" * (256 * 1024)


def mounted(where: Path, *mount: str) -> Iterator[Path]:
    """``mount *mount where`` for a fixture to yield, unmounted after (skipped where the
    test cannot mount)."""
    where.mkdir()
    done = subprocess.run(["mount", *mount, str(where)], capture_output=True)
    if done.returncode != 0:
        pytest.skip(f"cannot mount here: {done.stderr.decode().strip()}")
    try:
        yield where
    finally:
        subprocess.run(["umount", "-l", str(where)], capture_output=True)


@pytest.fixture
def small_disk(tmp_path: Path) -> Iterator[Path]:
    """A tmpfs of ``DISK`` mounted at ``tmp_path / "disk"``."""
    yield from mounted(tmp_path / "disk", "-t", "tmpfs", "-o", f"size={DISK}", "tmpfs")


def fill(disk: Path) -> Path:
    """Fill ``disk`` to the last byte; the file that holds the space."""
    filler = disk / "filler"
    for chunk in (CHUNK, CHUNK[:512]):
        with contextlib.suppress(OSError), filler.open("ab", buffering=0) as out:
            while True:
                out.write(chunk)
    return filler


async def ready(process: GenbotProcess) -> tuple[int, dict[str, Any]]:
    url = f"http://127.0.0.1:{process.ops_port}/readyz"
    async with aiohttp.ClientSession() as session, session.get(url) as response:
        return response.status, await response.json()


async def until_ready(process: GenbotProcess) -> None:
    """Wait (bounded) until ``/readyz`` answers 200: its provider check asks the simulator, in
    this test's own process, whose answer may come later than the check's 2 s on a loaded
    machine (the child then probes again at the next ``/readyz``)."""
    async with asyncio.timeout(CHILD_WAIT):
        while True:
            if (await ready(process))[0] == 200:
                return
            await asyncio.sleep(0.2)


async def command(url: str, cookie: str, text: str) -> tuple[int, dict[str, Any]]:
    headers = {"Cookie": f"genbot_session={cookie}"}
    async with (
        aiohttp.ClientSession(headers=headers) as session,
        session.post(f"{url}/api/command", json={"text": text, "channel": "general"}) as answer,
    ):
        return answer.status, await answer.json()


async def test_a_full_disk_refuses_commands_clearly_and_is_not_ready(
    small_disk: Path, tmp_path: Path
) -> None:
    async with serve(sim_config(time_scale=0.01)) as sim:
        env = genbot_env(sim, small_disk / "genbot.db", free_port()) | {
            "GENBOT_OPS__ENABLED": "true",
            "GENBOT_OPS__PROBE_INTERVAL_SECONDS": "0",
        }
        process = GenbotProcess({**env, "GENBOT_OPS__PORT": str(free_port())}, tmp_path, "full")
        try:
            await process.start()
            cookie = await load_page(process.url)
            await until_ready(process)

            filler = fill(small_disk)
            status, answer = await command(process.url, cookie, "/imagine a fox on a full disk")
            assert (status, answer) == (503, {"error": DATABASE_FULL_TEXT})
            status, body = await ready(process)
            assert status == 503 and not body["checks"]["storage"]["ok"], body
            assert "full" in body["checks"]["storage"]["detail"]

            filler.unlink()
            await until_ready(process)
            async with Playground(process.url, session_cookie=cookie) as browser:
                await browser.command("/imagine a fox with room again")
                await browser.until(lambda: browser.results(), 30, "the result")
        finally:
            await process.kill()


@pytest.fixture
def read_only_copy(tmp_path: Path) -> Iterator[Path]:
    """An empty folder mounted read-only at ``tmp_path / "ro"``."""
    source = tmp_path / "source"
    source.mkdir()
    yield from mounted(tmp_path / "ro", "--bind", "-o", "ro", str(source))


async def test_a_database_on_a_read_only_file_system_stops_genbot_with_a_clear_reason(
    read_only_copy: Path, tmp_path: Path
) -> None:
    async with serve(sim_config()) as sim:
        env = genbot_env(sim, read_only_copy / "genbot.db", free_port())
        process = GenbotProcess(env, tmp_path, "read-only")
        with pytest.raises(AssertionError, match="exited early") as exited:
            await process.start()
    assert process.process is not None and process.process.returncode not in (0, None)
    assert "Read-only file system" in str(exited.value)
    assert "[storage] path" in str(exited.value)
