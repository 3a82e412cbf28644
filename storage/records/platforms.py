"""What genbot keeps for its platforms: Slack installations, the playground's messages and
images, and the write windows processes share.

Saving takes any object with a record's attributes (the ``…ToSave`` protocols), so an adapter
saves its own values without knowing storage's types; reads return the records."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol


@dataclass(frozen=True)
class SlackInstallation:
    """A Slack app installation: a workspace (``team_id``) or an organization
    (``enterprise_id`` with ``team_id`` ``""``), installed by ``user_id``. ``data`` is the
    installation as the Slack adapter serializes it (JSON values; tokens included, so it is
    kept out of ``repr``)."""

    enterprise_id: str
    team_id: str
    user_id: str
    installed_at: float
    data: Mapping[str, Any] = field(repr=False)


@dataclass(frozen=True)
class WriteWindow:
    """A platform's write limit that several processes share: at most ``capacity`` writes
    under ``key`` (a channel, or a workspace's budget of one kind of write) in any
    ``seconds``."""

    key: str
    capacity: int
    seconds: float
    held: bool = True
    """Whether its writes count until their calls return (the platform counts a write when its
    request arrives): a row counts an allowance past its window until its finish is told.
    False: a row counts for exactly ``seconds`` from the moment its reservation counted it
    (read before the reservation's transaction, and the writer may go up to a grace after a
    booked moment), so another process may find room a little early: for a platform that
    enforces nothing, an accepted overshoot."""


@dataclass(frozen=True)
class WriteBooking:
    """A reservation's answer in the shared write windows: how many seconds to wait (from the
    moment the answer is given: the transaction's own time is taken off), and whether the
    write was counted (then it is made after ``wait`` without asking again; else
    it asks again after it). A counted write has a ``slot``: telling the windows when its call
    returned (:meth:`~storage.WriteWindows.finished`) makes it count from then for its
    windows' length, instead of from its grant for that length plus an allowance (in windows
    not :attr:`~WriteWindow.held` it changes nothing); telling them
    it will not be made (:meth:`~storage.WriteWindows.given_back`) makes it stop counting."""

    wait: float
    counted: bool
    slot: int | None = None


@dataclass(frozen=True)
class PlaygroundMessage:
    """A message the playground shows: ``body`` is the playground's own JSON record of it,
    ``image_keys`` the images it shows; ``pending`` marks a command not handled yet."""

    id: str
    channel: str
    pending: bool
    image_keys: tuple[str, ...]
    body: Mapping[str, Any]
    version: int = 0
    """How often it was saved (the store counts): of two copies, the higher version is the
    newer, whichever process saved it."""
    answers: str | None = None
    """The pending command this message answers: saving it marks that command handled, in the
    same transaction, so no process handles an answered command again."""
    notice: str = ""
    """What a save tells the other processes besides the message's id (the playground's own
    text, kept nowhere): sent as it is, packed with the notices of the saves that go together
    (:func:`storage.queries.playground.packed`), so it is one line (one with a line break is sent
    empty) and stays short (alone, the whole notice under 8000 bytes)."""


@dataclass(frozen=True)
class PlaygroundImage:
    """An image the playground shows, stored once whatever the number of messages showing it."""

    key: str
    filename: str
    content_type: str
    width: int | None
    height: int | None
    data: bytes = field(repr=False)


class InstallationToSave(Protocol):
    """What saving a Slack installation reads (see :class:`SlackInstallation`)."""

    @property
    def enterprise_id(self) -> str: ...
    @property
    def team_id(self) -> str: ...
    @property
    def user_id(self) -> str: ...
    @property
    def installed_at(self) -> float: ...
    @property
    def data(self) -> Mapping[str, Any]: ...


class MessageToSave(Protocol):
    """What saving a playground message reads (see :class:`PlaygroundMessage`)."""

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
    def answers(self) -> str | None: ...
    @property
    def notice(self) -> str: ...


class ImageToSave(Protocol):
    """What saving a playground image reads (see :class:`PlaygroundImage`)."""

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
