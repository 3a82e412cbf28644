"""What a write does: one frozen value per kind of platform call, handed to
:meth:`bot.outbox.Outbox.write`. ``Operation[T]`` is a write whose call answers a ``T`` (a
:class:`Post` answers the posted message's :class:`~bot.kernel.MessageRef`).

A post whose message has a ``key`` is idempotent where the platform finds keyed posts (the
adapter answers a repeat with the message already posted). Writes a platform may not have
(:class:`EditPressed`, :class:`Delete`, :class:`Private`, :class:`PrivateFile`,
:class:`Repost`, :class:`PublishHome`, :class:`StreamStart`, an :class:`Activity`'s status
line) are asked of surfaces that offer them; see each class.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar, Generic, TypeVar

from bot.kernel import (
    ActivityKind,
    ButtonPress,
    ButtonRows,
    Event,
    HomeOpened,
    HomeView,
    MessageRef,
    Modal,
    NativeStream,
    OutMessage,
    Place,
    User,
)

T_co = TypeVar("T_co", covariant=True)


class Operation(Generic[T_co]):
    """A write whose platform call answers a ``T_co``; ``method`` names the call (metrics,
    logs)."""

    method: ClassVar[str]


@dataclass(frozen=True)
class Post(Operation[MessageRef]):
    """Post ``message`` (in reply to ``origin``, where the platform threads replies)."""

    message: OutMessage
    origin: Event | None = None
    method: ClassVar[str] = "send"


@dataclass(frozen=True)
class Repost(Operation[MessageRef]):
    """Post a copy of the message ``original`` (``message`` is what it shows) where the write
    goes, on a surface that :class:`~bot.kernel.Reposts`; ``TypeError`` elsewhere."""

    original: MessageRef
    message: OutMessage
    method: ClassVar[str] = "repost"


@dataclass(frozen=True)
class Edit(Operation[None]):
    """Replace the message ``ref`` with ``message``."""

    ref: MessageRef
    message: OutMessage
    method: ClassVar[str] = "edit"


@dataclass(frozen=True)
class EditPressed(Operation[None]):
    """Replace the message ``press`` came from, a private one too, with ``message`` (on a surface
    that :class:`~bot.kernel.EditsPressed`; ``TypeError`` elsewhere)."""

    press: ButtonPress
    message: OutMessage
    method: ClassVar[str] = "edit_pressed"


@dataclass(frozen=True)
class Delete(Operation[None]):
    """Delete the message ``ref`` (only on a surface that
    :class:`~bot.kernel.DeletesMessages`; ``TypeError`` elsewhere)."""

    ref: MessageRef
    method: ClassVar[str] = "delete"


@dataclass(frozen=True)
class Notice(Operation[None]):
    """Show ``text`` to ``origin``'s user only (ephemeral), where ``origin`` happened."""

    origin: Event
    text: str
    method: ClassVar[str] = "send_ephemeral"


@dataclass(frozen=True)
class Private(Operation[None]):
    """Show a whole ``message`` to ``origin``'s user only (on a surface that
    :class:`~bot.kernel.SendsPrivately`; ``TypeError`` elsewhere)."""

    origin: Event
    message: OutMessage
    method: ClassVar[str] = "send_private"


@dataclass(frozen=True)
class PrivateFile(Operation[None]):
    """Hand ``origin``'s user a file only they see (on a surface that
    :class:`~bot.kernel.SendsFilesPrivately`; ``TypeError`` elsewhere)."""

    origin: Event
    text: str
    filename: str
    data: bytes
    method: ClassVar[str] = "send_file_privately"


@dataclass(frozen=True)
class OpenForm(Operation[None]):
    """Open the form ``modal`` for ``origin``'s user (an answer to a press or a command)."""

    origin: Event
    modal: Modal
    method: ClassVar[str] = "open_modal"


@dataclass(frozen=True)
class StartThread(Operation[Place]):
    """Start a thread named ``name`` under the message ``ref``; answers the thread's place."""

    ref: MessageRef
    name: str
    method: ClassVar[str] = "start_thread"


@dataclass(frozen=True)
class Activity(Operation[None]):
    """Show (or, ``ended``, stop showing) that genbot is ``kind`` for ``origin``: the
    platform's status line where it has one (:class:`~bot.kernel.ShowsActivity`), else its typing
    indicator while genbot thinks (typing ends by itself: ending it writes nothing)."""

    kind: ActivityKind
    origin: Event | None = None
    ended: bool = False
    method: ClassVar[str] = "activity"


@dataclass(frozen=True)
class PublishHome(Operation[None]):
    """Draw ``view`` as the home of ``event``'s user, on a surface that
    :class:`~bot.kernel.PublishesHome`; ``TypeError`` elsewhere."""

    event: HomeOpened
    view: HomeView
    method: ClassVar[str] = "publish_home"


@dataclass(frozen=True)
class Typing(Operation[None]):
    """Show the platform's typing indicator (it fades by itself after a few seconds)."""

    method: ClassVar[str] = "typing"


@dataclass(frozen=True)
class StreamStart(Operation[NativeStream | None]):
    """Start a natively streamed message with ``text`` for ``recipient`` (the user being
    answered), on a surface that :class:`~bot.kernel.StreamsNatively`; answers the stream, or
    ``None`` where the platform declines (the caller posts and edits instead)."""

    text: str
    origin: Event | None = None
    recipient: User | None = None
    method: ClassVar[str] = "start_stream"


@dataclass(frozen=True)
class StreamAppend(Operation[None]):
    """Add ``text`` to the natively streamed message ``stream``."""

    stream: NativeStream
    text: str
    method: ClassVar[str] = "append_stream"


@dataclass(frozen=True)
class StreamStop(Operation[None]):
    """End the natively streamed message ``stream``, with ``text`` as its last words and
    ``buttons`` under it."""

    stream: NativeStream
    text: str = ""
    buttons: ButtonRows = ()
    method: ClassVar[str] = "stop_stream"
