"""The dependency direction holds: the core imports no platform library, the simulator no core."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]

PROBE = """
import importlib, json, pkgutil, sys
for package in {packages!r}:
    module = importlib.import_module(package)
    for info in pkgutil.walk_packages(module.__path__, package + "."):
        importlib.import_module(info.name)
print(json.dumps(sorted(sys.modules)))
"""


def modules_after(probe: str) -> set[str]:
    """The modules loaded once ``probe`` (which prints ``sys.modules`` as JSON) ran in a clean
    interpreter."""
    result = subprocess.run(
        [sys.executable, "-c", probe],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    return set(json.loads(result.stdout.strip().splitlines()[-1]))


def loaded_modules(*packages: str) -> set[str]:
    """The modules importing every module of ``packages`` loads."""
    return modules_after(PROBE.format(packages=list(packages)))


def roots(modules: set[str]) -> set[str]:
    return {name.split(".")[0] for name in modules}


def test_core_and_storage_load_no_platform_library() -> None:
    loaded = roots(loaded_modules("bot", "storage"))
    assert not loaded & {"discord", "slack_bolt", "slack_sdk", "adapters", "simulator", "genbot"}


def test_simulator_is_independent_of_the_core() -> None:
    loaded = roots(loaded_modules("simulator"))
    assert not loaded & {"bot", "storage", "adapters", "genbot", "discord", "slack_bolt"}


def test_adapters_never_reach_up_to_the_command_line() -> None:
    loaded = roots(loaded_modules("adapters"))
    assert "adapters" in loaded and not loaded & {"genbot", "simulator"}


@pytest.mark.parametrize("package", ["bot", "storage"])
def test_probe_sees_the_packages_modules(package: str) -> None:
    assert f"{package}" in loaded_modules(package)


def test_the_api_client_needs_nothing_of_the_core_above_it() -> None:
    loaded = loaded_modules("bot.api")
    core_outside_api = {
        name for name in loaded if name.startswith("bot.") and not name.startswith("bot.api")
    }
    assert core_outside_api == set()
    assert not roots(loaded) & {"storage", "adapters", "simulator", "genbot"}


def imported_by(module: str) -> set[str]:
    """The modules importing ``module`` alone loads."""
    return modules_after(f"import json, sys, {module}; print(json.dumps(sorted(sys.modules)))")


def test_reading_settings_loads_no_platform_library() -> None:
    # every process reads every adapter's settings; only the adapters it runs load their library
    loaded = roots(imported_by("genbot.settings"))
    assert not loaded & {"discord", "slack_bolt", "slack_sdk"}


def test_the_kernel_needs_nothing_of_the_core_above_it() -> None:
    loaded = imported_by("bot.kernel")
    above = {
        name
        for name in loaded
        if name.startswith("bot.") and not name.startswith(("bot.kernel", "bot.api"))
    }
    assert "bot.kernel.events" in loaded and above == set()
    assert not roots(loaded) & {"adapters", "simulator", "genbot", "discord", "slack_bolt"}
