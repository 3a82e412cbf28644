"""A relative ``[storage] path`` in a configuration file is relative to that file's folder, so
starting genbot from another folder opens the same database."""

from __future__ import annotations

import signal
from pathlib import Path

import pytest

from bot.kernel import StorageSettings
from genbot.cli import storage_beside_config
from genbot.demo import free_port
from genbot.settings import Settings
from tests.genbot.process import clean_env, genbot
from tests.genbot.test_cli_errors import invoke


@pytest.mark.parametrize(
    ("configured", "config_path", "environ", "expected"),
    [
        ("data/genbot.db", "/srv/genbot/genbot.toml", {}, "/srv/genbot/data/genbot.db"),
        ("genbot.db", "/srv/genbot/genbot.toml", {}, "/srv/genbot/genbot.db"),
        ("/var/lib/genbot.db", "/srv/genbot/genbot.toml", {}, "/var/lib/genbot.db"),
        ("data/genbot.db", None, {}, "data/genbot.db"),
        ("~/genbot.db", "/srv/genbot/genbot.toml", {}, str(Path.home() / "genbot.db")),
        ("env.db", "/srv/genbot/genbot.toml", {"GENBOT_STORAGE__PATH": "env.db"}, "env.db"),
        ("env.db", "/srv/genbot/genbot.toml", {"genbot_storage__path": "env.db"}, "env.db"),
    ],
)
def test_storage_path_is_resolved_against_the_configuration_file(
    configured: str, config_path: str | None, environ: dict[str, str], expected: str
) -> None:
    settings = Settings(storage=StorageSettings(path=Path(configured)))
    resolved = storage_beside_config(settings, Path(config_path) if config_path else None, environ)
    assert resolved.storage.path == Path(expected)


def test_doctor_started_elsewhere_checks_the_database_beside_the_file(tmp_path: Path) -> None:
    folder = tmp_path / "conf"
    (folder / "data").mkdir(parents=True)
    (folder / "genbot.toml").write_text('[storage]\npath = "data/genbot.db"\n', encoding="utf-8")
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    result = invoke("--config", "../conf/genbot.toml", "doctor", cwd=elsewhere)
    assert f"✔ storage   database at {folder / 'data' / 'genbot.db'}" in result.output.splitlines()


async def test_run_started_elsewhere_opens_the_database_beside_the_file(tmp_path: Path) -> None:
    folder = tmp_path / "conf"
    folder.mkdir()
    config = folder / "genbot.toml"
    config.write_text(
        f'[storage]\npath = "data/genbot.db"\n\n[web]\nenabled = true\nport = {free_port()}\n',
        encoding="utf-8",
    )
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    async with genbot(
        "--config", str(config), "run", env=clean_env(), cwd=elsewhere, log=tmp_path / "run.log"
    ) as run:
        await run.line_matching("^genbot running: web ")
        assert await run.stop(signal.SIGTERM) == 0, run.errors()

    assert (folder / "data" / "genbot.db").is_file()
    assert list(elsewhere.iterdir()) == []
