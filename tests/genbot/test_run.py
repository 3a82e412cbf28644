"""``genbot run`` with the web adapter switched on by environment variables: it serves the
playground on the real core against the simulator, a second ``genbot run`` on the same database
exits at once naming the first one's pid, SIGTERM stops it cleanly, its garbage collector is set
for serving, and its files are private."""

from __future__ import annotations

import asyncio
import signal
import sqlite3
import stat
from pathlib import Path

from genbot.demo import free_port
from simulator.server import serve
from simulator.state import SimulatorConfig
from storage.lock import lock_path
from tests.genbot.process import clean_env, genbot
from tests.genbot.stack import labels, playground_user


async def test_run_serves_the_playground_on_the_configured_port_until_sigterm(
    tmp_path: Path,
) -> None:
    port = free_port()
    database = tmp_path / "data" / "genbot.db"
    async with serve(SimulatorConfig(time_scale=0.01)) as sim:
        env = clean_env(
            {
                "GENBOT_WEB__ENABLED": "true",
                "GENBOT_WEB__PORT": str(port),
                "GENBOT_API__BASE_URL": sim.base_url,
                "GENBOT_API__KEY": "sim-key",
                "GENBOT_STORAGE__PATH": str(database),
                "GENBOT_LIMITS__POLL_INTERVAL_MIN": "0.05",
                "GENBOT_LIMITS__POLL_INTERVAL_MAX": "0.2",
            }
        )
        async with genbot("run", env=env, cwd=tmp_path, log=tmp_path / "run.log") as run:
            await run.line_matching(r"^genbot running: web ")
            assert "garbage collector set for serving" in run.errors()
            second_env = {**env, "GENBOT_WEB__PORT": str(free_port())}
            async with genbot("run", env=second_env, cwd=tmp_path, log=tmp_path / "2.log") as two:
                assert await two.exit_status() == 1
                assert two.error_line() == (
                    f"Error: the database {database} is in use by another genbot "
                    f"(pid {run.process.pid}); stop it first, or give this one its own "
                    "[storage] path"
                )
            async with playground_user(f"http://127.0.0.1:{port}") as user:
                view = await user.watch()
                echo_id = await user.command("/imagine a harbour at night")
                grid = await view.until(lambda: view.with_buttons(echo_id, "U1"), timeout=20)
                assert labels(grid)[1][:4] == ["V1", "V2", "V3", "V4"]
            await _posted(database)

            assert await run.stop(signal.SIGTERM) == 0, run.errors()
            assert run.printed[-1] == "genbot stopped"
            assert "Traceback" not in run.errors()
        [imagine] = sim.state.requests_to("/gen/v2/imagine")
        assert imagine.body["prompt"].startswith("a harbour at night")

    with sqlite3.connect(database) as db:
        [(status,)] = db.execute("SELECT status FROM jobs").fetchall()
    assert status == "posted"
    assert stat.S_IMODE(database.parent.stat().st_mode) == 0o700
    assert not database.with_name("genbot.playground.db").exists(), "history is in the database"
    private = [database, lock_path(database)]
    assert {path.name: stat.S_IMODE(path.stat().st_mode) for path in private} == {
        path.name: 0o600 for path in private
    }


async def test_run_with_nothing_configured_says_what_to_set(tmp_path: Path) -> None:
    async with genbot("run", env=clean_env(), cwd=tmp_path, log=tmp_path / "run.log") as run:
        assert await run.exit_status() == 1
        assert (
            "nothing to run: set [discord] token, [slack] bot_token (or client_id and "
            "client_secret) or [web] enabled"
        ) in run.errors()


async def _posted(database: Path) -> None:
    """Wait (bounded) until the one job is stored ``posted``: the grid reaches the page before
    its job's move from ``posting`` is committed, and a stop in between leaves it ``posting``
    for the next start to confirm."""
    async with asyncio.timeout(10):
        while True:
            with sqlite3.connect(database) as db:
                if db.execute("SELECT status FROM jobs").fetchall() == [("posted",)]:
                    return
            await asyncio.sleep(0.05)
