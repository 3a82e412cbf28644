"""compose.yaml, validated by ``docker compose config`` (no daemon needed): genbot on
PostgreSQL, the simulator, demo and Prometheus profiles, and Prometheus scraping genbot."""

from __future__ import annotations

import json
import os
import shutil
import subprocess

import pytest
import yaml

from tests.container.dockerfile import ROOT

REQUIRED = {"GENBOT_POSTGRES_PASSWORD": "pw-for-the-test", "GENBOT_API__BASE_URL": "http://sim"}


def compose_command() -> list[str]:
    """``docker compose`` when the plugin is there, else ``docker-compose`` (the Makefile
    installs one of them)."""
    docker = shutil.which("docker")
    if docker:
        plugin = subprocess.run([docker, "compose", "version"], capture_output=True, check=False)
        if plugin.returncode == 0:
            return [docker, "compose"]
    standalone = shutil.which("docker-compose")
    assert standalone, "neither `docker compose` nor docker-compose: run `make test`"
    return [standalone]


def compose(*args: str, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    clean = {k: v for k, v in os.environ.items() if not k.startswith(("GENBOT_", "COMPOSE_"))}
    return subprocess.run(
        [*compose_command(), "-f", str(ROOT / "compose.yaml"), *args],
        capture_output=True,
        text=True,
        env={**clean, **env},
        cwd=ROOT,
        check=False,
        timeout=60,
    )


@pytest.fixture(scope="module")
def resolved() -> dict[str, object]:
    done = compose(
        "--profile",
        "simulator",
        "--profile",
        "demo",
        "--profile",
        "prometheus",
        "config",
        env=REQUIRED,
    )
    assert done.returncode == 0, done.stderr
    parsed = yaml.safe_load(done.stdout)
    assert isinstance(parsed, dict)
    return parsed


def test_compose_config_accepts_the_file(resolved: dict[str, object]) -> None:
    services = resolved["services"]
    assert isinstance(services, dict)
    assert set(services) == {"genbot", "postgres", "simulator", "demo", "prometheus"}


def test_genbot_runs_on_postgres_with_room_to_drain(resolved: dict[str, object]) -> None:
    genbot = resolved["services"]["genbot"]  # type: ignore[index]
    environment = genbot["environment"]
    assert environment["GENBOT_STORAGE__URL"] == (
        "postgresql://genbot:pw-for-the-test@postgres:5432/genbot"
    )
    assert genbot["depends_on"]["postgres"]["condition"] == "service_healthy"
    drain = float(environment["GENBOT_RUNTIME__DRAIN_SECONDS"])
    grace = genbot["stop_grace_period"]
    assert grace.endswith("s") and float(grace[:-1]) > drain
    assert any("9108" in str(port) for port in json.loads(json.dumps(genbot["ports"])))


def test_a_missing_password_is_named_not_guessed() -> None:
    done = compose("config", env={"GENBOT_API__BASE_URL": "http://sim"})
    assert done.returncode != 0
    assert "GENBOT_POSTGRES_PASSWORD" in done.stderr


def test_prometheus_scrapes_the_ops_listener() -> None:
    config = yaml.safe_load((ROOT / "config" / "prometheus.yml").read_text())
    [job] = config["scrape_configs"]
    assert job["metrics_path"] == "/metrics"
    assert job["static_configs"][0]["targets"] == ["genbot:9108"]
