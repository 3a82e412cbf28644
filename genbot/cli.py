"""The ``genbot`` command line: the composition root wiring settings, storage, core and adapters."""

from __future__ import annotations

import asyncio
from collections.abc import Coroutine
from typing import Any

import click
from pydantic import ValidationError

from bot.config import Settings, load_settings
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


def _settings(ctx: click.Context) -> Settings:
    try:
        return load_settings(ctx.obj["config_path"])
    except FileNotFoundError as error:
        raise click.ClickException(str(error)) from None
    except ValidationError as error:
        raise click.ClickException(f"invalid configuration:\n{error}") from None


def _run_until_stopped(serving: Coroutine[Any, Any, None]) -> None:
    """Run a serving coroutine; a port or folder genbot cannot use is a one-line error."""
    try:
        asyncio.run(serving)
    except OSError as error:
        raise click.ClickException(error.strerror or str(error)) from None


@main.command()
@click.option("-v", "--verbose", is_flag=True, help="Log debug details.")
@click.pass_context
def run(ctx: click.Context, verbose: bool) -> None:
    """Run every adapter whose credentials are configured, the tracker and webhook receiver."""
    from genbot.logs import configure_logging
    from genbot.runtime import running, wait_for_stop_signal

    settings = _settings(ctx)
    configure_logging(settings, verbose)
    if not (
        settings.discord.token.get_secret_value()
        or settings.slack.bot_token.get_secret_value()
        or settings.web.enabled
    ):
        raise click.ClickException(
            "nothing to run: set [discord] token, [slack] bot_token or [web] enabled "
            "(or try `genbot demo`)"
        )

    async def serve_until_stopped() -> None:
        async with running(settings) as runtime:
            click.echo(f"genbot running: {', '.join(runtime.adapters)} (Ctrl-C stops it)")
            await wait_for_stop_signal()

    _run_until_stopped(serve_until_stopped())
    click.echo("genbot stopped")


@main.command()
@click.option("--port", type=int, default=None, help="Playground port (default [web] port, 8080).")
@click.pass_context
def demo(ctx: click.Context, port: int | None) -> None:
    """Try genbot with no account: the simulator and the web playground in one process."""
    from genbot.demo import run_demo
    from genbot.logs import configure_logging

    settings = _settings(ctx)
    if port is not None:
        settings = settings.model_copy(
            update={"web": settings.web.model_copy(update={"port": port})}
        )
    configure_logging(settings, verbose=False)
    _run_until_stopped(run_demo(settings))


@main.command()
@click.pass_context
def doctor(ctx: click.Context) -> None:
    """Check the configuration and reach each configured service (exit status 0 or 1)."""
    from genbot.doctor import diagnose, report

    settings = _settings(ctx)
    text, healthy = report(asyncio.run(diagnose(settings)))
    click.echo(text)
    ctx.exit(0 if healthy else 1)
