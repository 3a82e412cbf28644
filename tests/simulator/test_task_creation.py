"""Creation endpoints of the image task API: auth, body-level failures and field rules."""

from __future__ import annotations

import pytest

from tests.simulator.conftest import FREE_KEY, Api

ENDPOINTS_NEEDING_KEY = (
    "imagine", "reroll", "upscale", "variation", "inpaint", "outpaint", "pan", "describe", "blend",
)  # fmt: skip


@pytest.mark.parametrize("endpoint", ENDPOINTS_NEEDING_KEY)
async def test_creation_without_or_with_a_wrong_key_is_401(api: Api, endpoint: str) -> None:
    for key in (None, "wrong-key"):
        status, answer = await api.post(f"/gen/v2/{endpoint}", {"prompt": "a fox"}, key=key)
        assert status == 401
        assert "API key" in answer["error"]["message"]
    assert api.sim.state.tasks == {}


async def test_seed_fetch_and_multi_fetch_need_no_key_but_refuse_a_wrong_one(api: Api) -> None:
    origin = await api.imagine()
    seed_id = await api.create("seed", {"task_id": origin}, key=None)
    assert seed_id in api.sim.state.tasks
    status, _ = await api.post("/gen/v2/fetch", {"task_id": origin}, key=None)
    assert status == 200
    status, _ = await api.post("/gen/v2/multi_fetch", {"task_ids": [origin]}, key=None)
    assert status == 200
    for path, body in (
        ("/gen/v2/seed", {"task_id": origin}),
        ("/gen/v2/fetch", {"task_id": origin}),
        ("/gen/v2/multi_fetch", {"task_ids": [origin]}),
    ):
        status, _ = await api.post(path, body, key="wrong-key")
        assert status == 401


async def test_imagine_creates_a_task_with_a_uuid(api: Api) -> None:
    task_id = await api.create("imagine", {"prompt": "a lighthouse at dusk"})
    assert len(task_id) == 36 and task_id.count("-") == 4 and task_id[14] == "4"
    assert api.sim.state.creations == {"imagine": 1}
    assert api.sim.state.requests_to("/gen/v2/imagine")[0].created_id == task_id


@pytest.mark.parametrize(
    "raw",
    ["{not json", "[]", '"text"', "", '{"prompt": 5}', '{"prompt": "a", "skip_prompt_check": 1}',
     '{"prompt": "a", "process_mode": "slow", "webhook_endpoint": 5}',
     '{"aspect_ratio": "1:1"}'],
)  # fmt: skip
async def test_unparsable_or_mistyped_bodies_fail_with_body_parsing_failed(
    api: Api, raw: str
) -> None:
    status, answer = await api.post("/gen/v2/imagine", raw=raw)
    assert status == 200
    assert answer == {"task_id": "", "status": "failed", "message": "body parsing failed"}


async def test_derivatives_missing_required_fields_fail_with_body_parsing_failed(api: Api) -> None:
    origin = await api.imagine()
    assert await api.failed("upscale", {"origin_task_id": origin}) == "body parsing failed"
    assert await api.failed("upscale", {"index": "1"}) == "body parsing failed"
    assert await api.failed("variation", {"origin_task_id": origin, "index": 1}) == (
        "body parsing failed"
    )
    assert await api.failed("inpaint", {"origin_task_id": origin}) == "body parsing failed"
    assert await api.failed("describe", {}) == "body parsing failed"
    assert await api.failed("blend", {"image_urls": "https://a.example/x.png"}) == (
        "body parsing failed"
    )
    assert await api.failed("seed", {}, key=None) == "body parsing failed"


async def test_unknown_origin_fails_with_original_task_does_not_exist(api: Api) -> None:
    missing = "00000000-0000-4000-8000-000000000000"
    for endpoint, body in (
        ("reroll", {}),
        ("upscale", {"index": "1"}),
        ("variation", {"index": "1"}),
        ("inpaint", {"mask": "aGVsbG8="}),
        ("outpaint", {}),
        ("pan", {"direction": "up"}),
    ):
        message = await api.failed(endpoint, {"origin_task_id": missing, **body})
        assert message == "original task does not exist"
    assert await api.failed("seed", {"task_id": missing}) == "original task does not exist"


