"""The one event model shared by every adapter.

Adapters translate platform traffic into the inbound events below and hand them to
``Core.handle``; the core answers through the adapter's :class:`Surface`. Nothing here knows
about any platform library.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any, Literal, Protocol, runtime_checkable

ButtonStyle = Literal["primary", "secondary", "success", "danger"]
OptionValue = str | int | float | bool
WriteKind = Literal["send", "edit", "stream_start", "stream_append", "stream_stop"]
WorkStatus = Literal["thinking", "drawing"]
"""What genbot shows it is doing while a user waits (see :mod:`bot.status`)."""
"""What a write to the platform is: a new message, an edit, or a step of a natively streamed
message (see :class:`NativeStream`)."""

CUSTOM_ID_PREFIX = "gb"
CUSTOM_ID_MAX = 100


@dataclass(frozen=True)
class Place:
    """Where a message lives: a channel, optionally a thread in it, in a workspace (guild/team)."""

    platform: str
    workspace_id: str
    channel_id: str
    thread_id: str | None = None
    is_dm: bool = False

    def in_thread(self, thread_id: str) -> Place:
        """The same channel, inside ``thread_id``."""
        return Place(self.platform, self.workspace_id, self.channel_id, thread_id, self.is_dm)


@dataclass(frozen=True)
class MessageRef:
    """A message posted on a platform."""

    place: Place
    message_id: str


@dataclass(frozen=True)
class User:
    """Who sent an event. ``is_admin`` is decided by the adapter from its settings."""

    id: str
    name: str = ""
    is_admin: bool = False


@dataclass(frozen=True)
class Attachment:
    """A file a user attached. ``data`` is set when the adapter already holds the bytes.

    ``private`` means ``url`` opens only with the platform's credentials (Slack files): nobody
    else, the provider included, can fetch it, so the core reads the bytes through
    :meth:`Surface.download` and never hands that URL on.
    """

    filename: str
    url: str = ""
    content_type: str | None = None
    size: int | None = None
    data: bytes | None = None
    private: bool = False


@dataclass(frozen=True, kw_only=True)
class Event:
    """Base of inbound events. ``context`` is the adapter's own handle (interaction, trigger id);
    the core never reads it, it only passes the event back to the surface."""

    user: User
    place: Place
    context: Any = field(default=None, compare=False, repr=False)


@dataclass(frozen=True, kw_only=True)
class Command(Event):
    """A slash command. ``name`` is dotted for groups: ``chat``, ``imagine``, ``diffusion.txt2img``.

    ``options`` holds typed option values; ``attachments`` maps option names to files.
    ``text`` is the raw text for platforms whose commands carry text only (Slack); the core
    parses it Midjourney style (``a fox --ar 16:9 --fast``) when ``options`` is empty.
    """

    name: str
    options: Mapping[str, OptionValue] = field(default_factory=dict)
    attachments: Mapping[str, Attachment] = field(default_factory=dict)
    text: str = ""


@dataclass(frozen=True, kw_only=True)
class UserMessage(Event):
    """A user message in a DM, a thread, or a channel (reply chain or mention)."""

    message_id: str
    text: str
    attachments: tuple[Attachment, ...] = ()
    reply_to_message_id: str | None = None
    mentions_bot: bool = False


@dataclass(frozen=True, kw_only=True)
class ButtonPress(Event):
    """A press on one of genbot's buttons, on message ``message_id``."""

    message_id: str
    action: str
    ref: str


@dataclass(frozen=True, kw_only=True)
class ModalSubmit(Event):
    """The answer to a modal opened for ``action`` on ``ref``; ``values`` maps field ids."""

    action: str
    ref: str
    values: Mapping[str, str] = field(default_factory=dict)
    attachments: Mapping[str, tuple[Attachment, ...]] = field(default_factory=dict)
    """The files given in the form's ``file`` fields, by field id."""


@dataclass(frozen=True, kw_only=True)
class HomeOpened(Event):
    """A user opened their home with genbot (Slack's App Home tab); ``place`` is their own
    conversation with genbot."""


InboundEvent = Command | UserMessage | ButtonPress | ModalSubmit | HomeOpened


@dataclass(frozen=True)
class Button:
    """A button. Its state travels in ``custom_id``: the action and a job reference.
    ``disabled``: shown but not pressable (platforms without disabled buttons leave it out)."""

    label: str
    action: str
    ref: str
    style: ButtonStyle = "secondary"
    disabled: bool = False

    @property
    def custom_id(self) -> str:
        return encode_custom_id(self.action, self.ref)


