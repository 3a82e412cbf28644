"""One image task: its planned lifecycle and the records fetch, multi_fetch and webhooks return.

A task's whole life is planned when it is created (seeded), so its status at any simulated time
is a pure function of the clock: (staged) → pending → processing → (retry → processing) →
finished or failed. ``staged`` is "cached, not yet in the queue" and ``pending`` "waiting in the
queue" (spec 3.1), so a staged task is staged before it is queued.
"""

from __future__ import annotations

import hashlib
import random
from dataclasses import dataclass
from typing import Any

from simulator import task_rules
from simulator.dialects import DEFAULT, DialectRules
from simulator.task_rules import Mode, TaskKind


def account_id(key: str) -> str:
    """The account id (``meta.account_id``) of the account of API key ``key``: what names an
    account anywhere the key must not appear."""
    return "acct-" + hashlib.sha256(key.encode()).hexdigest()[:10]


TERMINAL = ("finished", "failed")


@dataclass(frozen=True)
class Lifecycle:
    """Statuses by offset from creation (seconds of simulated time) and the final outcome."""

    phases: tuple[tuple[str, float], ...]
    ends_after: float
    outcome: str
    error_messages: tuple[str, ...] = ()

    def status_after(self, elapsed: float) -> str:
        if elapsed >= self.ends_after:
            return self.outcome
        current = self.phases[0][0]
        for status, starts in self.phases:
            if elapsed >= starts:
                current = status
        return current

    def retries_after(self, elapsed: float) -> int:
        return sum(1 for status, starts in self.phases if status == "retry" and elapsed >= starts)

    def started_after(self) -> float | None:
        return next((starts for status, starts in self.phases if status == "processing"), None)


def plan_lifecycle(
    rng: random.Random, kind: TaskKind, mode: Mode, time_scale: float, error: str | None
) -> Lifecycle:
    """The seeded life of a new task (durations in the README, scaled by ``time_scale``)."""
    queue, run = (seconds * time_scale for seconds in task_rules.durations(kind, mode))
    staged = rng.random() < task_rules.STAGED_CHANCE
    retry = rng.random() < task_rules.RETRY_CHANCE and error is None and kind != "seed"
    phases: list[tuple[str, float]] = []
    elapsed = 0.0
    if staged:
        phases.append(("staged", elapsed))
        elapsed += queue / 2
    phases.append(("pending", elapsed))
    elapsed += queue
    phases.append(("processing", elapsed))
    if error is not None:
        return Lifecycle(tuple(phases), elapsed + run / 2, "failed", (error,))
    if retry:
        phases.append(("retry", elapsed + run / 2))
        phases.append(("processing", elapsed + run / 2 + queue / 2))
        elapsed += queue / 2
    return Lifecycle(tuple(phases), elapsed + run, "finished")


@dataclass
class ImageTask:
    """An image task as the simulated provider stores it."""

    task_id: str
    task_type: str
    kind: TaskKind
    account_key: str
    origin_task_id: str
    prompt: str
    version: str
    mode: Mode
    """The mode the task runs in (timing, price)."""
    account_mode: Mode
    """The setting of the account it runs on when it was created: ``meta.process_mode`` ("mode
    of the bot that processes the task"), not necessarily the mode asked for."""
    aspect: tuple[int, int]
    index: str
    task_input: dict[str, Any]
    task_request: dict[str, Any]
    created_at: float
    lifecycle: Lifecycle
    price: int
    base_url: str
    image_id: str = ""
    art_seed: int = 0
    describe_prompts: tuple[str, ...] = ()
    seed_value: str = ""
    webhook_endpoint: str = ""
    webhook_secret: str = ""
    bot_id: int = 0
    result_message_id: str = ""
    settled: bool = False
    lost: bool = False
    rules: DialectRules = DEFAULT

    @property
    def account_id(self) -> str:
        return account_id(self.account_key)

    @property
    def ends_at(self) -> float:
        return self.created_at + self.lifecycle.ends_after

    @property
    def outcome(self) -> str:
        return self.lifecycle.outcome

    def status_at(self, now: float) -> str:
        return self.lifecycle.status_after(now - self.created_at)

    def process_time(self, now: float) -> float:
        return round(max(0.0, min(now, self.ends_at) - self.created_at), 3)

    def actions(self) -> list[str]:
        if self.rules.actions == "documented_only":
            first_grid = self.kind == "grid" and self.task_type in ("imagine", "blend")
            return list(task_rules.GRID_ACTIONS) if first_grid else []
        if self.kind == "grid":
            return list(task_rules.GRID_ACTIONS)
        if self.kind == "upscale":
            from_grid = self.index in task_rules.GRID_INDEXES
            actions = task_rules.upscale_actions(self.version, self.aspect, from_grid)
            if self.rules.actions == "worded":
                return [task_rules.WORDED_ACTIONS.get(a, a) for a in actions]
            return actions
        return []

    def describe_message(self) -> str:
        if self.rules.describe_output == "numbered_paragraphs":
            return "\n\n".join(f"{n}. {p}" for n, p in enumerate(self.describe_prompts, 1))
        digits = ("1️⃣", "2️⃣", "3️⃣", "4️⃣")
        return "\n".join(f"{d} {p}" for d, p in zip(digits, self.describe_prompts, strict=True))

    def image_url(self, area: str) -> str:
        return f"{self.base_url}/{area}/{self.image_id}.png" if self.image_id else ""


