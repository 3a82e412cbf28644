"""The router runs each event in a supervised task (deadline, order, drain), routes it to the
feature that owns it, and turns every problem into one ephemeral reply.

The supervision is driven through the real playground over HTTP: intake stops with a
"restarting" answer, a drain lets running events finish and cuts what outlives its deadline,
messages of one conversation run one at a time, and a deadline that passes is told the user."""

from __future__ import annotations

import asyncio
import re
from collections.abc import AsyncIterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import ClassVar

import pytest
from aiohttp import ClientSession, CookieJar

from adapters.web import WebAdapter
from adapters.web.settings import WebSettings
from adapters.web.surface import WebSurface
from bot.api.errors import InvalidRequest
from bot.features.audit import AuditTrail
from bot.features.jobs import wording as jobs_wording
from bot.features.moderation import Moderation
from bot.kernel import (
    DATABASE_FULL_TEXT,
    DATABASE_UNREACHABLE_TEXT,
    RESTARTING_TEXT,
    TOO_SLOW_TEXT,
    ButtonPress,
    Command,
    InboundEvent,
    ModalSubmit,
    ModerationSettings,
    OptionValue,
    OutMessage,
    Place,
    SurfaceError,
    SurfaceRegistry,
    User,
    UserError,
    UserMessage,
)
from bot.outbox import Outbox
from bot.refs import Referent, RefKind, Work
from bot.router import Router, answers_refusal
from simulator.state import SimulatorConfig
from storage import ModerationRule, StorageError
from tests.adapters.web.fakes import history, post
from tests.bot.features.jobs.support import press, run_command
from tests.bot.harness import Genbot, Parts, harness
from tests.fakes.platform import FakePlatform
from tests.fakes.router import FakeRouter

PLACE = Place("fake", "w", "c")
MANUAL = SimulatorConfig(time_scale=1.0, clock_start=1_700_000_000)
ALICE = User("alice")


class RecordingFeature:
    commands = frozenset({"imagine", "diffusion.txt2img"})
    actions: ClassVar[Mapping[str, RefKind]] = {"upscale1": RefKind.NONE}
    work: ClassVar[Mapping[str, Work]] = {"upscale1": Work.PAID}

    def __init__(self) -> None:
        self.seen: list[tuple[str, object]] = []
        self.fail_with: Exception | None = None

    async def on_command(self, event: Command, options: Mapping[str, OptionValue]) -> None:
        if self.fail_with:
            raise self.fail_with
        self.seen.append((event.name, dict(options)))

    async def on_button(self, event: ButtonPress, referent: Referent) -> None:
        self.seen.append(("button", event.action))

    async def on_modal(self, event: ModalSubmit, referent: Referent) -> None:
        self.seen.append(("modal", event.action))


class RecordingConversations:
    def __init__(self) -> None:
        self.messages: list[str] = []

    async def on_message(self, event: UserMessage) -> None:
        self.messages.append(event.text)


Setup = tuple[Router, RecordingFeature, RecordingConversations, FakePlatform]


@pytest.fixture
def setup() -> Setup:
    feature, conversations, platform = RecordingFeature(), RecordingConversations(), FakePlatform()
    core = Router(Outbox(SurfaceRegistry([platform])), [feature], conversations)
    return core, feature, conversations, platform


def command(name: str, text: str = "", **options: OptionValue) -> Command:
    return Command(user=ALICE, place=PLACE, name=name, text=text, options=options)


async def test_typed_options_are_validated_and_routed(setup: Setup) -> None:
    core, feature, _, platform = setup
    await core.handle(command("imagine", prompt="a fox", aspect_ratio="16:9"))
    assert feature.seen == [("imagine", {"prompt": "a fox", "aspect_ratio": "16:9"})]
    assert platform.ephemerals == []


async def test_text_commands_are_parsed(setup: Setup) -> None:
    core, feature, _, _ = setup
    await core.handle(command("diffusion.txt2img", "a fox --width 768 --steps 31 --seed 7"))
    assert feature.seen == [
        ("diffusion.txt2img", {"prompt": "a fox", "width": 768, "steps": "31", "seed": 7})
    ]


async def test_bad_input_never_reaches_the_feature(setup: Setup) -> None:
    core, feature, _, platform = setup
    await core.handle(command("diffusion.txt2img", "a fox --width 2048"))
    await core.handle(command("imagine", "a fox --ar 99"))
    assert feature.seen == []
    first, second = platform.ephemerals_for("alice")
    assert "1024" in first and "2048" in first
    assert "--ar" in second


async def test_unowned_command_and_action_are_refused(setup: Setup) -> None:
    core, _, _, platform = setup
    await core.handle(command("blend"))
    await core.handle(ButtonPress(user=ALICE, place=PLACE, message_id="m", action="zzz", ref="j"))
    assert platform.ephemerals_for("alice") == [
        "genbot does not know the command /blend.",
        "This button is no longer supported.",
    ]


