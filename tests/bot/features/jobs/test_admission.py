"""A command's place among its user's jobs, taken before anything costly
(bot/features/jobs/admission.py): concurrent commands of one user count each other, a refusal names
the cap, and costly work outside a place is a programming error."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from bot.features.jobs.admission import Admission, JobCaps
from bot.kernel import Command, LimitsSettings, Place, User, UserError
from storage import SqliteStore

PLACE = Place("fake", "w1", "c1")


def command(user: User) -> Command:
    return Command(user=user, place=PLACE, name="blend")


async def test_thirty_commands_at_once_cannot_all_pass_a_cap_of_three(tmp_path: Path) -> None:
    async with await SqliteStore.open(tmp_path / "genbot.db") as store:
        admission = Admission(
            store.admission, JobCaps(LimitsSettings(max_concurrent_jobs_per_user=3))
        )
        release, all_answered = asyncio.Event(), asyncio.Event()
        passed: list[int] = []
        refusals: list[str] = []

        async def one(number: int) -> None:
            try:
                async with admission.admitted(command(User("mallory"))):
                    passed.append(number)
                    if len(passed) + len(refusals) == 30:
                        all_answered.set()
                    await release.wait()
            except UserError as refused:
                refusals.append(str(refused))
                if len(passed) + len(refusals) == 30:
                    all_answered.set()

        running = [asyncio.create_task(one(n)) for n in range(30)]
        await asyncio.wait_for(all_answered.wait(), 5)
        release.set()
        await asyncio.gather(*running)

        assert len(passed) == 3 and len(refusals) == 27
        assert "the cap is 3" in refusals[0]
        async with admission.admitted(command(User("mallory"))):
            Admission.require()
        async with admission.admitted(command(User("root", is_admin=True))):
            pass


def test_costly_work_outside_a_place_is_refused() -> None:
    with pytest.raises(RuntimeError, match="admitted"):
        Admission.require()
