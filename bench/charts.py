"""PNG charts of the benchmarks' main figures, drawn beside the tables in ``docs/``.

matplotlib is a bench-only dependency (the ``bench`` extra, which ``make bench`` installs); a
full ``python -m bench`` run draws the charts into :data:`CHART_DIR`, a ``--quick`` run does
not (its toy figures would replace the real ones).
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable, Sequence
from pathlib import Path
from types import ModuleType
from typing import TYPE_CHECKING, Protocol

from bench.report import percentile

if TYPE_CHECKING:
    from matplotlib.axes import Axes
    from matplotlib.figure import Figure

CHART_DIR = Path(__file__).resolve().parents[1] / "docs" / "images" / "benchmarks"
STALENESS_PNG = CHART_DIR / "streaming-staleness.png"
REQUESTS_PNG = CHART_DIR / "tracking-requests-per-cycle.png"
POSTED_PNG = CHART_DIR / "tracking-finished-to-posted.png"
SCALE_PNG = CHART_DIR / "scale-out.png"
JOBS_PER_MULTI_FETCH = 50
STALENESS_BIN_SECONDS = 0.5
DPI = 110


class StreamingCell(Protocol):
    """What the staleness chart reads of one policy's figures for one N
    (:class:`bench.streaming.StreamingCell`)."""

    @property
    def policy(self) -> str: ...
    @property
    def streams(self) -> int: ...
    @property
    def stale_at(self) -> list[float]: ...
    @property
    def stale_seconds(self) -> list[float]: ...


class TrackingRow(Protocol):
    """What the tracking charts read of one variant's figures
    (:class:`bench.tracking.TrackingRow`)."""

    @property
    def variant(self) -> str: ...
    @property
    def jobs(self) -> int: ...
    @property
    def status_requests(self) -> int: ...
    @property
    def cycles(self) -> float: ...
    @property
    def latency(self) -> list[float]: ...


class ScaleResult(Protocol):
    """What the scale-out chart reads of one cluster size's figures
    (:class:`bench.scale.ScaleResult`)."""

    @property
    def processes(self) -> int: ...
    @property
    def jobs(self) -> int: ...
    @property
    def calls_per_cycle(self) -> float: ...
    @property
    def finished_to_posted(self) -> list[float]: ...
    @property
    def burst_per_second(self) -> float: ...
    @property
    def takeover_seconds(self) -> float | None: ...


def _pyplot() -> ModuleType:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def binned_staleness(
    cell: StreamingCell, width: float = STALENESS_BIN_SECONDS
) -> tuple[list[float], list[float], list[float]]:
    """Bin starts, mean and p95 stale seconds per bin of time since each answer's first
    token."""
    bins: dict[int, list[float]] = defaultdict(list)
    for at, seconds in zip(cell.stale_at, cell.stale_seconds, strict=True):
        bins[int(at // width)].append(seconds)
    starts = sorted(bins)
    return (
        [index * width for index in starts],
        [sum(bins[index]) / len(bins[index]) for index in starts],
        [percentile(bins[index], 0.95) for index in starts],
    )


def streaming_staleness(cells: Sequence[StreamingCell], path: Path) -> Path:
    """One panel per N: mean (solid) and p95 (dashed) staleness over time, one colour per
    policy."""
    plt = _pyplot()
    counts = sorted({cell.streams for cell in cells})
    figure, axes = plt.subplots(1, len(counts), figsize=(5 * len(counts), 4), squeeze=False)
    for axis, count in zip(axes[0], counts, strict=True):
        for colour, cell in enumerate(c for c in cells if c.streams == count):
            starts, means, p95 = binned_staleness(cell)
            line = f"C{colour}"
            axis.plot(starts, means, color=line, label=f"{cell.policy} mean")
            axis.plot(starts, p95, color=line, linestyle="--", label=f"{cell.policy} p95")
        axis.set_title(f"N = {count} concurrent answers")
        axis.set_xlabel("seconds since the answer's first token")
        axis.set_ylabel("stale seconds (oldest unshown text)")
        axis.grid(alpha=0.3)
    axes[0][0].legend(fontsize="small")
    figure.suptitle("Streaming: staleness over time per policy")
    return _save(figure, path)


def tracking_requests(rows: Sequence[TrackingRow], path: Path) -> Path:
    """Status requests per poll cycle for each variant (log scale), labelled with the value."""
    plt = _pyplot()
    figure, axis = plt.subplots(figsize=(6, 4))
    names = [row.variant for row in rows]
    per_cycle = [row.status_requests / row.cycles if row.cycles else 0.0 for row in rows]
    bars = axis.bar(names, [max(value, 0.01) for value in per_cycle], color="C0")
    for bar, value in zip(bars, per_cycle, strict=True):
        axis.annotate(
            f"{value:.2f}",
            (bar.get_x() + bar.get_width() / 2, bar.get_height()),
            ha="center",
            va="bottom",
        )
    axis.set_yscale("log")
    axis.set_ylabel("status requests per poll cycle")
    axis.set_title(f"Tracking {rows[0].jobs if rows else 0} concurrent jobs: requests per cycle")
    axis.grid(axis="y", alpha=0.3)
    return _save(figure, path)


def finished_to_posted(rows: Sequence[TrackingRow], path: Path) -> Path:
    """The cumulative distribution of finished→posted seconds per variant."""
    plt = _pyplot()
    figure, axis = plt.subplots(figsize=(6, 4))
    for colour, row in enumerate(rows):
        values = sorted(row.latency)
        if not values:
            continue
        shares = [(index + 1) / len(values) for index in range(len(values))]
        axis.step(values, shares, where="post", color=f"C{colour}", label=row.variant)
    axis.set_xlabel("seconds from the provider finishing to the result on the platform")
    axis.set_ylabel("share of jobs")
    axis.set_ylim(0, 1.02)
    axis.set_title("Tracking: finished → posted")
    axis.grid(alpha=0.3)
    axis.legend(fontsize="small")
    return _save(figure, path)


def scale_out(results: Sequence[ScaleResult], path: Path) -> Path:
    """Three panels per cluster size: multi_fetch calls per cycle (against one call per 50
    jobs), the finished→posted distribution, and burst posts per second (with the takeover
    time after ``kill -9`` where measured)."""
    plt = _pyplot()
    figure, (calls, posted, burst) = plt.subplots(1, 3, figsize=(15, 4))
    names = [f"{r.processes} process{'es' if r.processes > 1 else ''}" for r in results]
    jobs = results[0].jobs if results else 0
    _labelled_bars(calls, names, [r.calls_per_cycle for r in results])
    calls.axhline(-(-jobs // JOBS_PER_MULTI_FETCH), color="C3", linestyle="--", label="⌈jobs / 50⌉")
    calls.set_ylabel("multi_fetch calls per 1 s cycle (cluster)")
    calls.set_title("Tracking cost")
    calls.legend(fontsize="small")
    for colour, (name, result) in enumerate(zip(names, results, strict=True)):
        values = sorted(result.finished_to_posted)
        if values:
            shares = [(index + 1) / len(values) for index in range(len(values))]
            posted.step(values, shares, where="post", color=f"C{colour}", label=name)
    posted.set_xlabel("seconds from finished to posted")
    posted.set_ylabel("share of jobs")
    posted.set_ylim(0, 1.02)
    posted.set_title("Finished → posted")
    posted.grid(alpha=0.3)
    posted.legend(fontsize="small")
    _labelled_bars(burst, names, [r.burst_per_second for r in results])
    burst.set_ylabel("results posted per second")
    takeovers = [
        f"{name}: takeover after kill -9 {r.takeover_seconds:.1f} s"
        for name, r in zip(names, results, strict=True)
        if r.takeover_seconds is not None
    ]
    burst.set_title("Burst delivery" + ("\n" + "; ".join(takeovers) if takeovers else ""))
    figure.suptitle(f"Scale-out: {jobs:,} image jobs in flight on PostgreSQL")
    return _save(figure, path)


def _labelled_bars(axis: Axes, names: list[str], values: list[float]) -> None:
    bars = axis.bar(names, values, color="C0")
    for bar, value in zip(bars, values, strict=True):
        axis.annotate(
            f"{value:.2f}",
            (bar.get_x() + bar.get_width() / 2, bar.get_height()),
            ha="center",
            va="bottom",
        )
    axis.grid(axis="y", alpha=0.3)


def _save(figure: Figure, path: Path) -> Path:
    plt = _pyplot()
    path.parent.mkdir(parents=True, exist_ok=True)
    figure.tight_layout()
    figure.savefig(path, dpi=DPI)
    plt.close(figure)
    return path


def available() -> bool:
    """Whether matplotlib is installed (``pip install -e '.[bench]'``)."""
    try:
        import matplotlib  # noqa: F401
    except ImportError:
        return False
    return True


def draw(chart: Callable[[], Path]) -> str:
    """Draw ``chart`` when matplotlib is installed; the table note saying where it went."""
    if not available():
        return "Chart not drawn: matplotlib is missing (`make bench` installs the bench extra)."
    path = chart()
    return f"Chart: docs/{path.relative_to(CHART_DIR.parents[1]).as_posix()}"