async def test_another_accounts_task_does_not_exist_for_you(api: Api) -> None:
    origin = await api.imagine()
    message = await api.failed("upscale", {"origin_task_id": origin, "index": "1"}, key=FREE_KEY)
    assert message == "original task does not exist"


async def test_an_unfinished_origin_is_refused(api: Api) -> None:
    origin = await api.create("imagine", {"prompt": "a fox"})
    message = await api.refused("upscale", {"origin_task_id": origin, "index": "1"})
    first = api.sim.state.tasks[origin].lifecycle.phases[0][0]
    assert message == f"origin task {origin} is not finished (status: {first})"


@pytest.mark.parametrize(
    ("body", "message"),
    [
        ({"prompt": "   "}, "prompt must not be empty"),
        ({"prompt": "x" * 6001}, "prompt must be at most 6000 characters"),
        (
            {"prompt": "a fox --v 7"},
            "unsupported model version --v 7; use one of 4, 5, 5.1, 5.2, 6",
        ),
        ({"prompt": "a fox --ar wide"}, "--ar must look like W:H with positive whole numbers"),
        ({"prompt": "a fox", "aspect_ratio": "16-9"}, "aspect_ratio must look like W:H"),
        ({"prompt": "a fox", "aspect_ratio": "0:1"}, "aspect_ratio must look like W:H"),
        ({"prompt": "a fox", "aspect_ratio": "5:1"}, "aspect_ratio must be between 1:4 and 4:1"),
        ({"prompt": "a fox", "process_mode": "slow"}, "process_mode must be one of relax, mixed"),
    ],
)
async def test_imagine_field_rules(api: Api, body: dict[str, object], message: str) -> None:
    assert (await api.refused("imagine", body)).startswith(message)
    assert api.sim.state.tasks == {}


async def test_skip_prompt_check_ignores_bad_prompt_flags_and_length(api: Api) -> None:
    task_id = await api.create(
        "imagine", {"prompt": "a fox --v 7 --ar wide " + "x" * 6000, "skip_prompt_check": True}
    )
    task = api.sim.state.tasks[task_id]
    assert (task.version, task.aspect) == ("6", (1, 1))


@pytest.mark.parametrize(
    ("prompt", "version"),
    [("a fox", "6"), ("a fox --v 4", "4"), ("a fox --v 5", "5"), ("a fox --version 5.1", "5.1"),
     ("a fox --v 5.2", "5.2"), ("a fox --v 6.0", "6")],
)  # fmt: skip
async def test_version_comes_from_the_prompt(api: Api, prompt: str, version: str) -> None:
    task_id = await api.create("imagine", {"prompt": prompt})
    assert api.sim.state.tasks[task_id].version == version


async def test_aspect_ratio_field_wins_over_prompt_and_defaults_to_square(api: Api) -> None:
    cases = [
        ({"prompt": "a fox"}, (1, 1)),
        ({"prompt": "a fox --ar 16:9"}, (16, 9)),
        ({"prompt": "a fox --ar 16:9", "aspect_ratio": "2:3"}, (2, 3)),
        ({"prompt": "a fox", "aspect_ratio": "1024:768"}, (4, 3)),
    ]
    for body, aspect in cases:
        task_id = await api.create("imagine", body)
        assert api.sim.state.tasks[task_id].aspect == aspect


@pytest.mark.parametrize(
    ("process_mode", "prompt", "mode"),
    [
        (None, "a fox", "relax"),
        ("", "a fox --fast", "fast"),
        ("mixed", "a fox --turbo", "turbo"),
        (None, "a fox --relax", "relax"),
        ("mixed", "a fox", "relax"),
        ("fast", "a fox --relax", "fast"),
        ("turbo", "a fox", "turbo"),
        ("relax", "a fox --turbo", "relax"),
        (None, "a fox --fast --turbo", "turbo"),
    ],
)
async def test_mode_selection_rules(
    api: Api, process_mode: str | None, prompt: str, mode: str
) -> None:
    body: dict[str, object] = {"prompt": prompt}
    if process_mode is not None:
        body["process_mode"] = process_mode
    task_id = await api.create("imagine", body)
    assert api.sim.state.tasks[task_id].mode == mode
    record = await api.fetch(task_id)
    assert record["meta"]["process_mode"] == "fast", "the account's setting, whatever was asked"


