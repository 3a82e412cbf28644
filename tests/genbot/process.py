"""``python -m genbot …`` as a child process: read what it prints, signal it, wait for its exit.

The child runs with a clean environment (no ``GENBOT_*`` variables or config file from the
developer's machine, no ``PYTHONUNBUFFERED``: the CLI must flush what it prints itself), its
standard error goes to a log file, and every wait is bounded. A child still running when the block
exits is killed.
"""

from __future__ import annotations

import asyncio
import os
import re
import signal
import sys
from collections.abc import AsyncIterator, Mapping
from contextlib import AbstractAsyncContextManager, asynccontextmanager, suppress
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
CHILD_WAIT = 60.0
"""How long a test waits for a child process to start, print what it must or exit: a starting
Python takes seconds of CPU, and on a loaded 2-core machine running the suite in parallel it gets
a fraction of a core. A wait that runs out fails the test; none is a measurement."""


def clean_env(extra: Mapping[str, str] | None = None, tmp: Path | None = None) -> dict[str, str]:
    """The environment without genbot settings, plus ``extra``; ``TMPDIR`` is ``tmp``."""
    env = {
        key: value
        for key, value in os.environ.items()
        if not key.startswith("GENBOT_") and key not in ("PYTHONUNBUFFERED", "TMPDIR")
    }
    if tmp is not None:
        env["TMPDIR"] = str(tmp)
    env.update(extra or {})
    return env


class GenbotProcess:
    """A running ``python -m genbot`` child."""

    def __init__(self, process: asyncio.subprocess.Process, log: Path) -> None:
        self.process = process
        self.log = log
        self.printed: list[str] = []

    async def line_matching(self, pattern: str, timeout: float = CHILD_WAIT) -> re.Match[str]:
        """Read standard output until a line matches ``pattern``."""
        regex = re.compile(pattern)
        for line in self.printed:
            if found := regex.search(line):
                return found
        assert self.process.stdout is not None
        try:
            async with asyncio.timeout(timeout):
                while raw := await self.process.stdout.readline():
                    self.printed.append(raw.decode().rstrip("\n"))
                    if found := regex.search(self.printed[-1]):
                        return found
        except TimeoutError:
            raise AssertionError(self._failure(f"nothing matched {pattern!r} in time")) from None
        raise AssertionError(self._failure(f"exited before printing {pattern!r}"))

    async def stop(self, signum: signal.Signals, timeout: float = CHILD_WAIT) -> int:
        """Send ``signum`` and return the exit status; the rest of its output is kept."""
        self.process.send_signal(signum)
        return await self.exit_status(timeout)

    async def exit_status(self, timeout: float = CHILD_WAIT) -> int:
        """Wait for the exit (reading the rest of standard output) and return its status."""
        assert self.process.stdout is not None
        try:
            async with asyncio.timeout(timeout):
                rest = await self.process.stdout.read()
                status = await self.process.wait()
        except TimeoutError:
            raise AssertionError(self._failure("did not exit in time")) from None
        self.printed += rest.decode().splitlines()
        return status

    def error_line(self) -> str:
        """The last line on standard error (where click prints ``Error: …``)."""
        lines = self.errors().splitlines()
        return lines[-1] if lines else ""

    def errors(self) -> str:
        """What the child logged on standard error."""
        return self.log.read_text(errors="replace")

    def _failure(self, what: str) -> str:
        output = "\n".join(self.printed)
        return f"genbot {what}.\n--- stdout ---\n{output}\n--- stderr ---\n{self.errors()}"


@asynccontextmanager
async def python_module(
    module: str, *args: str, env: Mapping[str, str], cwd: Path, log: Path
) -> AsyncIterator[GenbotProcess]:
    """Start ``python -m MODULE *args`` in ``cwd``; kill it on exit if it still runs."""
    with log.open("wb") as errors:
        process = await asyncio.create_subprocess_exec(
            sys.executable,
            "-m",
            module,
            *args,
            cwd=cwd,
            env={**env, "PYTHONPATH": str(ROOT)},
            stdin=asyncio.subprocess.DEVNULL,
            stdout=asyncio.subprocess.PIPE,
            stderr=errors,
        )
    child = GenbotProcess(process, log)
    try:
        yield child
    finally:
        if process.returncode is None:
            with suppress(ProcessLookupError):
                process.kill()
            async with asyncio.timeout(10):
                await process.wait()


def genbot(
    *args: str, env: Mapping[str, str], cwd: Path, log: Path
) -> AbstractAsyncContextManager[GenbotProcess]:
    """Start ``python -m genbot *args`` in ``cwd``; kill it on exit if it still runs."""
    return python_module("genbot", *args, env=env, cwd=cwd, log=log)
