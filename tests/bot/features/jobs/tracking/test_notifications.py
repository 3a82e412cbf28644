"""What a webhook body means: this task's record in flight (maybe wrapped) to use, or a signal to
fetch (also a record saying the task ended: genbot confirms it with the provider)."""

from __future__ import annotations

import json
from typing import Any

import pytest

from bot.features.jobs.tracking.notifications import FetchNow, NotJson, UseRecord, read_notification

RECORD: dict[str, Any] = {
    "task_id": "t1",
    "task_type": "imagine",
    "process_time": 12,
    "status": "processing",
    "task_result": {"message": "in the queue", "actions": []},
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
    assert notice.record.task_id == "t1" and notice.record.status == "processing"
    assert notice.record.task_result.message == "in the queue"


@pytest.mark.parametrize("status", ["finished", "failed"])
def test_a_record_saying_the_task_ended_is_not_taken_on_its_word(status: str) -> None:
    ended = {**RECORD, "status": status, "task_result": {"image_url": "https://evil.example/x.png"}}
    assert read_notification(_body(ended), "t1") == FetchNow()
    assert read_notification(_body({"data": ended}), "t1") == FetchNow()
    assert read_notification(_body({**ended, "task_id": "new"}), None) == FetchNow("new")


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


def test_a_job_without_a_task_id_yet_reads_the_task_a_record_names() -> None:
    assert read_notification(_body({**RECORD, "task_id": "new"}), None) == FetchNow("new")


@pytest.mark.parametrize("body", [b"not json", b"{", b"\xff\xfe"])
def test_a_body_that_is_not_json_is_refused(body: bytes) -> None:
    with pytest.raises(NotJson):
        read_notification(body, "t1")
