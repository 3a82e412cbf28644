"""The model check against the simulator over real HTTP: its answer read as a verdict, no
answer in time read as none (refused or let through as configured), and the text sent only as
the user's message."""

from __future__ import annotations

import time
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from pydantic import SecretStr

from bot.api import ProviderClient
from bot.features.audit import AuditTrail
from bot.features.moderation import ModelCheck, Moderation
from bot.features.moderation.wording import CHECK_FAILED_TEXT
from bot.kernel import ApiSettings, Command, ModerationSettings, Place, User, UserError
from simulator.server import RunningSimulator, serve
from simulator.state import SimulatorConfig
from storage import SqliteStore
from tests.adapters.discord.real_core import FAST_RETRY

MODEL = "llm-3.5-turbo"
CHAT_PATH = "/v1/chat/completions"


@pytest.fixture
async def sim(request: pytest.FixtureRequest) -> AsyncIterator[RunningSimulator]:
    faults: float = getattr(request, "param", 0.0)
    async with serve(SimulatorConfig(fault_rate=faults, slow_seconds=5.0)) as running:
        yield running


@pytest.fixture
async def client(sim: RunningSimulator) -> AsyncIterator[ProviderClient]:
    settings = ApiSettings(base_url=sim.base_url, key=SecretStr("sim-key"))
    provider = ProviderClient(settings, retry=FAST_RETRY)
    try:
        yield provider
    finally:
        await provider.aclose()


@pytest.fixture
async def store(tmp_path: Path) -> AsyncIterator[SqliteStore]:
    opened = await SqliteStore.open(tmp_path / "genbot.db")
    try:
        yield opened
    finally:
        await opened.close()


async def test_the_models_answer_is_the_verdict(
    sim: RunningSimulator, client: ProviderClient
) -> None:
    judge = ModelCheck(client.chat, MODEL, 5.0)
    assert await judge("a skillful echo: BLOCK", "violence") is True
    assert await judge("a skillful echo: allow.", "violence") is False
    assert await judge("a skillful echo: perhaps", "violence") is None
    sent = sim.state.requests_to(CHAT_PATH)[0].body
    assert sent["temperature"] == 0 and sent["stream"] is False and sent["model"] == MODEL
    assert "violence" in sent["messages"][0]["content"]
    assert sent["messages"][1] == {"role": "user", "content": "a skillful echo: BLOCK"}


@pytest.mark.parametrize("sim", [1.0], indirect=True)
async def test_no_answer_in_time_is_none_within_the_bound(client: ProviderClient) -> None:
    judge = ModelCheck(client.chat, MODEL, 0.5)
    started = time.monotonic()
    assert await judge("a skillful fox", "violence") is None
    assert time.monotonic() - started < 5.0, "bounded by model_check_seconds, not the provider"


def unsure_rules(**check: object) -> ModerationSettings:
    rules = ModerationSettings(words={"violence": ["kill"]}, model_check=True)
    return rules.model_copy(update=check)


def imagine(user: str = "alice") -> Command:
    return Command(user=User(user), place=Place("slack", "T1", "C1"), name="imagine")


async def test_an_unsure_prompt_is_refused_when_the_model_says_so(
    sim: RunningSimulator, client: ProviderClient, store: SqliteStore
) -> None:
    moderation = Moderation(
        unsure_rules(),
        store.moderation,
        ModelCheck(client.chat, MODEL, 5.0),
        audit=AuditTrail(store.audit, 90),
    )
    await moderation.screen(imagine(), {"prompt": "a skillful fox echo: ALLOW"})
    await moderation.screen(imagine(), {"prompt": "a fox"})
    assert len(sim.state.requests_to(CHAT_PATH)) == 1, "only what the lists are unsure of"
    with pytest.raises(UserError, match=r"\*\*violence\*\*.*1st"):
        await moderation.screen(imagine(), {"prompt": "a skillful fox echo: BLOCK"})
    with pytest.raises(UserError, match=r"\*\*violence\*\*"):
        await moderation.screen(imagine("bob"), {"prompt": "kill"})
    assert len(sim.state.requests_to(CHAT_PATH)) == 2, "a sure match needs no model"


@pytest.mark.parametrize("sim", [1.0], indirect=True)
async def test_no_answer_fails_closed_or_open_as_configured(
    client: ProviderClient, store: SqliteStore
) -> None:
    closed = Moderation(
        unsure_rules(model_check_seconds=0.3),
        store.moderation,
        ModelCheck(client.chat, MODEL, 0.3),
        audit=AuditTrail(store.audit, 90),
    )
    with pytest.raises(UserError) as refused:
        await closed.screen(imagine(), {"prompt": "a skillful fox"})
    assert str(refused.value) == CHECK_FAILED_TEXT
    assert await store.moderation.banned_until("slack", "alice") is None, "no offence"
    opened = Moderation(
        unsure_rules(model_check_fails="open"),
        store.moderation,
        ModelCheck(client.chat, MODEL, 0.3),
        audit=AuditTrail(store.audit, 90),
    )
    await opened.screen(imagine(), {"prompt": "a skillful fox"})
