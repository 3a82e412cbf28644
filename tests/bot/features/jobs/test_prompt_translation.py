"""Prompt translation against the simulator over HTTP: what reaches the chat model, what comes
back into the prompt, what the user's usage counts, and every way it falls back to the prompt
as written."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import pytest
from prometheus_client import REGISTRY

from bot.api import ProviderClient
from bot.features.audit import AuditTrail
from bot.features.jobs.admission import Tiers
from bot.features.jobs.prompt_translation import (
    INSTRUCTIONS,
    NOT_TRANSLATED,
    TRANSLATED_FROM,
    USAGE_KIND,
    PromptTranslation,
)
from bot.features.moderation import Moderation
from bot.kernel import (
    Attachment,
    Command,
    LimitsSettings,
    ModerationSettings,
    PromptsSettings,
    QuotasSettings,
    SurfaceRegistry,
    TierSettings,
    UserError,
)
from bot.outbox import Outbox
from simulator.server import RunningSimulator, serve
from simulator.state import SimulatorConfig
from storage import SqliteStore
from tests.bot.features.chat.support import ALICE, CHANNEL
from tests.bot.harness import ROOMY, harness_settings
from tests.fakes.platform import FakePlatform

IMAGINE = Command(user=ALICE, place=CHANNEL, name="imagine")


async def no_uploads(event: Command) -> dict[str, Attachment]:
    return {}


def moderated(rules: ModerationSettings, store: SqliteStore) -> Moderation:
    return Moderation(rules, store.moderation, audit=AuditTrail(store.audit, 90))


@asynccontextmanager
async def translating(
    tmp_path: Path,
    config: SimulatorConfig | None = None,
    quotas: QuotasSettings | None = None,
    moderation: ModerationSettings | None = None,
    **prompts: Any,
) -> AsyncIterator[tuple[PromptTranslation, RunningSimulator, SqliteStore]]:
    """A :class:`PromptTranslation` (``[prompts]`` from ``prompts``, auto by default) talking
    to a simulator over HTTP, on a fresh store, checking translations against ``moderation``
    when given."""
    db = tmp_path / "genbot.db"
    async with serve(config or SimulatorConfig(time_scale=0.003, seed=3)) as sim:
        settings = harness_settings(sim.base_url, db, webhooks=False)
        async with await SqliteStore.open(db) as store, ProviderClient(settings.api) as provider:
            translation = PromptTranslation(
                PromptsSettings(**{"translate": "auto", **prompts}),
                provider.chat,
                settings.chat.model,
                store.ledger,
                Tiers(LimitsSettings(), quotas),
                store.preferences,
                Outbox(SurfaceRegistry([FakePlatform(profile=ROOMY)])),
                screen=None if moderation is None else moderated(moderation, store),
            )
            yield translation, sim, store


def counted(outcome: str) -> float:
    """How many prompt translations ended with ``outcome`` (the metric)."""
    return REGISTRY.get_sample_value("genbot_prompt_translations_total", {"outcome": outcome}) or 0


def chats(sim: RunningSimulator) -> list[dict[str, Any]]:
    return [r.body for r in sim.state.requests_to("/v1/chat/completions")]


async def test_only_the_natural_language_is_sent_and_the_parameters_come_back_as_written(
    tmp_path: Path,
) -> None:
    async with translating(tmp_path) as (translation, sim, store):
        prompt = "https://x.test/a.png 夕暮れの灯台 {a, b} と赤い狐 --ar 16:9 --no 猫"
        before = counted("translated")
        prepared = await translation.prepared(
            IMAGINE, {"prompt": prompt, "process_mode": "fast"}, no_uploads
        )

        assert prepared == {
            "prompt": "https://x.test/a.png a lighthouse at dusk {a, b} and a red fox "
            "--ar 16:9 --no 猫",
            "process_mode": "fast",
            TRANSLATED_FROM: prompt,
        }
        [body] = chats(sim)
        assert body["messages"] == [
            {"role": "system", "content": INSTRUCTIONS},
            {"role": "user", "content": "夕暮れの灯台 [1] と赤い狐"},
        ]
        assert body["temperature"] == 0 and body["stream"] is False
        usage = await store.ledger.usage_for_user("fake", ALICE.id)
        assert usage.tokens_prompt > 0 and usage.tokens_completion > 0
        rows = await store.db.fetch_all("SELECT kind FROM usage", ())
        assert [row["kind"] for row in rows] == [USAGE_KIND]
        assert counted("translated") == before + 1


async def test_english_prompts_and_translate_off_make_no_call(tmp_path: Path) -> None:
    async with translating(tmp_path) as (translation, sim, _):
        english = {"prompt": "a lighthouse at dusk --ar 16:9"}
        assert await translation.prepared(IMAGINE, english, no_uploads) == english
    async with translating(tmp_path, translate="off") as (translation, sim, _):
        japanese = {"prompt": "夕暮れの灯台 --ar 16:9"}
        assert await translation.prepared(IMAGINE, japanese, no_uploads) == japanese
        assert chats(sim) == []


async def test_an_answer_still_not_english_sends_the_prompt_as_written(tmp_path: Path) -> None:
    async with translating(tmp_path) as (translation, sim, store):
        prompt = "知らない言葉 --ar 16:9"
        before = counted("unreadable")
        prepared = await translation.prepared(IMAGINE, {"prompt": prompt}, no_uploads)

        assert prepared == {"prompt": prompt, NOT_TRANSLATED: "unreadable"}
        assert counted("unreadable") == before + 1
        assert len(chats(sim)) == 1
        assert (await store.ledger.usage_for_user("fake", ALICE.id)).tokens_prompt > 0


async def test_a_provider_error_sends_the_prompt_as_written(tmp_path: Path) -> None:
    refusing = SimulatorConfig(time_scale=0.003, api_key="not-genbots-key")
    async with translating(tmp_path, refusing) as (translation, sim, store):
        prompt = "夕暮れの灯台 --ar 16:9"
        before = counted("error")
        prepared = await translation.prepared(IMAGINE, {"prompt": prompt}, no_uploads)

        assert prepared == {"prompt": prompt, NOT_TRANSLATED: "error"}
        assert counted("error") == before + 1
        assert len(chats(sim)) == 1
        assert (await store.ledger.usage_for_user("fake", ALICE.id)).entries == 0


async def test_no_answer_in_time_sends_the_prompt_as_written(tmp_path: Path) -> None:
    async with translating(tmp_path, translate_seconds=1e-6) as (translation, _, store):
        prompt = "夕暮れの灯台 --ar 16:9"
        before = counted("timeout")
        prepared = await translation.prepared(IMAGINE, {"prompt": prompt}, no_uploads)

        assert prepared == {"prompt": prompt, NOT_TRANSLATED: "timeout"}
        assert counted("timeout") == before + 1
        assert (await store.ledger.usage_for_user("fake", ALICE.id)).entries == 0


async def test_a_used_up_chat_budget_makes_no_call(tmp_path: Path) -> None:
    quotas = QuotasSettings(tiers=[TierSettings(name="default", daily_chat_tokens=10)])
    async with translating(tmp_path, quotas=quotas) as (translation, sim, store):
        await store.ledger.add_usage("fake", ALICE.id, tokens_prompt=10)
        prompt = "夕暮れの灯台"
        before = counted("budget")
        prepared = await translation.prepared(IMAGINE, {"prompt": prompt}, no_uploads)

        assert prepared == {"prompt": prompt, NOT_TRANSLATED: "budget"}
        assert counted("budget") == before + 1
        assert chats(sim) == []


async def test_a_translation_that_breaks_a_rule_is_refused_like_the_prompt_would_be(
    tmp_path: Path,
) -> None:
    rules = ModerationSettings(words={"nsfw": ["nude"]})
    async with translating(tmp_path, moderation=rules) as (translation, sim, store):
        with pytest.raises(UserError, match="nsfw"):
            await translation.prepared(IMAGINE, {"prompt": "裸婦 --ar 2:3"}, no_uploads)
        assert len(chats(sim)) == 1
        assert await store.moderation.banned_until("fake", ALICE.id) is not None
