"""``--log-format json`` / ``[logging] format = "json"``: one JSON object per log line.

Each line has ``time`` (UTC, ISO 8601 with milliseconds), ``level``, ``logger`` and
``message``, then ``platform``, ``user_id`` and ``job_id`` where the work in progress is known
(:func:`bot.kernel.metrics.log_fields`), ``event`` and its fields where a line is one
(``event=audit``: :mod:`bot.features.audit.trail`), and ``exception`` with the traceback when
there is one. Every string goes through :func:`genbot.redaction.redact`, so the JSON lines are
redacted like the text ones — tracebacks included.
"""

from __future__ import annotations

import json
import logging
from datetime import UTC, datetime
from typing import Any

from bot.kernel import metrics
from genbot.redaction import redact


class JsonFormatter(logging.Formatter):
    """Formats a record as one line of JSON with every configured secret redacted."""

    def __init__(self, secrets: list[str]) -> None:
        super().__init__()
        self.secrets = secrets

    def format(self, record: logging.LogRecord) -> str:
        stamp = datetime.fromtimestamp(record.created, tz=UTC)
        entry: dict[str, Any] = {
            "time": stamp.isoformat(timespec="milliseconds").replace("+00:00", "Z"),
            "level": record.levelname,
            "logger": record.name,
            "message": record.getMessage(),
        }
        entry.update(metrics.log_fields())
        event, fields = getattr(record, "event", None), getattr(record, "fields", None)
        if isinstance(event, str):
            entry["event"] = event
        if isinstance(fields, dict):
            entry.update({str(k): v for k, v in fields.items() if k not in entry})
        for name in metrics.LOG_FIELDS:
            given = getattr(record, name, None)
            if given is not None:
                entry[name] = str(given)
        if record.exc_info:
            entry["exception"] = self.formatException(record.exc_info)
        elif record.exc_text:
            entry["exception"] = record.exc_text
        if record.stack_info:
            entry["stack"] = self.formatStack(record.stack_info)
        redacted = {
            key: redact(value, self.secrets) if isinstance(value, str) else value
            for key, value in entry.items()
        }
        return json.dumps(redacted, ensure_ascii=False)
