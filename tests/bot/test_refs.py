"""Every ref is bound to its owner (:mod:`bot.refs`), for every action of the real core.

The cases are generated from the action table of the core ``build_core`` assembles: for each
action, every press and form submission naming someone else's job, preview, conversation,
alternative or scope — from another platform, another workspace, another channel or thread, a
message not linked to it, another user — is refused by the core with :mod:`bot.refs`'s answer
before any feature runs (nothing posted, no form opened, no job created), while the owner's
press resolves to the thing. A new action is covered as soon as a feature declares it; a new
kind of ref fails here until it has cases.
"""

from __future__ import annotations

import re
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass
from pathlib import Path

import pytest

from bot.api import ProviderClient
from bot.kernel import ButtonPress, Command, ModalSubmit, Place, User
from bot.refs import (
    ADMINS_ONLY,
    ADMINS_ONLY_USERS,
    NO_BATCH,
    NO_CONVERSATION,
    NO_JOB,
    NOT_A_SCOPE,
    NOT_YOURS,
    NOT_YOURS_TO_SHOW,
    UNKNOWN_REF,
    AlternativeReferent,
    BatchReferent,
    ConversationReferent,
    JobReferent,
    NoReferent,
    PageReferent,
    PreviewReferent,
    RefKind,
    RefRefused,
    ScopeReferent,
    TurnReferent,
    UserReferent,
)
from bot.router import Router
from genbot.compose import build_core
from storage import (
    ALL_STATUSES,
    Batch,
    ConversationKey,
    Job,
    JobQuota,
    JobType,
    NewJob,
    SqliteStore,
)
from tests.bot.harness import ROOMY, harness_settings
from tests.fakes.platform import FakePlatform

ALICE = User("alice", "Alice")
BOB = User("bob", "Bob")
ADMIN = User("root", "Root", is_admin=True)
HOME = Place("fake", "w1", "open")
"""Where alice's job lives: an open channel, so only the binding keeps strangers out."""
THREAD = Place("fake", "w1", "c1", "t1")
VISION_MESSAGE = "m-vision"
OPEN = {"fake": frozenset({"open", "open2"})}


@dataclass(frozen=True)
class Press:
    """Who presses, where, on which message, and the answer expected (``None``: allowed)."""

    user: User
    place: Place
    message_id: str = "m1"
    refused_with: str | None = None


@dataclass(frozen=True)
class Victim:
    """Something of alice's, the ref that names it, and the presses to try on it."""

    ref: str
    presses: tuple[Press, ...]


@dataclass
class World:
    core: Router
    store: SqliteStore
    platforms: dict[str, FakePlatform]
    victims: dict[RefKind, Victim]


def job_presses() -> tuple[Press, ...]:
    return (
        Press(BOB, Place("fake", "w2", "open"), refused_with=NO_JOB),
        Press(ADMIN, Place("fake", "w2", "c9"), refused_with=NO_JOB),
        Press(ALICE, Place("other", "w1", "open"), refused_with=NO_JOB),
        Press(BOB, Place("fake", "w3", "d-bob", is_dm=True), refused_with=NO_JOB),
        Press(BOB, Place("fake", "w1", "c1"), refused_with=NO_JOB),
        Press(BOB, Place("fake", "w1", "open2"), refused_with=NO_JOB),
        Press(BOB, Place("fake", "w1", "d-bob", is_dm=True), refused_with=NO_JOB),
        Press(ALICE, Place("fake", "w1", "c2")),
        Press(ALICE, Place("fake", "w9", "d-alice", is_dm=True)),
        Press(BOB, HOME),
        Press(ADMIN, Place("fake", "w1", "c3")),
    )


def conversation_presses(message_id: str, place: Place) -> tuple[Press, ...]:
    return (
        Press(BOB, Place("fake", "w2", place.channel_id, place.thread_id), message_id,
              NO_CONVERSATION),
        Press(BOB, Place("fake", "w1", "c2"), message_id, NO_CONVERSATION),
        Press(BOB, place, "m-unlinked", NO_CONVERSATION),
        Press(BOB, Place("fake", "w1", place.channel_id, "t2"), message_id, NO_CONVERSATION),
        Press(ALICE, Place("other", "w1", place.channel_id, place.thread_id), message_id,
              NO_CONVERSATION),
        Press(ALICE, Place("fake", "w1", "d-alice", is_dm=True), message_id, NO_CONVERSATION),
        Press(BOB, place, message_id),
    )  # fmt: skip


