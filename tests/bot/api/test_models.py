"""Response models read the spec's shapes and quirks; the accumulator assembles streams."""

from __future__ import annotations

from typing import Any

import pytest

from bot.api import (
    ChatCompletion,
    ChatMessage,
    ChatRequest,
    CreateTaskResponse,
    DiffusionResponse,
    FunctionCall,
    MultiFetchResponse,
    TaskMeta,
    TaskRecord,
    TaskResult,
)
from bot.api.chat import ChatAccumulator
from bot.api.errors import FunctionArgumentsError, InvalidResponse

KEYCAPS = ["1\ufe0f\u20e3", "2\ufe0f\u20e3", "3\ufe0f\u20e3", "4\ufe0f\u20e3"]


def test_completion_with_function_call_and_null_content() -> None:
    completion = ChatCompletion.model_validate(
        {
            "id": "c1",
            "object": "chat.completion",
            "created": 1700000000,
            "model": "llm-3.5-turbo-0613",
            "choices": [
                {
                    "index": 0,
                    "message": {
                        "role": "assistant",
                        "content": None,
                        "function_call": {
                            "name": "generate_image",
                            "arguments": '{"prompt": "a fox"}',
                        },
                    },
                    "finish_reason": "function_call",
                }
            ],
            "usage": {"prompt_tokens": 5, "completion_tokens": 7, "total_tokens": 12},
            "unknown_field": {"kept": True},
        }
    )
    choice = completion.choices[0]
    assert choice.message.content is None
    assert completion.text == ""
    assert choice.message.function_call is not None
    assert choice.message.function_call.parsed_arguments() == {"prompt": "a fox"}
    assert completion.usage is not None and completion.usage.total_tokens == 12
    assert completion.model_extra == {"unknown_field": {"kept": True}}


@pytest.mark.parametrize("arguments", ['{"prompt": "a fox"', "[1, 2]", "not json"])
def test_invalid_function_arguments_raise_a_clear_error(arguments: str) -> None:
    completion = ChatCompletion.model_validate(
        {"choices": [{"message": {"function_call": {"name": "f", "arguments": arguments}}}]}
    )
    call = completion.choices[0].message.function_call
    assert call is not None
    with pytest.raises(FunctionArgumentsError) as caught:
        call.parsed_arguments()
    assert "'f'" in str(caught.value) and caught.value.arguments == arguments


def test_assistant_function_call_message_is_sent_with_null_content() -> None:
    request = ChatRequest(
        model="llm-3.5-turbo",
        messages=[
            ChatMessage(role="user", content="draw a fox"),
            ChatMessage(
                role="assistant",
                content=None,
                function_call=FunctionCall(name="generate_image", arguments="{}"),
            ),
            ChatMessage(role="function", name="generate_image", content="done"),
        ],
    )
    body = request.to_body()
    assert body["messages"][1]["content"] is None
    assert "temperature" not in body


def test_multi_fetch_envelope_with_null_records_and_host_image_url() -> None:
    envelope = MultiFetchResponse.model_validate(
        {
            "code": 200,
            "data": {
                "a": {
                    "task_id": "a",
                    "status": "finished",
                    "retry_count": 0,
                    "task_result": {"host_image_url": "https://h/a.png", "quota_used": 2},
                    "meta": {"bot_id": 3, "ended_at": 0, "task_request": {"x": 1}},
                },
                "b": None,
            },
            "message": "success",
        }
    )
    record = envelope.record("a")
    assert record is not None and record.is_finished and record.is_done
    assert record.task_result.host_url == "https://h/a.png"
    assert record.task_result.host_image_url == "https://h/a.png"
    assert record.meta.bot_id == 3
    assert envelope.record("b") is None
    assert envelope.record("c") is None


def test_fetch_record_with_host_url_nulls_and_unknown_status() -> None:
    record = TaskRecord.model_validate(
        {
            "task_id": "t",
            "status": "retry",
            "process_time": 1.5,
            "task_result": {"host_url": "https://h/t.png", "error_messages": None, "seed": 42},
            "meta": None,
        }
    )
    assert record.task_result.host_image_url == "https://h/t.png"
    assert record.task_result.error_messages == []
    assert record.task_result.seed == "42"
    assert not record.is_done


