"""What an adapter offers the core: the :class:`Surface` every platform has, the capabilities
only some have (protocols of their own, checked with ``isinstance``), what a platform allows
(:class:`PlatformProfile`), and the errors a surface raises. Nothing here knows about any platform
library.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Literal, Protocol, runtime_checkable

from bot.kernel.command_names import CommandNames
from bot.kernel.events import (
    Attachment,
    ButtonPress,
    Event,
    HomeOpened,
    MessageRef,
    Place,
    User,
)
from bot.kernel.outbound import ButtonRows, HomeView, Modal, OutMessage

WriteKind = Literal["send", "edit", "stream_start", "stream_append", "stream_stop"]
"""What a write to the platform is: a new message, an edit, or a step of a natively streamed
message (see :class:`NativeStream`)."""
ActivityKind = Literal["thinking", "drawing"]
"""What genbot shows it is doing while a user waits (an :class:`bot.outbox.Activity`)."""


@dataclass(frozen=True)
class PlatformProfile:
    """What a platform allows and can do: message length, the write windows the renderer and the
    pacer respect, buttons per row, what forms hold."""

    max_text: int = 2000
    edits_per_window_per_channel: int = 5
    edit_window_seconds: float = 5.0
    edits_per_minute_per_workspace: int | None = None
    min_seconds_between_edits_of_one_message: float = 0.0
    max_buttons_per_row: int = 5
    writes_per_minute_per_workspace: Mapping[WriteKind, int | None] = field(
        default_factory=lambda: MappingProxyType({}), compare=False
    )
    """Per-workspace windows of the kinds of write the platform limits each on its own (Slack
    gives every method its own tier; ``None``: no workspace window, only the channel's); a
    kind not listed counts against ``edits_per_minute_per_workspace``."""
    channel_window_kinds: frozenset[WriteKind] | None = None
    """The kinds of write that count against the per-channel window (``None``: all of them;
    Slack limits posting per channel, not streaming); a write of no kind always counts."""
    max_form_fields: int = 5
    """The most fields one form holds (Discord's modals hold 5)."""
    forms_take_files: bool = False
    """Whether forms can ask for files (Discord's file uploads in modals)."""
    forms_show_images: bool = False
    """Whether forms can show a picture (:attr:`bot.kernel.outbound.Modal.preview`; Slack's image
    blocks)."""
    forms_draw_regions: bool = False
    """Whether a form's ``region`` field is drawn on the image (the playground's editor), so a
    Vary (Region) needs no private preview before it runs."""
    enforces_windows: bool = True
    """Whether the platform refuses writes beyond its windows, counting each one when its
    request arrives (Discord, Slack): the pacer then counts a write from its call's return, a
    margin on top, since the request arrives somewhere before then. Where it does not (the
    playground, whose windows are advertised, not enforced), a write counts from its grant for
    exactly its window: no platform counts it later."""
    edits_add_images: bool = True
    """Whether a job's progress message becomes its result by an edit that gives it its images
    (Discord, the playground); where not (Slack: an edit notifies nobody, a new post notifies the
    requester that the job is done) the result is posted and the progress message removed."""
    shows_chosen_rating: bool = True
    """Whether a chat answer's 👍/👎 can be drawn chosen (a button's style), which is how the
    user the answer is for sees their rating; where not (Slack draws them as its own
    ``feedback_buttons``, which have no style) that user is thanked privately like anyone."""


class RateLimited(Exception):
    """Raised by a surface when the platform refused a call for rate limiting."""

    def __init__(self, retry_after: float) -> None:
        super().__init__(f"rate limited, retry after {retry_after:.2f}s")
        self.retry_after = retry_after


class SurfaceError(Exception):
    """Raised by a surface when the platform refused a call for another reason."""


class StreamExpired(SurfaceError):
    """Raised by :class:`NativeStream` when the platform no longer streams the message (Slack
    ends a stream after a few minutes); the caller finishes it with :meth:`Surface.edit`."""


class NativeStream(Protocol):
    """A message the platform streams itself: text is only ever added, then the stream is
    stopped once. Made by a surface's optional ``start_stream`` (see :class:`Surface`)."""

    ref: MessageRef

    async def append(self, text: str) -> None:
        """Add ``text`` to the message."""
        ...

    async def stop(self, text: str = "", buttons: ButtonRows = ()) -> None:
        """Add ``text``, end the stream, and show ``buttons`` under the message."""
        ...


class MessageGone(SurfaceError):
    """Raised by a surface when the message to edit or delete no longer exists (a user or a
    moderator deleted it)."""


class Surface(Protocol):
    """What an adapter offers the core. Every method is bounded in time by the adapter.

    What only some platforms can do is a protocol of its own, checked with ``isinstance``:
    :class:`FindsKeyedPosts`, :class:`DeletesMessages`, :class:`LinksMessages`,
    :class:`StreamsNatively`, :class:`ShowsActivity`, :class:`NamesCommands`,
    :class:`SendsPrivately`, :class:`PublishesHome`, :class:`Reposts`.
    """

    platform: str
    profile: PlatformProfile

    async def send(
        self, place: Place, message: OutMessage, *, origin: Event | None = None
    ) -> MessageRef:
        """Post ``message`` in ``place``. ``origin`` is the event being answered, if any.
        A keyed message it can tell it already posted in ``place`` is returned instead
        (see :attr:`bot.kernel.outbound.OutMessage.key`)."""
        ...

    async def edit(self, ref: MessageRef, message: OutMessage) -> None:
        """Replace the text (and buttons) of a message genbot posted."""
        ...

    async def send_ephemeral(self, origin: Event, text: str) -> None:
        """Show ``text`` to the event's user only (or as privately as the platform allows)."""
        ...

    async def open_modal(self, origin: Event, modal: Modal) -> None:
        """Show a form in answer to ``origin`` (a button press or a command)."""
        ...

    async def typing(self, place: Place) -> None:
        """Show a typing indicator in ``place`` (best effort)."""
        ...

    async def start_thread(self, ref: MessageRef, name: str) -> Place:
        """Open a thread on message ``ref`` and return the place inside it."""
        ...

    async def download(self, attachment: Attachment) -> bytes:
        """The bytes of a user's attachment (platform auth included)."""
        ...


@runtime_checkable
class FindsKeyedPosts(Protocol):
    """A surface that can tell which message it shows with a key
    (:attr:`bot.kernel.outbound.OutMessage.key`)."""

    async def posted(self, place: Place, key: str) -> MessageRef | None:
        """The message shown in ``place`` with ``key``, where the platform lets it tell."""
        ...


@runtime_checkable
class DeletesMessages(Protocol):
    """A surface that can remove a message genbot posted (a finished job's progress message
    where the result could not become it, a cancelled job's)."""

    async def delete(self, ref: MessageRef) -> None: ...


@runtime_checkable
class LinksMessages(Protocol):
    """A surface that can give an address opening a message ("the result is here")."""

    async def link(self, ref: MessageRef) -> str | None: ...


@runtime_checkable
class StreamsNatively(Protocol):
    """A surface whose platform streams a message itself (see :class:`NativeStream`)."""

    async def start_stream(
        self, place: Place, text: str, *, origin: Event | None, recipient: User | None
    ) -> NativeStream | None:
        """A message in ``place`` starting with ``text``, streamed for ``recipient`` (the user
        being answered), or ``None`` where the platform does not stream (the caller posts and
        edits instead)."""
        ...


@runtime_checkable
class ShowsActivity(Protocol):
    """A surface with a status line: genbot is :data:`ActivityKind` where the answer to
    ``origin`` will appear, until ended."""

    async def show_activity(
        self, place: Place, kind: ActivityKind, *, origin: Event | None = None
    ) -> None: ...

    async def end_activity(
        self, place: Place, kind: ActivityKind, *, origin: Event | None = None
    ) -> None: ...


@runtime_checkable
class NamesCommands(Protocol):
    """A surface whose platform names genbot's commands its own way in a text (Slack spells
    some: ``/genbot settings``; Discord mentions them): see :mod:`bot.kernel.command_names`."""

    def command_names(self, place: Place) -> CommandNames:
        """How a text read in ``place`` names genbot's commands."""
        ...


@runtime_checkable
class SendsPrivately(Protocol):
    """A surface that can show a whole message — images and buttons too — to one user only
    (a Vary (Region) preview, :mod:`bot.features.jobs.region_preview`)."""

    async def send_private(self, origin: Event, message: OutMessage) -> None:
        """Show ``message`` to ``origin``'s user only, where ``origin`` happened;
        :class:`SurfaceError` where it cannot."""
        ...


@runtime_checkable
class EditsPressed(Protocol):
    """A surface that can change the message a button was pressed on, a private one too — which
    :meth:`Surface.edit` cannot reach (Discord's and Slack's ephemeral messages, the
    playground's "only you can see this")."""

    async def edit_pressed(self, press: ButtonPress, message: OutMessage) -> None:
        """Replace the text and buttons of the message ``press`` came from (through the press
        itself: Discord's interaction, Slack's ``response_url``); :class:`SurfaceError` where
        it cannot."""
        ...


@runtime_checkable
class SendsFilesPrivately(Protocol):
    """A surface that can hand one user a file privately (the audit log's export)."""

    async def send_file_privately(
        self, origin: Event, text: str, filename: str, data: bytes
    ) -> None:
        """Give ``origin``'s user the file ``filename`` (``data``) with ``text``, where only
        they see it; :class:`SurfaceError` where it cannot."""
        ...


@runtime_checkable
class ForgetsUsers(Protocol):
    """A surface that keeps something about users beyond genbot's records (the playground's
    messages), counted and deleted with the rest of a user's data (``/forget-me``)."""

    async def kept_about(self, user_id: str) -> Mapping[str, int]:
        """What it keeps about ``user_id``: how many of each kind."""
        ...

    async def forget_user(self, user_id: str) -> Mapping[str, int]:
        """Delete what it keeps about ``user_id``; how many of each kind went."""
        ...

    async def tell_forgotten(self, origin: Event, text: str) -> None:
        """Tell ``origin``'s user ``text`` privately without keeping it (it would name them)."""
        ...


@runtime_checkable
class PublishesHome(Protocol):
    """A surface with a home tab per user (Slack's App Home), drawn from a
    :class:`~bot.kernel.outbound.HomeView`."""

    async def publish_home(self, event: HomeOpened, view: HomeView) -> None: ...


@runtime_checkable
class Reposts(Protocol):
    """A surface that can post a copy of a message elsewhere (a result again, from the home)."""

    async def repost(self, ref: MessageRef, place: Place, message: OutMessage) -> MessageRef: ...
