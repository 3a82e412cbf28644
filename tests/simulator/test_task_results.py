"""fetch and multi_fetch records, actions, describe results and served PNGs."""

from __future__ import annotations

import io

import pytest
from PIL import Image

from tests.simulator.conftest import Api, running

TASK_RESULT_FIELDS = {
    "image_url", "image_id", "seed", "result_message_id", "credit", "message", "error_messages",
    "service_unavailable", "need_retry", "warn_notify", "actions",
}  # fmt: skip
META_FIELDS = {
    "account_id", "task_type", "origin_task_id", "multi_bots", "created_at", "started_at",
    "process_mode", "frozen_credit", "task_request", "task_input", "task_param",
}  # fmt: skip
GRID_ACTIONS = ["reroll", "upscale1", "upscale2", "upscale3", "upscale4",
                "variation1", "variation2", "variation3", "variation4"]  # fmt: skip


def png(data: bytes) -> Image.Image:
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    image = Image.open(io.BytesIO(data))
    image.load()
    assert image.format == "PNG"
    return image


async def test_fetch_record_has_the_fields_of_2_6_to_2_8(api: Api) -> None:
    task_id = await api.create(
        "imagine",
        {
            "prompt": "a fox --fast",
            "webhook_endpoint": "https://h.example/x",
            "webhook_secret": "s3",
        },
    )
    record = await api.fetch(task_id)
    assert set(record) == {"task_id", "task_type", "process_time", "status", "task_result", "meta"}
    assert record["task_result"].keys() == TASK_RESULT_FIELDS | {"host_url"}
    assert record["meta"].keys() == META_FIELDS
    first = api.sim.state.tasks[task_id].lifecycle.phases[0][0]
    assert (record["task_id"], record["task_type"], record["status"]) == (
        task_id,
        "imagine",
        first,
    )
    assert record["meta"]["created_at"] == 1_700_000_000 and record["meta"]["started_at"] == 0
    assert record["meta"]["task_request"]["webhook_secret"] == "***"
    assert "sim-key" not in str(record)
    api.sim.advance(1000)
    record = await api.fetch(task_id)
    result = record["task_result"]
    assert record["status"] == "finished"
    assert result["actions"] == GRID_ACTIONS
    assert result["image_url"] == f"{api.sim.base_url}/images/{result['image_id']}.png"
    assert result["host_url"] == f"{api.sim.base_url}/host/{result['image_id']}.png"
    assert result["credit"] == 8 and result["seed"] == "" and result["result_message_id"]
    assert record["meta"]["started_at"] >= record["meta"]["created_at"]


async def test_multi_fetch_envelope_extras_and_nulls(api: Api) -> None:
    done = await api.imagine()
    running = await api.create("imagine", {"prompt": "a wolf"})
    unknown = "00000000-0000-4000-8000-000000000000"
    status, answer = await api.post("/gen/v2/multi_fetch", {"task_ids": [done, running, unknown]})
    assert status == 200
    assert answer["code"] == 200 and answer["message"] == "success"
    assert answer["data"][unknown] is None
    finished, pending = answer["data"][done], answer["data"][running]
    assert finished["task_result"].keys() == TASK_RESULT_FIELDS | {
        "host_image_url", "permanent_url", "quota_used"
    }  # fmt: skip
    assert finished["meta"].keys() == META_FIELDS | {
        "bot_hash",
        "bot_id",
        "ended_at",
        "quota_frozen",
    }
    assert finished["retry_count"] >= 0
    assert finished["task_result"]["permanent_url"].endswith(".png")
    assert finished["task_result"]["quota_used"] == 4
    assert finished["meta"]["ended_at"] > 0 and finished["meta"]["quota_frozen"] == 0
    assert pending["meta"]["ended_at"] == 0 and pending["meta"]["quota_frozen"] == 4
    assert isinstance(finished["meta"]["bot_id"], int) and finished["meta"]["bot_hash"]