async def test_describe_and_blend_accept_process_mode(api: Api) -> None:
    describe = await api.create(
        "describe", {"image_url": "https://images.example/fox.png", "process_mode": "fast"}
    )
    blend = await api.create(
        "blend",
        {"image_urls": ["https://a.example/1.png", "https://a.example/2.png"],
         "process_mode": "turbo"},
    )  # fmt: skip
    assert api.sim.state.tasks[describe].mode == "fast"
    assert api.sim.state.tasks[blend].mode == "turbo"


@pytest.mark.parametrize(
    ("url", "allowed"),
    [
        ("https://hooks.example.com/genbot", True),
        ("https://hooks.example.com:443/genbot", True),
        ("https://hooks.example.com:8443/genbot", False),
        ("http://hooks.example.com/genbot", False),
        ("ftp://hooks.example.com/genbot", False),
        ("https://", False),
        ("http://127.0.0.1:9000/hook", True),
        ("http://localhost:9000/hook", True),
        ("http://10.0.0.8:9000/hook", False),
    ],
)
async def test_webhook_address_rules_with_insecure_webhooks(
    api: Api, url: str, allowed: bool
) -> None:
    body = {"prompt": "a fox", "webhook_endpoint": url}
    if allowed:
        await api.create("imagine", body)
    else:
        assert "webhook_endpoint" in await api.refused("imagine", body)


async def test_loopback_http_webhooks_need_the_insecure_flag() -> None:
    from tests.simulator.conftest import running

    async with running(insecure_webhooks=False) as api:
        message = await api.refused(
            "imagine", {"prompt": "a fox", "webhook_endpoint": "http://127.0.0.1:9000/hook"}
        )
        assert message == "webhook_endpoint must be an https://domain address"
        await api.create("imagine", {"prompt": "a fox", "webhook_endpoint": ""})


async def test_describe_url_rules(api: Api) -> None:
    for url in ("not a url", "ftp://x.example/a.png"):
        assert "must be an http(s) URL" in await api.refused("describe", {"image_url": url})
    for host in ("cdn.discordapp.com", "media.discordapp.net"):
        message = await api.refused("describe", {"image_url": f"https://{host}/a/b.png"})
        assert message == "image_url: links on the chat platform's CDN are not accepted; re-host it"


async def test_blend_rules(api: Api) -> None:
    one = ["https://a.example/1.png"]
    six = [f"https://a.example/{n}.png" for n in range(6)]
    assert (
        await api.refused("blend", {"image_urls": one})
        == "image_urls must hold 2 to 5 URLs (got 1)"
    )
    assert (
        await api.refused("blend", {"image_urls": six})
        == "image_urls must hold 2 to 5 URLs (got 6)"
    )
    cdn = [*one, "https://cdn.discordapp.com/x.png"]
    assert "image_urls[1]" in await api.refused("blend", {"image_urls": cdn})
    two = [*one, "https://a.example/2.png"]
    message = await api.refused("blend", {"image_urls": two, "dimension": "wide"})
    assert message == "dimension must be square, portrait or landscape (got 'wide')"
    for dimension, aspect in (("square", (1, 1)), ("portrait", (2, 3)), ("landscape", (3, 2))):
        task_id = await api.create("blend", {"image_urls": six[:5], "dimension": dimension})
        assert api.sim.state.tasks[task_id].aspect == aspect


async def test_seed_refuses_a_webhook(api: Api) -> None:
    origin = await api.imagine()
    body = {"task_id": origin, "webhook_endpoint": "https://hooks.example.com/x"}
    assert await api.refused("seed", body) == "seed does not accept webhook_endpoint"


async def test_insufficient_credit_fails_in_the_body_and_creates_nothing() -> None:
    from tests.simulator.conftest import running

    async with running(credits=10) as api:
        message = await api.failed("imagine", {"prompt": "a fox", "process_mode": "turbo"})
        assert message == "insufficient credit balance"
        assert api.sim.state.tasks == {}
        assert api.sim.state.accounts["sim-key"].balance == 10
        await api.create("imagine", {"prompt": "a fox", "process_mode": "fast"})
        assert api.sim.state.accounts["sim-key"].balance == 2
