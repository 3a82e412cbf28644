"""A result's info names its requester and its channel as mentions each platform draws (no
platform's syntax in the core's text), and shows the model version once."""

from __future__ import annotations

from bot.features.archive.info import info_text
from bot.kernel import Mention, draw_mentions
from tests.bot.features.jobs.support import job_record


def test_the_requester_and_the_channel_are_mentions_not_markup() -> None:
    job = job_record(requester_id="U7", channel_id="C3", created_at=1_800_000_000.0)
    text = info_text(job, ())
    assert "<@" not in text and "<#" not in text
    asked = f"Asked by {Mention.user('U7')} on 2027-01-15 08:00 UTC in {Mention.channel('C3')}"
    assert text.endswith(asked)
    assert draw_mentions(text, lambda m: m.id).endswith("Asked by U7 on 2027-01-15 08:00 UTC in C3")


def test_the_model_version_is_shown_once() -> None:
    job = job_record(parameters={"aspect_ratio": "16:9", "model_version": "6"})
    text = info_text(job, ())
    assert text.count("version 6") == 1
    assert "**Parameters** aspect ratio 16:9\n**Model** version 6" in text
