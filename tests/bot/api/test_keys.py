"""The pool of provider keys against the simulator's accounts over HTTP: each call goes with
the key it names, the provider's refusals take a key out (logged and counted by name, never
the secret), task ids are their account's, and chat moves to another key."""

from __future__ import annotations

import logging
import random
from collections import Counter

import pytest
from prometheus_client import REGISTRY
from pydantic import SecretStr, ValidationError

from bot.api import (
    AuthenticationError,
    BadRequest,
    ChatMessage,
    ChatRequest,
    ImagineRequest,
    KeyPool,
    ProviderClient,
    RefusalKind,
    TaskCreationRefused,
    UpscaleRequest,
)
from bot.api.settings import KeySettings
from bot.kernel import ApiSettings
from simulator.server import serve
from simulator.task_model import account_id
from tests.bot.api.support import FAST_RETRY, settings_for, sim_config

SECRETS = {"main": "main-secret-1", "spare": "spare-secret-2", "gone": "gone-secret-3"}


def keys(**weights: float) -> list[KeySettings]:
    return [
        KeySettings(name=name, key=SecretStr(SECRETS[name]), weight=weight)
        for name, weight in weights.items()
    ]


def failures(key: str, kind: str) -> float:
    found = REGISTRY.get_sample_value(
        "genbot_provider_key_failures_total", {"key": key, "kind": kind}
    )
    return found or 0.0


def test_a_lone_key_is_a_pool_of_one_and_a_pool_is_checked_at_load() -> None:
    [one] = ApiSettings(key=SecretStr("k")).pool()
    assert one.name == "default" and one.key.get_secret_value() == "k" and one.weight == 1
    assert ApiSettings().pool() == []
    assert [k.name for k in ApiSettings(keys=keys(main=1, spare=2)).pool()] == ["main", "spare"]
    with pytest.raises(ValidationError, match="not both"):
        ApiSettings(key=SecretStr("k"), keys=keys(main=1))
    with pytest.raises(ValidationError, match="unique"):
        ApiSettings(keys=keys(main=1) * 2)
    with pytest.raises(ValidationError):
        KeySettings(name="has space", key=SecretStr("k"))


def test_new_work_is_drawn_by_weight_among_the_keys_that_are_in_and_allow_the_mode() -> None:
    entries = [
        *keys(main=3, spare=1),
        KeySettings(name="turbo", key=SecretStr("t"), weight=1, modes=["turbo"]),
    ]
    pool = KeyPool(entries, rng=random.Random(5))
    firsts = Counter(pool.order("relax")[0].name for _ in range(4000))
    assert set(firsts) == {"main", "spare"}
    assert 2.6 < firsts["main"] / firsts["spare"] < 3.4
    assert {choice.name for choice in pool.order("turbo")} == {"main", "spare", "turbo"}
    assert len(pool.order(None)) == 3


def test_a_refused_key_is_out_for_a_while_then_tried_again() -> None:
    now = [1000.0]
    pool = KeyPool(
        keys(main=1, spare=1), out_seconds=60, clock=lambda: now[0], monotonic=lambda: now[0]
    )
    pool.observe("main", AuthenticationError())
    assert pool.state("main") == "refused"
    assert [c.name for c in pool.order()] == ["spare"]
    assert {c.name for c in pool.order(include_out=True)} == {"main", "spare"}
    pool.observe("spare", TaskCreationRefused("insufficient credit balance"))
    assert pool.state("spare") == "no_credit" and pool.order() == []
    pool.observe("spare", None, created=True)
    assert pool.state("spare") == "in", "a creation it made brings it back in"
    now[0] += 61
    assert pool.state("main") == "in" and len(pool.order()) == 2
    [main, _] = pool.states()
    assert main.failures == 1 and main.out_until is None


