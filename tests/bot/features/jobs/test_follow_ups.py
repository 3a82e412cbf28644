"""Follow-ups from a provider's actions, read tolerantly, and the documented fallback rules."""

from __future__ import annotations

import logging
from typing import Any

import pytest

from bot.features.jobs import follow_ups
from bot.features.jobs.follow_ups import (
    GRID_FOLLOW_UPS,
    canonical_action,
    canonical_actions,
    documented_follow_ups,
    offer,
    offered_follow_ups,
    parent_task,
    prompt_version,
    version_for,
)
from storage import Job
from tests.bot.features.jobs.support import job_record


def _job(**fields: Any) -> Job:
    return job_record(**{"status": "posted", "provider_id": "t1", **fields})


@pytest.mark.parametrize(
    ("name", "expected"),
    [
        ("upscale1", "upscale1"),
        ("Upscale-4", "upscale4"),
        ("U2", "upscale2"),
        ("variation3", "variation3"),
        ("V1", "variation1"),
        ("reroll", "reroll"),
        ("Re-Roll", "reroll"),
        ("high_variation", "high_variation"),
        ("vary_strong", "high_variation"),
        ("Strong Variation", "high_variation"),
        ("low_variation", "low_variation"),
        ("vary-subtle", "low_variation"),
        ("vary_region", "vary_region"),
        ("Region_Vary", "vary_region"),
        ("inpaint", "vary_region"),
        ("outpaint_2", "outpaint_2"),
        ("Zoom-Out-2x", "outpaint_2"),
        ("outpaint_1.5x", "outpaint_1.5"),
        ("zoom_out_1.5", "outpaint_1.5"),
        ("1.5x_zoom", "outpaint_1.5"),
        ("outpaint_custom", "outpaint_custom"),
        ("custom_zoom", "outpaint_custom"),
        ("outpaint_square", "outpaint_square"),
        ("make_square", "outpaint_square"),
        ("outpaint_1", "outpaint_square"),
        ("pan_left", "pan_left"),
        ("Left-Pan", "pan_left"),
        ("PAN_UP", "pan_up"),
        ("upscale_2x", "upscale_2x"),
        ("upscale_2X", "upscale_2x"),
        ("4x_upscale", "upscale_4x"),
        ("upscale_subtle", "upscale_subtle"),
        ("Creative-Upscale", "upscale_creative"),
        ("upscale_light", "upscale_light"),
        ("upscale_beta", "upscale_beta"),
        ("seed", "seed"),
    ],
)
def test_action_names_match_loosely(name: str, expected: str) -> None:
    assert canonical_action(name) == expected


@pytest.mark.parametrize(
    "name", ["", "upscale", "upscale5", "upscale_8x", "pan_sideways", "zoom_3x", "share", "vary"]
)
def test_names_that_cannot_be_placed_are_none(name: str) -> None:
    assert canonical_action(name) is None


def test_unplaceable_names_are_ignored_and_logged_once(caplog: pytest.LogCaptureFixture) -> None:
    follow_ups._unknown_seen.discard("teleport_9")
    with caplog.at_level(logging.WARNING, logger="bot.features.jobs.follow_ups"):
        first = canonical_actions(["Upscale-1", "teleport_9", "upscale1", 7, "U2"])
        second = canonical_actions(["teleport_9"])
    assert first == ["upscale1", "upscale2"] and second == []
    logged = [r.getMessage() for r in caplog.records if "teleport_9" in r.getMessage()]
    assert len(logged) == 1


@pytest.mark.parametrize(
    ("prompt", "version"),
    [
        ("a fox", None),
        ("a fox --v 5.2", "5.2"),
        ("a fox --version 4 --ar 3:2", "4"),
        ("a fox --v 5 then --v 6", "6"),
        ("a fox --niji", "6"),
        ("a fox --niji 5", "6"),
        ("a fox--v 5", None),
    ],
)
def test_the_version_comes_from_the_prompt(prompt: str, version: str | None) -> None:
    assert prompt_version(prompt) == version


def test_a_derivative_keeps_its_parents_version() -> None:
    parent = _job(prompt="a fox --v 5", parameters={"model_version": "5"})
    assert version_for("a fox --v 6", parent) == "5"
    assert version_for("a fox", None) == "6"
    assert version_for("a fox --v 4", None) == "4"


