"""Sampling profiles of running processes with py-spy (no change to their code), and their top
frames as text.

:func:`record` starts ``py-spy record`` on a pid in raw (collapsed stack) format, without
pausing the process (``--nonblocking``); stop it with :meth:`Recording.stop`. :func:`top_frames`
reads such a file: per function, the share of samples it was on the stack (total) and on top
(self).
"""

from __future__ import annotations

import argparse
import asyncio
import re
import shutil
import signal
import sys
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

RATE = 100
"""Samples per second."""
_LINE = re.compile(r"^(?P<stack>.*) (?P<count>\d+)$")
_FRAME = re.compile(r"^(?P<function>.*) \((?P<file>[^:()]*)(?::\d+)?\)$")


def py_spy() -> str:
    """The py-spy of this environment (the ``bench`` extra installs it)."""
    found = shutil.which("py-spy", path=str(Path(sys.executable).parent))
    if found is None:
        raise RuntimeError("py-spy is not installed: make .venv/.installed (the bench extra)")
    return found


@dataclass
class Recording:
    """One py-spy run writing ``path``."""

    path: Path
    process: asyncio.subprocess.Process

    async def stop(self) -> Path:
        """Stop sampling (py-spy writes its file on SIGINT) and return the file."""
        if self.process.returncode is None:
            self.process.send_signal(signal.SIGINT)
        async with asyncio.timeout(60):
            await self.process.wait()
        return self.path


async def record(pid: int, path: Path) -> Recording:
    """Start sampling ``pid`` into ``path`` (collapsed stacks, one line per distinct stack)."""
    process = await asyncio.create_subprocess_exec(
        py_spy(), "record", "--pid", str(pid), "--rate", str(RATE), "--nonblocking",
        "--format", "raw", "--output", str(path),
        stdout=asyncio.subprocess.DEVNULL,
        stderr=asyncio.subprocess.DEVNULL,
    )  # fmt: skip
    return Recording(path, process)


def frame_name(frame: str) -> str:
    """``function (file)`` without the line number, the file relative to the project or the
    installed package it is in."""
    match = _FRAME.match(frame)
    if match is None:
        return frame
    file = match["file"]
    for marker in ("site-packages/", "/python3.11/", "/work/"):
        if marker in file:
            file = file.split(marker, 1)[1]
    return f"{match['function']} ({file})"


@dataclass(frozen=True)
class FrameShare:
    """One function's share of the samples."""

    name: str
    total: float
    own: float


def top_frames(path: Path, count: int = 15) -> tuple[int, list[FrameShare]]:
    """The number of samples and the ``count`` functions most often on the stack (each
    counted once per sample), with the share of samples where each was on top."""
    total: Counter[str] = Counter()
    own: Counter[str] = Counter()
    samples = 0
    for line in path.read_text().splitlines():
        match = _LINE.match(line)
        if match is None:
            continue
        n = int(match["count"])
        frames = [frame_name(f) for f in match["stack"].split(";")]
        frames = [f for f in frames if not f.startswith("process ") and not f.startswith("thread ")]
        samples += n
        for name in set(frames):
            total[name] += n
        if frames:
            own[frames[-1]] += n
    ranked = sorted(total, key=lambda name: (-total[name], name))[:count]
    shares = [FrameShare(name, total[name] / samples, own[name] / samples) for name in ranked]
    return samples, shares


PROJECT = ("bot/", "storage/", "adapters/", "genbot/", "simulator/")
ROOTS = ("genbot/__main__.py", "genbot/cli.py")


def project_frames(path: Path, count: int) -> tuple[int, list[FrameShare]]:
    """:func:`top_frames` of the project's own code, below the process's entry point."""
    samples, shares = top_frames(path, count=10**6)
    own = [
        share
        for share in shares
        if any(f"({folder}" in share.name for folder in PROJECT)
        and not any(root in share.name for root in ROOTS)
    ]
    return samples, own[:count]


def main(argv: list[str] | None = None) -> None:
    """``python -m bench.profiler FILE... [--top N]``: the top project frames of each file."""
    parser = argparse.ArgumentParser(prog="python -m bench.profiler", description=main.__doc__)
    parser.add_argument("files", nargs="+", type=Path)
    parser.add_argument("--top", type=int, default=15)
    args = parser.parse_args(argv)
    for path in args.files:
        samples, shares = project_frames(path, args.top)
        print(f"{path.name}: {samples} samples ({samples / RATE:.0f} s on CPU or runnable)")
        print("| total % | self % | frame |\n|---:|---:|---|")
        for share in shares:
            print(f"| {100 * share.total:.1f} | {100 * share.own:.1f} | `{share.name}` |")
        print()


if __name__ == "__main__":
    main()
