"""What genbot keeps for its platforms: Slack installations, the playground's messages and
images, and the write windows processes share."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any


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


@dataclass(frozen=True)
class PlaygroundImage:
    """An image the playground shows, stored once whatever the number of messages showing it."""

    key: str
    filename: str
    content_type: str
    width: int | None
    height: int | None
    data: bytes = field(repr=False)
