"""What genbot tells its operators about the work: Prometheus series and the log context.

**Series.** Every series is named ``genbot_*`` and every label has a bounded set of values. The
metrics live in ``prometheus_client``'s default registry (so ``/metrics`` also shows the
process and Python collectors). Counters and histograms move where the work happens, written
there (``metrics.JOBS_CREATED.labels(job.type).inc()``: no call into this module on the way);
gauges that describe stored state (jobs by state) are refreshed right before each scrape by the
:data:`Refresher` callables the composition root hands the ops listener (``genbot/ops.py``).
The provider client's series are its own (:mod:`bot.api.metrics`).

Label values come from genbot's own closed sets (platform names, job types, event classes,
priorities, surface methods), never from users. A value that comes from elsewhere (a state read
from the database, a kind of work named by a caller) goes through
:func:`bot.api.metrics.label`, which keeps it a well-formed label value.

Adding a metric: define it here
with the ``genbot_`` prefix and bounded labels, move it where the work happens (or refresh it in
a :data:`Refresher`), add a panel to ``config/grafana-dashboard.json`` (its test checks every
panel's query names an exported metric) and a line to the table in ``docs/operations.md``.

**Log context.** Who and what a log line is about: the platform, user and job ids of the work in
progress, in the context variables :data:`LOG_PLATFORM`, :data:`LOG_USER_ID` and
:data:`LOG_JOB_ID`. The router's intake sets the platform and user of each event it runs, and
the job machinery sets the job id it works on (``metrics.LOG_JOB_ID.set(job.id)``); the ids
follow the work into every task it starts. Formatters read them with :func:`log_fields` (the
JSON log format writes them as fields).
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
MODERATION = Counter(
    "genbot_moderation",
    "Moderation outcomes: texts refused, banned users refused, model check answers"
    " (model_true refuses, model_false passes, model_none: no answer in time).",
    ["platform", "outcome"],
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
WINDOW_WAIT = Histogram(
    "genbot_edit_budget_wait_seconds",
    "Time a write waited for room in the platform's write windows.",
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
CHAT_FEEDBACK = Counter(
    "genbot_chat_feedback",
    "Ratings of chat answers (good, bad) by platform and model; a changed rating counts again.",
    ["platform", "model", "rating"],
)
CHAT_CONTROLS = Counter(
    "genbot_chat_controls",
    "Presses of a chat answer's controls (stop, regenerate) by platform.",
    ["platform", "control"],
)
PROMPT_TRANSLATIONS = Counter(
    "genbot_prompt_translations",
    "/imagine prompts not in English, by outcome: translated, offered (asked first), as_written"
    " (the user chose so), or why one went as written (timeout, error, unreadable, budget).",
    ["outcome"],
)
EVENTS = Counter(
    "genbot_events",
    "Inbound events by platform, kind and outcome (handled, failed, timed_out, cancelled, "
    "refused while stopping).",
    ["platform", "kind", "outcome"],
)
PACED_CHANNELS = Gauge(
    "genbot_paced_channels",
    "Channels the outbox's pacer remembers, as of its latest sweep of idle ones.",
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
CLOCK_OFFSET = Gauge(
    "genbot_clock_offset_seconds",
    "The database server's clock, which stored times are stamped with, minus this host's wall"
    " clock, as this process measured it (refreshed at each scrape; 0 on SQLite).",
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


def set_clock_offset(seconds: float) -> None:
    CLOCK_OFFSET.set(seconds)


def webhook_answered(status: int) -> None:
    WEBHOOKS.labels("accepted" if 200 <= status < 300 else "refused").inc()


def prompt_translation(outcome: str) -> None:
    PROMPT_TRANSLATIONS.labels(outcome).inc()


def chat_tokens(prompt: int, completion: int) -> None:
    CHAT_TOKENS.labels("in").inc(max(prompt, 0))
    CHAT_TOKENS.labels("out").inc(max(completion, 0))


def loop_lag(seconds: float) -> None:
    EVENT_LOOP_LAG.observe(max(seconds, 0.0))


LOG_FIELDS = ("platform", "user_id", "job_id")
LOG_PLATFORM: ContextVar[str | None] = ContextVar("genbot_log_platform", default=None)
LOG_USER_ID: ContextVar[str | None] = ContextVar("genbot_log_user_id", default=None)
LOG_JOB_ID: ContextVar[str | None] = ContextVar("genbot_log_job_id", default=None)
_log_values: dict[str, ContextVar[str | None]] = {
    "platform": LOG_PLATFORM,
    "user_id": LOG_USER_ID,
    "job_id": LOG_JOB_ID,
}


def log_fields() -> dict[str, str]:
    """The log fields bound in the current context (unset ones left out)."""
    found = {name: var.get() for name, var in _log_values.items()}
    return {name: value for name, value in found.items() if value is not None}