async def alices_job(
    store: SqliteStore, place: Place, prompt: str = "", job_type: JobType = "imagine"
) -> Job:
    """A job of alice's (an imagine unless ``job_type`` says otherwise), made in ``place``."""
    new = NewJob(
        family="task",
        type=job_type,
        requester_id=ALICE.id,
        platform=place.platform,
        channel_id=place.channel_id,
        workspace_id=place.workspace_id,
        is_dm=place.is_dm,
        prompt=prompt,
    )
    admitted = await store.admission.create_job_within(new, JobQuota())
    assert isinstance(admitted, tuple)
    return admitted[0]


async def victims(store: SqliteStore) -> dict[RefKind, Victim]:
    """Alice's job (in an open channel) and conversation (a thread with a linked button)."""
    job = await alices_job(store, HOME, "alice's secret lighthouse", "upscale")
    await store.jobs.transition(job.id, ("creating",), "submitted", provider_id="p1")
    await store.jobs.transition(job.id, ("submitted",), "finished", result_urls=["https://x/1.png"])
    key = ConversationKey(THREAD.platform, THREAD.workspace_id, THREAD.channel_id, "t1")
    conversation, _ = await store.conversations.get_or_create_conversation(
        key, kind="thread", created_by="alice"
    )
    turn = await store.conversations.append_message(conversation.id, "user", "alice's secret")
    reply = await store.conversations.append_message(conversation.id, "assistant", "answer")
    await store.conversations.link_conversation_messages(
        conversation.id, [VISION_MESSAGE], chat_message_id=turn
    )
    scopes = (
        Press(BOB, HOME, refused_with=ADMINS_ONLY),
        Press(ADMIN, HOME),
    )
    batch = Batch(
        id="b-alice",
        platform=HOME.platform,
        workspace_id=HOME.workspace_id,
        channel_id=HOME.channel_id,
        requester_id=ALICE.id,
        command={"jobs": [{"prompt": "alice's secret fox"}] * 2},
        created_at=store.clock(),
        expires_at=store.clock() + 300,
        total=2,
    )
    await store.preferences.save_batch(batch)
    batches = (
        Press(BOB, HOME, refused_with=NO_BATCH),
        Press(ADMIN, HOME, refused_with=NO_BATCH),
        Press(ALICE, Place("other", "w1", "open"), refused_with=NO_BATCH),
        Press(ALICE, Place("fake", "w2", "open"), refused_with=NO_BATCH),
        Press(ALICE, HOME),
    )
    return {
        RefKind.JOB: Victim(job.id, job_presses()),
        RefKind.PREVIEW: Victim(f"{job.id}~d1", job_presses()),
        RefKind.PAGE: Victim(f"{job.id}~imagine~~~~fox", job_presses()),
        RefKind.CONVERSATION: Victim(
            str(conversation.id), conversation_presses(VISION_MESSAGE, THREAD)
        ),
        RefKind.ALTERNATIVE: Victim(
            f"{conversation.id}.{reply}.{reply}", conversation_presses(VISION_MESSAGE, THREAD)
        ),
        RefKind.TURN: Victim(
            f"{conversation.id}.{reply}", conversation_presses(VISION_MESSAGE, THREAD)
        ),
        RefKind.SCOPE: Victim("channel", scopes),
        RefKind.USER: Victim(
            ALICE.id, (Press(BOB, HOME, refused_with=ADMINS_ONLY_USERS), Press(ADMIN, HOME))
        ),
        RefKind.BATCH: Victim("b-alice", batches),
        RefKind.NONE: Victim(job.id, (Press(ALICE, HOME, refused_with=UNKNOWN_REF),)),
    }