async def test_multi_fetch_limits(api: Api) -> None:
    ids = [f"id-{n}" for n in range(50)]
    status, answer = await api.post("/gen/v2/multi_fetch", {"task_ids": ids})
    assert status == 200 and list(answer["data"].values()) == [None] * 50
    status, answer = await api.post("/gen/v2/multi_fetch", {"task_ids": [*ids, "one-more"]})
    assert status == 400
    assert answer["error"]["message"] == "task_ids holds at most 50 ids (got 51)"
    status, answer = await api.post("/gen/v2/multi_fetch", {"task_ids": []})
    assert (status, answer["data"]) == (200, {})
    for body in ({}, {"task_ids": "abc"}, {"task_ids": [1]}):
        status, answer = await api.post("/gen/v2/multi_fetch", body)
        assert status == 400
        assert answer["error"]["message"] == "task_ids is required and must be an array of strings"


async def test_fetch_errors(api: Api) -> None:
    status, answer = await api.post("/gen/v2/fetch", {"task_id": "nope"})
    assert (status, answer["error"]["message"]) == (400, "task nope does not exist")
    status, answer = await api.post("/gen/v2/fetch", {})
    assert (status, answer["error"]["message"]) == (400, "task_id is required and must be a string")
    status, answer = await api.post("/gen/v2/fetch", raw="{oops")
    assert (status, answer["error"]["message"]) == (400, "the body must be a JSON object")


@pytest.mark.parametrize(
    ("version", "aspect", "expected"),
    [
        ("6", "1:1", ["high_variation", "low_variation", "vary_region", "outpaint_2",
                      "outpaint_1.5", "outpaint_custom", "pan_left", "pan_right", "pan_up",
                      "pan_down", "upscale_subtle", "upscale_creative"]),
        ("5.2", "16:9", ["high_variation", "low_variation", "vary_region", "outpaint_2",
                         "outpaint_1.5", "outpaint_custom", "outpaint_square", "pan_left",
                         "pan_right", "pan_up", "pan_down", "upscale_2x", "upscale_4x"]),
        ("5", "1:1", ["vary_region", "outpaint_2", "outpaint_1.5", "outpaint_custom", "pan_left",
                      "pan_right", "pan_up", "pan_down", "upscale_2x", "upscale_4x"]),
        ("4", "2:3", ["vary_region", "outpaint_2", "outpaint_1.5", "outpaint_custom",
                      "outpaint_square", "pan_left", "pan_right", "pan_up", "pan_down",
                      "upscale_light", "upscale_beta"]),
    ],
)  # fmt: skip
async def test_upscale_actions_by_version_and_shape(
    api: Api, version: str, aspect: str, expected: list[str]
) -> None:
    upscale = await api.upscale(await api.imagine(f"a fox --v {version} --ar {aspect}"))
    assert (await api.fetch(upscale))["task_result"]["actions"] == expected


async def test_second_upscales_offer_no_further_upscale(api: Api) -> None:
    first = await api.upscale(await api.imagine("a fox --v 6"))
    second = await api.upscale(first, "subtle")
    actions = (await api.fetch(second))["task_result"]["actions"]
    assert "high_variation" in actions
    assert not [a for a in actions if a.startswith("upscale_")]


async def test_describe_returns_four_prompts_and_numbered_message(api: Api) -> None:
    task_id = await api.finished("describe", {"image_url": "https://img.example/fox.png"})
    result = (await api.fetch(task_id))["task_result"]
    prompts = result["prompts"]
    assert len(prompts) == 4 and len(set(prompts)) == 4
    assert all(isinstance(p, str) and p.endswith("--ar 1:1") for p in prompts)
    assert result["message"] == "\n".join(
        f"{digit} {prompt}" for digit, prompt in zip(("1️⃣", "2️⃣", "3️⃣", "4️⃣"), prompts, strict=True)
    )
    assert result["actions"] == [] and result["image_url"] == ""
    other = await api.finished("describe", {"image_url": "https://img.example/lighthouse.jpg"})
    again = await api.finished("describe", {"image_url": "https://img.example/fox.png"})
    assert (await api.fetch(other))["task_result"]["prompts"] != prompts
    assert (await api.fetch(again))["task_result"]["prompts"] == prompts


