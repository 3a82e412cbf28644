"""Helpers shared by the bot.api tests: settings for a loopback simulator, a dead address."""

from __future__ import annotations

import socket
from typing import Any

from bot.api import RetryPolicy
from bot.kernel import ApiSettings
from simulator.state import SimulatorConfig

KEY = "sim-key"
FREE_KEY = "free-key"
FAST_RETRY = RetryPolicy(
    max_attempts=8, max_total_seconds=10.0, base_delay=0.005, max_delay=0.05, failback_seconds=60
)


def settings_for(base_url: str, **overrides: Any) -> ApiSettings:
    """Client settings for a loopback simulator, with short timeouts."""
    values: dict[str, Any] = {
        "base_url": base_url,
        "key": KEY,
        "connect_timeout": 2.0,
        "read_timeout": 5.0,
        "stream_idle_timeout": 2.0,
    }
    values.update(overrides)
    return ApiSettings(**values)


def dead_url() -> str:
    """An http address on 127.0.0.1 where nothing listens (connections are refused)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    return f"http://127.0.0.1:{port}"


def sim_config(**overrides: Any) -> SimulatorConfig:
    values: dict[str, Any] = {"time_scale": 0.0, "seed": 7, "free_api_key": FREE_KEY}
    values.update(overrides)
    return SimulatorConfig(**values)
