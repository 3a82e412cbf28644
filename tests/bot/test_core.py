"""The core routes events to features and turns every problem into an ephemeral reply."""

from __future__ import annotations

from collections.abc import Mapping
from typing import ClassVar

import pytest

from bot.api.errors import InvalidRequest
from bot.core import Core
from bot.kernel import (
    DATABASE_FULL_TEXT,
    DATABASE_UNREACHABLE_TEXT,
    ButtonPress,
    Command,
    ModalSubmit,
    OptionValue,
    Place,
    SurfaceError,
    SurfaceRegistry,
    User,
    UserError,
    UserMessage,
)
from bot.refs import Referent, RefKind
from storage import StorageError
from tests.fakes.platform import FakePlatform

PLACE = Place("fake", "w", "c")
ALICE = User("alice")


class RecordingFeature:
    commands = frozenset({"imagine", "diffusion.txt2img"})
    actions: ClassVar[Mapping[str, RefKind]] = {"upscale1": RefKind.NONE}

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


Setup = tuple[Core, RecordingFeature, RecordingConversations, FakePlatform]


@pytest.fixture
def setup() -> Setup:
    feature, conversations, platform = RecordingFeature(), RecordingConversations(), FakePlatform()
    core = Core(SurfaceRegistry([platform]), [feature], conversations)
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
    core = Core(SurfaceRegistry(), [], services=services)
    await core.start()
    await core.stop()
    assert stopped == ["receiver", "tracker"]
    assert "stopping Service failed" in caplog.text


async def test_an_action_naming_something_needs_the_refs_check() -> None:
    class Naming(RecordingFeature):
        actions: ClassVar[Mapping[str, RefKind]] = {"upscale1": RefKind.JOB}

    with pytest.raises(ValueError, match="needs refs"):
        Core(SurfaceRegistry([FakePlatform()]), [Naming()])


async def test_a_ref_on_an_action_that_names_nothing_is_refused(setup: Setup) -> None:
    core, feature, _, platform = setup
    await core.handle(
        ButtonPress(user=ALICE, place=PLACE, message_id="m", action="upscale1", ref="job-1")
    )
    assert feature.seen == []
    assert platform.ephemerals_for("alice") == ["This button is no longer supported."]
