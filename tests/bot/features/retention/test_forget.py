"""``/forget-me`` on the real core and storage (the simulator over HTTP, SQLite): a user with
one of every kind of data the store keeps sees each kind named with its count, privately; after
**Delete all of it** the store counts none of it and no table names them, while another user's
rows stay. Every kind the store and the playground count has its label."""

from __future__ import annotations

from pathlib import Path

from adapters.web.playground import KEPT_FILES, KEPT_IMAGES, KEPT_MESSAGES
from bot.features.audit import AuditTrail
from bot.features.retention import ForgetFeature
from bot.features.retention.forget import KINDS
from bot.kernel import ButtonPress, Command, OutMessage, Place, User
from storage.queries.user_data import USER_DATA
from tests.bot.features.jobs.test_batches import PrivatePlatform
from tests.bot.harness import Parts, harness
from tests.storage.conftest import new_job
from tests.storage.helpers import create_job, everything_about, rows_naming

USER = User("fake-5e1f0c2a9b7d")
OTHER = "fake-77aa00bb11cc"
PLACE = Place("fake", "web", "general")


def forget_me(parts: Parts) -> list[ForgetFeature]:
    audit = AuditTrail(parts.store.audit, 90)
    return [ForgetFeature(parts.store.retention, parts.outbox, audit, parts.store.clock)]


def pressed(message: OutMessage, label: str) -> ButtonPress:
    [button] = [b for row in message.buttons for b in row if b.label == label]
    return ButtonPress(
        user=USER, place=PLACE, message_id="preview", action=button.action, ref=button.ref
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


async def test_the_confirmation_repeats_that_a_running_job_stays(tmp_path: Path) -> None:
    platform = PrivatePlatform()
    async with harness(tmp_path, platform=platform, features=forget_me) as bot:
        mine = {"requester_id": USER.id, "platform": "fake", "workspace_id": "web"}
        await create_job(bot.store.admission, new_job(**mine, prompt="a fox", status="posted"))
        await create_job(bot.store.admission, new_job(**mine, prompt="still being drawn"))
        stays = "- 1 job still running stays until it finishes: run `/forget-me` again then."

        await bot.core.handle(Command(user=USER, place=PLACE, name="forget-me"))
        [preview] = platform.privates
        assert stays in preview.text.splitlines()
        await bot.core.handle(pressed(preview, "Delete all of it"))
        [done] = platform.ephemerals_for(USER.id)
        assert "- Jobs (prompts, parameters, result links): 1" in done.splitlines()
        assert done.splitlines()[-1] == stays
