"""``/forget-me`` on the real core and storage (the simulator over HTTP, SQLite): a user with
one of every kind of data the store keeps sees each kind named with its count, privately; after
**Delete all of it** the store counts none of it and no table names them, while another user's
rows stay. Every kind the store and the playground count has its label. A job still running is
erased when it finishes instead of posted — also by the process that takes it over after a
restart, on SQLite and PostgreSQL — its charge still counted against the user's budget under a
name derived from their id; one whose result is being posted as the deletion runs stays, and the
confirmation says so. Deleting one's data resets no limit: a user who spent the day's credits,
or chat tokens, is refused again after it, the day's refused prompts still count toward a ban,
and both answers say that today's spend and refused prompts still count."""

from __future__ import annotations

import hashlib
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from adapters.web.playground import KEPT_FILES, KEPT_IMAGES, KEPT_MESSAGES
from bot.features.audit import AuditTrail
from bot.features.chat import ChatDefaults
from bot.features.jobs import Tiers
from bot.features.jobs.messages import ERASED_TEXT
from bot.features.moderation import Moderation
from bot.features.retention import ForgetFeature
from bot.features.retention.forget import KINDS
from bot.kernel import (
    ButtonPress,
    Command,
    LimitsSettings,
    ModerationSettings,
    OutMessage,
    Place,
    QuotasSettings,
    User,
)
from bot.router import Feature, Router
from simulator.server import serve
from simulator.state import SimulatorConfig
from storage import ALL_STATUSES, forgotten
from storage.queries.user_data import USER_DATA
from tests.bot.features.chat.support import ALICE, DM, ChatWorld, sim_config
from tests.bot.features.jobs.support import bodies, run_command
from tests.bot.features.jobs.test_batches import PrivatePlatform
from tests.bot.features.jobs.test_cancel import BACKENDS, TAKEOVER_WAIT, storage_url
from tests.bot.harness import PLACE as JOBS_PLACE
from tests.bot.harness import Genbot, Parts, harness, running_genbot
from tests.storage.conftest import new_job
from tests.storage.helpers import create_job, everything_about, rows_naming

USER = User("fake-5e1f0c2a9b7d")
OTHER = "fake-77aa00bb11cc"
PLACE = Place("fake", "web", "general")
MANUAL = SimulatorConfig(time_scale=1.0, clock_start=1_700_000_000)
"""The simulator's clock moves only when a test advances it: a job runs until then."""
ERASED_LATER = "- 1 job still running: it is erased when it finishes, instead of being posted."


def forget_me(parts: Parts) -> list[ForgetFeature]:
    audit = AuditTrail(parts.store.audit, 90)
    return [ForgetFeature(parts.store.retention, parts.outbox, audit, parts.store.clock)]


def pressed(
    message: OutMessage, label: str, user: User = USER, place: Place = PLACE
) -> ButtonPress:
    [button] = [b for row in message.buttons for b in row if b.label == label]
    return ButtonPress(
        user=user, place=place, message_id="preview", action=button.action, ref=button.ref
    )


def test_every_kind_counted_has_a_label() -> None:
    counted = [data.kind for data in USER_DATA] + [KEPT_MESSAGES, KEPT_IMAGES, KEPT_FILES]
    assert list(KINDS) == counted


