"""Rate limits as a queue: 429s waited out within a bound, Retry-After read both ways, pacing."""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime, timedelta
from email.utils import format_datetime

import pytest

from bot.api import ChatMessage, ChatRequest, ImagineRequest, ProviderClient, ProviderRateLimited
from bot.api.ratelimit import (
    RateLimitPolicy,
    RequestPacer,
    Wait,
    observe_waits,
    retry_after_seconds,
)
from simulator.server import serve
from tests.bot.api.support import FAST_RETRY, settings_for, sim_config
from tests.bot.features.jobs.proxy import faulty_proxy
from tests.sim_time import a_minute_passes_after_a_429, freeze

CHAT_PATH = "/v1/chat/completions"
QUICK = RateLimitPolicy(max_wait=5.0, base_backoff=0.05, max_backoff=0.2)


def ask(text: str) -> ChatRequest:
    return ChatRequest(model="llm-3.5-turbo", messages=[ChatMessage(role="user", content=text)])


def test_retry_after_in_seconds_or_as_an_http_date() -> None:
    now = 1_700_000_000.0
    in_30s = format_datetime(datetime.fromtimestamp(now + 30, UTC), usegmt=True)
    assert retry_after_seconds("12") == 12.0
    assert retry_after_seconds(" 1.5 ") == 1.5
    assert retry_after_seconds(in_30s, now) == pytest.approx(30.0)
    assert retry_after_seconds("-4") == 0.0
    assert retry_after_seconds("99999999") == 24 * 3600.0
    for unreadable in (None, "", "soon", "nan", "Wed, 99 Foo 2024"):
        assert retry_after_seconds(unreadable) is None


async def test_a_streamed_chat_429_is_waited_out_before_the_first_token() -> None:
    async with (
        serve(sim_config(chat_rpm=1, time_scale=0.01)) as sim,
        ProviderClient(settings_for(sim.base_url), retry=FAST_RETRY) as api,
    ):
        freeze(sim)
        await api.chat.complete(ask("echo: first"))
        waits: list[Wait] = []

        async def second() -> str:
            async with api.chat.stream(ask("echo: second")) as stream:
                async for _ in stream:
                    pass
            return stream.text

        with observe_waits(waits.append):
            text, _ = await asyncio.gather(second(), a_minute_passes_after_a_429(sim))
        assert text == "second"
        statuses = [r.status for r in sim.state.requests_to(CHAT_PATH)]
        assert statuses == [200, 429, 200]
        assert waits == [Wait(0, 1.0)]


async def test_past_the_bound_the_caller_is_told_when_to_try_again() -> None:
    async with (
        serve(sim_config(chat_rpm=1, time_scale=1.0)) as sim,
        ProviderClient(
            settings_for(sim.base_url, rate_limit_max_wait=5.0), retry=FAST_RETRY
        ) as api,
    ):
        await api.chat.complete(ask("echo: first"))
        waits: list[Wait] = []
        waited = asyncio.Event()

        def seen(wait: Wait) -> None:
            waits.append(wait)
            waited.set()

        with observe_waits(seen):
            second = asyncio.create_task(api.chat.complete(ask("echo: second")))
        watching = asyncio.create_task(waited.wait())
        await asyncio.wait((second, watching), return_when=asyncio.FIRST_COMPLETED)
        for task in (second, watching):
            task.cancel()
        assert waits == [], "a 429 asking for longer than the bound is not waited out"
        with pytest.raises(ProviderRateLimited) as raised:
            second.result()
        assert raised.value.retry_after is not None and raised.value.retry_after > 50
        assert raised.value.user_message == (
            "The provider is rate-limiting genbot; try again in about 60 s."
        )
        assert [r.status for r in sim.state.requests_to(CHAT_PATH)] == [200, 429]


@pytest.mark.parametrize("retry_after", ["date", None])
async def test_a_creation_429_is_retried_and_creates_one_task(retry_after: str | None) -> None:
    async with serve(sim_config()) as sim, faulty_proxy(sim.base_url) as proxy:
        when = datetime.now(UTC) + timedelta(seconds=1)
        proxy.retry_after = format_datetime(when, usegmt=True) if retry_after else None
        proxy.faults["/gen/v2/imagine"] = ["rate_limited", "rate_limited"]
        async with ProviderClient(
            settings_for(proxy.base_url), retry=FAST_RETRY, rate_limits=QUICK
        ) as api:
            waits: list[Wait] = []
            with observe_waits(waits.append):
                created = await api.tasks.imagine(ImagineRequest(prompt="a fox"))
        assert created.task_id in sim.state.tasks and len(sim.state.tasks) == 1
        assert [fault for _, fault in proxy.injected] == ["rate_limited", "rate_limited"]
        assert len(waits) == 2 and all(w.ahead == 0 and w.seconds is not None for w in waits)
        assert all(w.seconds is not None and w.seconds <= 2.0 for w in waits)


async def test_a_retry_after_of_zero_on_every_429_is_backed_off_from_the_second() -> None:
    """It was taken as given each time: a provider answering ``Retry-After: 0`` to every try
    was asked again at once, as fast as it answered, until the bound."""
    async with serve(sim_config()) as sim, faulty_proxy(sim.base_url) as proxy:
        proxy.retry_after = "0"
        proxy.faults["/gen/v2/imagine"] = ["rate_limited"] * 3
        async with ProviderClient(
            settings_for(proxy.base_url), retry=FAST_RETRY, rate_limits=QUICK
        ) as api:
            waits: list[Wait] = []
            with observe_waits(waits.append):
                await api.tasks.imagine(ImagineRequest(prompt="a fox"))
        assert waits == [Wait(0, 0.0), Wait(0, 0.05), Wait(0, 0.1)]


async def test_the_pacer_serves_in_order_and_reports_positions() -> None:
    pacer = RequestPacer(per_minute=1, minute=0.3)
    order: list[str] = []
    seen: dict[str, list[Wait]] = {"a": [], "b": [], "c": []}

    async def request(name: str) -> None:
        with observe_waits(seen[name].append):
            await pacer.acquire(max_wait=5.0)
        order.append(name)

    tasks = []
    for name in ("a", "b", "c"):
        tasks.append(asyncio.create_task(request(name)))
        await asyncio.sleep(0)
    await asyncio.gather(*tasks)

    assert order == ["a", "b", "c"]
    assert seen["a"] == []
    assert [w.ahead for w in seen["b"]] == [0]
    assert [w.ahead for w in seen["c"]] == [1, 0]
    assert seen["c"][0].seconds == pytest.approx(0.6, abs=0.1)


async def test_the_pacer_refuses_at_once_what_would_wait_too_long() -> None:
    pacer = RequestPacer(per_minute=1, per_day=2, minute=0.05, day=30.0)
    await pacer.acquire(max_wait=1.0)
    await pacer.acquire(max_wait=1.0)
    with pytest.raises(ProviderRateLimited) as raised:
        await pacer.acquire(max_wait=1.0)
    assert raised.value.retry_after == pytest.approx(30.0, abs=0.5)
    assert pacer.waiting == 0