async def test_buttons_modals_and_messages_are_routed(setup: Setup) -> None:
    core, feature, conversations, _ = setup
    await core.handle(
        ButtonPress(user=ALICE, place=PLACE, message_id="m", action="upscale1", ref="")
    )
    await core.handle(ModalSubmit(user=ALICE, place=PLACE, action="upscale1", ref=""))
    await core.handle(UserMessage(user=ALICE, place=PLACE, message_id="u1", text="hello"))
    assert feature.seen == [("button", "upscale1"), ("modal", "upscale1")]
    assert conversations.messages == ["hello"]


def kept_nothing() -> Exception:
    """A platform write that failed because the platform's storage did (the playground's)."""
    try:
        raise StorageError("database connection lost: server closed the connection")
    except StorageError as cause:
        try:
            raise SurfaceError("the playground could not keep the message") from cause
        except SurfaceError as error:
            return error


async def test_a_failure_the_storage_caused_is_told_as_such(setup: Setup) -> None:
    core, feature, _, platform = setup
    feature.fail_with = kept_nothing()
    await core.handle(command("imagine", prompt="a fox"))
    assert platform.ephemerals_for("alice") == [DATABASE_UNREACHABLE_TEXT]


@pytest.mark.parametrize(
    ("error", "shown"),
    [
        (UserError("You have 3 jobs running."), "You have 3 jobs running."),
        (
            InvalidRequest("width", "≤ 1024", "width must be at most 1024"),
            "width must be at most 1024",
        ),
        (StorageError("no database connection within the timeout"), DATABASE_UNREACHABLE_TEXT),
        (StorageError("database error: database or disk is full"), DATABASE_FULL_TEXT),
        (
            StorageError("database error: attempt to write a readonly database"),
            DATABASE_FULL_TEXT,
        ),
    ],
)
async def test_feature_errors_become_ephemeral(setup: Setup, error: Exception, shown: str) -> None:
    core, feature, _, platform = setup
    feature.fail_with = error
    await core.handle(command("imagine", prompt="a fox"))
    assert platform.ephemerals_for("alice") == [shown]


async def test_unexpected_errors_are_logged_with_a_reference(
    setup: Setup, caplog: pytest.LogCaptureFixture
) -> None:
    core, feature, _, platform = setup
    feature.fail_with = RuntimeError("boom")
    await core.handle(command("imagine", prompt="a fox"))
    (text,) = platform.ephemerals_for("alice")
    reference = text.split("(ref ")[1].split(")")[0]
    assert reference in caplog.text and "boom" in caplog.text


class Service:
    def __init__(self, name: str, stopped: list[str], fails: bool = False) -> None:
        self.name, self.stopped, self.fails = name, stopped, fails

    async def start(self) -> None:
        pass

    async def stop(self) -> None:
        self.stopped.append(self.name)
        if self.fails:
            raise RuntimeError(f"{self.name} would not stop")


async def test_one_service_failing_to_stop_does_not_keep_the_others_running(
    caplog: pytest.LogCaptureFixture,
) -> None:
    stopped: list[str] = []
    services = [Service("tracker", stopped), Service("receiver", stopped, fails=True)]
    core = Router(Outbox(SurfaceRegistry()), [], services=services)
    await core.start()
    await core.stop()
    assert stopped == ["receiver", "tracker"]
    assert "stopping Service failed" in caplog.text


async def test_an_action_naming_something_needs_the_refs_check() -> None:
    class Naming(RecordingFeature):
        actions: ClassVar[Mapping[str, RefKind]] = {"upscale1": RefKind.JOB}

    with pytest.raises(ValueError, match="needs refs"):
        Router(Outbox(SurfaceRegistry([FakePlatform()])), [Naming()])


async def test_a_ref_on_an_action_that_names_nothing_is_refused(setup: Setup) -> None:
    core, feature, _, platform = setup
    await core.handle(
        ButtonPress(user=ALICE, place=PLACE, message_id="m", action="upscale1", ref="job-1")
    )
    assert feature.seen == []
    assert platform.ephemerals_for("alice") == ["This button is no longer supported."]


@dataclass
class GatedCore:
    """Answers each command with "done <text>" once :attr:`gate` is open; records order."""

    gate: asyncio.Event = field(default_factory=asyncio.Event)
    started: list[str] = field(default_factory=list)
    finished: list[str] = field(default_factory=list)
    surface: WebSurface | None = None
    arrived: asyncio.Event = field(default_factory=asyncio.Event)

    async def handle(self, event: InboundEvent) -> None:
        assert isinstance(event, Command | UserMessage) and self.surface is not None
        self.started.append(event.text)
        self.arrived.set()
        await self.gate.wait()
        await self.surface.send(event.place, OutMessage(f"done {event.text}"), origin=event)
        self.finished.append(event.text)