async def test_the_preview_names_every_kind_and_the_deletion_leaves_none(tmp_path: Path) -> None:
    platform = PrivatePlatform()
    async with harness(tmp_path, platform=platform, features=forget_me) as bot:
        store = bot.store
        await everything_about(
            store, USER.id, OTHER, platform="fake", playground=False, in_view=False
        )
        await store.moderation.lift_ban("fake", USER.id)
        others = await rows_naming(store, OTHER)
        kept = await store.retention.kept("fake", USER.id)
        assert [kind for kind, count in kept.kinds.items() if count] == [
            data.kind for data in USER_DATA if data.only in ("", "fake")
        ], "one of every kind of this platform"

        await bot.core.handle(Command(user=USER, place=PLACE, name="forget-me"))
        [preview] = platform.privates
        listed = [line for line in preview.text.splitlines() if line.startswith("- ")]
        assert listed == [f"- {KINDS[kind][0]}: {count}" for kind, count in kept.kinds.items()]
        assert "- Audit log entries naming you: 4" in listed

        await bot.core.handle(pressed(preview, "Delete all of it"))
        [done] = platform.ephemerals_for(USER.id)
        assert done.startswith("**Your data on fake is deleted.**")
        for kind, count in kept.kinds.items():
            assert f"- {KINDS[kind][0]}: {count}" in done
        after = await store.retention.kept("fake", USER.id)
        assert set(after.kinds.values()) == {0}
        assert await rows_naming(store, USER.id) == {}
        assert await rows_naming(store, OTHER) == others, "another user's rows stay"


async def test_a_job_being_posted_as_the_deletion_runs_stays_and_the_confirmation_says_so(
    tmp_path: Path,
) -> None:
    platform = PrivatePlatform()
    async with harness(tmp_path, platform=platform, features=forget_me) as bot:
        await bot.jobs.tracker.drain(1.0)
        mine = {"requester_id": USER.id, "platform": "fake", "workspace_id": "web"}
        await create_job(bot.store.admission, new_job(**mine, prompt="a fox", status="posted"))
        posting = new_job(**mine, prompt="posted now", status="posting")
        await create_job(bot.store.admission, posting)
        stays = "- 1 job still running stays until it finishes: run `/forget-me` again then."

        await bot.core.handle(Command(user=USER, place=PLACE, name="forget-me"))
        [preview] = platform.privates
        assert ERASED_LATER in preview.text.splitlines()
        await bot.core.handle(pressed(preview, "Delete all of it"))
        [done] = platform.ephemerals_for(USER.id)
        assert "- Jobs (prompts, parameters, result links): 1" in done.splitlines()
        assert done.splitlines()[-1] == stays
        assert ERASED_LATER not in done.splitlines()


async def forget_running_job(bot: Genbot, platform: PrivatePlatform) -> str:
    """The user starts an /imagine, then deletes their data while it runs; the job's id. The
    preview and the confirmation say the job is erased when it finishes, and it now names the
    pseudonym."""
    await bot.actor(USER.id).command("imagine", prompt="a fox running through the deletion")
    job = await bot.latest_job()
    assert job.status not in ("finished", "posting", "posted")
    await bot.core.handle(Command(user=USER, place=JOBS_PLACE, name="forget-me"))
    preview = platform.privates[-1]
    assert ERASED_LATER in preview.text.splitlines()
    press = pressed(preview, "Delete all of it")
    await bot.core.handle(replace(press, place=JOBS_PLACE))
    done = platform.ephemerals_for(USER.id)[-1]
    assert done.splitlines()[-1] == ERASED_LATER
    renamed = await bot.store.jobs.get_job(job.id)
    assert renamed is not None and forgotten(renamed.requester_id)
    return job.id


async def assert_erased(
    bot: Genbot, platform: PrivatePlatform, job_id: str, timeout: float = 10.0
) -> None:
    """The job ended erased: never posted, its progress message deleted, no row, no link, no
    row naming the user; its charge kept under the name derived from their id, so it still
    counts against their budget."""
    with pytest.raises(KeyError):
        await bot.settled(job_id, timeout)
    assert platform.messages == {}, "no result posted; the progress message deleted"
    [progress] = platform.deleted
    assert ERASED_TEXT not in progress.text
    assert await bot.store.tracking.list_unfinished_jobs(ALL_STATUSES) == []
    link = await bot.store.message_links.job_for_message(
        "fake", JOBS_PLACE.channel_id, progress.ref.message_id
    )
    assert link is None
    assert await rows_naming(bot.store, USER.id) == {}
    spent = await bot.store.ledger.usage_for_user("fake", USER.id)
    assert spent.credits > 0, "what the provider charged still counts for them"


