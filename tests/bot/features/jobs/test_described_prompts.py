"""The prompts a /describe answered, text the user never typed, are screened as if typed when a
pick (1–4, at once) or Imagine all starts them — the real core and moderation against the
simulator over HTTP."""

from __future__ import annotations

import re
from pathlib import Path

from storage import ModerationRule
from tests.bot.features.jobs.support import run_command
from tests.bot.features.jobs.test_batches import PrivatePlatform
from tests.bot.harness import Genbot, harness
from tests.bot.test_router import job_calls, moderated, untimed
from tests.fakes.platform import PostedMessage

URL = "https://files.example.com/cat.png"


async def described_with_a_rule(bot: Genbot, user: str) -> tuple[PostedMessage, list[str]]:
    """``user``'s describe of :data:`URL` once finished, and its prompts; then a workspace rule
    that only the first prompt breaks."""
    job, described = await run_command(bot, bot.actor(user), "describe", url=URL)
    prompts: list[str] = (await bot.settled(job.id)).result["prompts"]
    others = set(re.findall(r"[a-z]+", " ".join(prompts[1:])))
    [word, *__] = sorted(set(re.findall(r"[a-z]+", prompts[0])) - others, key=len, reverse=True)
    await bot.store.moderation.add_rule("fake", "w1", ModerationRule("gore", word), "root")
    return described, prompts


async def test_a_prompt_picked_at_once_is_refused_as_the_same_prompt_typed(
    tmp_path: Path,
) -> None:
    async with harness(tmp_path, screen=moderated) as bot:
        described, prompts = await described_with_a_rule(bot, "alice")
        await bot.store.settings.set_scope_settings("user", "fake", "alice", remix=False)
        alice = bot.actor("alice")
        await alice.press(described, "2")
        before = [job.id for job in await bot.all_jobs()]
        calls = job_calls(bot)

        await alice.press(described, "1")
        await bot.actor("bob").command("imagine", prompt=prompts[0])

        jobs = await bot.all_jobs()
        assert [job.id for job in jobs] == before, "no job stored"
        assert job_calls(bot) == calls, "no provider call"
        assert [job.prompt for job in jobs if job.type == "imagine"] == [prompts[1]]
        [picked] = bot.platform.ephemerals_for("alice")
        [typed] = bot.platform.ephemerals_for("bob")
        assert "**gore**" in picked and prompts[0] in picked
        assert untimed(picked) == untimed(typed), "the same refusal as the same prompt typed"
        assert await bot.store.moderation.banned_until("fake", "alice") is not None


async def test_imagine_all_is_refused_as_its_prompts_typed_before_any_preview(
    tmp_path: Path,
) -> None:
    platform = PrivatePlatform()
    async with harness(tmp_path, screen=moderated, platform=platform) as bot:
        described, prompts = await described_with_a_rule(bot, "alice")
        before = [job.id for job in await bot.all_jobs()]
        calls = job_calls(bot)

        await bot.actor("alice").press(described, "Imagine all")
        await bot.actor("bob").command("imagine", prompt=prompts[0])

        assert platform.privates == [], "no preview"
        assert [job.id for job in await bot.all_jobs()] == before and job_calls(bot) == calls
        [refused] = platform.ephemerals_for("alice")
        [typed] = platform.ephemerals_for("bob")
        assert untimed(refused) == untimed(typed)
