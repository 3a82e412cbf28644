"""What the playground keeps in genbot's database, declared here and passed in by ``genbot``
(the store fits it): its messages and images, so a restart or another process shows them too.
The playground saves its own values (:class:`MessageToSave`, :class:`ImageToSave`) and reads
back anything with their attributes (:class:`StoredMessage`, :class:`StoredImage`)."""

from __future__ import annotations

from collections.abc import AsyncIterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol


class StoredMessage(Protocol):
    """A message as kept: ``body`` is the playground's own JSON record of it, ``image_keys``
    the images it shows, ``pending`` marks a command not handled yet, ``version`` counts its
    saves, ``answers`` names the command it answers."""

    @property
    def id(self) -> str: ...
    @property
    def channel(self) -> str: ...
    @property
    def pending(self) -> bool: ...
    @property
    def image_keys(self) -> Sequence[str]: ...
    @property
    def body(self) -> Mapping[str, Any]: ...
    @property
    def version(self) -> int: ...
    @property
    def answers(self) -> str | None: ...


class StoredImage(Protocol):
    """An image as kept, once whatever the number of messages showing it."""

    @property
    def key(self) -> str: ...
    @property
    def filename(self) -> str: ...
    @property
    def content_type(self) -> str: ...
    @property
    def width(self) -> int | None: ...
    @property
    def height(self) -> int | None: ...
    @property
    def data(self) -> bytes: ...


@dataclass(frozen=True)
class MessageToSave:
    """A message the playground saves (see :class:`StoredMessage`)."""

    id: str
    channel: str
    pending: bool
    image_keys: tuple[str, ...]
    body: Mapping[str, Any]
    version: int = 0
    answers: str | None = None
    notice: str = ""
    """What the other processes are told of the save besides its id (see
    :meth:`PlaygroundHistory.playground_updates`)."""


@dataclass(frozen=True)
class ImageToSave:
    """An image the playground saves (see :class:`StoredImage`)."""

    key: str
    filename: str
    content_type: str
    width: int | None
    height: int | None
    data: bytes = field(repr=False)


class PlaygroundHistory(Protocol):
    """The playground's messages and images in genbot's database."""

    async def load_playground(
        self,
        keep: int,
        *,
        max_image_bytes: int | None = None,
        dm_prefix: str = "",
        most_dms: int | None = None,
    ) -> tuple[Sequence[StoredMessage], Sequence[StoredImage]]:
        """Each channel's ``keep`` latest messages, oldest first, and the images of the newest
        that fit in ``max_image_bytes``; with ``most_dms``, of the channels named with
        ``dm_prefix`` (users' DMs), only the ``most_dms`` a message was last saved in."""

    async def expire_playground_channels(
        self, made_before: float, *, dm_prefix: str, spared: Sequence[str] = ()
    ) -> list[str]:
        """Delete every message of the channels whose newest message was made before
        ``made_before`` (not users' DMs, named with ``dm_prefix``, nor ``spared``, nor one
        with a command waiting for its handler), and the images no message shows any more;
        the channels deleted."""

    async def playground_channel(self, channel: str, keep: int) -> Sequence[StoredMessage]:
        """The ``keep`` latest messages of ``channel``, oldest first, without their images."""

    async def save_playground_message(
        self, message: MessageToSave, images: Sequence[StoredImage], *, keep: int
    ) -> int:
        """Store a message and its images (a pending command becomes this process's to
        handle; a message that ``answers`` one marks it handled), keeping each channel's
        ``keep`` latest; the version saved."""

    async def claim_pending_commands(self, accepted_before: float) -> list[str]:
        """Take the commands accepted before ``accepted_before`` that wait for a handler no
        live process is; their ids."""

    async def settle_playground_message(self, message_id: str) -> None:
        """Mark a command's message as handled."""

    async def about_user(self, user_id: str, channel: str) -> tuple[list[str], list[str]]:
        """The messages naming ``user_id``, those of ``channel`` (their DM) and the answers to
        either: their ids, and the keys of the images only they show."""

    async def forget_user(
        self, user_id: str, channel: str, *, notice: str = ""
    ) -> tuple[list[str], list[str]]:
        """Delete the messages of :meth:`about_user`, then the images no message shows any
        more; what :meth:`about_user` found. The other processes are told ``user_id`` and
        ``notice`` with it (:meth:`playground_updates`)."""

    async def forgotten_among(self, user_ids: Sequence[str]) -> dict[str, float]:
        """Which of ``user_ids`` :meth:`forget_user` forgot lately (as long as the playground
        holds a file for a user), each with when, where processes share the storage."""

    async def playground_message(
        self, message_id: str, *, with_images: bool = True
    ) -> tuple[StoredMessage, Sequence[StoredImage]] | None:
        """One message and (``with_images``) the images it shows, or None."""

    async def playground_keyed(
        self, channel: str, thread: str | None, key: str
    ) -> StoredMessage | None:
        """The message of ``channel`` (in ``thread``, None: not in one) whose record's ``key``
        is ``key``, without its images, or None."""

    async def playground_messages(self, message_ids: Sequence[str]) -> Sequence[StoredMessage]:
        """The messages among ``message_ids`` still kept, without their images, in any
        order."""

    async def playground_image(self, key: str) -> StoredImage | None:
        """One image, or None."""

    async def playground_session_key(self) -> bytes:
        """The session-cookie key, the same for every process."""

    def playground_updates(self) -> AsyncIterator[tuple[str, str] | None]:
        """None once following has started, then, for each message another process saves, its
        id and the :attr:`MessageToSave.notice` it was saved with, and for each user it forgets
        (:meth:`forget_user`), their id and that notice (each as it was: the playground's
        own text, which a process reads instead of the message when it does not show it; it
        travels in a PostgreSQL ``NOTIFY``, packed with the other saves of its batch, so it is
        one line and stays short: with the process's and message's ids, one alone stays under
        8000 bytes), in the order they were saved."""
