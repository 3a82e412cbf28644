"""What a webhook body means: this task's record (maybe wrapped) to use, or a signal to fetch."""

from __future__ import annotations

import json
from typing import Any

import pytest

from bot.features.jobs.tracking.notifications import FetchNow, NotJson, UseRecord, read_notification

RECORD: dict[str, Any] = {
    "task_id": "t1",
    "task_type": "imagine",
    "process_time": 12,
    "status": "finished",
    "task_result": {"image_url": "https://img.example.com/t1.png", "actions": ["reroll"]},
    "meta": {},
}


def _body(value: Any) -> bytes:
    return json.dumps(value).encode()


@pytest.mark.parametrize(
    "body",
    [
        RECORD,
        {"data": RECORD},
        {"task": RECORD},
        {"code": 200, "data": {"t1": RECORD}, "message": "success"},
        {"event": "task.finished", "payload": {"record": RECORD}},
    ],
)
def test_this_tasks_record_is_used_however_it_is_wrapped(body: Any) -> None:
    notice = read_notification(_body(body), "t1")
    assert isinstance(notice, UseRecord)
    assert notice.record.task_id == "t1"
    assert notice.record.task_result.image_url == "https://img.example.com/t1.png"


@pytest.mark.parametrize(
    "body",
    [
        b"",
        b"  \n",
        _body({}),
        _body([]),
        _body("done"),
        _body({"task_id": "t1", "status": "finished"}),
        _body({"task_id": "t1", "status": "finished", "task_result": "no"}),
        _body({**RECORD, "task_id": "another"}),
        _body({"data": {**RECORD, "task_id": "another"}}),
        _body({**RECORD, "task_result": {"actions": "not a list"}}),
    ],
)
def test_anything_else_is_a_signal_to_fetch_now(body: bytes) -> None:
    assert read_notification(body, "t1") == FetchNow()


def test_a_job_without_a_task_id_yet_takes_the_record_it_is_sent() -> None:
    notice = read_notification(_body({**RECORD, "task_id": "new"}), None)
    assert isinstance(notice, UseRecord) and notice.record.task_id == "new"


@pytest.mark.parametrize("body", [b"not json", b"{", b"\xff\xfe"])
def test_a_body_that_is_not_json_is_refused(body: bytes) -> None:
    with pytest.raises(NotJson):
        read_notification(body, "t1")
