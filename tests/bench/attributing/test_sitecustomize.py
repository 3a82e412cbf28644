"""The site a benchmark gives the processes it starts: what a process started with
:func:`bench.attribution.environment` writes when it exits, and nothing without it."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

from bench import attribution

REPOSITORY = Path(__file__).parents[3]
PROGRAM = textwrap.dedent(
    """
    import asyncio, os, time
    from storage.queries.grouped import Grouped

    def ticked():
        sum(range(10_000))

    def sleeping():
        time.sleep(0.05)

    async def busy():
        for _ in range(30):
            sum(range(10_000))
            await asyncio.sleep(0)

    async def save_together(batch):
        return list(batch)

    async def main():
        loop = asyncio.get_running_loop()
        for _ in range(5):
            loop.call_soon(ticked)
        loop.call_soon(sleeping)
        grouped = Grouped(save_together)
        await asyncio.gather(busy(), *(grouped(n) for n in range(3)))

    asyncio.run(main())
    if os.environ.get("BENCH_ATTRIBUTION"):
        import sitecustomize
        deadline = time.monotonic() + 30
        while sitecustomize.PROBE not in sitecustomize._totals and time.monotonic() < deadline:
            time.sleep(0.01)
    """
)


def run_program(tmp_path: Path, env: dict[str, str]) -> None:
    kept = {k: v for k, v in os.environ.items() if k not in ("BENCH_ATTRIBUTION", "PYTHONPATH")}
    subprocess.run(
        [sys.executable, "-c", PROGRAM], env=kept | env, check=True, timeout=60, cwd=tmp_path
    )


def test_a_process_started_with_the_environment_writes_what_each_callback_spent(
    tmp_path: Path,
) -> None:
    """Each callback by name, before it ran (a group commit's last step too), its thread's CPU
    (not the time it slept), and the probe; the totals written as the process exits."""
    folder = tmp_path / "recorded"
    folder.mkdir()
    env = attribution.environment(folder)
    env["PYTHONPATH"] += os.pathsep + str(REPOSITORY)

    run_program(tmp_path, env)

    [written] = list(folder.glob("attribution-*.jsonl"))
    _, totals = attribution.read(written)[-1]
    assert totals["T:busy"][0] >= 30, sorted(totals)
    assert totals["C:ticked"][0] == 5
    assert totals["C:ticked"][1] > 0
    assert totals["C:sleeping"][0] == 1
    assert totals["C:sleeping"][1] < 0.01, "thread CPU, not the 0.05 s it slept"
    assert totals["T:Grouped._drain/save_together"][0] >= 1, sorted(totals)
    assert "T:Grouped._drain" not in totals, "a step named after it ran loses its batch"
    assert totals[attribution.PROBE][0] >= 1
    assert totals[attribution.PROBE][1] > 0


def test_a_process_started_without_it_writes_nothing(tmp_path: Path) -> None:
    site_only = {"PYTHONPATH": os.pathsep.join([str(attribution.SITE), str(REPOSITORY)])}
    run_program(tmp_path, site_only)
    assert list(tmp_path.rglob("attribution-*")) == []