def test_a_parent_task_is_read_once_for_its_follow_up() -> None:
    parent = _job(
        type="upscale",
        prompt="a fox --v 5",
        actions=["vary_region", "pan_left"],
        parameters={"aspect_ratio": "16:9", "process_mode": "fast", "model_version": "5.2"},
        result={"mode": "relax", "refused_actions": ["pan_left"]},
    )
    origin = parent_task(parent)
    assert origin is not None
    assert origin.task_id == "t1" and origin.offered == ("vary_region", "pan_left", "seed")
    assert origin.refused == {"pan_left"} and origin.aspect_ratio == "16:9"
    assert origin.process_mode == "relax", "shown relax: its account is set to relax"
    assert origin.model_version == "5.2"
    asked = parent_task(_job(prompt="a fox --v 5", parameters={"process_mode": "fast"}))
    assert asked is not None and asked.process_mode == "fast" and asked.model_version == "5"
    turbo = _job(parameters={"process_mode": "turbo"}, result={"mode": "fast"})
    assert (found := parent_task(turbo)) is not None and found.process_mode == "turbo"
    assert parent_task(_job(provider_id=None)) is None
    assert parent_task(_job(family="diffusion", type="txt2img")) is None


def test_a_grid_offers_u_v_and_reroll() -> None:
    assert documented_follow_ups("grid", "6") == list(GRID_FOLLOW_UPS)


@pytest.mark.parametrize(
    ("version", "vary", "second"),
    [
        ("6", True, ["upscale_subtle", "upscale_creative"]),
        ("6.1", True, ["upscale_subtle", "upscale_creative"]),
        ("5.2", True, ["upscale_2x", "upscale_4x"]),
        ("5.1", False, ["upscale_2x", "upscale_4x"]),
        ("5", False, ["upscale_2x", "upscale_4x"]),
        ("4", False, ["upscale_light", "upscale_beta"]),
    ],
)
def test_an_upscale_offers_what_its_version_allows(
    version: str, vary: bool, second: list[str]
) -> None:
    offered = documented_follow_ups("upscale", version, square=False)
    zoom_and_pan = [
        "vary_region", "outpaint_2", "outpaint_1.5", "outpaint_custom", "outpaint_square",
        "pan_left", "pan_right", "pan_up", "pan_down",
    ]  # fmt: skip
    assert offered == (["high_variation", "low_variation"] if vary else []) + zoom_and_pan + second


def test_make_square_only_on_images_not_known_to_be_square() -> None:
    assert "outpaint_square" not in documented_follow_ups("upscale", "6", square=True)
    assert "outpaint_square" in documented_follow_ups("upscale", "6", square=None)


def test_a_second_upscale_offers_no_further_upscale() -> None:
    offered = documented_follow_ups("upscale", "6", first_upscale=False)
    assert not [a for a in offered if a.startswith("upscale")]


def test_the_providers_actions_win_when_it_sends_some() -> None:
    job = _job(type="upscale", action="upscale1", actions=["Zoom-Out-2x", "pan_left", "seed"])
    assert offered_follow_ups(job) == ["outpaint_2", "pan_left", "seed"]


def test_no_actions_fall_back_by_task_type_version_and_shape() -> None:
    grid = _job(type="variation", action="variation2")
    assert offered_follow_ups(grid) == [*GRID_FOLLOW_UPS, "seed"]
    upscale = _job(
        type="upscale",
        action="upscale3#2",
        prompt="a fox --v 5 --ar 16:9",
        parameters={"model_version": "5"},
    )
    offered = offered_follow_ups(upscale)
    assert "upscale_2x" in offered and "outpaint_square" in offered
    assert "high_variation" not in offered and offered[-1] == "seed"
    assert "outpaint_square" not in offered_follow_ups(upscale, (512, 512))
    posted_square = _job(type="upscale", action="upscale1", result={"width": 64, "height": 64})
    assert "outpaint_square" not in offered_follow_ups(posted_square)
    default_square = _job(type="upscale", action="upscale1")
    assert "outpaint_square" not in offered_follow_ups(default_square)


def test_seed_is_on_every_generation_task_and_nothing_else() -> None:
    for task_type in ("imagine", "reroll", "variation", "blend", "inpaint", "outpaint", "pan"):
        assert offered_follow_ups(_job(type=task_type))[-1] == "seed"
    assert offered_follow_ups(_job(type="describe")) == []
    assert offered_follow_ups(_job(type="seed")) == []
    assert offered_follow_ups(_job(family="diffusion", type="txt2img")) == []


def test_an_offer_holds_the_follow_ups_the_refused_ones_and_whether_remix_was_on() -> None:
    refused = {"refused_actions": ["pan_left"]}
    wide = _job(type="upscale", action="upscale1", result=refused)
    plain = offer(wide, (1024, 512))
    assert plain.actions == tuple(offered_follow_ups(wide, (1024, 512)))
    assert "outpaint_square" in plain.actions, "the size given is read: a wide image"
    assert plain.refused == {"pan_left"} and not plain.remix
    remixed = offer(_job(type="imagine", parameters={"remix": True}))
    assert remixed.actions == (*GRID_FOLLOW_UPS, "seed") and remixed.remix
    assert not remixed.refused
