"""Family B through the typed methods against the simulator."""

from __future__ import annotations

import asyncio
import base64
import uuid
from collections.abc import Callable, Coroutine, Generator
from contextlib import aclosing
from contextvars import Context
from typing import Any, Self

import pytest
from aiohttp import web

from bot.api import (
    AuthenticationError,
    BadRequest,
    BlendRequest,
    DescribeRequest,
    ImagineRequest,
    InpaintRequest,
    InvalidRequest,
    OutpaintRequest,
    PanRequest,
    ProviderClient,
    RefusalKind,
    RerollRequest,
    SeedRequest,
    TaskCreationRefused,
    TaskRecord,
    UpscaleRequest,
    VariationRequest,
)
from simulator.server import RunningSimulator, serve
from tests.bot.api.support import FAST_RETRY, settings_for, sim_config
from tests.sim_holds import one_at_a_time
from tests.sim_time import freeze

MASK = base64.b64encode(b"\x89PNG\r\n\x1a\n fake mask bytes").decode()


async def finished(api: ProviderClient, task_id: str) -> TaskRecord:
    record = await api.tasks.fetch(task_id)
    assert record.task_id == task_id
    assert record.is_finished, record.status
    return record


async def test_imagine_then_every_derivative(sim: RunningSimulator, api: ProviderClient) -> None:
    grid = await api.tasks.imagine(
        ImagineRequest(prompt="a lighthouse --v 6", aspect_ratio="16:9", process_mode="turbo")
    )
    record = await finished(api, grid.task_id)
    assert record.meta.process_mode == "fast", "the account's setting, not the mode asked"
    assert {"reroll", "upscale1", "variation4"} <= set(record.task_result.actions)
    assert record.task_result.image_url and record.task_result.host_url

    reroll = await api.tasks.reroll(RerollRequest(origin_task_id=grid.task_id))
    variation = await api.tasks.variation(VariationRequest(origin_task_id=grid.task_id, index="2"))
    upscale = await api.tasks.upscale(UpscaleRequest(origin_task_id=grid.task_id, index="1"))
    for created in (reroll, variation, upscale):
        derived = await finished(api, created.task_id)
        assert derived.meta.origin_task_id == grid.task_id

    up = await finished(api, upscale.task_id)
    assert "upscale_subtle" in up.task_result.actions
    followups = [
        await api.tasks.upscale(UpscaleRequest(origin_task_id=upscale.task_id, index="subtle")),
        await api.tasks.variation(
            VariationRequest(origin_task_id=upscale.task_id, index="high_variation")
        ),
        await api.tasks.inpaint(
            InpaintRequest(origin_task_id=upscale.task_id, mask=MASK, prompt="a boat")
        ),
        await api.tasks.outpaint(OutpaintRequest(origin_task_id=upscale.task_id, zoom_ratio=2)),  # type: ignore[arg-type]
        await api.tasks.outpaint(
            OutpaintRequest(origin_task_id=upscale.task_id, zoom_ratio="1.25")
        ),
        await api.tasks.pan(PanRequest(origin_task_id=upscale.task_id, direction="left")),
    ]
    for created in followups:
        assert (await finished(api, created.task_id)).meta.origin_task_id == upscale.task_id

    sent = {r.path: r.body for r in sim.state.requests}
    assert sent["/gen/v2/imagine"] == {
        "prompt": "a lighthouse --v 6",
        "aspect_ratio": "16:9",
        "process_mode": "turbo",
    }
    assert sent["/gen/v2/pan"] == {"origin_task_id": upscale.task_id, "direction": "left"}
    assert sim.state.requests_to("/gen/v2/outpaint")[0].body["zoom_ratio"] == "2"


async def test_describe_returns_four_prompts(api: ProviderClient) -> None:
    created = await api.tasks.describe(
        DescribeRequest(image_url="https://images.example.com/fox.png", process_mode="fast")
    )
    prompts = (await finished(api, created.task_id)).task_result.describe_prompts()
    assert len(prompts) == 4 and all(prompts)


async def test_blend(api: ProviderClient) -> None:
    created = await api.tasks.blend(
        BlendRequest(
            image_urls=["https://e.com/a.png", "https://e.com/b.png", "https://e.com/c.png"],
            dimension="portrait",
        )
    )
    assert (await finished(api, created.task_id)).task_result.image_url


async def test_seed_workflow(api: ProviderClient) -> None:
    grid = await api.tasks.imagine(ImagineRequest(prompt="a fox"))
    await finished(api, grid.task_id)
    seed_task = await api.tasks.seed(SeedRequest(task_id=grid.task_id))
    assert seed_task.task_id != grid.task_id
    assert (await finished(api, seed_task.task_id)).task_result.seed.strip()


