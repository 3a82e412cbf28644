"""The profile summary: shares of samples per function, from py-spy's collapsed stacks."""

from __future__ import annotations

from pathlib import Path

import pytest

from bench.profiler import frame_name, project_frames, top_frames

RAW = """\
main (genbot/__main__.py:3);poll_round (/work/x/bot/jobs/tracker.py:10);fetch (bot/api/tasks.py:5) 6
main (genbot/__main__.py:3);poll_round (/work/x/bot/jobs/tracker.py:12) 2
main (genbot/__main__.py:3);deliver (bot/features/jobs/messages.py:7);fetch (bot/api/tasks.py:9) 2
"""


def test_top_frames_share_samples_by_function_on_the_stack_and_on_top(tmp_path: Path) -> None:
    path = tmp_path / "raw.txt"
    path.write_text(RAW)

    samples, shares = top_frames(path, count=3)

    assert samples == 10
    found = {share.name: (share.total, share.own) for share in shares}
    assert found == {
        "main (genbot/__main__.py)": (1.0, 0.0),
        "poll_round (x/bot/jobs/tracker.py)": (0.8, 0.2),
        "fetch (bot/api/tasks.py)": (0.8, 0.8),
    }
    assert frame_name("<module> (x.py:1)") == "<module> (x.py)"
    assert frame_name("no location") == "no location"
    assert top_frames(path, count=1)[1][0].total == pytest.approx(1.0)


def test_project_frames_leave_out_libraries_and_the_entry_point(tmp_path: Path) -> None:
    path = tmp_path / "raw.txt"
    path.write_text(RAW.replace("genbot/__main__.py", "asyncio/base_events.py"))

    samples, shares = project_frames(path, count=5)

    assert samples == 10
    assert [share.name for share in shares] == [
        "fetch (bot/api/tasks.py)",
        "deliver (bot/features/jobs/messages.py)",
    ]
