"""Admission (bot/features/jobs/admission.py): which tier a user is in (the best of theirs, else
the default), what it refuses and how the refusal reads; a command's place among its user's
jobs, taken before anything costly: concurrent commands of one user count each other, a refusal
names the cap, and costly work outside a place is a programming error."""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from pydantic import ValidationError

from bot.features.jobs.admission import Admission, Tiers
from bot.kernel import Command, LimitsSettings, Place, QuotasSettings, User, UserError
from storage import JobQuota, NewJob, QuotaRefusal, SqliteStore

PLACE = Place("fake", "w1", "c1")


def command(user: User) -> Command:
    return Command(user=user, place=PLACE, name="blend")


async def test_thirty_commands_at_once_cannot_all_pass_a_cap_of_three(tmp_path: Path) -> None:
    async with await SqliteStore.open(tmp_path / "genbot.db") as store:
        admission = Admission(
            store.admission, Tiers(LimitsSettings(max_concurrent_jobs_per_user=3))
        )
        release, all_answered = asyncio.Event(), asyncio.Event()
        passed: list[int] = []
        refusals: list[str] = []

        async def one(number: int) -> None:
            try:
                async with admission.admitted(command(User("mallory"))):
                    passed.append(number)
                    if len(passed) + len(refusals) == 30:
                        all_answered.set()
                    await release.wait()
            except UserError as refused:
                refusals.append(str(refused))
                if len(passed) + len(refusals) == 30:
                    all_answered.set()

        running = [asyncio.create_task(one(n)) for n in range(30)]
        await asyncio.wait_for(all_answered.wait(), 5)
        release.set()
        await asyncio.gather(*running)

        assert len(passed) == 3 and len(refusals) == 27
        assert "the cap is 3" in refusals[0]
        async with admission.admitted(command(User("mallory"))):
            Admission.require()
        async with admission.admitted(command(User("root", is_admin=True))):
            pass


def test_costly_work_outside_a_place_is_refused() -> None:
    with pytest.raises(RuntimeError, match="admitted"):
        Admission.require()


def tiers(*listed: dict[str, object]) -> Tiers:
    quotas = QuotasSettings.model_validate({"tiers": list(listed)})
    return Tiers(
        LimitsSettings(max_concurrent_jobs_per_user=3, daily_credit_budget_per_user=9), quotas
    )


def test_without_tiers_everyone_is_in_a_default_tier_of_the_limits() -> None:
    found = Tiers(LimitsSettings(max_concurrent_jobs_per_user=3, daily_credit_budget_per_user=9))
    tier = found.tier_of("discord", User("u1", roles=frozenset({"r1"})))
    assert (tier.name, tier.concurrent_jobs, tier.daily_credits, tier.refill) == (
        "default",
        3,
        9,
        "daily",
    )
    assert found.quota_for("discord", User("u1")) == JobQuota(3, 9, "daily")
    assert found.quota_for("discord", User("root", is_admin=True)) == JobQuota()
    assert not found.configured


def test_the_best_of_a_users_tiers_wins() -> None:
    found = tiers(
        {"name": "basic", "daily_credits": 50, "concurrent_jobs": 5, "roles": ["discord:r1"]},
        {"name": "pro", "daily_credits": 100, "concurrent_jobs": 1, "roles": ["discord:r2"]},
        {"name": "pro+", "daily_credits": 100, "concurrent_jobs": 2, "users": ["slack:U1"]},
        {"name": "staff", "roles": ["discord:r3", "slack:S1"], "refill": "hourly"},
        {"name": "twin", "daily_credits": 50, "concurrent_jobs": 5, "roles": ["discord:r1"]},
    )

    def tier(platform: str, user_id: str, *roles: str) -> str:
        return found.tier_of(platform, User(user_id, roles=frozenset(roles))).name

    assert tier("discord", "u1", "r1") == "basic", "a tie goes to the tier listed first"
    assert tier("discord", "u1", "r1", "r2") == "pro", "more credits beat more jobs at once"
    assert tier("discord", "u1", "r1", "r2", "r3") == "staff", "no limit is the most"
    assert tier("slack", "U1", "r2") == "pro+", "roles belong to their platform"
    assert tier("slack", "U2", "S1") == "staff"
    assert tier("discord", "U1") == tier("web", "u1", "r1") == "default"
    assert found.quota_for("slack", User("U9", roles=frozenset({"S1"}))).refill == "hourly"
    members = found.members()
    assert [(m.tier.name, m.default) for m in members][-1] == ("default", True)
    assert members[2].users == ("slack:U1",) and members[3].roles == ("discord:r3", "slack:S1")