def _task_result(task: ImageTask, now: float, multi: bool) -> dict[str, Any]:
    status = task.status_at(now)
    done = status == "finished"
    result: dict[str, Any] = {
        "image_url": task.image_url("images") if done else "",
        "image_id": task.image_id if done else "",
        "seed": task.seed_value if done else "",
        "result_message_id": task.result_message_id if done else "",
        "credit": task.price if done else 0,
        "message": task.describe_message() if done and task.kind == "describe" else "",
        "error_messages": list(task.lifecycle.error_messages) if status == "failed" else [],
        "service_unavailable": False,
        "need_retry": False,
        "warn_notify": False,
        "actions": task.actions() if done else [],
    }
    if multi:
        result["host_image_url"] = task.image_url("host") if done else ""
        result["permanent_url"] = task.image_url("permanent") if done else ""
        result["quota_used"] = task.price if done else 0
    else:
        result["host_url"] = task.image_url("host") if done else ""
    if task.kind == "describe" and task.rules.describe_output == "prompts_and_lines":
        result["prompts"] = list(task.describe_prompts) if done else []
    return result


def _meta(task: ImageTask, now: float, multi: bool) -> dict[str, Any]:
    started = task.lifecycle.started_after()
    elapsed = now - task.created_at
    meta: dict[str, Any] = {
        "account_id": task.account_id,
        "task_type": task.task_type,
        "origin_task_id": task.origin_task_id,
        "multi_bots": False,
        "created_at": int(task.created_at),
        "started_at": int(task.created_at + started)
        if started is not None and elapsed >= started
        else 0,
        "process_mode": task.account_mode,
        "frozen_credit": task.price,
        "task_request": task.task_request,
        "task_input": task.task_input,
        "task_param": {
            "version": task.version,
            "aspect_ratio": f"{task.aspect[0]}:{task.aspect[1]}",
        },
    }
    if multi:
        ended = task.status_at(now) in TERMINAL
        meta["bot_hash"] = hashlib.sha256(f"bot-{task.bot_id}".encode()).hexdigest()[:16]
        meta["bot_id"] = task.bot_id
        meta["ended_at"] = int(task.ends_at) if ended else 0
        meta["quota_frozen"] = 0 if ended else task.price
    return meta


def fetch_record(task: ImageTask, now: float) -> dict[str, Any]:
    """The task record fetch answers (and the default dialect's webhook payload)."""
    return {
        "task_id": task.task_id,
        "task_type": task.task_type,
        "process_time": task.process_time(now),
        "status": task.status_at(now),
        "task_result": _task_result(task, now, multi=False),
        "meta": _meta(task, now, multi=False),
    }


def multi_fetch_record(task: ImageTask, now: float) -> dict[str, Any]:
    """The task record of a multi_fetch answer (2.6–2.8 plus the multi_fetch extras)."""
    return {
        "task_id": task.task_id,
        "task_type": task.task_type,
        "process_time": task.process_time(now),
        "status": task.status_at(now),
        "retry_count": task.lifecycle.retries_after(now - task.created_at),
        "task_result": _task_result(task, now, multi=True),
        "meta": _meta(task, now, multi=True),
    }