async def test_a_job_running_through_the_deletion_is_erased_instead_of_posted(
    tmp_path: Path,
) -> None:
    platform = PrivatePlatform()
    async with harness(tmp_path, sim_config=MANUAL, platform=platform, features=forget_me) as bot:
        job_id = await forget_running_job(bot, platform)
        bot.sim.advance(120)
        await assert_erased(bot, platform, job_id)


@pytest.mark.parametrize("backend", BACKENDS)
async def test_a_job_taken_over_after_the_deletion_is_erased_by_the_process_that_ends_it(
    tmp_path: Path, request: pytest.FixtureRequest, backend: str
) -> None:
    url = storage_url(request, backend)
    platform = PrivatePlatform()
    db_path = tmp_path / "genbot.db"
    async with serve(MANUAL) as sim:
        async with running_genbot(
            sim, db_path, platform=platform, features=forget_me, storage_url=url
        ) as first:
            job_id = await forget_running_job(first, platform)
        sim.advance(120)
        async with running_genbot(
            sim, db_path, platform=platform, features=forget_me, storage_url=url
        ) as second:
            await assert_erased(second, platform, job_id, TAKEOVER_WAIT)


async def test_a_forgotten_users_running_job_keeps_its_place_and_an_admins_cancel_hides_it(
    tmp_path: Path,
) -> None:
    """Deleting one's data frees no place under the cap of jobs at once: the running job, renamed
    by a name derived from the user's id, still counts. An admin's Cancel of it takes its
    progress message off as its delivery would (not the note telling its requester, with its
    prompt), and the audit log does not name it by that name."""
    platform = PrivatePlatform()
    cap = {"max_concurrent_jobs_per_user": 1}
    async with harness(
        tmp_path, sim_config=MANUAL, platform=platform, features=forget_me, limits=cap
    ) as bot:
        job_id = await forget_running_job(bot, platform)
        renamed = await bot.store.jobs.get_job(job_id)
        assert renamed is not None and renamed.progress_message_id is not None
        erased = "erased-" + hashlib.sha256(f"fake:{USER.id}".encode()).hexdigest()[:8]
        assert renamed.requester_id == erased

        await bot.actor(USER.id).command("imagine", prompt="a second fox")
        assert (await bot.latest_job()).id == job_id, "no second job"
        assert platform.ephemerals_for(USER.id)[-1].startswith(
            "You already have 1 image job running — the cap is 1"
        )

        progress = platform.messages[renamed.progress_message_id]
        await bot.actor("root", admin=True).press(progress, "❌ Cancel")
        assert platform.messages == {}, "taken off, no note to the requester posted anew"
        assert [gone.ref.message_id for gone in platform.deleted] == [progress.ref.message_id]
        [entry] = await bot.store.audit.entries(JOBS_PLACE.platform, JOBS_PLACE.workspace_id)
        assert (entry.kind, entry.actor_id, entry.target) == ("job.cancelled", "root", job_id)
        assert "requester_id" not in (entry.before or {})
        assert await rows_naming(bot.store, erased) == {"jobs": 1}

        bot.sim.advance(120)
        await assert_erased(bot, platform, job_id)


STILL_COUNTS = (
    "What you spent in your budgets' current window and today's refused prompts still count "
    "against your limits until they refill"
)


async def forget(core: Router, platform: PrivatePlatform, user: User, place: Place) -> None:
    """``user`` deletes their data through /forget-me's preview and its button; both say that
    what they spent in their budgets' window still counts."""
    await core.handle(Command(user=user, place=place, name="forget-me"))
    preview = platform.privates[-1]
    assert "and it resets no limit: what was spent in the budgets' current window" in preview.text
    await core.handle(pressed(preview, "Delete all of it", user, place))
    done = platform.ephemerals_for(user.id)[-1]
    assert done.startswith(f"**Your data on fake is deleted.** {STILL_COUNTS}")


