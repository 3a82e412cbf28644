"""Stopping genbot with signals: a signal during a startup that hangs stops it cleanly, a second
signal while stopping is ignored, and a fatal error stops it with a one-line reason."""

from __future__ import annotations

import signal
from pathlib import Path

import pytest

from tests.genbot.process import clean_env, genbot, python_module
from tests.genbot.signal_child import FATAL_REASON
from tests.genbot.stubs import DISCORD_TOKEN, SLACK_TOKEN, platform_env, stub_server


@pytest.mark.parametrize(
    ("platform", "first_request", "signum"),
    [
        ("slack", "/api/auth.test", signal.SIGTERM),
        ("discord", "/api/v10/users/@me", signal.SIGTERM),
        ("slack", "/api/auth.test", signal.SIGINT),
    ],
)
async def test_a_signal_during_a_startup_that_hangs_stops_genbot_cleanly(
    tmp_path: Path, platform: str, first_request: str, signum: signal.Signals
) -> None:
    async with stub_server(answer=None) as never_answers:
        env = platform_env(platform, never_answers.url, tmp_path / "genbot.db")
        async with genbot("run", env=env, cwd=tmp_path, log=tmp_path / "run.log") as run:
            assert await never_answers.until_asked() == first_request
            status = await run.stop(signum)

    errors = run.errors()
    assert status == 0, errors
    assert run.printed == ["genbot stopped"]
    assert f"{signum.name} received: stopping" in errors
    assert "Traceback" not in errors
    assert SLACK_TOKEN not in errors and DISCORD_TOKEN not in errors


async def test_a_second_signal_while_stopping_is_logged_and_ignored(tmp_path: Path) -> None:
    async with python_module(
        "tests.genbot.signal_child",
        "slow-teardown",
        env=clean_env(),
        cwd=tmp_path,
        log=tmp_path / "child.log",
    ) as child:
        await child.line_matching("^serving$")
        child.process.send_signal(signal.SIGTERM)
        await child.line_matching("^tearing down$")
        status = await child.stop(signal.SIGINT)

    assert status == 0, child.errors()
    assert child.printed == ["serving", "tearing down", "ignored 1 signal(s)", "stopped"]
    assert "SIGINT received while stopping: ignored" in child.errors()
    assert "Traceback" not in child.errors()


async def test_a_fatal_error_stops_the_process_with_a_one_line_reason(tmp_path: Path) -> None:
    async with python_module(
        "tests.genbot.signal_child", "fatal", env=clean_env(), cwd=tmp_path, log=tmp_path / "c.log"
    ) as child:
        status = await child.exit_status()

    assert status == 1
    assert child.printed == ["serving", "tearing down", "stopped"]
    assert child.error_line() == f"Error: {FATAL_REASON}"
    assert "Traceback" not in child.errors()
