"""A serving command built on :func:`genbot.cli.serve_command`, for tests of signal handling:

    python -m tests.genbot.signal_child serve|slow-teardown|fatal

It prints ``serving`` once it serves and ``tearing down`` when its teardown starts. In
``slow-teardown`` the teardown lasts until a signal arrives while stopping (at most 10 s) and
prints how many were ignored; ``fatal`` stops itself as a dead Discord connection would.
"""

from __future__ import annotations

import asyncio
import logging

import click

from genbot.cli import serve_command
from genbot.signals import StopSignals

FATAL_REASON = "the Discord connection ended: the gateway closed the connection (4014)"


async def work(stop: StopSignals, mode: str) -> None:
    print("serving", flush=True)
    if mode == "fatal":
        stop.fail(FATAL_REASON)
    await stop.wait()
    print("tearing down", flush=True)
    if mode == "slow-teardown":
        async with asyncio.timeout(10):
            while not stop.ignored:  # noqa: ASYNC110 - signal handlers only count
                await asyncio.sleep(0.01)
        print(f"ignored {stop.ignored} signal(s)", flush=True)


@click.command()
@click.argument("mode", type=click.Choice(["serve", "slow-teardown", "fatal"]))
def main(mode: str) -> None:
    logging.basicConfig(level=logging.INFO, format="%(levelname)s %(name)s: %(message)s")
    serve_command(lambda stop: work(stop, mode), stopped_line="stopped")


if __name__ == "__main__":
    main()