def test_describe_prompts_from_list_or_from_message_lines() -> None:
    lines = [f"{KEYCAPS[i]} prompt number {i + 1} --ar 1:1" for i in range(4)]
    from_list = TaskResult.model_validate({"prompts": ["a", "b", "c", "d"]})
    assert from_list.describe_prompts() == ["a", "b", "c", "d"]
    from_message = TaskResult.model_validate({"message": "\n\n".join(lines)})
    assert from_message.describe_prompts() == [f"prompt number {i} --ar 1:1" for i in (1, 2, 3, 4)]
    assert TaskResult().describe_prompts() == []


def test_diffusion_processing_answer_with_messege() -> None:
    answer = DiffusionResponse.model_validate(
        {
            "status": "processing",
            "eta": 12.5,
            "id": 99,
            "messege": "Try to fetch request after given estimated time",
            "meta": {"W": 512, "H": "768", "strength": 0.5, "guess_mode": "no"},
        }
    )
    assert answer.message.startswith("Try to fetch")
    assert not answer.is_ready and not answer.is_failed
    assert answer.meta is not None and answer.meta.H == 768 and answer.meta.strength == "0.5"


def test_diffusion_upscale_output_string_becomes_a_list() -> None:
    answer = DiffusionResponse.model_validate(
        {"generationTime": 2.1, "id": 5, "output": "https://x/up.png", "status": "success"}
    )
    assert answer.output == ["https://x/up.png"]
    assert answer.generation_time == 2.1 and answer.is_ready


def test_create_task_response_tolerates_extra_fields() -> None:
    answer = CreateTaskResponse.model_validate(
        {"task_id": "t", "status": "success", "message": "", "extra": 1}
    )
    assert answer.task_id == "t"


def chunk(index: int, **delta: object) -> dict[str, Any]:
    finish = delta.pop("finish", None)
    return {
        "id": "s",
        "model": "m",
        "choices": [{"index": index, "delta": delta, "finish_reason": finish}],
    }


def test_accumulator_keeps_choices_apart_and_builds_function_calls() -> None:
    acc = ChatAccumulator()
    for part in [
        chunk(0, role="assistant", content=""),
        chunk(1, role="assistant", content=""),
        chunk(0, content="Hel"),
        chunk(1, function_call={"name": "generate_image", "arguments": ""}),
        chunk(0, content="lo"),
        chunk(1, function_call={"arguments": '{"prompt": '}),
        chunk(1, function_call={"arguments": '"a fox"}'}),
        chunk(0, finish="stop"),
        chunk(1, finish="function_call"),
    ]:
        acc.add(part)
    first, second = acc.results()
    assert (first.text, first.finish_reason, first.function_call) == ("Hello", "stop", None)
    assert second.text == "" and second.finish_reason == "function_call"
    assert second.function_call is not None
    assert second.function_call.name == "generate_image"
    assert second.function_call.parsed_arguments() == {"prompt": "a fox"}
    completion = acc.completion()
    assert completion.text == "Hello"
    assert completion.choices[1].message.content is None
    assert acc.texts() == {0: "Hello", 1: ""}


def test_a_diffusion_failure_is_an_error_failed_or_failure_status() -> None:
    # docs/provider.md#diffusion-failure: other statuses are fetched again until the job's time.
    def failed(status: str) -> bool:
        return DiffusionResponse.model_validate({"status": status, "id": 1}).is_failed

    assert all(failed(status) for status in ("error", "failed", "FAILURE"))
    assert not any(failed(status) for status in ("processing", "queued", "success", ""))


def test_multi_fetch_reads_a_task_in_flight_as_its_id_type_and_status_only() -> None:
    envelope = MultiFetchResponse.model_validate(
        {
            "data": {
                "a": {"task_id": "a", "task_type": None, "status": "processing", "meta": "?"},
                "b": {"task_id": "b", "status": "finished", "meta": "?"},
                "c": {"task_id": "c", "task_type": 7, "status": "pending"},
            }
        }
    )
    record = envelope.record("a")
    assert record is not None and not record.is_done
    assert (record.task_id, record.task_type, record.status) == ("a", "", "processing")
    assert record.meta == TaskMeta() and record.task_result == TaskResult()
    with pytest.raises(InvalidResponse, match="multi_fetch record"):
        envelope.record("b")
    with pytest.raises(InvalidResponse, match="task_type"):
        envelope.record("c")