@pytest.fixture
async def world(tmp_path: Path) -> AsyncIterator[World]:
    settings = harness_settings("http://127.0.0.1:9", tmp_path / "genbot.db", webhooks=False)
    store = await SqliteStore.open(tmp_path / "genbot.db")
    provider = ProviderClient(settings.api)
    platforms = {name: FakePlatform(name, profile=ROOMY) for name in ("fake", "other")}
    try:
        core, _ = build_core(settings, store, provider, platforms.values(), open_channels=OPEN)
        yield World(core, store, platforms, await victims(store))
    finally:
        await provider.aclose()
        await store.close()


Make = Callable[[str, Press, str], ButtonPress | ModalSubmit]


def button(action: str, press: Press, ref: str) -> ButtonPress:
    return ButtonPress(
        user=press.user, place=press.place, message_id=press.message_id, action=action, ref=ref
    )


def form(action: str, press: Press, ref: str) -> ModalSubmit:
    return ModalSubmit(user=press.user, place=press.place, action=action, ref=ref)


async def test_the_action_table_names_every_kind_of_ref(world: World) -> None:
    kinds = set(world.core.actions.values())
    assert kinds == set(RefKind), f"no action names {set(RefKind) - kinds}"
    assert len(world.core.actions) > 40


@pytest.mark.parametrize("make", [button, form], ids=["press", "form"])
async def test_every_action_refuses_refs_to_what_is_not_the_pressers(
    world: World, make: Make
) -> None:
    jobs_before = len(await world.store.tracking.list_unfinished_jobs(ALL_STATUSES))
    wrong: list[str] = []
    for action, kind in sorted(world.core.actions.items()):
        victim = world.victims[kind]
        for press in victim.presses:
            if press.refused_with is None:
                continue
            platform = world.platforms[press.place.platform]
            platform.ephemerals.clear()
            await world.core.handle(make(action, press, victim.ref))
            said = platform.ephemerals_for(press.user.id)
            if said != [press.refused_with]:
                wrong.append(f"{action} ({kind}) by {press.user.id} at {press.place}: {said}")
    assert wrong == []
    for platform in world.platforms.values():
        assert platform.messages == {} and platform.modals == [] and platform.sent == []
    assert len(await world.store.tracking.list_unfinished_jobs(ALL_STATUSES)) == jobs_before


async def test_the_owners_presses_resolve_to_the_thing(world: World) -> None:
    assert world.core.refs is not None
    for kind, victim in world.victims.items():
        for press in victim.presses:
            if press.refused_with is not None:
                continue
            referent = await world.core.refs.resolve(button("any", press, victim.ref), kind)
            match referent:
                case JobReferent(job) | PreviewReferent(job, _) | PageReferent(job, _):
                    assert kind in (RefKind.JOB, RefKind.PREVIEW, RefKind.PAGE)
                    assert job.id == victim.ref.partition("~")[0]
                case ConversationReferent(conversation) | AlternativeReferent(conversation, _):
                    assert kind in (RefKind.CONVERSATION, RefKind.ALTERNATIVE)
                    assert str(conversation.id) == victim.ref.partition(".")[0]
                case TurnReferent(conversation, turn):
                    assert kind is RefKind.TURN
                    assert f"{conversation.id}.{turn.id}" == victim.ref
                case ScopeReferent(scope):
                    assert kind is RefKind.SCOPE and scope == (victim.ref or "me")
                case UserReferent(user_id):
                    assert kind is RefKind.USER and user_id == victim.ref
                case BatchReferent(batch):
                    assert kind is RefKind.BATCH and batch.id == victim.ref
                case NoReferent():
                    assert kind is RefKind.NONE


