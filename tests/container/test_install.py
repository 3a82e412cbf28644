"""The Dockerfile's build steps, run here in a clean virtual environment: the same COPY list
and the same RUN commands (with the venv in a temporary folder, and pip's cache allowed so the
test stays fast). The installed genbot must run and carry the playground's static files and
the compiled message catalogs."""

from __future__ import annotations

import shlex
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.container.dockerfile import DOCKERFILE, ROOT, stages

VENV_IN_IMAGE = "/opt/genbot"
INSTALL_TIMEOUT = 600


def replay_build_stage(workdir: Path) -> Path:
    """Copy what the build stage copies into ``workdir/src`` and run its RUN steps there;
    the virtual environment the steps made."""
    build = stages(DOCKERFILE.read_text())[0]
    source = workdir / "src"
    source.mkdir()
    venv = workdir / "venv"
    for instruction in build.instructions:
        if instruction.keyword == "COPY":
            *sources, destination = instruction.words()
            for name in sources:
                target = source / destination if destination not in ("./", ".") else source
                copy_into(
                    ROOT / name,
                    target if len(sources) == 1 and destination != "./" else source / name,
                )
        elif instruction.keyword == "RUN":
            words = [
                word.replace(VENV_IN_IMAGE, str(venv))
                for word in shlex.split(instruction.arguments)
                if word != "--no-cache-dir"
            ]
            if words[0] == "python":
                words[0] = sys.executable
            done = subprocess.run(
                words, cwd=source, capture_output=True, text=True, timeout=INSTALL_TIMEOUT
            )
            assert done.returncode == 0, f"{instruction.arguments}\n{done.stderr[-3000:]}"
    return venv


def copy_into(origin: Path, target: Path) -> None:
    if origin.is_dir():
        shutil.copytree(origin, target, ignore=shutil.ignore_patterns("__pycache__"))
    else:
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(origin, target)


@pytest.mark.slow
@pytest.mark.timeout(300)  # a minute of pip on a quiet machine, several on a loaded one
def test_the_dockerfile_install_steps_give_a_working_genbot(tmp_path: Path) -> None:
    venv = replay_build_stage(tmp_path)

    shown = subprocess.run(
        [venv / "bin" / "genbot", "--help"], capture_output=True, text=True, timeout=60
    )
    assert shown.returncode == 0, shown.stderr
    assert {"run", "demo", "sim", "doctor"} <= set(shown.stdout.split())
    check = (
        "import importlib.resources as r, prometheus_client, psycopg; "
        "assert (r.files('adapters.web') / 'static' / 'app.js').is_file(); "
        "assert (r.files('bot') / 'locales' / 'de' / 'LC_MESSAGES' / 'genbot.mo').is_file(); "
        "import genbot.cli, genbot.ops, bot.router, storage.postgres; print('ok')"
    )
    imported = subprocess.run(
        [venv / "bin" / "python", "-c", check],
        capture_output=True,
        text=True,
        timeout=60,
        cwd=tmp_path,
    )
    assert imported.stdout.strip() == "ok", imported.stderr
