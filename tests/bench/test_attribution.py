"""The callbacks' attribution: how phases and processes add up, which callbacks count as the
same work, the probe, and what grew."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from bench.__main__ import parse
from bench.attribution import MIN_CALLS, PROBE, grown, phase, probe_ratio, same_work


def test_a_phase_is_what_every_process_spent_between_its_moments(tmp_path: Path) -> None:
    """Cut between two writes by each name's share of the way; after the last write, the
    last (a line cut short by a kill is left out)."""
    for pid, scale in ((1, 1), (2, 10)):
        lines = [[t, {"T:a": [t * scale, 0.5 * t * scale], "C:b": [scale, 0.1]}] for t in (1, 2, 3)]
        text = "".join(json.dumps(line) + "\n" for line in lines) + '[4, {"T:a": ['
        (tmp_path / f"attribution-{pid}.jsonl").write_text(text)

    spent = phase(tmp_path, 1.2, 3.5)

    assert spent["T:a"][0] == (3 - 1) + (30 - 12)
    assert spent["T:a"][1] == pytest.approx((1.5 - 0.6) + (15.0 - 6.0))
    assert spent["C:b"][0] == 0
    assert phase(tmp_path, 0.0, 0.5) == {}


def test_the_same_work_is_the_callbacks_that_ran_about_as_often_in_both() -> None:
    """Compared per call, weighted by one process's CPU; the probe is not a callback."""
    n = MIN_CALLS * 20
    one = {
        "T:alike": (n, 1.0),
        "C:alike too": (n, 0.5),
        "T:more often": (n, 2.0),
        "T:rare": (MIN_CALLS - 1, 5.0),
        "T:only here": (n, 1.0),
        "C:untimed": (n, 0.0),
        PROBE: (n, 1.0),
    }
    several = {
        "T:alike": (n + n // 20, 1.5),
        "C:alike too": (n - n // 20, 1.0),
        "T:more often": (n + n // 10, 3.0),
        "T:rare": (MIN_CALLS - 1, 9.0),
        "C:untimed": (n, 0.1),
        PROBE: (n, 2.0),
    }

    alike = same_work(one, several)

    assert alike.names == ("T:alike", "C:alike too")
    assert alike.calls == (2 * n, 2 * n)
    assert alike.one == pytest.approx(1.5)
    per_call = (1.5 / (n + n // 20)) / (1.0 / n), (1.0 / (n - n // 20)) / (0.5 / n)
    assert alike.ratios == pytest.approx(per_call)
    assert alike.ratio == pytest.approx((per_call[0] * 1.0 + per_call[1] * 0.5) / 1.5)


def test_the_probe_is_compared_per_run() -> None:
    assert probe_ratio({PROBE: (100, 0.07)}, {PROBE: (50, 0.05)}) == pytest.approx(0.001 / 0.0007)


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
