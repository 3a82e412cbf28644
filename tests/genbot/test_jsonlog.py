"""JSON logs: one parseable object per line, with the ids of the work in progress, and every
secret redacted — in the message and in the traceback."""

from __future__ import annotations

import asyncio
import json
import logging
from pathlib import Path

import pytest
from pydantic import SecretStr

from bot.kernel import ApiSettings, metrics
from genbot.logs import configure_logging
from genbot.settings import Settings
from simulator.server import serve
from tests.resilience.process import GenbotProcess, Playground
from tests.resilience.support import API_KEY, sim_config

SECRET = "sk-json-logs-never-print-0123456789"


async def test_a_line_is_json_with_context_ids_and_no_secret(
    restored_logging: None, capsys: pytest.CaptureFixture[str]
) -> None:
    settings = Settings(api=ApiSettings(key=SecretStr(SECRET)))
    configure_logging(settings, verbose=False, log_format="json")

    async def work() -> None:
        metrics.LOG_PLATFORM.set("slack")
        metrics.LOG_USER_ID.set("U42")
        metrics.LOG_JOB_ID.set("job-7")
        try:
            raise RuntimeError(f"the provider refused {SECRET}")
        except RuntimeError:
            logging.getLogger("genbot.test").exception("calling with key %s failed", SECRET)

    await asyncio.create_task(work())
    logging.getLogger("genbot.test").info("outside any work")

    err = capsys.readouterr().err
    first, second = (json.loads(line) for line in err.splitlines())
    assert first["level"] == "ERROR" and first["logger"] == "genbot.test"
    assert first["message"] == "calling with key [redacted] failed"
    assert (first["platform"], first["user_id"], first["job_id"]) == ("slack", "U42", "job-7")
    assert "RuntimeError: the provider refused [redacted]" in first["exception"]
    assert first["time"].endswith("Z") and "T" in first["time"]
    assert second["message"] == "outside any work"
    assert not {"platform", "user_id", "job_id"} & set(second)
    assert SECRET not in err


def playground_env(simulator_url: str, data: Path) -> dict[str, str]:
    """``genbot run`` with the playground on the simulator, its database in ``data``."""
    return {
        "GENBOT_WEB__ENABLED": "true",
        "GENBOT_API__BASE_URL": simulator_url,
        "GENBOT_API__KEY": API_KEY,
        "GENBOT_STORAGE__PATH": str(data / "genbot.db"),
        "GENBOT_LIMITS__POLL_INTERVAL_MIN": "0.05",
    }


async def test_genbot_run_with_log_format_json_writes_only_json_lines(tmp_path: Path) -> None:
    async with serve(sim_config(time_scale=0.01)) as sim:
        env = playground_env(sim.base_url, tmp_path)
        process = GenbotProcess(env, tmp_path, "json", args=("-v", "--log-format", "json"))
        try:
            await process.start()
            async with Playground(process.url) as browser:
                await browser.command("/imagine a lighthouse at dusk")
                await browser.until(lambda: browser.results(), 20.0, "the result")
            assert await process.terminate() == 0
        finally:
            await process.kill()

    lines = (tmp_path / "json.stderr").read_text().splitlines()
    entries = [json.loads(line) for line in lines]
    assert entries and all({"time", "level", "logger", "message"} <= set(e) for e in entries)
    assert any(e.get("job_id") for e in entries), lines
    assert any(e.get("platform") == "web" for e in entries), lines
    assert not any(API_KEY in line for line in lines)


async def test_logging_format_json_in_the_config_file_gives_json_lines(tmp_path: Path) -> None:
    (tmp_path / "genbot.toml").write_text('[logging]\nformat = "json"\n')
    async with serve(sim_config(time_scale=0.01)) as sim:
        process = GenbotProcess(playground_env(sim.base_url, tmp_path), tmp_path, "toml", args=())
        try:
            await process.start()
            assert await process.terminate() == 0
        finally:
            await process.kill()

    lines = (tmp_path / "toml.stderr").read_text().splitlines()
    entries = [json.loads(line) for line in lines]
    assert any(e["logger"].startswith("genbot") for e in entries), lines
    assert all({"time", "level", "logger", "message"} <= set(e) for e in entries)
