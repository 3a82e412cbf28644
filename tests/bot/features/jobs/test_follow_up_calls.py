"""The follow-up table: each button's request and the client method that sends it, and the U1
walk — from the core to ``TaskClient.upscale`` — through few files, each entered once."""

from __future__ import annotations

import traceback
from pathlib import Path
from typing import Any

import pytest

from bot.api import (
    InpaintRequest,
    InvalidRequest,
    OutpaintRequest,
    PanRequest,
    RequestModel,
    RerollRequest,
    SeedRequest,
    TaskClient,
    UpscaleRequest,
    VariationRequest,
)
from bot.features.archive import ArchiveFeature
from bot.features.jobs.buttons import LABELS, REFERENCE_ACTION
from bot.features.jobs.describe import DescribeButtons
from bot.features.jobs.diffusion import DiffusionJobs
from bot.features.jobs.follow_up_calls import FOLLOW_UPS, FollowUpInput
from bot.features.jobs.images import ImageJobs
from bot.kernel import MODAL_ACTIONS, REMIX_ACTIONS, REMIX_PREFIX
from tests.bot.features.jobs.support import press, run_command
from tests.bot.harness import harness

ROOT = Path(__file__).resolve().parents[4]
TASK = "7f3c2a1e-0000-4000-8000-000000000001"
GIVEN = FollowUpInput(TASK, "16:9")


@pytest.mark.parametrize(
    ("action", "task_type", "request_", "send"),
    [
        ("upscale2", "upscale", UpscaleRequest(origin_task_id=TASK, index="2"), TaskClient.upscale),
        (
            "upscale_creative",
            "upscale",
            UpscaleRequest(origin_task_id=TASK, index="creative"),
            TaskClient.upscale,
        ),
        (
            "variation3",
            "variation",
            VariationRequest(origin_task_id=TASK, index="3", aspect_ratio="16:9"),
            TaskClient.variation,
        ),
        (
            "high_variation",
            "variation",
            VariationRequest(origin_task_id=TASK, index="high_variation", aspect_ratio="16:9"),
            TaskClient.variation,
        ),
        (
            "reroll",
            "reroll",
            RerollRequest(origin_task_id=TASK, aspect_ratio="16:9"),
            TaskClient.reroll,
        ),
        (
            "outpaint_1.5",
            "outpaint",
            OutpaintRequest(origin_task_id=TASK, zoom_ratio="1.5", aspect_ratio="16:9"),
            TaskClient.outpaint,
        ),
        (
            "outpaint_square",
            "outpaint",
            OutpaintRequest(origin_task_id=TASK, zoom_ratio="1"),
            TaskClient.outpaint,
        ),
        ("pan_left", "pan", PanRequest(origin_task_id=TASK, direction="left"), TaskClient.pan),
        ("seed", "seed", SeedRequest(task_id=TASK), TaskClient.seed),
    ],
)
def test_a_button_builds_one_request_for_one_client_method(
    action: str, task_type: str, request_: RequestModel, send: Any
) -> None:
    follow_up = FOLLOW_UPS[action]
    assert follow_up.task_type == task_type
    assert follow_up.build(GIVEN) == request_
    assert follow_up.send is send


def test_forms_send_what_they_hold_and_remix_sends_the_changed_prompt() -> None:
    zoom = FollowUpInput(TASK, "2:3", prompt="wider", zoom_ratio="1.8")
    assert FOLLOW_UPS["outpaint_custom"].build(zoom) == OutpaintRequest(
        origin_task_id=TASK, zoom_ratio="1.8", aspect_ratio="2:3", prompt="wider"
    )
    region = FollowUpInput(TASK, prompt="a hat", mask="bWFzaw==")
    assert FOLLOW_UPS["vary_region"].build(region) == InpaintRequest(
        origin_task_id=TASK, mask="bWFzaw==", prompt="a hat"
    )
    with pytest.raises(InvalidRequest, match="zoom_ratio"):
        FOLLOW_UPS["outpaint_custom"].build(GIVEN)
    with pytest.raises(InvalidRequest, match="mask"):
        FOLLOW_UPS["vary_region"].build(GIVEN)
    remixed = FOLLOW_UPS["pan_up"].build(FollowUpInput(TASK, prompt="at night"))
    assert remixed.prompt == "at night"


def test_every_follow_up_creation_method_is_in_the_table_once_per_meaning() -> None:
    assert {follow_up.send for follow_up in FOLLOW_UPS.values()} == {
        TaskClient.upscale,
        TaskClient.variation,
        TaskClient.reroll,
        TaskClient.inpaint,
        TaskClient.outpaint,
        TaskClient.pan,
        TaskClient.seed,
    }
    assert not FOLLOW_UPS["seed"].inherits and not FOLLOW_UPS["seed"].webhook
    assert "settings" not in FOLLOW_UPS and "upscale_9x" not in FOLLOW_UPS


def test_every_button_belongs_to_exactly_one_feature_and_image_buttons_to_the_table() -> None:
    owners = [ImageJobs.actions, DescribeButtons.actions, DiffusionJobs.actions]
    owners.append(ArchiveFeature.actions)
    for action in LABELS:
        assert sum(action in owned for owned in owners) == 1, action
    for action in set(ImageJobs.actions) - {REFERENCE_ACTION}:
        assert action.removeprefix(REMIX_PREFIX) in FOLLOW_UPS, action
    assert REFERENCE_ACTION not in FOLLOW_UPS, "a new imagine job, not a follow-up"
    assert REMIX_ACTIONS <= MODAL_ACTIONS


async def test_the_u1_walk_enters_each_file_once_on_its_way_to_the_client(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    walks: list[list[str]] = []
    create = TaskClient._create

    async def observed(client: TaskClient, endpoint: str, request: RequestModel, key: str) -> Any:
        if endpoint == "upscale":
            frames = traceback.extract_stack()[:-1]
            walks.append([str(Path(f.filename).relative_to(ROOT)) for f in frames if _ours(f)])
        return await create(client, endpoint, request, key)

    monkeypatch.setattr(TaskClient, "_create", observed)
    async with harness(tmp_path) as bot:
        alice = bot.actor()
        _, grid = await run_command(bot, alice, "imagine", prompt="a red fox")
        await press(bot, alice, grid, "U1")

    [walk] = walks
    files = [name for index, name in enumerate(walk) if index == 0 or walk[index - 1] != name]
    assert files == [
        "bot/router.py",
        "bot/features/jobs/images.py",
        "bot/features/jobs/starter.py",
        "bot/api/tasks.py",
    ]


def _ours(frame: traceback.FrameSummary) -> bool:
    path = Path(frame.filename)
    return path.is_relative_to(ROOT / "bot") or path.is_relative_to(ROOT / "adapters")