async def test_a_user_who_spent_the_days_credits_is_refused_again_after_deleting_their_data(
    tmp_path: Path,
) -> None:
    """What the user spent today stays counted, under the name derived from their id: the next
    /imagine is refused with the budget's message, and nothing reaches the provider."""
    platform = PrivatePlatform()
    budget = {"daily_credit_budget_per_user": 4}
    async with harness(tmp_path, platform=platform, features=forget_me, limits=budget) as bot:
        alice = bot.actor(USER.id)
        await run_command(bot, alice, "imagine", prompt="a red fox")
        await forget(bot.core, platform, USER, JOBS_PLACE)
        assert await rows_naming(bot.store, USER.id) == {}

        await alice.command("imagine", prompt="another fox")
        assert platform.ephemerals_for(USER.id)[-1] == (
            "You have used 4 of your 4 credits for today — that is the daily budget; "
            "it resets at 00:00 UTC."
        )
        assert len(bodies(bot.sim, "/gen/v2/imagine")) == 1


class ForgettingChat(ChatWorld):
    """A chat world with /forget-me."""

    def _features(self, parts: Parts) -> list[Feature[Any]]:
        return [*super()._features(parts), *forget_me(parts)]


async def test_a_user_who_spent_the_days_chat_tokens_is_refused_again_after_deleting_their_data(
    tmp_path: Path,
) -> None:
    """The chat tokens spent today still count against the tier's chat budget after
    /forget-me: the next message is refused with the budget's message, without a provider call,
    and /usage still shows them."""
    quotas = QuotasSettings.model_validate({"tiers": [{"name": "default", "daily_chat_tokens": 5}]})
    platform = PrivatePlatform()
    tiers = Tiers(LimitsSettings(), quotas)
    async with serve(sim_config()) as sim:
        world = ForgettingChat(
            sim, tmp_path / "genbot.db", platform, "developer", ChatDefaults(), True, tiers=tiers
        )
        await world.start()
        try:
            alice = world.actor()
            await alice.say("echo: a lighthouse")
            used = (await world.store.ledger.usage_for_user("fake", ALICE.id)).tokens
            assert used >= 5 and len(world.chat_bodies()) == 1
            await forget(world.core, platform, ALICE, DM)
            assert await rows_naming(world.store, ALICE.id) == {}

            await alice.say("echo: another lighthouse")
            assert platform.ephemerals_for(ALICE.id)[-1] == (
                f"You have used {used:,} of your 5 chat tokens today — the chat budget of your "
                "tier **default**; it refills at 00:00 UTC."
            )
            assert len(world.chat_bodies()) == 1, "no provider call"
            await alice.command("usage")
            usage = platform.ephemerals_for(ALICE.id)[-1]
            assert f"Chat tokens today (UTC): {used:,} of 5 used, 0 left" in usage
        finally:
            await world.stop()


async def test_the_days_refused_prompts_still_count_toward_a_ban_after_deleting_ones_data(
    tmp_path: Path,
) -> None:
    """/forget-me does not start the day's bans over: the refused prompt after it is the day's
    2nd, and earns the 2nd's ban."""
    rules = ModerationSettings(words={"nsfw": ["nude"]}, ban_minutes=[0, 60])
    platform = PrivatePlatform()

    def screen(parts: Parts) -> Moderation:
        return Moderation(rules, parts.store.moderation, audit=AuditTrail(parts.store.audit, 90))

    async with harness(tmp_path, platform=platform, features=forget_me, screen=screen) as bot:
        alice = bot.actor(USER.id)
        await alice.command("imagine", prompt="a nude fox")
        assert "refused prompt" not in platform.ephemerals_for(USER.id)[-1], "no ban for the 1st"
        await forget(bot.core, platform, USER, JOBS_PLACE)

        await alice.command("imagine", prompt="a nude fox")
        refused = platform.ephemerals_for(USER.id)[-1]
        second = "It is your 2nd refused prompt today: genbot takes no prompts from you for 60 min"
        assert second in refused
        assert bodies(bot.sim, "/gen/v2/imagine") == []
