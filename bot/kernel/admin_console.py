"""What the playground's admin page asks of the core: :class:`AdminConsole` (implemented by
:class:`bot.features.console.Console`, wired by the composition root). Every call names the
admin, and the workspace or job it is about; the console decides, in one place, whether that
admin may see or change it (:class:`NotAllowed` when not)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Protocol

from bot.kernel.errors import UserError
from bot.kernel.events import OptionValue, User


class NotAllowed(UserError):
    """The admin page refuses this user (not an admin of that workspace)."""


class AdminConsole(Protocol):
    """The admin page's view of genbot and its actions; :class:`UserError` for a refusal to
    show as is."""

    async def overview(
        self, user: User, platform: str, workspace_id: str, filters: Mapping[str, str]
    ) -> dict[str, Any]:
        """Everything the page shows for one workspace, as JSON values: keys, queue, bans and
        rules, tiers, the audit log (``filters``: ``user``, ``kind``, ``days``, ``page``) and
        the cluster."""
        ...

    async def moderate(
        self, user: User, platform: str, workspace_id: str, options: Mapping[str, OptionValue]
    ) -> str:
        """Do what ``/admin moderation`` would with ``options`` in that workspace; what to
        tell the admin."""
        ...

    async def cancel(self, user: User, job_id: str) -> str:
        """Cancel the job ``job_id`` as its ❌ Cancel button would; what to tell the admin
        (whether it still counts toward its requester's cap: one the provider never confirmed
        does not)."""
        ...

    async def export(
        self, user: User, platform: str, workspace_id: str, filters: Mapping[str, str]
    ) -> tuple[str, bytes]:
        """The workspace's audit log as a JSON-lines file: its name and bytes."""
        ...
