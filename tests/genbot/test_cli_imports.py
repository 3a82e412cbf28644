"""Each command of ``genbot`` imports what it uses: ``genbot --help`` and ``genbot sim`` nothing of
the core, storage or adapters, ``genbot doctor`` no feature of the core, ``genbot run`` the adapters
of the platforms it runs and never the simulator. Read from the child's own account of its
imports (``PYTHONPROFILEIMPORTTIME``: a line on standard error for each module it imported,
through startup, serving and stopping)."""

from __future__ import annotations

import signal
import subprocess
import sys
from pathlib import Path

import pytest

from genbot.demo import free_port
from tests.genbot.process import CHILD_WAIT, ROOT, GenbotProcess, clean_env, genbot
from tests.genbot.stubs import platform_env, stub_server

IMPORT_LINE = "import time:"
CORE = {"bot", "storage", "adapters"}
PLATFORMS = {"discord", "slack_bolt", "slack_sdk"}
IMPORTS_LISTED = {"PYTHONPROFILEIMPORTTIME": "1"}


def imported_modules(log: str) -> set[str]:
    """The modules listed in ``log``'s import-time lines
    (``import time:   120 |   340 |     adapters.slack.adapter``)."""
    return {
        line.rsplit("|", 1)[1].strip()
        for line in log.splitlines()
        if line.startswith(IMPORT_LINE) and "|" in line and "imported package" not in line
    }


def imported_packages(log: str) -> set[str]:
    """The top-level packages of :func:`imported_modules`."""
    return {module.split(".")[0] for module in imported_modules(log)}


def test_the_probe_reads_import_time_lines() -> None:
    log = (
        "import time: self [us] | cumulative | imported package\n"
        "import time:       120 |        340 |     adapters.slack.adapter\n"
        "genbot running: slack\n"
        "import time:        10 |         10 | discord\n"
    )
    assert imported_packages(log) == {"adapters", "discord"}


def imports_of(*args: str, cwd: Path = ROOT) -> set[str]:
    """The modules ``genbot *args`` imported, run to its end."""
    result = subprocess.run(
        [sys.executable, "-m", "genbot", *args],
        cwd=cwd,
        env=clean_env({**IMPORTS_LISTED, "PYTHONPATH": str(ROOT)}),
        capture_output=True,
        text=True,
        timeout=CHILD_WAIT,
    )
    return imported_modules(result.stderr)


@pytest.mark.parametrize("args", [(), ("sim",)])
def test_help_loads_no_core_and_no_platform(args: tuple[str, ...]) -> None:
    loaded = {module.split(".")[0] for module in imports_of(*args, "--help")}
    assert "genbot" in loaded and "click" in loaded
    assert not loaded & (CORE | PLATFORMS | {"simulator"})


def test_doctor_loads_the_settings_and_no_feature_of_the_core(tmp_path: Path) -> None:
    loaded = imports_of("doctor", cwd=tmp_path)
    assert {"genbot.doctor", "genbot.settings", "bot.kernel"} <= loaded
    assert not [module for module in loaded if module.startswith(("bot.features", "simulator"))]
    assert not {module.split(".")[0] for module in loaded} & PLATFORMS


async def stopped(child: GenbotProcess) -> set[str]:
    """What ``child`` imported, once SIGTERM stopped it."""
    assert await child.stop(signal.SIGTERM) == 0, child.errors()
    return imported_packages(child.errors())


async def test_genbot_sim_loads_the_simulator_and_nothing_of_the_core(tmp_path: Path) -> None:
    env = clean_env(IMPORTS_LISTED)
    args = ("sim", "--port", "0", "--time-scale", "0")
    async with genbot(*args, env=env, cwd=tmp_path, log=tmp_path / "sim.log") as sim:
        await sim.line_matching("^genbot simulator listening on ")
        loaded = await stopped(sim)
    assert "simulator" in loaded
    assert not loaded & (CORE | PLATFORMS)


@pytest.mark.parametrize(
    ("platform", "library", "other"),
    [("slack", "slack_bolt", {"discord"}), ("discord", "discord", {"slack_bolt", "slack_sdk"})],
)
async def test_run_loads_the_library_of_the_platform_it_runs_only(
    tmp_path: Path, platform: str, library: str, other: set[str]
) -> None:
    async with stub_server(answer=None) as never_answers:
        env = {
            **platform_env(platform, never_answers.url, tmp_path / "genbot.db"),
            **IMPORTS_LISTED,
        }
        async with genbot("run", env=env, cwd=tmp_path, log=tmp_path / "run.log") as run:
            await never_answers.until_asked()
            loaded = await stopped(run)
    assert {library, "adapters", "bot", "storage"} <= loaded
    assert not loaded & (other | {"simulator"})


async def test_run_of_the_playground_alone_loads_no_platform_library(tmp_path: Path) -> None:
    async with stub_server(answer=None) as provider:
        env = clean_env(
            {
                **IMPORTS_LISTED,
                "GENBOT_WEB__ENABLED": "true",
                "GENBOT_WEB__PORT": str(free_port()),
                "GENBOT_API__BASE_URL": provider.url,
                "GENBOT_STORAGE__PATH": str(tmp_path / "genbot.db"),
            }
        )
        async with genbot("run", env=env, cwd=tmp_path, log=tmp_path / "run.log") as run:
            await run.line_matching("^genbot running: web ")
            loaded = await stopped(run)
    assert {"adapters", "bot", "storage"} <= loaded
    assert not loaded & (PLATFORMS | {"simulator"})