@pytest.mark.parametrize(
    ("aspect", "size"), [("1:1", (512, 512)), ("16:9", (512, 288)), ("2:3", (342, 512))]
)
async def test_grid_images_are_2x2_pngs_respecting_the_aspect_ratio(
    api: Api, aspect: str, size: tuple[int, int]
) -> None:
    record = await api.fetch(await api.imagine("a fox", aspect_ratio=aspect))
    status, data = await api.download(record["task_result"]["image_url"])
    assert status == 200
    image = png(data)
    assert image.size == size
    half_w, half_h = size[0] // 2, size[1] // 2
    quadrants = [image.crop((x, y, x + half_w, y + half_h)).tobytes()
                 for y in (0, half_h) for x in (0, half_w)]  # fmt: skip
    assert len(set(quadrants)) == 4
    for area in ("host", "permanent"):
        assert (await api.download(record["task_result"]["image_url"].replace("images", area)))[
            1
        ] == data


async def test_upscale_image_is_one_picture_resembling_its_grid_cell(api: Api) -> None:
    grid = await api.imagine("a fox", aspect_ratio="16:9")
    upscale = await api.upscale(grid, "3")
    second = await api.upscale(upscale, "creative")
    _, grid_png = await api.download((await api.fetch(grid))["task_result"]["image_url"])
    _, up_png = await api.download((await api.fetch(upscale))["task_result"]["image_url"])
    _, second_png = await api.download((await api.fetch(second))["task_result"]["image_url"])
    assert png(up_png).size == (384, 216)
    assert png(second_png).size == (512, 288)
    cell = png(grid_png).crop((0, 144, 256, 288)).convert("L").resize((16, 9))
    mine = png(up_png).convert("L").resize((16, 9))
    other = png(grid_png).crop((256, 0, 512, 144)).convert("L").resize((16, 9))

    def distance(a: Image.Image, b: Image.Image) -> int:
        return sum(abs(x - y) for x, y in zip(a.tobytes(), b.tobytes(), strict=True))

    assert distance(cell, mine) < distance(other, mine)


async def test_different_prompts_look_different(api: Api) -> None:
    first = await api.fetch(await api.imagine("a red fox"))
    second = await api.fetch(await api.imagine("a castle in the clouds"))
    _, one = await api.download(first["task_result"]["image_url"])
    _, two = await api.download(second["task_result"]["image_url"])
    colors_one = png(one).convert("RGB").resize((1, 1)).getpixel((0, 0))
    colors_two = png(two).convert("RGB").resize((1, 1)).getpixel((0, 0))
    assert colors_one != colors_two


async def test_images_are_not_served_before_the_task_finishes_or_when_unknown(api: Api) -> None:
    task_id = await api.create("imagine", {"prompt": "a fox"})
    image_id = api.sim.state.tasks[task_id].image_id
    status, _ = await api.download(f"{api.sim.base_url}/images/{image_id}.png")
    assert status == 404
    api.sim.advance(1000)
    status, _ = await api.download(f"{api.sim.base_url}/images/{image_id}.png")
    assert status == 200
    status, _ = await api.download(f"{api.sim.base_url}/images/unknown.png")
    assert status == 404


async def test_every_grid_kind_serves_a_grid(api: Api) -> None:
    grid = await api.imagine()
    upscale = await api.upscale(grid)
    urls = ["https://a.example/1.png", "https://a.example/2.png"]
    for endpoint, body in (
        ("reroll", {"origin_task_id": grid}),
        ("variation", {"origin_task_id": grid, "index": "4"}),
        ("variation", {"origin_task_id": upscale, "index": "low_variation"}),
        ("inpaint", {"origin_task_id": upscale, "mask": "aGVsbG8="}),
        ("outpaint", {"origin_task_id": upscale, "zoom_ratio": "1.5"}),
        ("pan", {"origin_task_id": upscale, "direction": "down"}),
        ("blend", {"image_urls": urls, "dimension": "portrait"}),
    ):
        record = await api.fetch(await api.finished(endpoint, body))
        assert record["task_result"]["actions"] == GRID_ACTIONS, endpoint
        status, data = await api.download(record["task_result"]["image_url"])
        assert status == 200
        width, height = png(data).size
        assert max(width, height) == 512


async def test_plain_images_keep_their_size_but_are_one_flat_picture() -> None:
    async with running(plain_images=True) as api:
        record = await api.fetch(await api.imagine("a fox", aspect_ratio="16:9"))
        status, data = await api.download(record["task_result"]["image_url"])
    image = png(data)
    assert status == 200 and image.size == (512, 288)
    assert len(image.getcolors() or []) == 1
