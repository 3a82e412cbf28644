"""The ``genbot`` command line: the composition root wiring settings, storage, core and adapters."""

from __future__ import annotations

import asyncio

import click

from simulator.server import run_forever
from simulator.state import SimulatorConfig


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.option(
    "--config",
    "config_path",
    type=click.Path(dir_okay=False),
    default=None,
    help="TOML settings file (else $GENBOT_CONFIG, else ./genbot.toml).",
)
@click.pass_context
def main(ctx: click.Context, config_path: str | None) -> None:
    """genbot: generative AI in Discord, Slack and the browser."""
    ctx.obj = {"config_path": config_path}


@main.command()
@click.option("--host", default="127.0.0.1", show_default=True)
@click.option("--port", default=8787, show_default=True, type=int)
@click.option("--api-key", default="sim-key", show_default=True, help="A Developer-plan key.")
@click.option("--free-api-key", default=None, help="Also accept this free-plan key.")
@click.option(
    "--credits",
    default=10000,
    show_default=True,
    type=int,
    help="Starting credit balance of each key.",
)
@click.option(
    "--time-scale",
    default=1.0,
    show_default=True,
    type=float,
    help="Multiplies every simulated duration; 0 finishes tasks at their first fetch.",
)
@click.option(
    "--insecure-webhooks", is_flag=True, help="Also admit http webhook addresses on loopback."
)
@click.option(
    "--fault-rate",
    default=0.0,
    show_default=True,
    type=float,
    help="Fraction of requests that fail like real servers fail.",
)
@click.option("--seed", default=0, show_default=True, type=int, help="Makes runs reproducible.")
def sim(
    host: str,
    port: int,
    api_key: str,
    free_api_key: str | None,
    credits: int,
    time_scale: float,
    insecure_webhooks: bool,
    fault_rate: float,
    seed: int,
) -> None:
    """Serve the provider simulator (chat, image tasks, diffusion)."""
    config = SimulatorConfig(
        api_key=api_key,
        free_api_key=free_api_key,
        credits=credits,
        time_scale=time_scale,
        insecure_webhooks=insecure_webhooks,
        fault_rate=fault_rate,
        seed=seed,
    )
    asyncio.run(run_forever(config, host, port))
