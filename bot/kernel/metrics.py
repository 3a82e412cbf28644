"""What genbot tells its operators about the work: Prometheus series and the log context.

**Series.** Every series is named ``genbot_*`` and every label has a bounded set of values. The
metrics live in ``prometheus_client``'s default registry (so ``/metrics`` also shows the
process and Python collectors). Counters and histograms move where the work happens, through the
small functions below; gauges that describe stored state (jobs by state) are refreshed right
before each scrape by the :data:`Refresher` callables the composition root hands the ops
listener (``genbot/ops.py``). The provider client's series are its own
(:mod:`bot.api.metrics`).

Label values come from genbot's own code (endpoints, task types, surface methods), never from
users; :func:`bot.api.metrics.label` still bounds each one, so a bug cannot explode a series'
cardinality.

Adding a metric: define it here
with the ``genbot_`` prefix and bounded labels, move it where the work happens (or refresh it in
a :data:`Refresher`), add a panel to ``config/grafana-dashboard.json`` (its test checks every
panel's query names an exported metric) and a line to the table in ``docs/operations.md``.

**Log context.** Who and what a log line is about: the platform, user and job ids of the work in
progress. The router's intake binds the platform and user of each event it runs, and the job
machinery binds the job id it works on; the ids follow the work into every task it starts (they
live in :mod:`contextvars`). Formatters read them with :func:`log_fields` (the JSON log format
writes them as fields).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Iterable
from contextvars import ContextVar

from prometheus_client import Counter, Gauge, Histogram

from bot.api.metrics import LATENCY_BUCKETS, label

WAIT_BUCKETS = (0.0, 0.05, 0.1, 0.25, 0.5, 1.0, 2.0, 5.0, 10.0, 30.0)
LAG_BUCKETS = (0.001, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5)

JOBS = Gauge(
    "genbot_jobs",
    "Unfinished jobs in the database by state and platform (refreshed at each scrape).",
    ["state", "platform"],
)
JOBS_CREATED = Counter("genbot_jobs_created", "Jobs created, by task type.", ["task_type"])
JOBS_COMPLETED = Counter(
    "genbot_jobs_completed", "Jobs whose result was posted, by task type.", ["task_type"]
)
JOBS_FAILED = Counter(
    "genbot_jobs_failed",
    "Jobs that ended without a result (failure reported, not started, not postable), by type.",
    ["task_type"],
)
FINISHED_TO_POSTED = Histogram(
    "genbot_job_finished_to_posted_seconds",
    "From the provider finishing a job to its result being posted.",
    ["platform"],
    buckets=LATENCY_BUCKETS,
)
WEBHOOKS = Counter(
    "genbot_webhooks", "Provider webhooks by outcome (accepted or refused).", ["outcome"]
)
PLATFORM_WRITES = Counter(
    "genbot_platform_writes",
    "Calls to a platform that write, by platform and method.",
    ["platform", "method"],
)
PLATFORM_RATE_LIMITED = Counter(
    "genbot_platform_rate_limited",
    "Platform calls refused for rate limiting (429) after the adapter's own retries.",
    ["platform", "method"],
)
EDIT_BUDGET_WAIT = Histogram(
    "genbot_edit_budget_wait_seconds",
    "Time a write waited for the platform's edit budget.",
    ["platform", "priority"],
    buckets=WAIT_BUCKETS,
)
CHAT_STREAMS_ACTIVE = Gauge("genbot_chat_streams_active", "Chat answers being streamed now.")
CHAT_STREAM_STALENESS = Histogram(
    "genbot_chat_stream_staleness_seconds",
    "At each visible update of a streamed answer, how long its oldest newly shown text waited.",
    ["platform"],
    buckets=WAIT_BUCKETS,
)
CHAT_TOKENS = Counter("genbot_chat_tokens", "Chat tokens by direction (in, out).", ["direction"])
EVENTS = Counter(
    "genbot_events",
    "Inbound events by platform, kind and outcome (handled, failed, timed_out, cancelled, "
    "refused while stopping).",
    ["platform", "kind", "outcome"],
)
LEASES = Gauge(
    "genbot_leases",
    "Unfinished jobs this process holds a lease on (set at each heartbeat).",
)
JOBS_TAKEN_OVER = Counter(
    "genbot_jobs_taken_over",
    "Jobs this process took over because no live process held them (a process died or a "
    "previous run left them).",
)
STORAGE_FAILURES = Counter(
    "genbot_storage_failures",
    "Background storage calls that failed, by kind of work (tracker round, lease heartbeat, "
    "result delivery, ...): an outage shows here first.",
    ["kind"],
)
EVENT_LOOP_LAG = Histogram(
    "genbot_event_loop_lag_seconds",
    "How late the event loop ran a timer: a busy or blocked loop shows here first.",
    buckets=LAG_BUCKETS,
)

Refresher = Callable[[], Awaitable[None]]
"""Brings gauges up to date before a scrape (bounded; a failure is logged, not raised)."""


def set_job_counts(counts: Iterable[tuple[str, str, int]]) -> None:
    """Replace :data:`JOBS` with ``(state, platform, count)`` rows (absent pairs drop out)."""
    JOBS.clear()
    for state, platform, count in counts:
        JOBS.labels(label(state), label(platform)).set(count)


def set_leases(count: int) -> None:
    LEASES.set(count)


def jobs_taken_over(count: int) -> None:
    JOBS_TAKEN_OVER.inc(count)


def storage_failed(kind: str) -> None:
    STORAGE_FAILURES.labels(label(kind.replace(" ", "_"))).inc()


def job_created(task_type: str) -> None:
    JOBS_CREATED.labels(label(task_type)).inc()


def job_completed(task_type: str, platform: str, finished_to_posted: float | None) -> None:
    JOBS_COMPLETED.labels(label(task_type)).inc()
    if finished_to_posted is not None:
        FINISHED_TO_POSTED.labels(label(platform)).observe(max(finished_to_posted, 0.0))


def job_failed(task_type: str) -> None:
    JOBS_FAILED.labels(label(task_type)).inc()


def webhook_answered(status: int) -> None:
    WEBHOOKS.labels("accepted" if 200 <= status < 300 else "refused").inc()


def platform_write(platform: str, method: str) -> None:
    PLATFORM_WRITES.labels(label(platform), label(method)).inc()


def platform_rate_limited(platform: str, method: str) -> None:
    PLATFORM_RATE_LIMITED.labels(label(platform), label(method)).inc()


def budget_waited(platform: str, urgent: bool, seconds: float) -> None:
    priority = "urgent" if urgent else "paced"
    EDIT_BUDGET_WAIT.labels(label(platform), priority).observe(max(seconds, 0.0))


def stream_staleness(platform: str, seconds: float) -> None:
    CHAT_STREAM_STALENESS.labels(label(platform)).observe(max(seconds, 0.0))


def chat_tokens(prompt: int, completion: int) -> None:
    CHAT_TOKENS.labels("in").inc(max(prompt, 0))
    CHAT_TOKENS.labels("out").inc(max(completion, 0))


def event_ended(platform: str, kind: str, outcome: str) -> None:
    EVENTS.labels(label(platform), label(kind), label(outcome)).inc()


def loop_lag(seconds: float) -> None:
    EVENT_LOOP_LAG.observe(max(seconds, 0.0))


LOG_FIELDS = ("platform", "user_id", "job_id")
_log_values: dict[str, ContextVar[str | None]] = {
    name: ContextVar(f"genbot_log_{name}", default=None) for name in LOG_FIELDS
}


def bind_log_fields(**fields: str | None) -> None:
    """Set some of :data:`LOG_FIELDS` for the rest of the current task (and the tasks it
    starts)."""
    for name, value in fields.items():
        _log_values[name].set(value)


def log_fields() -> dict[str, str]:
    """The log fields bound in the current context (unset ones left out)."""
    found = {name: var.get() for name, var in _log_values.items()}
    return {name: value for name, value in found.items() if value is not None}
