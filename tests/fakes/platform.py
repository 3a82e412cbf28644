"""An in-process chat platform for core tests: push an event, await what users would see.

``FakePlatform`` implements :class:`bot.kernel.surface.Surface`. It keeps a model of every message
(text, images, buttons, edits), ephemeral replies and opened modals, can enforce the profile's
channel window (answering :class:`RateLimited` like Discord answers 429), honours message keys
(a keyed message already posted in a place is returned, as platforms that deduplicate do), and
lets tests wait on conditions with bounded timeouts instead of sleeping.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from typing import TypeVar

from bot.kernel import (
    Attachment,
    Button,
    ButtonPress,
    Command,
    Event,
    MessageGone,
    MessageRef,
    Modal,
    ModalSubmit,
    OutMessage,
    Place,
    PlatformProfile,
    RateLimited,
    User,
    UserMessage,
    language,
)
from bot.router import Router

T = TypeVar("T")
RECHECK = 0.05


@dataclass
class PostedMessage:
    """A message as users currently see it, with its edit history."""

    ref: MessageRef
    message: OutMessage
    origin: Event | None
    history: list[OutMessage] = field(default_factory=list)
    spoken: list[str] = field(default_factory=list)
    """The language genbot spoke (:func:`bot.kernel.language`) when it sent and edited it."""

    @property
    def text(self) -> str:
        return self.message.text

    @property
    def buttons(self) -> list[Button]:
        return [button for row in self.message.buttons for button in row]

    def button(self, label: str) -> Button:
        """The button labelled ``label``; ``KeyError`` when there is none."""
        for button in self.buttons:
            if button.label == label:
                return button
        raise KeyError(f"no button {label!r} in {[b.label for b in self.buttons]}")


@dataclass
class Ephemeral:
    """A reply only the event's user sees."""

    origin: Event
    text: str


class FakePlatform:
    """A recording :class:`Surface` that can enforce its channel window. An edit without
    images keeps the message's images, as Discord and the playground do."""

    def __init__(
        self,
        platform: str = "fake",
        profile: PlatformProfile | None = None,
        enforce_windows: bool = False,
    ) -> None:
        self.platform = platform
        self.profile = profile or PlatformProfile(max_text=2000)
        self.enforce_windows = enforce_windows
        self.messages: dict[str, PostedMessage] = {}
        self.ephemerals: list[Ephemeral] = []
        self.modals: list[tuple[Event, Modal]] = []
        self.typing_in: list[Place] = []
        self.threads: list[tuple[MessageRef, str]] = []
        self.rate_limited = 0
        self.attachments: dict[str, bytes] = {}
        self.sent: list[OutMessage] = []
        self.deleted: list[PostedMessage] = []
        self._keyed: dict[tuple[Place, str], MessageRef] = {}
        self._ids = itertools.count(1)
        self._writes: dict[str, deque[float]] = {}
        self._changed = asyncio.Condition()

    # Surface ----------------------------------------------------------------------------------

    async def send(
        self, place: Place, message: OutMessage, *, origin: Event | None = None
    ) -> MessageRef:
        self._check_message(message)
        self.sent.append(message)
        if message.key is not None and (place, message.key) in self._keyed:
            return self._keyed[place, message.key]
        self._spend(place)
        ref = MessageRef(place, f"m{next(self._ids)}")
        self.messages[ref.message_id] = PostedMessage(ref, message, origin, [message], [language()])
        if message.key is not None:
            self._keyed[place, message.key] = ref
        await self._notify()
        return ref

    async def posted(self, place: Place, key: str) -> MessageRef | None:
        return self._keyed.get((place, key))

    async def edit(self, ref: MessageRef, message: OutMessage) -> None:
        self._check_message(message)
        posted = self.messages.get(ref.message_id)
        if posted is None:
            raise MessageGone(f"no message {ref.message_id}")
        self._spend(ref.place)
        if not message.images and posted.message.images:
            message = replace(message, images=posted.message.images)
        posted.message = message
        posted.history.append(message)
        posted.spoken.append(language())
        await self._notify()

    async def delete(self, ref: MessageRef) -> None:
        posted = self.messages.pop(ref.message_id, None)
        if posted is None:
            raise MessageGone(f"no message {ref.message_id}")
        self._spend(ref.place)
        self._keyed = {key: kept for key, kept in self._keyed.items() if kept != ref}
        self.deleted.append(posted)
        await self._notify()

    async def link(self, ref: MessageRef) -> str:
        return f"https://fake.example/{ref.place.channel_id}/{ref.message_id}"

    async def send_ephemeral(self, origin: Event, text: str) -> None:
        self.ephemerals.append(Ephemeral(origin, text))
        await self._notify()

    async def open_modal(self, origin: Event, modal: Modal) -> None:
        self.modals.append((origin, modal))
        await self._notify()

    async def typing(self, place: Place) -> None:
        self.typing_in.append(place)

    async def start_thread(self, ref: MessageRef, name: str) -> Place:
        self.threads.append((ref, name))
        return ref.place.in_thread(f"t{next(self._ids)}")

    async def download(self, attachment: Attachment) -> bytes:
        if attachment.data is not None:
            return attachment.data
        return self.attachments[attachment.url]

    # Inspection -------------------------------------------------------------------------------

    def in_place(self, place: Place) -> list[PostedMessage]:
        """Messages posted in ``place`` (thread included in the match), oldest first."""
        return [m for m in self.messages.values() if m.ref.place == place]

    def with_images(self) -> list[PostedMessage]:
        return [m for m in self.messages.values() if m.message.images]

    def ephemerals_for(self, user_id: str) -> list[str]:
        return [e.text for e in self.ephemerals if e.origin.user.id == user_id]

    async def wait_for(
        self, condition: Callable[[], T | None], timeout: float = 10.0, what: str = ""
    ) -> T:
        """Wait until ``condition()`` is truthy and return it; ``TimeoutError`` names ``what``.
        ``condition`` is checked at each change of this platform and at least every
        :data:`RECHECK`, so one over other state (the simulator's, the store's) holds
        though no change of the platform follows."""
        try:
            async with asyncio.timeout(timeout):
                async with self._changed:
                    while not (value := condition()):
                        with contextlib.suppress(TimeoutError):
                            async with asyncio.timeout(RECHECK):
                                await self._changed.wait()
                    return value
        except TimeoutError:
            raise TimeoutError(f"gave up waiting for {what or condition}") from None

    async def _notify(self) -> None:
        async with self._changed:
            self._changed.notify_all()

    def _check_message(self, message: OutMessage) -> None:
        if len(message.text) > self.profile.max_text:
            raise AssertionError(f"message of {len(message.text)} > {self.profile.max_text} chars")
        for row in message.buttons:
            assert len(row) <= self.profile.max_buttons_per_row, "too many buttons in a row"
            for button in row:
                assert len(button.custom_id) <= 100, button.custom_id

    def _spend(self, place: Place) -> None:
        if not self.enforce_windows:
            return
        now = time.monotonic()
        window = self._writes.setdefault(place.channel_id, deque())
        while window and now - window[0] >= self.profile.edit_window_seconds:
            window.popleft()
        if len(window) >= self.profile.edits_per_window_per_channel:
            self.rate_limited += 1
            raise RateLimited(self.profile.edit_window_seconds - (now - window[0]))
        window.append(now)