@dataclass(frozen=True)
class ImageFile:
    """Image bytes to upload with a message; ``url`` is where it can also be seen (a link to
    show instead where the platform will not take the bytes), when known."""

    filename: str
    data: bytes
    content_type: str = "image/png"
    url: str = ""


@dataclass(frozen=True)
class OutMessage:
    """A message for the platform.

    ``from_model`` marks text written by the model: adapters must make it ping nobody.
    ``mention_user_id`` lets genbot's own text mention the requester.

    ``key`` names a message that must be shown once however often it is sent (a job's result
    or failure report): a surface that already posted a message with this key in the place
    returns that message instead of posting another, as far as its platform lets it tell
    (Discord: within its nonce window of a few minutes; Slack: when ``may_exist``, among the
    recent messages; the playground: always). ``may_exist`` says an earlier send with the key
    may have reached the platform (it failed or the process died before its outcome was
    recorded), so a surface whose platform does not deduplicate by itself looks for it.
    """

    text: str = ""
    images: tuple[ImageFile, ...] = ()
    buttons: tuple[tuple[Button, ...], ...] = ()
    from_model: bool = False
    mention_user_id: str | None = None
    key: str | None = None
    may_exist: bool = False
    card: bool = False
    """A job's message (progress, result, failure report): a surface that frames such messages
    (Discord's Components V2 cards) does so; every write of one such message sets it."""


FieldKind = Literal["text", "select", "region", "file"]
"""``text``: a text input; ``select``: one of ``choices`` (``""`` when none is chosen);
``region``: an area of ``image_url`` in :func:`bot.masks.parse_region` syntax — an editor to
draw on where the platform has one (the playground), else a text input; ``file``: up to
``max_files`` uploaded files (only where :attr:`SurfaceLimits.forms_take_files`), given in
:attr:`ModalSubmit.attachments`."""


@dataclass(frozen=True)
class Choice:
    """One option of a ``select`` field."""

    label: str
    value: str


@dataclass(frozen=True)
class ModalField:
    """One input of a modal (a text input unless ``kind`` says otherwise)."""

    id: str
    label: str
    placeholder: str = ""
    default: str = ""
    required: bool = True
    max_length: int = 4000
    multiline: bool = False
    kind: FieldKind = "text"
    choices: tuple[Choice, ...] = ()
    image_url: str = ""
    max_files: int = 1


@dataclass(frozen=True)
class Modal:
    """A form the platform shows; its submission comes back as :class:`ModalSubmit`.

    ``notice`` is shown above the fields: why the last submission was refused (the form comes
    back with the values the user gave), or a preview of what they chose. ``preview``: a
    picture of what they chose, shown above the fields where the platform's forms show images
    (Slack); others leave it out."""

    title: str
    action: str
    ref: str
    fields: tuple[ModalField, ...]
    notice: str = ""
    preview: ImageFile | None = None

    @property
    def custom_id(self) -> str:
        return encode_custom_id(self.action, self.ref)


@dataclass(frozen=True)
class SurfaceLimits:
    """What a platform allows: message length and edit budgets the renderer must respect."""

    max_text: int = 2000
    edits_per_window_per_channel: int = 5
    edit_window_seconds: float = 5.0
    edits_per_minute_per_workspace: int | None = None
    min_seconds_between_edits_of_one_message: float = 0.0
    max_buttons_per_row: int = 5
    writes_per_minute_per_workspace: Mapping[WriteKind, int | None] = field(
        default_factory=lambda: MappingProxyType({}), compare=False
    )
    """Per-workspace budgets of the kinds of write the platform limits each on its own (Slack
    gives every method its own tier; ``None``: no workspace budget, only the channel's); a
    kind not listed counts against ``edits_per_minute_per_workspace``."""
    channel_window_kinds: frozenset[WriteKind] | None = None
    """The kinds of write that count against the per-channel window (``None``: all of them;
    Slack limits posting per channel, not streaming)."""
    forms_take_files: bool = False
    """Whether forms can ask for files (Discord's file uploads in modals)."""
    forms_show_images: bool = False
    """Whether forms can show a picture (:attr:`Modal.preview`; Slack's image blocks)."""
    edits_add_images: bool = True
    """Whether a job's progress message becomes its result by an edit that gives it its images
    (Discord, the playground); where not (Slack: an edit notifies nobody, a new post notifies the
    requester that the job is done) the result is posted and the progress message removed."""


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

    async def stop(self, text: str = "") -> None:
        """Add ``text`` and end the stream."""
        ...


class MessageGone(SurfaceError):
    """Raised by a surface when the message to edit or delete no longer exists (a user or a
    moderator deleted it)."""