async def test_a_job_is_shown_only_by_its_requester_or_an_admin(world: World) -> None:
    """Nobody else may show it, even in its own channel, open or not: there it is in view, so
    the refusal may say it is not theirs; anywhere else it is no job, as an unknown id is."""
    refs = world.core.refs
    assert refs is not None

    def show(user: User, channel: str) -> Command:
        return Command(user=user, place=Place("fake", "w1", channel), name="show")

    homes: dict[str, str] = {}
    for home in ("c5", "open"):
        job = await alices_job(world.store, Place("fake", "w1", home))
        homes[home] = job.id
        for user, channel in [(ALICE, home), (ALICE, "c6"), (ADMIN, home), (ADMIN, "c6")]:
            assert (await refs.job_to_show(show(user, channel), job.id)).id == job.id
        with pytest.raises(RefRefused, match=re.escape(NOT_YOURS_TO_SHOW)):
            await refs.job_to_show(show(BOB, home), job.id)
        for user, channel, named in [(BOB, "c6", job.id), (ALICE, "c7", "unknown-id")]:
            with pytest.raises(RefRefused, match=NO_JOB):
                await refs.job_to_show(show(user, channel), named)
        with pytest.raises(RefRefused, match=NO_JOB):
            await refs.job_to_show(
                Command(user=BOB, place=Place("fake", "w2", home), name="show"), job.id
            )
    with pytest.raises(RefRefused, match=re.escape(NOT_YOURS)):
        await refs.resolve(
            button("any", Press(BOB, Place("fake", "w1", "c5")), homes["c5"]), RefKind.JOB
        )
    pressed = await refs.resolve(button("any", Press(BOB, HOME), homes["open"]), RefKind.JOB)
    assert isinstance(pressed, JobReferent) and pressed.job.id == homes["open"], "its buttons: open"


async def test_a_form_that_names_nothing_pressed_as_a_button_is_no_longer_supported(
    world: World,
) -> None:
    """A diffusion upload form's action names nothing: pressed as a button (a crafted custom
    id), the feature's button handler is given no job and says so."""
    platform = world.platforms["fake"]
    assert world.core.actions["img2img_upload"] is RefKind.NONE
    await world.core.handle(button("img2img_upload", Press(ALICE, HOME), ""))
    assert platform.ephemerals_for(ALICE.id) == ["This button is no longer supported."]


async def test_a_scope_is_a_word_not_a_place(world: World) -> None:
    platform = world.platforms["fake"]
    await world.core.handle(button("settings", Press(ADMIN, HOME), "c-of-someone-else"))
    assert platform.ephemerals_for(ADMIN.id) == [NOT_A_SCOPE]


async def test_a_job_in_a_dm_is_nobody_elses_even_where_every_dm_is_one_workspace(
    world: World,
) -> None:
    """Discord's DMs share one workspace id: bob (or an admin) naming alice's DM job from their
    own DM learns nothing of it; in the job's own place, a stranger is told it is not theirs."""
    dm, where = "@me", Place("fake", "@me", "d-alice", is_dm=True)
    job = await alices_job(world.store, where, "alice's private heron")
    assert world.core.refs is not None
    refs = world.core.refs

    async def answer(user: User, place: Place) -> str | None:
        try:
            await refs.resolve(button("any", Press(user, place), job.id), RefKind.JOB)
        except RefRefused as refused:
            return str(refused)
        return None

    assert await answer(BOB, Place("fake", dm, "d-bob", is_dm=True)) == NO_JOB
    assert await answer(ADMIN, Place("fake", dm, "d-root", is_dm=True)) == NO_JOB
    assert await answer(BOB, where) == NOT_YOURS
    assert await answer(ALICE, where) is None
    assert await answer(ADMIN, where) is None


async def test_the_admin_page_reaches_a_workspaces_jobs_but_none_made_in_a_dm(
    world: World,
) -> None:
    """The admin page acts from a workspace, in none of its channels: an admin reaches the
    workspace's jobs there, not one made in a DM (only its requester would), nor another
    workspace's; anyone else reaches only their own."""
    in_dm = await alices_job(
        world.store, Place("fake", "w1", "d-alice", is_dm=True), "alice's private heron"
    )
    in_channel = world.victims[RefKind.JOB].ref
    refs = world.core.refs
    assert refs is not None
    page = Place("fake", "w1", "")

    assert (await refs.job_in_workspace(ADMIN, page, in_channel)).id == in_channel
    assert (await refs.job_in_workspace(ALICE, page, in_dm.id)).id == in_dm.id
    for user, place, job_id in [
        (ADMIN, page, in_dm.id),
        (ADMIN, Place("fake", "w2", ""), in_channel),
        (ADMIN, Place("other", "w1", ""), in_channel),
        (BOB, page, in_channel),
    ]:
        with pytest.raises(RefRefused, match=NO_JOB):
            await refs.job_in_workspace(user, place, job_id)
