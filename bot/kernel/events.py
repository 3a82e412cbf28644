"""The one event model shared by every adapter.

Adapters translate platform traffic into the inbound events below and submit them to their
:class:`EventSink` (from genbot's router, :class:`EventRouter`); the core answers through the
adapter's :class:`bot.kernel.surface.Surface` with the messages and forms of
:mod:`bot.kernel.outbound`. Nothing here knows about any platform library.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Hashable, Mapping
from contextlib import AbstractAsyncContextManager
from dataclasses import dataclass, field
from typing import Any, Protocol, runtime_checkable

OptionValue = str | int | float | bool


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
    """Who sent an event. ``is_admin`` is decided by the adapter from its settings;
    ``roles`` are the platform's groups the user is in, as the adapter knows them (Discord
    role ids in a guild, Slack user group ids), which tiers map
    (:class:`bot.features.jobs.admission.Tiers`)."""

    id: str
    name: str = ""
    is_admin: bool = False
    roles: frozenset[str] = frozenset()


@dataclass(frozen=True)
class Attachment:
    """A file a user attached. ``data`` is set when the adapter already holds the bytes.

    ``private`` means ``url`` opens only with the platform's credentials (Slack files): nobody
    else, the provider included, can fetch it, so the core reads the bytes through
    :meth:`bot.kernel.surface.Surface.download` and never hands that URL on.
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
    the core never reads it, it only passes the event back to the surface. Events with the same
    ``serial_key`` (set by the adapter) are handled one at a time, in arrival order (``None``:
    no order). ``locale`` and ``place_locale`` are what the platform says of the user's and the
    place's languages; the router decides the language genbot answers in from them
    (:func:`bot.kernel.i18n.decide`)."""

    user: User
    place: Place
    context: Any = field(default=None, compare=False, repr=False)
    serial_key: Hashable | None = field(default=None, compare=False, repr=False)
    locale: str | None = field(default=None, compare=False)
    """The user's language as their platform reports it (Discord's interaction ``locale``,
    Slack's user ``locale``, the browser's ``Accept-Language`` or the playground's switch), a
    platform tag such as ``de`` or ``ja-JP``; ``None`` when the platform did not say."""
    place_locale: str | None = field(default=None, compare=False)
    """The language of the place as its platform sets it (a Discord guild's
    ``preferred_locale``), for the messages everyone there reads; ``None`` when it has none."""


@dataclass(frozen=True, kw_only=True)
class Command(Event):
    """A slash command. ``name`` is dotted for groups: ``chat``, ``imagine``, ``diffusion.txt2img``.

    ``options`` holds typed option values; ``attachments`` maps option names to files.
    ``text`` is the raw text for platforms whose commands carry text only (Slack); the core
    parses it Midjourney style (``a fox --ar 16:9 --fast``) when ``options`` is empty.
    ``key`` is the platform's stable id of this command, the same however often it is handled
    (after a restart, by another process): a job it starts carries it, so one command never
    starts two jobs.
    """

    name: str
    options: Mapping[str, OptionValue] = field(default_factory=dict)
    attachments: Mapping[str, Attachment] = field(default_factory=dict)
    text: str = ""
    key: str | None = None


@dataclass(frozen=True, kw_only=True)
class UserMessage(Event):
    """A user message in a DM, a thread, or a channel (reply chain or mention); ``edited``: the
    author changed message ``message_id`` to ``text`` (a DM or a thread)."""

    message_id: str
    text: str
    attachments: tuple[Attachment, ...] = ()
    reply_to_message_id: str | None = None
    mentions_bot: bool = False
    edited: bool = False


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


Around = Callable[[InboundEvent], AbstractAsyncContextManager[object]]
"""What an adapter does around handling one event (acknowledge it, show "working", settle it);
it is entered for refused events too."""


class EventSink(Protocol):
    """An adapter's way into genbot (its router's intake): every event submitted runs in a task
    of its own, so the platform's acknowledgement deadline never waits for genbot. Users are
    told what went wrong by the router, never by the adapter."""

    deadline: float | None
    """How long handling one event may take before the user is told genbot gave up."""

    @property
    def accepting(self) -> bool:
        """Whether new events are handled (``False`` once :meth:`stop` was called)."""
        ...

    @property
    def running(self) -> int:
        """How many events are being handled or answered."""
        ...

    def submit(
        self,
        event: InboundEvent | Awaitable[InboundEvent | None],
        *,
        around: Around | None = None,
    ) -> bool:
        """Handle ``event`` in the background (an awaitable is first awaited for the event; it
        may give ``None`` when there is nothing to handle); ``around`` replaces the adapter's
        default for this event. ``False`` when intake is stopped: the event is answered
        "restarting" instead."""
        ...

    def stop(self) -> None:
        """Answer every event submitted from now on "restarting" instead of handling it."""
        ...

    async def drain(self, timeout: float) -> int:
        """Let the running events finish within ``timeout`` seconds, then cancel the rest;
        how many were cancelled."""
        ...

    async def cancel(self) -> None:
        """Cancel every running event (bounded wait for them to unwind)."""
        ...


class EventRouter(Protocol):
    """What an adapter is started with: genbot's router, which gives it its :class:`EventSink`.
    It may also offer :class:`ChatModelChoices`, :class:`DiffusionModelChoices` and
    :class:`FormChecks`."""

    def intake(
        self,
        platform: str,
        *,
        deadline: float | None = None,
        around: Around | None = None,
    ) -> EventSink:
        """The sink of adapter ``platform``: ``deadline`` bounds each event's handling
        (``None``: unbounded), ``around`` is entered around each."""
        ...


@runtime_checkable
class ChatModelChoices(Protocol):
    """An :class:`EventRouter` that knows which chat models to offer in pickers (the core:
    those its plan allows); adapters read it through :func:`bot.kernel.commands.offered_models`."""

    def chat_models(self) -> tuple[str, ...]:
        """The chat models users are offered."""
        ...


@runtime_checkable
class DiffusionModelChoices(Protocol):
    """An :class:`EventRouter` that knows diffusion checkpoint models to offer (the router: see
    :mod:`bot.features.jobs.diffusion_models`); adapters read it through
    :func:`bot.kernel.commands.offered`."""

    def diffusion_models(self) -> tuple[str, ...]:
        """The diffusion model ids users are offered."""
        ...


@runtime_checkable
class ChosenLanguages(Protocol):
    """An :class:`EventRouter` that knows the languages users chose (``/settings language``),
    for what an adapter says itself, before or without the core (Slack's Messages tab)."""

    async def private_language(self, user: User, place: Place, locale: str | None) -> str:
        """The language genbot speaks to ``user`` alone in ``place``, whose platform says
        their language is ``locale`` (as the router decides it for their events)."""
        ...


@runtime_checkable
class SavedOptionChoices(Protocol):
    """An :class:`EventRouter` that knows a user's saved options (``/prefer``), which pickers
    offer as the user types ``--`` in a prompt (:func:`bot.kernel.expansion.completions`)."""

    async def saved_options(self, user: User, place: Place) -> tuple[str, ...]:
        """The names of ``user``'s saved options that apply in ``place``."""
        ...


@runtime_checkable
class FormChecks(Protocol):
    """An :class:`EventRouter` that checks a submitted form's own values before it is handled:
    a platform that can keep a form open with errors beside its fields (Slack's
    ``response_action: errors``, the playground) answers the submission with them at once."""

    def form_errors(self, event: ModalSubmit) -> Mapping[str, str]:
        """What is wrong with ``event``'s values, by field id (``{}``: nothing found; the
        handler may still refuse them, bringing the form back). Pure and quick: no I/O."""
        ...
