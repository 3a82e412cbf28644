"""The provider client's Prometheus series, and the bound on every genbot label value.

Requests, latency, retries and failovers of calls to the provider are counted where
:class:`bot.api.http.HttpTransport` makes them; each key's state, tasks and refusals where
:class:`bot.api.keys.KeyPool` learns them. The rest of genbot's series live in
:mod:`bot.kernel.metrics` and bound their labels with :func:`label` too (the client is the
bottom layer: it imports nothing of ``bot/`` above it).
"""

from __future__ import annotations

import re

from prometheus_client import Counter, Gauge, Histogram

LABEL_PATTERN = re.compile(r"[A-Za-z0-9_./:-]{1,48}")
OTHER = "other"
"""The value of a label whose value does not match :data:`LABEL_PATTERN`."""

LATENCY_BUCKETS = (0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0, 120.0)

PROVIDER_REQUESTS = Counter(
    "genbot_provider_requests",
    "Requests to the provider by endpoint and HTTP status (or error kind).",
    ["endpoint", "status"],
)
PROVIDER_LATENCY = Histogram(
    "genbot_provider_request_seconds",
    "Provider request latency (until the answer's headers, for streams).",
    ["endpoint"],
    buckets=LATENCY_BUCKETS,
)
PROVIDER_RETRIES = Counter(
    "genbot_provider_retries", "Provider requests repeated after a failure.", ["endpoint"]
)
PROVIDER_FAILOVERS = Counter(
    "genbot_provider_failovers", "Switches of the preferred provider address to a backup."
)


def label(value: str) -> str:
    """``value`` if it is a well-formed label value, else :data:`OTHER`."""
    return value if LABEL_PATTERN.fullmatch(value) else OTHER


def provider_request(endpoint: str, status: int | str, seconds: float) -> None:
    """One provider request ended with HTTP ``status`` (or an error kind) after ``seconds``."""
    name = label(endpoint)
    PROVIDER_REQUESTS.labels(name, label(str(status))).inc()
    PROVIDER_LATENCY.labels(name).observe(seconds)


def provider_retry(endpoint: str) -> None:
    PROVIDER_RETRIES.labels(label(endpoint)).inc()


def provider_failover() -> None:
    PROVIDER_FAILOVERS.inc()


KEY_STATE = Gauge(
    "genbot_provider_key_state",
    "1 for each provider key's current state in this process (in, refused, no_credit).",
    ["key", "state"],
)
KEY_TASKS = Counter(
    "genbot_provider_key_tasks", "Tasks and generations the provider accepted, by key.", ["key"]
)
KEY_FAILURES = Counter(
    "genbot_provider_key_failures",
    "Refusals of a provider key (refused: 401/403; no_credit: insufficient credit), by key.",
    ["key", "kind"],
)
KEY_USAGE = Gauge(
    "genbot_provider_key_usage",
    "Each provider key's jobs, from the shared store (every process): active now, tasks created "
    "and credits charged since the start of the UTC day.",
    ["key", "measure"],
)
