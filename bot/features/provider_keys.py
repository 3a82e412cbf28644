"""The provider keys' health, as the admin page, ``genbot doctor`` and ``/metrics`` show it:
each key's state in this process (:class:`bot.api.KeyPool`) beside what the shared store counts
of its jobs over every process (:meth:`storage.JobAdmission.key_usage`). Names only: never a
secret."""

from __future__ import annotations

from dataclasses import dataclass

from bot.api import KeyPool, KeyState
from storage import JobAdmission, KeyUsage


@dataclass(frozen=True)
class KeyHealth:
    """One key: its ``state`` here (``in``, ``refused``, ``no_credit``; ``out_until``: when an
    out key is tried again, Unix time), its configuration, the refusals this process saw
    (``failures``), and its jobs: ``active`` now, ``tasks_today`` created and
    ``credits_today`` charged since the start of the UTC day."""

    name: str
    state: KeyState
    out_until: float | None
    weight: float
    max_concurrent: int
    daily_tasks: int
    modes: tuple[str, ...]
    failures: int
    active: int
    tasks_today: int
    credits_today: int


class ProviderKeys:
    """Reads the keys' health (see the module docstring)."""

    def __init__(self, pool: KeyPool, admission: JobAdmission) -> None:
        self._pool = pool
        self._admission = admission

    async def health(self) -> list[KeyHealth]:
        """Every configured key, in configuration order; refreshes the per-key usage gauges."""
        usage = await self._admission.key_usage()
        rows = []
        for status in self._pool.states():
            used = usage.get(status.name, KeyUsage())
            self._pool.show_usage(
                status.name, active=used.active, tasks=used.tasks, credits=used.credits
            )
            rows.append(
                KeyHealth(
                    status.name,
                    status.state,
                    status.out_until,
                    status.weight,
                    status.max_concurrent,
                    status.daily_tasks,
                    status.modes,
                    status.failures,
                    used.active,
                    used.tasks,
                    used.credits,
                )
            )
        return rows

    async def refresh(self) -> None:
        """Bring the per-key gauges up to date (a ``/metrics`` refresher)."""
        await self.health()
