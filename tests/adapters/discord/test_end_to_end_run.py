"""``genbot run`` as a new user runs it: a separate process configured only through the
environment, the fake Discord and the simulator as its world, stopped by SIGTERM."""

from __future__ import annotations

import asyncio
import os
import signal
import sys
from pathlib import Path

from simulator.server import serve
from simulator.state import SimulatorConfig
from tests.fakes.discord import FakeDiscord
from tests.genbot.process import CHILD_WAIT

ROOT = Path(__file__).resolve().parents[3]
TOKEN = "fake-bot-token.Zk9x-never-print-me"
API_KEY = "sim-key"


def genbot_environment(fake: FakeDiscord, sim_url: str, tmp_path: Path) -> dict[str, str]:
    """The process environment without any inherited genbot settings, plus the test's."""
    inherited = {k: v for k, v in os.environ.items() if not k.startswith("GENBOT_")}
    return inherited | {
        "PYTHONPATH": str(ROOT),
        "GENBOT_DISCORD__TOKEN": TOKEN,
        "GENBOT_DISCORD__API_BASE": fake.api_base,
        "GENBOT_DISCORD__GATEWAY_URL": fake.gateway_url,
        "GENBOT_DISCORD__GUILD_IDS": f"[{fake.guild_id}]",
        "GENBOT_API__BASE_URL": sim_url,
        "GENBOT_API__KEY": API_KEY,
        "GENBOT_STORAGE__PATH": str(tmp_path / "genbot.db"),
        "GENBOT_LIMITS__POLL_INTERVAL_MIN": "0.05",
        "GENBOT_LIMITS__POLL_INTERVAL_MAX": "0.5",
    }


async def genbot_process(
    command: str, fake: FakeDiscord, sim_url: str, tmp_path: Path
) -> asyncio.subprocess.Process:
    """``python -m genbot <command>`` in ``tmp_path``, stdout and stderr piped together."""
    return await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "genbot",
        command,
        cwd=tmp_path,
        env=genbot_environment(fake, sim_url, tmp_path),
        stdin=asyncio.subprocess.DEVNULL,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.STDOUT,
    )


async def test_genbot_doctor_then_run_serve_discord_and_stop_cleanly_on_sigterm(
    tmp_path: Path,
) -> None:
    async with (
        FakeDiscord(token=TOKEN) as fake,
        serve(SimulatorConfig(time_scale=0.003, seed=3)) as sim,
    ):
        doctor = await genbot_process("doctor", fake, sim.base_url, tmp_path)
        try:
            async with asyncio.timeout(CHILD_WAIT):
                checked, _ = await doctor.communicate()
        finally:
            if doctor.returncode is None:
                doctor.kill()
                await doctor.wait()
        report = checked.decode(errors="replace")
        assert doctor.returncode == 0, report
        assert "logged in as genbot" in report and TOKEN not in report

        process = await genbot_process("run", fake, sim.base_url, tmp_path)
        assert process.stdout is not None
        output = asyncio.create_task(process.stdout.read())
        try:
            await fake.wait_connected(timeout=CHILD_WAIT)
            alice, general = fake.user("alice"), fake.channel("general")
            interaction = await fake.slash(alice, general, "imagine", {"prompt": "a fox"})
            assert await fake.answered(interaction) == 5
            grid = await fake.wait_for(
                lambda: next((m for m in fake.bot_messages(general.id) if m.attachments), None),
                20.0,
                "the grid",
            )
            assert {"U1", "U4", "🔄", "V1", "V4"} <= {b.get("label") for b in grid.buttons}
            assert [r.body["prompt"] for r in sim.state.requests_to("/gen/v2/imagine")] == ["a fox"]
            process.send_signal(signal.SIGTERM)
            async with asyncio.timeout(CHILD_WAIT):
                code = await process.wait()
            text = (await output).decode(errors="replace")
        finally:
            if process.returncode is None:
                process.kill()
                await process.wait()
            output.cancel()
    assert code == 0, text
    assert "genbot running: discord" in text and "genbot stopped" in text
    assert TOKEN not in text
    assert not fake.sessions, "the gateway connection was closed"
