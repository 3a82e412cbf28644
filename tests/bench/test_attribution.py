"""The callbacks' attribution: what a process started with its environment writes, how phases
and processes add up, and which callbacks count as the same work."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from bench import attribution
from bench.__main__ import parse
from bench.attribution import MIN_CALLS, grown, phase, same_work

REPOSITORY = Path(__file__).parents[2]
PROGRAM = textwrap.dedent(
    """
    import asyncio, time
    from storage.queries.grouped import Grouped

    def ticked():
        sum(range(10_000))

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
        grouped = Grouped(save_together)
        await asyncio.gather(busy(), *(grouped(n) for n in range(3)))
        time.sleep(3 * EVERY)

    EVERY = 0.25
    asyncio.run(main())
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
    assert totals["T:Grouped._drain/save_together"][0] >= 1, sorted(totals)


def test_a_process_started_without_it_writes_nothing(tmp_path: Path) -> None:
    site_only = {"PYTHONPATH": os.pathsep.join([str(attribution.SITE), str(REPOSITORY)])}
    run_program(tmp_path, site_only)
    assert list(tmp_path.rglob("attribution-*")) == []


def test_a_phase_is_what_every_process_spent_between_its_moments(tmp_path: Path) -> None:
    for pid, scale in ((1, 1), (2, 10)):
        lines = [[t, {"T:a": [t * scale, 0.5 * t * scale], "C:b": [scale, 0.1]}] for t in (1, 2, 3)]
        text = "".join(json.dumps(line) + "\n" for line in lines) + '[4, {"T:a": ['
        (tmp_path / f"attribution-{pid}.jsonl").write_text(text)

    spent = phase(tmp_path, 1.5, 3.5)

    assert spent["T:a"][0] == 2 + 20
    assert spent["T:a"][1] == pytest.approx(1.0 + 10.0)
    assert spent["C:b"][0] == 0


def test_the_same_work_is_the_callbacks_that_ran_about_as_often_in_both() -> None:
    n = MIN_CALLS * 10
    one = {
        "T:alike": (n, 1.0),
        "C:alike too": (n, 0.5),
        "T:more often": (n, 2.0),
        "T:rare": (MIN_CALLS - 1, 5.0),
        "T:only here": (n, 1.0),
    }
    several = {
        "T:alike": (n + n // 20, 1.5),
        "C:alike too": (n - n // 20, 1.0),
        "T:more often": (n + n // 10, 3.0),
        "T:rare": (MIN_CALLS - 1, 9.0),
    }

    alike = same_work(one, several)

    assert alike.names == ("T:alike", "C:alike too")
    assert alike.calls == (2 * n, 2 * n)
    assert alike.ratio == pytest.approx(2.5 / 1.5)


def test_the_command_line_attributes_only_the_benchmarks_that_can(
    capsys: pytest.CaptureFixture[str],
) -> None:
    with pytest.raises(SystemExit):
        parse(["storage", "--attribute", "out"])
    assert "--attribute works with scale only" in capsys.readouterr().err
    assert parse(["scale", "--attribute", "out"]).attribute == Path("out")


def test_what_grew_most_is_told_first_and_what_did_not_grow_is_left_out() -> None:
    one = {"T:asks": (100, 1.0), "T:saves": (50, 2.0), "T:parse": (10, 3.0)}
    several = {
        "T:asks": (500, 4.0),
        "T:saves": (80, 2.5),
        "T:parse": (10, 2.0),
        "T:notices": (9, 0.5),
    }

    told = grown(one, several)

    assert told == [
        "T:asks +3.00 (1.00 → 4.00 s, 100 → 500)",
        "T:notices +0.50 (0.00 → 0.50 s, 0 → 9)",
        "T:saves +0.50 (2.00 → 2.50 s, 50 → 80)",
    ]