class Surface(Protocol):
    """What an adapter offers the core. Every method is bounded in time by the adapter.

    What only some platforms can do is a protocol of its own, checked with ``isinstance``:
    :class:`FindsKeyedPosts`, :class:`DeletesMessages`, :class:`LinksMessages`,
    :class:`StreamsNatively`, :class:`ShowsStatus`, :class:`SpellsCommands`,
    :class:`SendsPrivately` (and, for the home tab, :class:`bot.home.PublishesHome` and
    :class:`bot.home.Reposts`).
    """

    platform: str
    limits: SurfaceLimits

    async def send(
        self, place: Place, message: OutMessage, *, origin: Event | None = None
    ) -> MessageRef:
        """Post ``message`` in ``place``. ``origin`` is the event being answered, if any.
        A keyed message it can tell it already posted in ``place`` is returned instead
        (see :attr:`OutMessage.key`)."""
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
    """A surface that can tell which message it shows with a key (:attr:`OutMessage.key`)."""

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
class ShowsStatus(Protocol):
    """A surface with a status line: genbot is :data:`WorkStatus` where the answer to
    ``origin`` will appear, until ended."""

    async def show_status(
        self, place: Place, status: WorkStatus, *, origin: Event | None = None
    ) -> None: ...

    async def end_status(
        self, place: Place, status: WorkStatus, *, origin: Event | None = None
    ) -> None: ...


@runtime_checkable
class SpellsCommands(Protocol):
    """A surface whose platform spells some commands its own way (Slack: ``settings`` →
    ``genbot settings``); help texts follow it."""

    command_names: Mapping[str, str]


@runtime_checkable
class SendsPrivately(Protocol):
    """A surface that can show a whole message — images and buttons too — to one user only
    (a Vary (Region) preview, :mod:`bot.jobs.region_preview`)."""

    async def send_private(self, origin: Event, message: OutMessage) -> None:
        """Show ``message`` to ``origin``'s user only, where ``origin`` happened;
        :class:`SurfaceError` where it cannot."""
        ...


def encode_custom_id(action: str, ref: str) -> str:
    """``gb:<action>:<ref>``; raises ``ValueError`` when it would exceed 100 characters."""
    if ":" in action:
        raise ValueError(f"action must not contain ':' ({action!r})")
    custom_id = f"{CUSTOM_ID_PREFIX}:{action}:{ref}"
    if len(custom_id) > CUSTOM_ID_MAX:
        raise ValueError(f"custom id longer than {CUSTOM_ID_MAX} characters: {custom_id!r}")
    return custom_id


def decode_custom_id(custom_id: str) -> tuple[str, str] | None:
    """``(action, ref)`` from a custom id made by :func:`encode_custom_id`, else ``None``."""
    prefix, sep, rest = custom_id.partition(":")
    if prefix != CUSTOM_ID_PREFIX or not sep:
        return None
    action, sep, ref = rest.partition(":")
    if not action or not sep:
        return None
    return action, ref


REMIX_PREFIX = "remix_"
REMIX_ACTIONS: frozenset[str] = frozenset(
    REMIX_PREFIX + action
    for action in (
        "reroll",
        *(f"variation{i}" for i in range(1, 5)),
        "high_variation",
        "low_variation",
        "outpaint_2",
        "outpaint_1.5",
        "pan_left",
        "pan_right",
        "pan_up",
        "pan_down",
    )
)
"""Follow-ups drawn for users with Remix on: each press opens a form to change the prompt
(``remix_`` + the action; see :mod:`bot.jobs.images`)."""
MODAL_ACTIONS: frozenset[str] = frozenset(
    {
        "vary_region",
        "region_edit",
        "outpaint_custom",
        "diff_init",
        "settings",
        "describe_pick1",
        "describe_pick2",
        "describe_pick3",
        "describe_pick4",
        *REMIX_ACTIONS,
    }
)
"""Button actions whose press may open a form. Adapters must not defer such a press: the core
answers it with :meth:`Surface.open_modal` (or an ephemeral refusal) right away — or, for a
describe pick that runs at once, starts the job (adapters acknowledge a slow press late)."""


class EventHandler(Protocol):
    """What adapters hand events to (the core). ``handle`` reports every user-facing problem
    through the surface itself and does not raise for them. A handler may also offer
    :class:`ChatModelChoices`."""

    async def handle(self, event: InboundEvent) -> None:
        """Act on one inbound event until its immediate effects are posted."""
        ...


@runtime_checkable
class ChatModelChoices(Protocol):
    """An :class:`EventHandler` that knows which chat models to offer in pickers (the core:
    those its plan allows); adapters read it through :func:`bot.commands.offered_models`."""

    def chat_models(self) -> tuple[str, ...]:
        """The chat models users are offered."""
        ...
