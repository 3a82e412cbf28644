"""The agent experience's pieces: prompts drawn from genbot's commands, at most four; the
channel in view; the span a message asks about."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from adapters.slack.agent import (
    channel_in_view,
    default_prompts,
    describe_span,
    requested_span,
)
from adapters.slack.settings import SlackSettings


def test_default_prompts_come_from_the_commands_examples() -> None:
    assert [(p.title, p.message) for p in default_prompts()] == [
        ("Ask anything", "What is a good name for a fox?"),
        ("Draw an image", "Draw a fox in the snow"),
        ("Summarize this channel", "Summarize this channel's last hour"),
    ]


def test_at_most_four_suggested_prompts_are_configured() -> None:
    five = [{"title": f"t{n}", "message": f"m{n}"} for n in range(5)]
    with pytest.raises(ValidationError):
        SlackSettings.model_validate({"suggested_prompts": five})
    assert SlackSettings(suggested_prompts=[]).suggested_prompts == []


def test_the_channel_in_view_is_the_first_channel_entity() -> None:
    entities = [
        {"type": "slack#/types/thread_ts", "value": "1.2"},
        {"type": "slack#/types/channel_id", "value": "C9"},
        {"type": "slack#/types/channel_id", "value": "C7"},
    ]
    assert channel_in_view({"entities": entities}) == "C9"
    assert channel_in_view({}) is None
    assert (
        channel_in_view({"entities": [{"type": "slack#/types/channel_id", "value": "D1"}]}) is None
    )


def test_the_span_a_message_names() -> None:
    assert requested_span("summarize this channel") == 3600
    assert requested_span("what happened in the last 3 hours here") == 3 * 3600
    assert requested_span("the last 20 minutes") == 1200
    assert requested_span("the last day") == 86400
    assert requested_span("the last 90 days") == 7 * 86400
    assert describe_span(3600) == "hour" and describe_span(7200) == "2 hours"