@dataclass
class Actor:
    """A user of the fake platform, who pushes events into the core and waits for effects."""

    core: Router
    platform: FakePlatform
    user: User
    place: Place
    locale: str | None = None
    """The language of the user's app (``Event.locale`` of what they do)."""

    async def command(self, name: str, text: str = "", **options: object) -> None:
        attachments = {k: v for k, v in options.items() if isinstance(v, Attachment)}
        plain = {k: v for k, v in options.items() if not isinstance(v, Attachment)}
        await self.core.handle(
            Command(
                user=self.user,
                place=self.place,
                name=name,
                text=text,
                options=plain,  # type: ignore[arg-type]
                attachments=attachments,
                locale=self.locale,
            )
        )

    async def say(
        self,
        text: str,
        *,
        place: Place | None = None,
        reply_to: str | None = None,
        mention: bool = False,
        attachments: tuple[Attachment, ...] = (),
    ) -> str:
        message_id = f"u{next(self.platform._ids)}"
        await self.core.handle(
            UserMessage(
                user=self.user,
                place=place or self.place,
                message_id=message_id,
                text=text,
                attachments=attachments,
                reply_to_message_id=reply_to,
                mentions_bot=mention,
            )
        )
        return message_id

    async def edit(self, message_id: str, text: str, *, place: Place | None = None) -> None:
        """The user changes their message ``message_id`` to ``text``."""
        await self.core.handle(
            UserMessage(
                user=self.user,
                place=place or self.place,
                message_id=message_id,
                text=text,
                edited=True,
            )
        )

    async def press(self, message: PostedMessage, label: str) -> None:
        button = message.button(label)
        await self.core.handle(
            ButtonPress(
                user=self.user,
                place=message.ref.place,
                message_id=message.ref.message_id,
                action=button.action,
                ref=button.ref,
                locale=self.locale,
            )
        )

    async def submit(self, modal: Modal, **values: str) -> None:
        await self.core.handle(
            ModalSubmit(
                user=self.user, place=self.place, action=modal.action, ref=modal.ref, values=values
            )
        )