def test_a_key_is_out_for_its_time_though_the_wall_clock_stepped() -> None:
    """The out-window was measured on the wall clock: stepped back an hour (an NTP step), a
    refused key stayed out an hour more; stepped forward, it came back early."""
    now, moment = [1_800_000_000.0], [100.0]
    pool = KeyPool(
        keys(main=1, spare=1),
        out_seconds=60,
        clock=lambda: now[0],
        monotonic=lambda: moment[0],
    )
    pool.observe("main", AuthenticationError())
    now[0] -= 3600
    moment[0] += 20
    [main, _] = pool.states()
    assert main.out_until == now[0] + 40, "shown as Unix time on the wall clock of now"
    now[0] += 7200
    moment[0] += 39
    assert pool.state("main") == "refused", "stepped forward, it is not back early"
    moment[0] += 1
    assert pool.state("main") == "in", "stepped back, it is back on time"


async def test_each_key_is_its_own_account_and_refusals_take_keys_out(
    caplog: pytest.LogCaptureFixture,
) -> None:
    accounts = ((SECRETS["main"], 1000), (SECRETS["spare"], 0))
    settings = settings_for("", key="", keys=keys(main=1, spare=1, gone=1))
    before = failures("gone", "refused"), failures("spare", "no_credit")
    caplog.set_level(logging.INFO)
    async with serve(sim_config(accounts=accounts)) as sim:
        settings = settings.model_copy(update={"base_url": sim.base_url})
        async with ProviderClient(settings, retry=FAST_RETRY) as api:
            made = await api.tasks.imagine(ImagineRequest(prompt="a fox"), key="main")
            with pytest.raises(AuthenticationError):
                await api.tasks.imagine(ImagineRequest(prompt="a fox"), key="gone")
            with pytest.raises(TaskCreationRefused) as poor:
                await api.tasks.imagine(ImagineRequest(prompt="a fox"), key="spare")
            assert poor.value.kind is RefusalKind.INSUFFICIENT_CREDIT
            assert {s.name: s.state for s in api.keys.states()} == {
                "main": "in",
                "spare": "no_credit",
                "gone": "refused",
            }
            assert [c.name for c in api.keys.order()] == ["main"]

            records = await api.tasks.multi_fetch([made.task_id], key="main")
            assert records[made.task_id] is not None
            assert await api.tasks.multi_fetch([made.task_id], key="spare") == {made.task_id: None}
            with pytest.raises(BadRequest):
                await api.tasks.fetch(made.task_id, key="spare")
            with pytest.raises(TaskCreationRefused) as other:
                await api.tasks.upscale(
                    UpscaleRequest(origin_task_id=made.task_id, index="1"), key="spare"
                )
            assert other.value.kind is RefusalKind.ORIGIN_NOT_FOUND
    sent = [r.account for r in sim.state.requests_to("/gen/v2/imagine")]
    assert sent == [account_id(SECRETS["main"]), None, account_id(SECRETS["spare"])]
    assert (failures("gone", "refused"), failures("spare", "no_credit")) == (
        before[0] + 1,
        before[1] + 1,
    )
    logged = "\n".join(r.getMessage() for r in caplog.records)
    assert "provider key gone taken out" in logged and "provider key spare taken out" in logged
    assert not any(secret in logged for secret in SECRETS.values())


async def test_chat_goes_to_another_key_when_its_key_is_refused() -> None:
    settings = settings_for("", key="", keys=keys(gone=1000, main=1))
    async with serve(sim_config(accounts=((SECRETS["main"], 1000),))) as sim:
        settings = settings.model_copy(update={"base_url": sim.base_url})
        async with ProviderClient(settings, retry=FAST_RETRY, rng=random.Random(3)) as api:
            request = ChatRequest(
                model="llm-3.5-turbo", messages=[ChatMessage(role="user", content="echo: hi")]
            )
            for _ in range(3):
                await api.chat.complete(request)
            assert api.keys.state("gone") == "refused"
    chats = [r.account for r in sim.state.requests_to("/v1/chat/completions")]
    assert chats == [None, *[account_id(SECRETS["main"])] * 3]