async def test_multi_fetch_splits_into_calls_of_fifty(
    sim: RunningSimulator, api: ProviderClient
) -> None:
    created = [
        (await api.tasks.imagine(ImagineRequest(prompt=f"fox {i}"))).task_id for i in range(3)
    ]
    unknown = [str(uuid.UUID(int=i)) for i in range(117)]
    wanted = created + unknown + created[:1]
    records = await api.tasks.multi_fetch(wanted)
    assert set(records) == set(created) | set(unknown)
    assert all(records[task_id] is not None for task_id in created)
    assert all(records[task_id] is None for task_id in unknown)
    calls = sim.state.requests_to("/gen/v2/multi_fetch")
    assert sorted(len(call.body["task_ids"]) for call in calls) == [20, 50, 50]
    assert await api.tasks.multi_fetch([]) == {}
    assert len(sim.state.requests_to("/gen/v2/multi_fetch")) == 3


async def test_multi_fetch_parts_come_as_the_calls_are_answered_a_failed_call_as_its_own(
    sim: RunningSimulator, api: ProviderClient, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Each step yields the answers that came since the caller last took some: the first
    alone, then together the ones answered while the caller was busy (it took them one at a
    time, each as a step of its own)."""
    monkeypatch.setattr("bot.api.tasks.MULTI_FETCH_CONCURRENCY", 1)
    created = [
        (await api.tasks.imagine(ImagineRequest(prompt=f"fox {i}"))).task_id for i in range(3)
    ]
    wanted = created + [str(uuid.UUID(int=i)) for i in range(167)]
    async with (
        one_at_a_time(sim, "/gen/v2/multi_fetch") as calls,
        aclosing(api.tasks.multi_fetch_parts(wanted)) as parts,
    ):
        coming = asyncio.ensure_future(anext(parts))
        await calls.arrived(1)
        calls.let_through()
        [first] = await coming
        await calls.arrived(2)
        for account in sim.state.accounts.values():
            account.revoked = True
        calls.let_through()
        await calls.arrived(3)  # once the second call was answered
        for account in sim.state.accounts.values():
            account.revoked = False
        calls.let_through()
        await calls.arrived(4)  # once the third call was answered
        failed, third = await anext(parts)
        calls.let_through()
        [last] = await anext(parts)
        with pytest.raises(StopAsyncIteration):
            await anext(parts)

    assert first.task_ids == tuple(wanted[:50]) and first.error is None
    assert set(first.records) == set(first.task_ids)
    assert all(first.records[task_id] is not None for task_id in created)
    assert failed.task_ids == tuple(wanted[50:100]) and not failed.records
    assert isinstance(failed.error, AuthenticationError)
    assert third.task_ids == tuple(wanted[100:150]) and third.error is None
    assert last.task_ids == tuple(wanted[150:]) and last.error is None
    assert set(last.records) == set(last.task_ids)


class CountedTask(asyncio.Task[Any]):
    """A task that counts the done-callbacks added to it."""

    registered = 0

    def add_done_callback(
        self, fn: Callable[[Self], object], *, context: Context | None = None
    ) -> None:
        self.registered += 1
        super().add_done_callback(fn, context=context)


async def test_multi_fetch_parts_wait_for_the_next_answer_once_per_call_not_once_per_step(
    api: ProviderClient, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Forty calls answered one at a time over several steps: each call has a done-callback
    added twice in all (the generator's, and the wait for every call as it ends), however many
    steps there are; waiting on every pending call at each step would add one to each pending
    call per step (then one pending at two steps has three)."""
    monkeypatch.setattr("bot.api.tasks.MULTI_FETCH_CONCURRENCY", 1)
    loop = asyncio.get_running_loop()
    calls: list[CountedTask] = []

    def counted(
        loop: asyncio.AbstractEventLoop,
        coro: Coroutine[Any, Any, Any] | Generator[Any, None, Any],
        *,
        context: Context | None = None,
    ) -> asyncio.Future[Any]:
        if getattr(coro, "__name__", "") != "_multi_fetch_part":
            return asyncio.Task(coro, loop=loop, context=context)
        call = CountedTask(coro, loop=loop, context=context)
        calls.append(call)
        return call

    wanted = [str(uuid.UUID(int=i)) for i in range(40 * 50)]
    previous = loop.get_task_factory()
    loop.set_task_factory(counted)
    try:
        async with asyncio.timeout(30), aclosing(api.tasks.multi_fetch_parts(wanted)) as parts:
            steps = [len(answers) async for answers in parts]
    finally:
        loop.set_task_factory(previous)

    assert len(calls) == 40 and len(steps) > 1
    assert sum(steps) == 40
    assert max(call.registered for call in calls) <= 2, sum(call.registered for call in calls)


async def test_multi_fetch_calls_spread_come_evenly_over_the_time_given(
    sim: RunningSimulator, api: ProviderClient
) -> None:
    """Six calls spread over an hour: the second starts ten minutes after the first, so when
    the first is answered it is the only one sent; closing the parts cancels the waiting calls,
    which are never sent."""
    wanted = [str(uuid.UUID(int=i)) for i in range(300)]
    async with asyncio.timeout(10):
        async with aclosing(api.tasks.multi_fetch_parts(wanted, spread=3600.0)) as parts:
            [first] = await anext(parts)
            assert len(sim.state.requests_to("/gen/v2/multi_fetch")) == 1
    assert first.task_ids == tuple(wanted[:50]) and first.error is None
    await asyncio.sleep(0.05)
    assert len(sim.state.requests_to("/gen/v2/multi_fetch")) == 1


async def test_multi_fetch_calls_that_go_at_once_are_not_spread(
    sim: RunningSimulator, api: ProviderClient
) -> None:
    wanted = [str(uuid.UUID(int=i)) for i in range(200)]
    async with (
        asyncio.timeout(10),
        aclosing(api.tasks.multi_fetch_parts(wanted, spread=3600.0)) as parts,
    ):
        answered = [part async for answers in parts for part in answers]
    assert sorted(len(part.task_ids) for part in answered) == [50] * 4
    assert len(sim.state.requests_to("/gen/v2/multi_fetch")) == 4


async def test_multi_fetch_leaves_out_tasks_in_flight_in_the_status_the_caller_knows() -> None:
    async with (
        serve(sim_config(time_scale=1.0)) as sim,
        ProviderClient(settings_for(sim.base_url), retry=FAST_RETRY) as api,
    ):
        freeze(sim)
        same, moved, untold = [
            (await api.tasks.imagine(ImagineRequest(prompt=f"fox {i}"))).task_id for i in range(3)
        ]
        unknown = str(uuid.UUID(int=7))
        seen = await api.tasks.multi_fetch([same, moved, untold])
        status = {task_id: record.status for task_id, record in seen.items() if record}
        assert len(status) == 3 and not any(record.is_done for record in seen.values() if record)
        other = "staged" if status[moved] != "staged" else "pending"
        known = {same: status[same], moved: other, unknown: "pending"}

        records = await api.tasks.multi_fetch([same, moved, untold, unknown], known=known)

        assert set(records) == {moved, untold, unknown}, "the task in flight as known is left out"
        assert (records[moved] or TaskRecord()).status == status[moved]
        assert records[untold] is not None and records[unknown] is None
        sim.advance(3600)
        done = await api.tasks.multi_fetch([same], known=known)
        assert (done[same] or TaskRecord()).is_finished, "a finished task always comes"


async def test_creation_refusals_are_typed(api: ProviderClient) -> None:
    with pytest.raises(TaskCreationRefused) as missing:
        await api.tasks.reroll(RerollRequest(origin_task_id=str(uuid.uuid4())))
    assert missing.value.kind is RefusalKind.ORIGIN_NOT_FOUND
    grid = await api.tasks.imagine(ImagineRequest(prompt="a fox"))
    await api.tasks.upscale(UpscaleRequest(origin_task_id=grid.task_id, index="3"))
    with pytest.raises(TaskCreationRefused) as twice:
        await api.tasks.upscale(UpscaleRequest(origin_task_id=grid.task_id, index="3"))
    assert twice.value.kind is RefusalKind.SAME_INDEX_EXISTS
    assert twice.value.user_message == "That button was already used on this image."


async def test_insufficient_credit_is_typed() -> None:
    async with (
        serve(sim_config(credits=0)) as poor,
        ProviderClient(settings_for(poor.base_url), retry=FAST_RETRY) as api,
    ):
        with pytest.raises(TaskCreationRefused) as caught:
            await api.tasks.imagine(ImagineRequest(prompt="a fox"))
    assert caught.value.kind is RefusalKind.INSUFFICIENT_CREDIT


async def test_fetch_of_an_unknown_task_is_a_bad_request(api: ProviderClient) -> None:
    with pytest.raises(BadRequest) as caught:
        await api.tasks.fetch(str(uuid.uuid4()))
    assert caught.value.provider_message


async def test_api_key_header_is_sent_and_checked(sim: RunningSimulator) -> None:
    async with ProviderClient(settings_for(sim.base_url, key="wrong"), retry=FAST_RETRY) as api:
        with pytest.raises(AuthenticationError):
            await api.tasks.imagine(ImagineRequest(prompt="a fox"))
    assert len(sim.state.requests_to("/gen/v2/imagine")) == 1


async def test_loopback_webhook_needs_the_explicit_opt_in() -> None:
    hook = "http://127.0.0.1:9/hook"
    async with serve(sim_config(insecure_webhooks=True)) as sim:
        async with ProviderClient(
            settings_for(sim.base_url), retry=FAST_RETRY, allow_insecure_webhooks=True
        ) as api:
            created = await api.tasks.imagine(
                ImagineRequest(prompt="a fox", webhook_endpoint=hook, webhook_secret="s3")
            )
        assert created.task_id
        (sent,) = sim.state.requests_to("/gen/v2/imagine")
    assert sent.body["webhook_endpoint"] == hook and sent.body["webhook_secret"] == "s3"


async def test_https_webhook_is_sent(sim: RunningSimulator, api: ProviderClient) -> None:
    hook = "https://hooks.example.com/genbot"
    await api.tasks.upscale(
        UpscaleRequest(
            origin_task_id=(await api.tasks.imagine(ImagineRequest(prompt="fox"))).task_id,
            index="1",
            webhook_endpoint=hook,
        )
    )
    assert sim.state.requests_to("/gen/v2/upscale")[0].body["webhook_endpoint"] == hook


async def test_the_upstream_cdn_is_a_setting(sim: RunningSimulator) -> None:
    # docs/provider.md#upstream-cdn: the documentation names no host; Discord's are the default.
    cdn = "https://files.example-cdn.com/a.png"
    discord = "https://cdn.discordapp.com/attachments/1/2/a.png"
    settings = settings_for(sim.base_url, upstream_cdn_hosts=["example-cdn.com"])
    async with ProviderClient(settings, retry=FAST_RETRY) as api:
        with pytest.raises(InvalidRequest, match=r"must not be a files\.example-cdn\.com link"):
            await api.tasks.describe(DescribeRequest(image_url=cdn))
        with pytest.raises(InvalidRequest, match="image_urls\\[1\\]"):
            await api.tasks.blend(BlendRequest(image_urls=["https://a.example/x.png", cdn]))
        assert sim.state.requests_to("/gen/v2/") == []
        with pytest.raises(BadRequest, match="chat platform's CDN"):
            await api.tasks.describe(DescribeRequest(image_url=discord))
    async with ProviderClient(settings_for(sim.base_url), retry=FAST_RETRY) as api:
        with pytest.raises(InvalidRequest, match=r"cdn\.discordapp\.com"):
            api.tasks.check(DescribeRequest(image_url=discord))


async def test_reads_send_the_key_too(sim: RunningSimulator) -> None:
    # docs/provider.md#read-keys: the simulator reads without a key but checks one it is sent.
    settings = settings_for(sim.base_url, key="wrong-key")
    async with ProviderClient(settings, retry=FAST_RETRY) as api:
        with pytest.raises(AuthenticationError):
            await api.tasks.fetch("some-task")
        with pytest.raises(AuthenticationError):
            await api.tasks.multi_fetch(["some-task"])
        with pytest.raises(AuthenticationError):
            await api.tasks.seed(SeedRequest(task_id="some-task"))
        with pytest.raises(AuthenticationError):
            await api.diffusion.fetch(100001)


async def test_multi_fetch_learns_nothing_of_an_id_its_answer_leaves_out() -> None:
    # Only null says a task is unresolved (spec 4.2, 3.1): an id missing from ``data`` is not.
    record = {"task_id": "t1", "status": "finished", "task_result": {}, "meta": {}}

    async def multi_fetch(request: web.Request) -> web.Response:
        await request.read()
        data = {"t1": record, "t3": None}
        return web.json_response({"code": 200, "data": data, "message": "success"})

    app = web.Application()
    app.router.add_post("/gen/v2/multi_fetch", multi_fetch)
    runner = web.AppRunner(app, shutdown_timeout=0.1)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    try:
        url = f"http://127.0.0.1:{runner.addresses[0][1]}"
        async with ProviderClient(settings_for(url), retry=FAST_RETRY) as api:
            records = await api.tasks.multi_fetch(["t1", "t2", "t3"])
    finally:
        await runner.cleanup()
    assert set(records) == {"t1", "t3"} and records["t3"] is None
    assert (records["t1"] or TaskRecord()).is_finished
