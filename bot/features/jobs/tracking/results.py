"""What provider answers leave in a job row, and when to ask the provider again."""

from __future__ import annotations

from typing import Any

from bot.api import DiffusionResponse, TaskRecord
from bot.kernel import LimitsSettings


def charged_credits(record: TaskRecord) -> int:
    """What the provider says a finished task cost: ``task_result.credit``, else (a record
    without it) ``meta.frozen_credit``, the credits it held for the task; 0 when it says
    neither (docs/provider.md#task-prices)."""
    if "credit" in record.task_result.model_fields_set:
        return record.task_result.credit
    return record.meta.frozen_credit


def task_result_fields(record: TaskRecord) -> dict[str, Any]:
    """What a finished family B record leaves in the job row."""
    result = record.task_result
    urls = [result.image_url, result.permanent_url, result.host_url]
    return {
        "result_urls": list(dict.fromkeys(url for url in urls if url)),
        "actions": list(result.actions),
        "credits": charged_credits(record),
        "result": {
            "seed": result.seed,
            "prompts": result.describe_prompts(),
            "process_time": record.process_time,
            "image_id": result.image_id,
            "mode": record.meta.process_mode,
        },
    }


def diffusion_result_fields(answer: DiffusionResponse) -> dict[str, Any]:
    """What a ready diffusion answer leaves in the job row."""
    meta = answer.meta.model_dump(exclude_none=True) if answer.meta is not None else {}
    return {"result_urls": list(answer.output), "result": {"meta": meta}}


def poll_delay(eta: float | None, limits: LimitsSettings, default: float) -> float:
    """Seconds until a diffusion job is fetched (again): the provider's ``eta`` (else
    ``default``), kept within ``[poll_interval_min, poll_interval_max]``."""
    wait = eta if eta is not None and eta > 0 else default
    return min(max(wait, limits.poll_interval_min), limits.poll_interval_max)
