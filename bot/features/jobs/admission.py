"""A user's place among their jobs, taken before anything costly is done for a new one.

Downloading and re-hosting the files of ``/describe``, ``/blend`` and the diffusion commands
costs memory, bandwidth and room in the media folder, so a command checks the user's caps and
budget first (:meth:`Admission.admitted`) and holds a place among the user's jobs until its
job's row exists (then the row counts, and :meth:`storage.JobAdmission.create_job_within`
checks the caps again as it writes). Commands of one user running at once in this process
count each other's places: thirty at once cannot all pass a cap of three. Work that needs a
place (:meth:`Admission.require`) fails loudly outside one, so no command can download first.
"""

from __future__ import annotations

import contextlib
from collections import Counter
from collections.abc import AsyncIterator
from contextvars import ContextVar
from dataclasses import dataclass

from bot.features.jobs.limits import Limits
from bot.kernel import Event
from storage import JobAdmission

Key = tuple[str, str]


@dataclass
class _Place:
    key: Key
    held: bool = True


_PLACE: ContextVar[_Place | None] = ContextVar("genbot_job_place", default=None)


class Admission:
    """The places of this process's commands among their users' jobs."""

    def __init__(self, store: JobAdmission, limits: Limits) -> None:
        self._store = store
        self._limits = limits
        self._pending: Counter[Key] = Counter()

    @contextlib.asynccontextmanager
    async def admitted(self, event: Event) -> AsyncIterator[None]:
        """Hold a place for ``event``'s user while the block runs; :class:`UserError` (which
        cap, or the budget) when there is none."""
        key = (event.place.platform, event.user.id)
        place = _Place(key)
        self._pending[key] += 1
        token = _PLACE.set(place)
        try:
            refusal = await self._store.quota_refusal(
                *key, self._limits.quota_for(event.user), pending=self._pending[key] - 1
            )
            if refusal is not None:
                raise self._limits.refused(refusal)
            yield
        finally:
            _PLACE.reset(token)
            self._release(place)

    def row_created(self) -> None:
        """The job of the command holding a place has its row: the row counts from now on."""
        place = _PLACE.get()
        if place is not None:
            self._release(place)

    @staticmethod
    def require() -> None:
        """Refuse costly work for a command that holds no place (a programming error)."""
        if _PLACE.get() is None:
            raise RuntimeError("costly work before the user's caps were checked: use admitted()")

    def _release(self, place: _Place) -> None:
        if not place.held:
            return
        place.held = False
        self._pending[place.key] -= 1
        if self._pending[place.key] <= 0:
            del self._pending[place.key]
