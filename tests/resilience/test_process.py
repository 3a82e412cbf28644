"""The ``genbot run`` harness: a process whose picked port another program took first starts on
another port, and is never mistaken for whatever answers on the taken one; the same for the
webhook receiver's port its settings name, while one no port setting names fails at once; one
that does not start in time says what it wrote."""

from __future__ import annotations

import socket
from collections.abc import Iterator
from pathlib import Path

import pytest
from aiohttp import web

from genbot.demo import free_port
from simulator.server import serve
from tests.resilience import process as harness
from tests.resilience.crash import genbot_env
from tests.resilience.process import GenbotProcess
from tests.resilience.support import sim_config


async def test_a_process_whose_port_was_taken_starts_on_another(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    async def anything(_request: web.Request) -> web.Response:
        return web.Response(text="another program's playground")

    app = web.Application()
    app.router.add_get("/{tail:.*}", anything)
    runner = web.AppRunner(app)
    await runner.setup()
    taken = free_port()
    await web.TCPSite(runner, "127.0.0.1", taken).start()
    picks: Iterator[int] = iter([taken, free_port()])
    monkeypatch.setattr(harness, "free_port", lambda: next(picks))
    try:
        async with serve(sim_config()) as sim:
            node = GenbotProcess(
                genbot_env(sim, tmp_path / "genbot.db", free_port()), tmp_path, "n"
            )
            try:
                await node.start()
                assert node.port != taken
                assert await node.terminate() == 0
            finally:
                await node.kill()
    finally:
        await runner.cleanup()


async def test_a_process_whose_webhook_port_was_taken_gets_settings_naming_another(
    tmp_path: Path,
) -> None:
    with socket.socket() as squatter:
        squatter.bind(("127.0.0.1", 0))
        squatter.listen()
        taken = squatter.getsockname()[1]
        async with serve(sim_config()) as sim:
            node = GenbotProcess(genbot_env(sim, tmp_path / "genbot.db", taken), tmp_path, "n")
            try:
                await node.start()
                assert node.webhook_port not in (0, taken)
                assert node.env["GENBOT_WEBHOOK__PUBLIC_URL"] == (
                    f"http://127.0.0.1:{node.webhook_port}"
                )
                assert await node.terminate() == 0
            finally:
                await node.kill()


async def test_a_process_whose_taken_port_no_setting_names_fails_at_once(
    tmp_path: Path,
) -> None:
    """Its settings file names the webhook receiver's port (a URL in its environment does too,
    but no port setting): another start would find it taken again."""
    with socket.socket() as squatter:
        squatter.bind(("127.0.0.1", 0))
        squatter.listen()
        taken = squatter.getsockname()[1]
        (tmp_path / "genbot.toml").write_text(f"[webhook]\nport = {taken}\n")
        async with serve(sim_config()) as sim:
            env = genbot_env(sim, tmp_path / "genbot.db", taken)
            del env["GENBOT_WEBHOOK__PORT"]
            node = GenbotProcess(env, tmp_path, "n")
            try:
                with pytest.raises(AssertionError, match="no port setting in its environment"):
                    await node.start()
                assert node.env == env, "started again with a URL naming another port"
            finally:
                await node.kill()


async def test_a_process_that_does_not_start_in_time_fails_with_what_it_wrote(
    tmp_path: Path,
) -> None:
    async with serve(sim_config()) as sim:
        env = genbot_env(sim, tmp_path / "genbot.db", free_port())
        node = GenbotProcess(env, tmp_path, "n", startup_timeout=0.01)
        try:
            with pytest.raises(AssertionError, match="n did not start within 0 s"):
                await node.start()
        finally:
            await node.kill()
