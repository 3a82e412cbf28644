"""Slack payloads as places: DMs and group DMs are private, channels are not."""

from __future__ import annotations

from typing import Any

from adapters.slack.inbound import (
    channel_type_named,
    is_im,
    message_place,
    place_for,
    press_from_action,
)
from bot.kernel import encode_custom_id


def test_dms_and_group_dms_are_private_places_and_channels_are_not() -> None:
    assert place_for("T1", "D1").is_dm and place_for("T1", "D1", None, "im").is_dm
    assert place_for("T1", "G0MPIM", None, "mpim").is_dm
    assert place_for("T1", "C0MPIM", "1.2", "mpim").is_dm
    assert not place_for("T1", "G0PRIVATE", None, "group").is_dm
    assert not place_for("T1", "C1", None, "channel").is_dm
    assert not place_for("T1", "G0UNSAID").is_dm
    assert is_im("D1") and is_im("X", "im") and not is_im("G0MPIM", "mpim")


def test_a_conversations_name_tells_a_dm_or_a_group_dm() -> None:
    assert channel_type_named("D1", "directmessage") == "im"
    assert channel_type_named("G0MPIM", "mpdm-alice--bob--carol-1") == "mpim"
    assert channel_type_named("C0MPIM", "mpdm-alice--bob-1") == "mpim"
    assert channel_type_named("G0PRIVATE", "privategroup") is None
    assert channel_type_named("C1", "general") is None
    assert channel_type_named("C1", None) is None


def test_a_message_in_a_group_dm_is_in_a_private_thread_of_its_own() -> None:
    event = {"channel": "G0MPIM", "channel_type": "mpim", "ts": "1.5", "user": "U1"}
    assert message_place("T1", event) == place_for("T1", "G0MPIM", "1.5", "mpim")
    assert message_place("T1", {**event, "channel_type": "group"}).thread_id is None


def _press(channel: str, name: str) -> dict[str, Any]:
    """A ``block_actions`` payload as Slack sends it for a press on a message in ``channel``."""
    return {
        "type": "block_actions",
        "user": {"id": "U1", "username": "alice"},
        "team": {"id": "T1"},
        "container": {"type": "message", "message_ts": "1.5", "channel_id": channel},
        "channel": {"id": channel, "name": name},
        "message": {"ts": "1.5"},
        "actions": [{"type": "button", "action_id": encode_custom_id("upscale1", "job-1")}],
    }


def test_a_press_in_a_group_dm_is_in_a_private_place() -> None:
    press = press_from_action(_press("G0MPIM", "mpdm-alice--bob-1"), frozenset())
    assert press is not None and press.place == place_for("T1", "G0MPIM", None, "mpim")
    assert press.place.is_dm
    press = press_from_action(_press("G0PRIVATE", "secret-plans"), frozenset())
    assert press is not None and not press.place.is_dm