@pytest.fixture
async def gated() -> AsyncIterator[tuple[GatedCore, WebAdapter, ClientSession]]:
    core = GatedCore()
    adapter = WebAdapter(WebSettings(host="127.0.0.1", port=0), keepalive_seconds=0.05)
    core.surface = adapter.surface
    await adapter.start(FakeRouter(core, [adapter.surface]))
    async with ClientSession(base_url=adapter.url, cookie_jar=CookieJar(unsafe=True)) as browser:
        async with browser.get("/"):
            pass
        yield core, adapter, browser
    await adapter.stop()


async def test_after_intake_stops_a_command_is_answered_restarting_and_not_run_later(
    gated: tuple[GatedCore, WebAdapter, ClientSession],
) -> None:
    core, adapter, browser = gated
    adapter.intake.stop()
    status, _ = await post(browser, "/api/command", {"text": "/chat hello"})
    assert status == 202
    await adapter.intake.drain(5)

    messages = (await history(browser))["messages"]
    assert [m["kind"] for m in messages] == ["user", "ephemeral"]
    assert messages[1]["text"] == RESTARTING_TEXT
    assert core.started == []
    assert adapter.playground.store.get(messages[0]["id"]).pending is False  # type: ignore[union-attr]


async def test_a_drain_lets_running_events_finish(
    gated: tuple[GatedCore, WebAdapter, ClientSession],
) -> None:
    core, adapter, browser = gated
    await post(browser, "/api/command", {"text": "/chat one"})
    await asyncio.wait_for(core.arrived.wait(), 5)
    adapter.intake.stop()
    drain = asyncio.create_task(adapter.intake.drain(10))
    await asyncio.sleep(0)
    assert not drain.done()
    core.gate.set()

    assert await drain == 0
    assert core.finished == ["one"]
    assert [m["text"] for m in (await history(browser))["messages"]][-1] == "done one"


async def test_a_drain_cancels_what_outlives_its_deadline(
    gated: tuple[GatedCore, WebAdapter, ClientSession],
) -> None:
    core, adapter, browser = gated
    await post(browser, "/api/command", {"text": "/chat forever"})
    await asyncio.wait_for(core.arrived.wait(), 5)

    assert await adapter.intake.drain(0.05) == 1
    assert adapter.intake.running == 0
    assert core.finished == []
    messages = (await history(browser))["messages"]
    assert [m["kind"] for m in messages] == ["user"], "a cut event resumes: it is told nothing"


async def test_events_with_one_serial_key_run_one_at_a_time_in_order(
    gated: tuple[GatedCore, WebAdapter, ClientSession],
) -> None:
    core, adapter, _ = gated
    router = adapter.router
    assert isinstance(router, Router)
    intake = router.intake("web")
    place = Place("web", "web", "general", None, is_dm=True)
    user = User("u1", "you")
    for text in ("first", "second", "third"):
        intake.submit(
            UserMessage(user=user, place=place, message_id=text, text=text, serial_key="general")
        )
    await asyncio.wait_for(core.arrived.wait(), 5)
    await asyncio.sleep(0.05)
    assert core.started == ["first"]
    core.gate.set()
    assert await router.drain(5) == 0
    assert core.started == core.finished == ["first", "second", "third"]


async def test_an_event_outliving_its_deadline_is_told_the_user_and_given_up(
    gated: tuple[GatedCore, WebAdapter, ClientSession],
) -> None:
    core, adapter, browser = gated
    adapter.handler_timeout = 0.05
    await post(browser, "/api/command", {"text": "/chat forever"})
    await asyncio.wait_for(core.arrived.wait(), 5)
    assert await adapter.intake.drain(5) == 0
    messages = (await history(browser))["messages"]
    assert [m["kind"] for m in messages] == ["user", "ephemeral"]
    assert messages[1]["text"] == TOO_SLOW_TEXT
    assert core.finished == []


@pytest.mark.parametrize(
    ("is_dm", "mentions_bot", "answered"),
    [(True, False, True), (False, True, True), (False, False, False)],
)
def test_a_plain_message_is_answered_restarting_only_when_addressed_to_genbot(
    is_dm: bool, mentions_bot: bool, answered: bool
) -> None:
    message = UserMessage(
        user=User("u1", "you"),
        place=Place("slack", "T1", "C1", "171.0", is_dm=is_dm),
        message_id="1",
        text="hi",
        mentions_bot=mentions_bot,
    )
    assert answers_refusal(message) is answered
    assert answers_refusal(Command(user=message.user, place=message.place, name="chat"))


