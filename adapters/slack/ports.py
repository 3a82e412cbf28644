"""What the Slack adapter keeps in genbot's database, declared here and passed in by ``genbot``
(the store fits it): the workspaces a distributed app is installed in, the OAuth states of its
install links, the events the processes sharing the app handled, and the channel each user looks
at beside genbot's Messages tab."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Protocol


class Installed(Protocol):
    """An installation as stored: a workspace (``team_id``) or an organization
    (``enterprise_id``, ``team_id`` ``""``), installed by ``user_id``; ``data`` is slack-sdk's
    installation as JSON values (``""`` for an id that is absent)."""

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


@dataclass(frozen=True)
class Installation:
    """An installation to save (see :class:`Installed`)."""

    enterprise_id: str
    team_id: str
    user_id: str
    installed_at: float
    data: Mapping[str, Any] = field(repr=False)


class Installations(Protocol):
    """Installations per workspace (or organization) and OAuth states."""

    async def save_slack_installation(self, installation: Installed) -> None:
        """Store an installation, replacing the same (enterprise, team, user)'s."""

    async def find_slack_installation(
        self, enterprise_id: str, team_id: str, user_id: str | None = None
    ) -> Installed | None:
        """The newest installation of a team (or organization: ``team_id`` ``""``), by
        ``user_id`` when given."""

    async def delete_slack_installations(
        self, enterprise_id: str, team_id: str, user_id: str | None = None
    ) -> int:
        """Forget a team's installations (only ``user_id``'s when given); how many."""

    async def issue_oauth_state(self, state: str, expires_at: float) -> None:
        """Remember ``state`` until ``expires_at``."""

    async def consume_oauth_state(self, state: str) -> bool:
        """True once for a remembered, unexpired ``state``."""


class EventDedupe(Protocol):
    """Events handled once across the processes sharing the app."""

    async def remember_event(self, platform: str, event_id: str) -> bool:
        """True the first time ``event_id`` is seen, False for a repeat."""


class ChannelsInView(Protocol):
    """The channel each user looks at beside genbot's Messages tab (``app_context_changed``),
    shared by the processes serving the app."""

    async def save_channel_in_view(self, team_id: str, user_id: str, channel_id: str) -> None:
        """``user_id`` looks at ``channel_id`` now (replacing the channel they looked at)."""

    async def find_channel_in_view(self, team_id: str, user_id: str, within: float) -> str | None:
        """The channel ``user_id`` looked at last, when that was at most ``within`` seconds
        ago."""
