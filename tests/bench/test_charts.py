"""The benchmark charts are drawn from the benchmarks' own result records: real PNG files of a
sensible size, one panel per N for streaming."""

from __future__ import annotations

from pathlib import Path

from PIL import Image

from bench import charts
from bench.scale import BurstFigures, ScaleResult
from bench.streaming import StreamingCell
from bench.tracking import TrackingRow


def cell(policy: str, streams: int, slope: float) -> StreamingCell:
    at = [tick * 0.25 for tick in range(40)]
    return StreamingCell(
        policy, streams, stale_at=at, stale_seconds=[slope * moment for moment in at]
    )


def png_size(path: Path) -> tuple[int, int]:
    assert path.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    with Image.open(path) as image:
        return image.size


def test_staleness_bins_follow_the_samples() -> None:
    starts, means, p95 = charts.binned_staleness(cell("genbot", 1, 1.0), width=1.0)
    assert starts[:3] == [0.0, 1.0, 2.0]
    assert means[0] == (0 + 0.25 + 0.5 + 0.75) / 4
    assert all(high >= mean for high, mean in zip(p95, means, strict=True))


def test_streaming_chart_has_a_panel_per_n(tmp_path: Path) -> None:
    cells = [cell(p, n, s) for n in (1, 5) for p, s in (("genbot", 0.1), ("every-delta", 0.5))]
    path = charts.streaming_staleness(cells, tmp_path / "staleness.png")
    width, height = png_size(path)
    assert width >= 2 * 400 and height >= 300


def test_tracking_charts_are_drawn(tmp_path: Path) -> None:
    rows = [
        TrackingRow("genbot (batched)", 100, status_requests=20, cycles=10, latency=[0.5, 1.0]),
        TrackingRow("per-task fetch", 100, status_requests=900, cycles=9, latency=[1.0, 2.0]),
    ]
    assert png_size(charts.tracking_requests(rows, tmp_path / "requests.png"))[0] >= 400
    assert png_size(charts.finished_to_posted(rows, tmp_path / "posted.png"))[0] >= 400


def test_the_scale_out_chart_is_drawn_for_one_and_three_processes(tmp_path: Path) -> None:
    one = ScaleResult(1, 300, calls_per_cycle=6.0, finished_to_posted=[1.0, 2.0, 4.0])
    three = ScaleResult(3, 300, calls_per_cycle=5.8, finished_to_posted=[1.5, 2.5])
    one.burst, three.burst = BurstFigures(70.0, 0.5, 72.0), BurstFigures(56.0, 0.6, 58.0)
    three.takeover_seconds = 10.8
    width, height = png_size(charts.scale_out([one, three], tmp_path / "scale.png"))
    assert width >= 3 * 400 and height >= 300


def test_draw_names_where_the_chart_went() -> None:
    note = charts.draw(lambda: charts.CHART_DIR / "x.png")
    assert note == "Chart: docs/images/benchmarks/x.png"