async def test_every_intake_stops_and_drains_with_the_router(setup: Setup) -> None:
    core, feature, _, platform = setup
    first, second = core.intake("fake"), core.intake("fake")
    imagine = command("imagine", prompt="a fox")
    assert first.submit(imagine) is True
    core.stop_intake()
    assert second.submit(imagine) is False
    assert await core.drain(5) == 0
    assert feature.seen == [("imagine", {"prompt": "a fox"})]
    assert platform.ephemerals_for("alice") == [RESTARTING_TEXT]


def moderated(parts: Parts) -> Moderation:
    """The real moderation, with no rule but the workspace's (the harness's screen)."""
    return Moderation(
        ModerationSettings(), parts.store.moderation, audit=AuditTrail(parts.store.audit, 90)
    )


def untimed(refusal: str) -> str:
    """A refusal without the clock time its ban ends at (two refusals may straddle a minute)."""
    return re.sub(r"until [^.\n]*", "until …", refusal)


def job_calls(bot: Genbot) -> int:
    """How many jobs the provider was asked to start."""
    return sum(1 for r in bot.sim.state.requests_to("/gen/v2/") if not r.path.endswith("fetch"))


async def test_a_banned_user_starts_nothing_from_a_button_but_may_cancel(tmp_path: Path) -> None:
    async with harness(tmp_path, sim_config=MANUAL, screen=moderated) as bot:
        alice = bot.actor("alice")
        await alice.command("imagine", prompt="a fox")
        fox = await bot.latest_job()
        bot.sim.advance(120)
        grid = await bot.result(fox.id)
        await alice.command("imagine", prompt="a hare")
        hare = await bot.latest_job()
        await bot.store.moderation.ban("fake", "alice", 30)
        calls = job_calls(bot)

        for label in ("U1", "🔄", "V2", "🌱 Seed"):
            await alice.press(grid, label)
        assert [job.id for job in await bot.all_jobs()] == [fox.id, hare.id], "no job stored"
        assert job_calls(bot) == calls, "no provider call"
        refusals = bot.platform.ephemerals_for("alice")
        assert len(refusals) == 4
        assert all(text.startswith("genbot takes no prompts from you until") for text in refusals)

        await alice.press(bot.progress(hare), "❌ Cancel")
        cancelled = await bot.store.jobs.get_job(hare.id)
        assert cancelled is not None and cancelled.status == "cancelled"
        assert cancelled.result.get("cancelled"), "a banned user may stop their own spend"
        assert bot.platform.ephemerals_for("alice")[4:] == [jobs_wording.CANCELLED_NOTE]


async def test_a_reroll_is_checked_against_the_rules_in_force_as_if_typed(tmp_path: Path) -> None:
    async with harness(tmp_path, screen=moderated) as bot:
        alice, bob = bot.actor("alice"), bot.actor("bob")
        fox, grid = await run_command(bot, alice, "imagine", prompt="a gory fox")
        await bot.store.moderation.add_rule("fake", "w1", ModerationRule("gore", "gory"), "root")
        calls = job_calls(bot)

        await alice.press(grid, "🔄")
        await bob.command("imagine", prompt="a gory fox")

        assert [job.id for job in await bot.all_jobs()] == [fox.id], "no job stored"
        assert job_calls(bot) == calls, "no provider call"
        [rerolled] = bot.platform.ephemerals_for("alice")
        [typed] = bot.platform.ephemerals_for("bob")
        assert "**gore**" in rerolled and "a gory fox" in rerolled
        assert untimed(rerolled) == untimed(typed), "the same refusal as the same prompt typed"
        assert await bot.store.moderation.banned_until("fake", "alice") is not None


async def test_a_user_neither_banned_nor_breaking_a_rule_presses_as_before(
    tmp_path: Path,
) -> None:
    async with harness(tmp_path, screen=moderated) as bot:
        alice = bot.actor("alice")
        await bot.store.moderation.ban("fake", "bob", 30)
        await bot.store.moderation.add_rule("fake", "w1", ModerationRule("gore", "gory"), "root")
        _, grid = await run_command(bot, alice, "imagine", prompt="a red fox")

        __, upscaled = await press(bot, alice, grid, "U1")
        await press(bot, alice, grid, "🔄")
        await press(bot, alice, upscaled, "Vary (Strong)")

        assert bot.platform.ephemerals_for("alice") == []


def test_every_action_says_what_a_press_starts() -> None:
    class Undeclared(RecordingFeature):
        work: ClassVar[Mapping[str, Work]] = {}

    class ResubmitsNothing(RecordingFeature):
        work: ClassVar[Mapping[str, Work]] = {"upscale1": Work.RESUBMIT}

    outbox = Outbox(SurfaceRegistry([FakePlatform()]))
    with pytest.raises(ValueError, match="does not say what a press starts"):
        Router(outbox, [Undeclared()])
    with pytest.raises(ValueError, match="names no stored text"):
        Router(outbox, [ResubmitsNothing()])
