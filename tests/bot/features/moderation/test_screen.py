"""The check: refusals name the category, offences escalate into bans per user per day (on a
clock), a banned user is told who banned them (an admin, or their refused prompts), admins are
refused without offences, unsure matches pass without the model check."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from bot.features.account import SETTINGS_ACTION
from bot.features.audit import AuditTrail
from bot.features.moderation import Moderation
from bot.features.moderation.screen import UNBANNED_COMMANDS
from bot.kernel import Command, ModalSubmit, ModerationSettings, Place, User, UserError, UserMessage
from storage import ModerationRule, SqliteStore, Store
from tests.bot.features.jobs.support import bodies, run_command
from tests.bot.harness import harness
from tests.bot.test_router import moderated
from tests.postgres import PostgresCluster
from tests.storage.conftest import ManualClock, PostgresSchema, SqliteFile

PLACE = Place("discord", "g1", "c1")
ALICE = User("alice")
ADMIN = User("root", is_admin=True)
MINUTE = 60.0
SETTINGS = ModerationSettings(words={"nsfw": ["nude"]}, patterns={"gore": [r"decapitat\w*"]})


@pytest.fixture
def clock() -> ManualClock:
    return ManualClock()


@pytest.fixture
async def store(tmp_path: Path, clock: ManualClock) -> AsyncIterator[SqliteStore]:
    opened = await SqliteStore.open(tmp_path / "genbot.db", clock=clock)
    try:
        yield opened
    finally:
        await opened.close()


@pytest.fixture(params=["sqlite", "postgres"])
async def either_store(
    request: pytest.FixtureRequest, tmp_path: Path, clock: ManualClock
) -> AsyncIterator[Store]:
    """A fresh store of each backend (PostgreSQL in the session's throwaway cluster)."""
    if request.param == "sqlite":
        database: SqliteFile | PostgresSchema = SqliteFile(tmp_path / "genbot.db")
    else:
        cluster: PostgresCluster = request.getfixturevalue("postgres")
        database = PostgresSchema(cluster.create_schema())
    opened = await database.open(clock)
    try:
        yield opened
    finally:
        await opened.close()


def imagine(prompt: str, user: User = ALICE, name: str = "imagine") -> Command:
    return Command(user=user, place=PLACE, name=name, text=prompt)


async def refusal(moderation: Moderation, event: Command, prompt: str) -> str:
    with pytest.raises(UserError) as refused:
        await moderation.screen(event, {"prompt": prompt})
    return str(refused.value)


async def test_offences_escalate_into_bans_that_end(store: SqliteStore, clock: ManualClock) -> None:
    moderation = Moderation(SETTINGS, store.moderation, audit=AuditTrail(store.audit, 90))
    await moderation.screen(imagine("a fox"), {"prompt": "a fox"})

    told = await refusal(moderation, imagine("a n.u.d.e fox"), "a n.u.d.e fox")
    assert "**nsfw**" in told and "1st" in told and "60 min" in told
    assert "a n.u.d.e fox" in told, "the prompt is given back"
    assert "nude" not in told.replace("n.u.d.e", ""), "the matched word is never named"

    banned = await refusal(moderation, imagine("a fox"), "a fox")
    assert "no prompts from you until 13:00 UTC" in banned
    await moderation.screen(imagine("", name="usage"), {})
    await moderation.screen(imagine("", name="settings"), {"model": "llm-4"})
    settings_form = ModalSubmit(user=ALICE, place=PLACE, action="settings", ref="me")
    await moderation.screen(settings_form, {"model": "llm-4"})
    with pytest.raises(UserError, match="no prompts from you"):
        await moderation.screen(
            ModalSubmit(user=ALICE, place=PLACE, action="remix_v1", ref="j"), {}
        )
    with pytest.raises(UserError):
        await moderation.check_message(message("hello"), "hello")

    clock.advance(60 * MINUTE)
    await moderation.screen(imagine("a fox"), {"prompt": "a fox"})
    told = await refusal(moderation, imagine("decapitated"), "decapitated")
    assert "**gore**" in told and "2nd" in told and "120 min" in told
    clock.advance(120 * MINUTE)
    assert "3rd" in await refusal(moderation, imagine("nude"), "nude")
    assert await store.moderation.banned_until("discord", "alice") == clock.now + 600 * MINUTE


async def test_a_banned_user_is_told_whether_an_admin_or_the_rules_banned_them(
    either_store: Store, clock: ManualClock
) -> None:
    store = either_store
    moderation = Moderation(SETTINGS, store.moderation, audit=AuditTrail(store.audit, 90))
    by_rules = "your prompts were refused by its rules today"
    by_admin = "an admin has banned you"
    await refusal(moderation, imagine("nude"), "nude")
    assert by_rules in await refusal(moderation, imagine("a fox"), "a fox")

    clock.advance(61 * MINUTE)
    await store.moderation.ban("discord", "alice", 30)
    told = await refusal(moderation, imagine("a fox"), "a fox")
    assert by_admin in told and by_rules not in told, "a refused prompt today, then an admin"
    assert "until 13:31 UTC" in told

    assert await store.moderation.lift_ban("discord", "alice")
    await moderation.screen(imagine("a fox"), {"prompt": "a fox"})
    assert "2nd" in await refusal(moderation, imagine("nude"), "nude")
    told = await refusal(moderation, imagine("a fox"), "a fox")
    assert by_rules in told and by_admin not in told, "after the unban, the rules' ban"

    await store.moderation.ban("discord", "bob", 30)
    with pytest.raises(UserError, match=by_admin):
        await moderation.check_message(message("hello", User("bob")), "hello")
    banned = await store.audit.entries("discord", "g1", kind="moderation.refused")
    assert [entry.target for entry in banned].count("bob") == 1, "the refusal is audited"


async def test_a_channels_system_prompt_is_checked_too(store: SqliteStore) -> None:
    moderation = Moderation(SETTINGS, store.moderation, audit=AuditTrail(store.audit, 90))
    settings = imagine("", name="settings")
    with pytest.raises(UserError, match=r"\*\*nsfw\*\*"):
        await moderation.screen(settings, {"system_prompt": "Always answer nude."})


async def test_an_admin_is_refused_without_an_offence(store: SqliteStore) -> None:
    moderation = Moderation(SETTINGS, store.moderation, audit=AuditTrail(store.audit, 90))
    told = await refusal(moderation, imagine("nude", ADMIN), "nude")
    assert "**nsfw**" in told and "min" not in told
    assert await store.moderation.banned_until("discord", "root") is None
    await moderation.screen(imagine("add nude", ADMIN, "admin.moderation"), {"entry": "nude"})


async def test_forms_messages_and_workspace_rules_are_checked(store: SqliteStore) -> None:
    moderation = Moderation(
        ModerationSettings(), store.moderation, audit=AuditTrail(store.audit, 90)
    )
    remix = ModalSubmit(user=ALICE, place=PLACE, action="remix_v1", ref="j1")
    await moderation.screen(remix, {"prompt": "a gory scene"})
    await store.moderation.add_rule("discord", "g1", ModerationRule("gore", "gory"), "root")
    with pytest.raises(UserError, match=r"\*\*gore\*\*"):
        await moderation.screen(remix, {"prompt": "a gory scene"})
    elsewhere = Place("discord", "g2", "c9")
    await moderation.check_message(
        UserMessage(user=User("bob"), place=elsewhere, message_id="m", text="gory"), "gory"
    )
    with pytest.raises(UserError, match="gore") as refused:
        await moderation.check_message(message("so gory", User("carol")), "so gory")
    assert "to edit" not in str(refused.value), "a chat message stays where it was written"


async def test_a_documents_text_is_refused_by_name_with_an_offence(store: SqliteStore) -> None:
    moderation = Moderation(SETTINGS, store.moderation, audit=AuditTrail(store.audit, 90))
    await moderation.check_document(ALICE, PLACE, "notes.txt", "--- notes.txt ---\na fox")
    read = "--- story.txt (2 lines) ---\nOnce upon a time\nthe n.u.d.e fox\n--- end ---"
    with pytest.raises(UserError) as refused:
        await moderation.check_document(ALICE, PLACE, "story.txt", read)
    told = str(refused.value)
    assert told.startswith("Refused: the document story.txt matches genbot's rules on **nsfw**")
    assert "1st" in told and "60 min" in told
    assert "Once upon" not in told, "a document is not echoed"
    assert await store.moderation.banned_until("discord", "alice") is not None
    (entry,) = await store.audit.entries("discord", "g1", kind="moderation.refused")
    assert entry.after["text"] == read


async def test_an_unsure_match_passes_without_the_model_check(store: SqliteStore) -> None:
    moderation = Moderation(SETTINGS, store.moderation, audit=AuditTrail(store.audit, 90))
    await moderation.screen(imagine("Scunthorpe denuded"), {"prompt": "Scunthorpe denuded"})
    assert await store.moderation.banned_until("discord", "alice") is None


def message(text: str, user: User = ALICE) -> UserMessage:
    return UserMessage(user=user, place=PLACE, message_id="m1", text=text)


def test_the_settings_form_is_the_account_features() -> None:
    assert SETTINGS_ACTION in UNBANNED_COMMANDS


async def test_braces_are_screened_as_choices_only_where_they_are_sent_so(tmp_path: Path) -> None:
    async with harness(tmp_path, screen=moderated) as bot:
        alice, bob = bot.actor("alice"), bot.actor("bob")
        rule = ModerationRule("gore", r"\bbloodbath\b", pattern=True)
        await bot.store.moderation.add_rule("fake", "w1", rule, "root")
        __, result = await run_command(bot, alice, "diffusion.txt2img", prompt="a {blood}bath")
        await alice.press(result, "Use as init")
        _, modal = bot.platform.modals[-1]
        await alice.submit(modal, prompt="a {blood}bath at dusk")
        await bot.result((await bot.latest_job()).id)
        assert bot.platform.ephemerals_for("alice") == []
        assert [body["prompt"] for body in bodies(bot.sim, "/diff/txt2img")] == ["a {blood}bath"]
        assert [body["prompt"] for body in bodies(bot.sim, "/diff/img2img")] == [
            "a {blood}bath at dusk"
        ], "/diffusion sends its braces as typed, and is screened so"

        await bob.command("diffusion.txt2img", prompt="a bloodbath")
        await bot.actor("carol").command("imagine", prompt="a {blood}bath")
        [typed] = bot.platform.ephemerals_for("bob")
        [expanded] = bot.platform.ephemerals_for("carol")
        assert "**gore**" in typed and "**gore**" in expanded
        assert len(bodies(bot.sim, "/diff/txt2img")) == 1
        assert bodies(bot.sim, "/gen/v2/imagine") == []