def test_a_tier_named_default_is_the_tier_of_everyone_else() -> None:
    found = tiers({"name": "default", "daily_credits": 2, "concurrent_jobs": 1})
    assert found.quota_for("web", User("anyone")) == JobQuota(1, 2, "daily")
    assert found.configured and len(found.members()) == 1


def test_two_tiers_with_one_name_or_a_member_without_its_platform_are_refused() -> None:
    with pytest.raises(ValidationError, match="two tiers are named 'pro'"):
        tiers({"name": "pro"}, {"name": "pro"})
    with pytest.raises(ValidationError, match="pattern"):
        tiers({"name": "pro", "users": ["1234"]})


def new_image(**fields: object) -> NewJob:
    values: dict[str, Any] = {
        "family": "task", "type": "imagine", "requester_id": "u1", "platform": "discord",
        "channel_id": "c1", "prompt": "a fox",
    } | fields  # fmt: skip
    return NewJob(**values)


def test_a_tier_refuses_modes_and_models_it_does_not_have() -> None:
    found = tiers(
        {"name": "free", "modes": ["relax"], "models": ["sd-1.5"], "users": ["discord:u1"]}
    )
    user = User("u1")
    found.check_use(new_image(), user)
    found.check_use(new_image(prompt="a fox --fast --relax"), user)
    with pytest.raises(
        UserError, match=r"Turbo mode is not in your tier \*\*free\*\* \(it has relax\)"
    ):
        found.check_use(new_image(parameters={"process_mode": "turbo"}), user)
    with pytest.raises(UserError, match="Fast mode"):
        found.check_use(new_image(prompt="a fox --fast"), user)
    diffusion = {"family": "diffusion", "type": "txt2img"}
    found.check_use(new_image(**diffusion, parameters={"body": {"model_id": "sd-1.5"}}), user)
    with pytest.raises(UserError, match="The model sdxl is not in your tier"):
        found.check_use(new_image(**diffusion, parameters={"body": {"model_id": "sdxl"}}), user)
    found.check_use(new_image(parameters={"process_mode": "turbo"}), User("u1", is_admin=True))
    found.check_use(new_image(parameters={"process_mode": "turbo"}), User("u2"))


def test_refusals_name_the_tier_the_limit_and_when_it_refills() -> None:
    found = tiers({"name": "trial", "daily_credits": 10, "refill": "hourly", "users": ["web:u1"]})
    refills_at = datetime(2024, 3, 2, 14, tzinfo=UTC).timestamp()
    refusal = QuotaRefusal("max_daily_credits", 12, 10, refills_at)
    assert str(found.refused(refusal, "web", User("u1"))) == (
        "You have used 12 of your 10 credits in the last 24 hours — that is the budget of your "
        "tier **trial**, refilled hour by hour; enough is back at 14:00 UTC."
    )
    assert str(found.refused(QuotaRefusal("max_active", 3, 3), "web", User("u2"))) == (
        "You already have 3 image jobs running — the cap of your tier **default** is 3; wait "
        "for one to finish."
    )


def test_refusals_count_in_the_singular_when_there_is_one() -> None:
    found = tiers({"name": "trial", "daily_credits": 1, "users": ["web:u1"]})
    spent = found.refused(QuotaRefusal("max_daily_credits", 1, 1), "web", User("u1"))
    assert str(spent) == (
        "You have used 1 of your 1 credit for today — that is the daily budget of your tier "
        "**trial**; it resets at 00:00 UTC."
    )
    running = found.refused(QuotaRefusal("max_active", 1, 1), "web", User("u1"))
    assert str(running).startswith("You already have 1 image job running — ")
    finishing = found.refused(QuotaRefusal("max_active", 3, 3, cancelled=1), "web", User("u1"))
    assert str(finishing).endswith(
        "wait for one to finish. 1 of them is cancelled and still finishing at the service."
    )
