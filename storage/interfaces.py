"""The one storage port declared apart from its queries: :class:`WriteWindows`, implemented by
:class:`storage.queries.write_windows.WriteWindowQueries`. Every other port carries its one
implementation (:mod:`storage.queries`).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol

from storage.records.platforms import WriteWindow


class WriteWindows(Protocol):
    """Platform write limits counted across processes, so N processes writing into one
    channel or workspace stay within what the platform allows."""

    async def reserve_writes(
        self, windows: Sequence[WriteWindow], *, spacing: float = 0.0
    ) -> float:
        """Count one write in every window when each has room (and, with ``spacing``, the
        first window's previous write is at least that many seconds old): returns 0. Else
        nothing is counted and the answer is how many seconds to wait before asking again.
        A write counts for its window's length from now, plus a short allowance for the
        request to reach the platform. Always 0 where the database has one process."""
