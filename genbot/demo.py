"""``genbot demo``: the simulator and the web playground in one process, nothing to configure
(``--data-dir`` keeps its data across restarts)."""

from __future__ import annotations

import asyncio
import random
import secrets
import socket
import tempfile
from pathlib import Path

from pydantic import SecretStr

from adapters.discord.settings import DiscordSettings
from adapters.slack.settings import SlackSettings
from bot.kernel import ApiSettings, StorageSettings, WebhookSettings
from genbot.demo_folders import PREFIX, claim, remove_leftovers
from genbot.runtime import running
from genbot.settings import Settings
from genbot.signals import StopSignals
from simulator.diffusion import DEFAULT_MODEL
from simulator.server import serve
from simulator.state import SimulatorConfig

DEMO_TIME_SCALE = 0.15
"""Simulated task durations are multiplied by this: a turbo grid takes about a second."""
FIRST_PICKED_PORT = 20000
PORT_TRIES = 50
EPHEMERAL_PORTS = Path("/proc/sys/net/ipv4/ip_local_port_range")
DEFAULT_FIRST_EPHEMERAL_PORT = 32768


def free_port(host: str = "127.0.0.1") -> int:
    """A TCP port on ``host`` that was free a moment ago, picked below the range the system
    gives outgoing connections (so none of them can take it before it is listened on); any
    free port when that range leaves no room below it."""
    first_ephemeral = _first_ephemeral_port()
    below = range(FIRST_PICKED_PORT, first_ephemeral)
    for port in random.sample(below, k=min(PORT_TRIES, len(below))):
        with socket.socket() as probe:
            try:
                probe.bind((host, port))
            except OSError:
                continue
            return port
    with socket.socket() as probe:
        probe.bind((host, 0))
        return int(probe.getsockname()[1])


def _first_ephemeral_port() -> int:
    try:
        return int(EPHEMERAL_PORTS.read_text().split()[0])
    except (OSError, ValueError, IndexError):
        return DEFAULT_FIRST_EPHEMERAL_PORT


def demo_settings(settings: Settings, simulator_url: str, api_key: str, data_dir: Path) -> Settings:
    """``settings`` pointed at the simulator, with the database in ``data_dir``, the playground
    on, webhooks on loopback, and no Discord or Slack."""
    webhook_port = free_port()
    return settings.model_copy(
        update={
            "api": ApiSettings(
                base_url=simulator_url, key=SecretStr(api_key), diffusion_models=[DEFAULT_MODEL]
            ),
            "storage": StorageSettings(path=data_dir / "genbot.db"),
            "web": settings.web.model_copy(update={"enabled": True}),
            "webhook": WebhookSettings(
                public_url=f"http://127.0.0.1:{webhook_port}",
                port=webhook_port,
                allow_insecure_loopback=True,
            ),
            "discord": DiscordSettings(),
            "slack": SlackSettings(),
        }
    )


async def run_demo(
    settings: Settings,
    stop: StopSignals,
    time_scale: float = DEMO_TIME_SCALE,
    data_dir: Path | None = None,
) -> None:
    """Serve the demo until ``stop`` says so, then stop everything (a stop during startup
    raises :class:`genbot.signals.StopRequested` after the same cleanup). Its data (database,
    images) is kept in ``data_dir`` across restarts, and the playground's identities with it;
    without one, in a fresh temporary folder deleted at the stop, and the folders earlier demos
    left behind there are deleted first (:mod:`genbot.demo_folders`). Its simulator is seeded
    afresh at every start, so a restart on kept data never hands out a task id the stored jobs
    already hold."""
    if data_dir is not None:
        await asyncio.to_thread(data_dir.mkdir, mode=0o700, parents=True, exist_ok=True)
        await _serve_demo(settings, stop, time_scale, data_dir, kept=True)
        return
    temp = Path(tempfile.gettempdir())
    removed = remove_leftovers(temp)
    if removed:
        print(f"genbot demo: deleted {len(removed)} data folder(s) of demos that ended", flush=True)
    with tempfile.TemporaryDirectory(prefix=PREFIX, dir=temp) as fresh:
        claim(Path(fresh))
        await _serve_demo(settings, stop, time_scale, Path(fresh), kept=False)


async def _serve_demo(
    settings: Settings, stop: StopSignals, time_scale: float, data_dir: Path, *, kept: bool
) -> None:
    config = SimulatorConfig(
        time_scale=time_scale, insecure_webhooks=True, seed=secrets.randbelow(2**31)
    )
    async with serve(config) as sim:
        wired = demo_settings(settings, sim.base_url, config.api_key, data_dir)
        async with running(wired, stop, demo=True) as runtime:
            data = f"data in {data_dir}" + (" (kept)" if kept else "")
            print(
                f"genbot demo: open {runtime.web_url} in your browser (Ctrl-C stops it)\n"
                f"  admin (open it in the window that should be one): {runtime.web_admin_url}\n"
                f"  provider simulator at {sim.base_url}, {data}\n"
                "  try: /imagine a lighthouse at dusk --ar 16:9 --turbo, then press U1",
                flush=True,
            )
            await stop.wait()
