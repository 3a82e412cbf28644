"""What a provider's answer leaves in a job row."""

from __future__ import annotations

from bot.api import TaskRecord
from bot.features.jobs.tracking.results import charged_credits


def test_the_charge_is_the_records_credit_else_what_it_froze() -> None:
    def record(result: dict[str, object], meta: dict[str, object]) -> TaskRecord:
        return TaskRecord.model_validate(
            {"task_id": "t", "status": "finished", "task_result": result, "meta": meta}
        )

    assert charged_credits(record({"credit": 8}, {"frozen_credit": 4})) == 8
    assert charged_credits(record({"credit": 0}, {"frozen_credit": 4})) == 0
    assert charged_credits(record({}, {"frozen_credit": 4})) == 4
    assert charged_credits(record({"credit": None}, {"frozen_credit": "6"})) == 6
    assert charged_credits(record({}, {})) == 0
