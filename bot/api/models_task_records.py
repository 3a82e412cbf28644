"""Family B, image task answers (docs/provider.md, "Image tasks"): CreateTaskResponse, task
records and the multi_fetch envelope."""

from __future__ import annotations

import re
from enum import StrEnum
from typing import Any

from pydantic import Field, model_validator

from bot.api.models_common import LenientInt, LenientStr, ResponseModel, StrList, read_model


class CreateTaskResponse(ResponseModel):
    """Answer of every creation endpoint."""

    task_id: str = ""
    status: str = ""
    message: str = ""


class TaskStatus(StrEnum):
    """Image task states."""

    PENDING = "pending"
    STAGED = "staged"
    PROCESSING = "processing"
    FINISHED = "finished"
    FAILED = "failed"
    RETRY = "retry"


_PROMPT_LINE = re.compile(r"^\s*([1-4])(?:\ufe0f?\u20e3|[.)])\s*(.*\S)\s*$")


class TaskResult(ResponseModel):
    """``task_result``. ``host_url`` and ``host_image_url`` are made equal (each
    family of responses fills only one of them)."""

    host_url: str = ""
    host_image_url: str = ""
    image_url: str = ""
    permanent_url: str = ""
    image_id: LenientStr = ""
    seed: LenientStr = ""
    result_message_id: LenientStr = ""
    credit: LenientInt = 0
    quota_used: LenientInt | None = None
    message: str = ""
    error_messages: StrList = Field(default_factory=list)
    service_unavailable: bool = False
    need_retry: bool = False
    warn_notify: bool = False
    actions: StrList = Field(default_factory=list)
    prompts: StrList | None = None

    @model_validator(mode="after")
    def _same_host_url(self) -> TaskResult:
        url = self.host_url or self.host_image_url
        self.host_url = self.host_image_url = url
        return self

    def describe_prompts(self) -> list[str]:
        """The candidate prompts of a describe task: ``prompts`` when present, else the lines
        ``1️⃣ …`` to ``4️⃣ …`` (or ``1.``, ``1)``) of ``message``, empty when neither holds any
        (docs/provider.md#describe-result)."""
        if self.prompts:
            return list(self.prompts)
        found: dict[int, str] = {}
        for line in self.message.splitlines():
            match = _PROMPT_LINE.match(line)
            if match and int(match[1]) not in found:
                found[int(match[1])] = match[2]
        return [found[number] for number in sorted(found)]


class TaskMeta(ResponseModel):
    """``meta`` of a task record; the internal fields are kept but not interpreted."""

    account_id: LenientStr = ""
    task_type: str = ""
    origin_task_id: str = ""
    multi_bots: bool = False
    bot_hash: str | None = None
    bot_id: LenientInt | None = None
    created_at: LenientInt = 0
    started_at: LenientInt = 0
    ended_at: LenientInt | None = None
    process_mode: str = ""
    frozen_credit: LenientInt = 0
    quota_frozen: LenientInt | None = None
    task_request: dict[str, Any] = Field(default_factory=dict)
    task_input: dict[str, Any] | None = None
    task_param: dict[str, Any] | None = None


class TaskRecord(ResponseModel):
    """A task as returned by fetch and multi_fetch."""

    task_id: str = ""
    task_type: str = ""
    process_time: float = 0.0
    status: str = ""
    task_result: TaskResult = Field(default_factory=TaskResult)
    meta: TaskMeta = Field(default_factory=TaskMeta)
    retry_count: LenientInt | None = None

    @property
    def is_finished(self) -> bool:
        """The task completed successfully."""
        return self.status == TaskStatus.FINISHED

    @property
    def is_failed(self) -> bool:
        """The task failed during execution (see ``task_result.error_messages``)."""
        return self.status == TaskStatus.FAILED

    @property
    def is_done(self) -> bool:
        """The task reached a final state (finished or failed)."""
        return self.is_finished or self.is_failed


IN_FLIGHT_TASK_STATUSES: frozenset[str] = frozenset(
    (TaskStatus.PENDING, TaskStatus.STAGED, TaskStatus.PROCESSING, TaskStatus.RETRY)
)
ANY_IN_FLIGHT = "*"
"""A known status that stands for every status in flight (:meth:`MultiFetchResponse.in_flight_as`):
the caller learns nothing from a task still in flight, whichever its status (a job cancelled
while the provider runs its task to its end)."""
BRIEF_FIELDS = ("task_id", "task_type", "status")
"""What :meth:`MultiFetchResponse.record` reads of a task still in flight."""


class MultiFetchResponse(ResponseModel):
    """Envelope of multi_fetch: ``data`` maps each id to its record (as sent), or ``None`` if
    unresolved; :meth:`record` reads one."""

    code: LenientInt = 0
    data: dict[str, dict[str, Any] | None] = Field(default_factory=dict)
    message: str = ""

    def record(self, task_id: str) -> TaskRecord | None:
        """``task_id``'s record (``None``: unresolved, or absent: callers tell the two apart
        with ``task_id in data``, as only ``null`` says unresolved). A task still in flight reads
        as its id, type and status only, the rest of its record unread: a poll reads no more of
        it, and whole records cost a poll about 60–80 µs each to validate (issue 32). A
        finished or failed task's record is read whole. :class:`InvalidResponse` when it
        does not fit."""
        raw = self.data.get(task_id)
        if raw is None:
            return None
        if raw.get("status") in IN_FLIGHT_TASK_STATUSES:
            raw = {key: raw[key] for key in BRIEF_FIELDS if key in raw}
        return read_model(TaskRecord, raw, "multi_fetch record")

    def misnamed(self, task_id: str) -> bool:
        """Whether the record under ``task_id`` names another task, or none: it says nothing
        of the task asked about (``null`` names none but says "unresolved")."""
        raw = self.data.get(task_id)
        return raw is not None and raw.get("task_id") != task_id

    def named(self, task_id: str) -> str:
        """The task the record under ``task_id`` names, for a log line: quoted, at most 80
        characters."""
        raw = self.data.get(task_id) or {}
        return repr(raw.get("task_id"))[:80]

    def in_flight_as(self, task_id: str, status: str | None) -> bool:
        """Whether ``task_id``'s record says the task is still in flight in ``status`` (any
        status in flight, for :data:`ANY_IN_FLIGHT`), unread beyond its status: a poll that
        knew it so learns nothing."""
        raw = self.data.get(task_id)
        if raw is None or raw.get("status") not in IN_FLIGHT_TASK_STATUSES:
            return False
        return status in (ANY_IN_FLIGHT, raw.get("status"))
