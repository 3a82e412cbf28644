"""Jobs: creation, reads, idempotent derivatives, compare-and-set transitions, listings."""

from __future__ import annotations

import asyncio
import re

import pytest

from storage import (
    ACTIVE_STATUSES,
    ALL_STATUSES,
    IN_FLIGHT_STATUSES,
    JOB_TRANSITIONS,
    TERMINAL_STATUSES,
    UNFINISHED_STATUSES,
    Job,
    JobMessage,
    JobMove,
    JobQuota,
    QuotaRefusal,
    StorageError,
    Store,
)
from tests.storage.conftest import START, ManualClock, new_job
from tests.storage.counting import counted
from tests.storage.helpers import create_job


async def test_create_and_get_a_job(store: Store, clock: ManualClock) -> None:
    job = await create_job(
        store.admission,
        new_job(parameters={"aspect_ratio": "16:9"}, webhook_secret="hush", thread_id="t1"),
    )
    assert re.fullmatch(r"[A-Za-z0-9_-]{12}", job.id)
    assert (job.status, job.family, job.type, job.requester_id) == (
        "creating",
        "task",
        "imagine",
        "u1",
    )
    assert (job.provider_id, job.parent_job_id, job.action, job.thread_id) == (
        None,
        None,
        None,
        "t1",
    )
    assert job.parameters == {"aspect_ratio": "16:9"}
    assert (job.result_urls, job.actions, job.result) == ([], [], {})
    assert job.created_at == job.updated_at == START
    assert await store.jobs.get_job(job.id) == job
    assert await store.jobs.get_job("missing") is None


async def test_a_job_asked_for_in_a_direct_message_says_so(store: Store) -> None:
    in_dm = await create_job(store.admission, new_job(is_dm=True, channel_id="d1"))
    in_channel = await create_job(store.admission, new_job())
    assert [await store.jobs.get_job(job.id) for job in (in_dm, in_channel)] == [in_dm, in_channel]
    assert (in_dm.is_dm, in_channel.is_dm) == (True, False)
    assert in_dm.parameters == {}


async def test_the_webhook_secret_never_shows_in_repr(store: Store) -> None:
    job = await create_job(store.admission, new_job(webhook_secret="very-secret-value"))
    assert job.webhook_secret == "very-secret-value"
    assert "very-secret-value" not in repr(job)
    assert "very-secret-value" not in repr(new_job(webhook_secret="very-secret-value"))


async def test_given_ids_are_validated_and_unique(store: Store) -> None:
    job = await create_job(store.admission, new_job(id="job-1"))
    assert job.id == "job-1"
    with pytest.raises(StorageError, match="already exists"):
        await create_job(store.admission, new_job(id="job-1"))
    with pytest.raises(StorageError, match="job id"):
        await create_job(store.admission, new_job(id="has:colon"))
    with pytest.raises(StorageError, match="job id"):
        await create_job(store.admission, new_job(id="x" * 17))
    with pytest.raises(StorageError, match="family"):
        await create_job(store.admission, new_job(family="video"))


async def derive(store: Store, **fields: object) -> tuple[Job, bool]:
    outcome = await store.admission.create_job_within(new_job(**fields), JobQuota())
    assert not isinstance(outcome, QuotaRefusal)
    return outcome


async def test_a_derivative_is_created_once_per_parent_and_action(store: Store) -> None:
    parent = await create_job(store.admission, new_job())
    first, created = await derive(store, type="upscale", parent_job_id=parent.id, action="upscale2")
    assert created and first.parent_job_id == parent.id and first.action == "upscale2"
    again = await derive(
        store, type="upscale", parent_job_id=parent.id, action="upscale2", requester_id="u2"
    )
    assert again == (first, False)
    other, created_other = await derive(
        store, type="variation", parent_job_id=parent.id, action="variation2"
    )
    assert created_other and other.id != first.id


async def test_a_derivative_needs_an_existing_parent(store: Store) -> None:
    with pytest.raises(StorageError, match="does not exist"):
        await derive(store, parent_job_id="ghost", action="reroll")


async def test_provider_ids_are_unique_per_family(store: Store) -> None:
    await create_job(store.admission, new_job(provider_id="uuid-1", status="submitted"))
    await create_job(
        store.admission, new_job(family="diffusion", provider_id="uuid-1", status="pending")
    )
    with pytest.raises(StorageError):
        await create_job(store.admission, new_job(provider_id="uuid-1"))


async def test_a_task_job_is_found_by_the_providers_id(store: Store) -> None:
    task = await create_job(store.admission, new_job(provider_id="uuid-1", status="submitted"))
    await create_job(
        store.admission, new_job(family="diffusion", provider_id="uuid-2", status="pending")
    )
    assert await store.jobs.job_for_task("uuid-1") == task
    assert await store.jobs.job_for_task("uuid-2") is None
    assert await store.jobs.job_for_task("nosuch") is None


async def test_concurrent_presses_from_two_processes_make_one_derivative(
    store: Store, other_store: Store
) -> None:
    parent = await create_job(store.admission, new_job())
    press = new_job(type="reroll", parent_job_id=parent.id, action="reroll")
    async with asyncio.timeout(30):
        outcomes = await asyncio.gather(
            *(
                (store if n % 2 else other_store).admission.create_job_within(press, JobQuota())
                for n in range(40)
            )
        )
    results = [outcome for outcome in outcomes if not isinstance(outcome, QuotaRefusal)]
    assert len(results) == 40
    assert sum(created for _, created in results) == 1
    assert len({job.id for job, _ in results}) == 1


async def test_transition_is_compare_and_set(store: Store, clock: ManualClock) -> None:
    job = await create_job(store.admission, new_job())
    clock.advance(5)
    assert await store.jobs.transition(job.id, "creating", "submitted", provider_id="uuid-9")
    assert not await store.jobs.transition(job.id, "creating", "submitted", provider_id="other")
    current = await store.jobs.get_job(job.id)
    assert current is not None
    assert (current.status, current.provider_id, current.updated_at) == (
        "submitted",
        "uuid-9",
        START + 5,
    )
    assert not await store.jobs.transition("missing", "creating", "submitted")


async def test_finishing_stamps_finished_at_and_stores_results(
    store: Store, clock: ManualClock
) -> None:
    job = await create_job(store.admission, new_job(status="processing", provider_id="p"))
    clock.advance(30)
    assert await store.jobs.transition(
        job.id,
        IN_FLIGHT_STATUSES,
        "finished",
        result_urls=["https://img/1.png"],
        actions=["upscale1", "reroll"],
        result={"seed": "", "credit": 2},
        credits=2,
    )
    done = await store.jobs.get_job(job.id)
    assert done is not None
    assert done.finished_at == START + 30
    assert (done.result_urls, done.actions, done.result, done.credits) == (
        ["https://img/1.png"],
        ["upscale1", "reroll"],
        {"seed": "", "credit": 2},
        2,
    )


async def test_exactly_one_of_many_concurrent_posters_wins(
    store: Store, other_store: Store
) -> None:
    job = await create_job(store.admission, new_job(status="finished"))
    async with asyncio.timeout(30):
        wins = await asyncio.gather(
            *(
                (store if n % 2 else other_store).jobs.transition(job.id, "finished", "posting")
                for n in range(60)
            )
        )
    assert wins.count(True) == 1


async def test_transition_links_messages_only_when_it_moves(store: Store) -> None:
    job = await create_job(store.admission, new_job(status="posting"))
    result = JobMessage("discord", "c1", "m-result", job.id, "result")
    assert await store.jobs.transition(
        job.id, "posting", "posted", links=[result], result_message_id="m-result"
    )
    assert await store.message_links.job_for_message(
        "discord", "c1", "m-result"
    ) == await store.jobs.get_job(job.id)
    loser = JobMessage("discord", "c1", "m-dup", job.id, "result")
    assert not await store.jobs.transition(job.id, "posting", "posted", links=[loser])
    assert await store.message_links.job_for_message("discord", "c1", "m-dup") is None


async def test_linked_moves_asked_together_share_one_transaction(store: Store) -> None:
    jobs = [await create_job(store.admission, new_job(status="posting")) for _ in range(4)]
    moved_before = jobs[3]
    assert await store.jobs.transition(moved_before.id, "posting", "posted")
    counting = counted(store)

    moves = await asyncio.gather(
        *(
            store.jobs.transition(
                job.id,
                "posting",
                "posted",
                links=[JobMessage("discord", "c1", f"m{n}", job.id, "result")],
                result_message_id=f"m{n}",
            )
            for n, job in enumerate(jobs)
        )
    )

    assert moves == [True, True, True, False]
    assert len(counting.trips) == 1, f"{len(counting.trips)} transactions for 4 linked moves"
    linked = [await store.message_links.job_for_message("discord", "c1", f"m{n}") for n in range(4)]
    assert [job.id if job else None for job in linked] == [job.id for job in jobs[:3]] + [None]


async def test_linked_moves_read_back_one_value_each_not_the_job(store: Store) -> None:
    """Linked moves asked together read back one value each: whether they moved, or the
    result a delivery's move left. Each read the whole job row back (and parsed it), though
    only that result is used."""
    jobs = [await create_job(store.admission, new_job(status="posting")) for _ in range(3)]
    counting = counted(store)

    def link(n: int) -> list[JobMessage]:
        return [JobMessage("discord", "c1", f"m{n}", jobs[n].id, "result")]

    first, second, result = await asyncio.gather(
        store.jobs.transition(jobs[0].id, "posting", "posted", links=link(0)),
        store.jobs.transition(jobs[1].id, "posting", "posted", links=link(1)),
        store.jobs.transition_noting(
            jobs[2].id, "posting", "posted", noted={"width": 64}, links=link(2)
        ),
    )
    [trip] = counting.trips

    assert first and second and result == {"width": 64}
    assert (trip.rows_read, trip.values_read) == (3, 3)


async def a_job_another_process_changed(store: Store, other_store: Store) -> Job:
    """A new job as ``store`` created it, its webhook secret since changed by ``other_store``
    (``sealed-new``): an answer read by the move shows the change, the caller's copy does not."""
    job = await create_job(store.admission, new_job(webhook_secret="sealed-old"))
    await other_store.jobs.update_job(job.id, webhook_secret="sealed-new")
    return job


async def test_a_linked_move_answering_the_job_reads_it_with_its_own_statement(
    store: Store, other_store: Store
) -> None:
    """A new job's progress link answers the job as the move left it, read by the move itself
    (no statement more), a change made since the caller read it (in another process)
    included; a move that does not happen answers None and links nothing."""
    job = await a_job_another_process_changed(store, other_store)
    counting = counted(store)

    progress = JobMessage("discord", "c1", "m-progress", job.id, "progress")
    answered = await store.jobs.transition_answering(
        job.id,
        "creating",
        "creating",
        links=[progress],
        progress_message_id="m-progress",
        fence=job.lease,
    )

    [trip] = counting.trips
    assert not any(sql.startswith("SELECT") for sql, _ in trip.statements)
    assert answered is not None and answered == await store.jobs.get_job(job.id)
    assert (answered.progress_message_id, answered.webhook_secret) == ("m-progress", "sealed-new")
    assert await store.message_links.job_for_message("discord", "c1", "m-progress") == answered
    late = JobMessage("discord", "c1", "m-late", job.id, "progress")
    assert await store.jobs.transition_answering(job.id, "posting", "posted", links=[late]) is None
    assert await store.message_links.job_for_message("discord", "c1", "m-late") is None


async def test_a_move_without_links_answering_the_job_reads_it_with_its_own_statement(
    store: Store, other_store: Store
) -> None:
    """Recording the provider's answer for a new job answers the job as the move left it, in
    one statement (the move's own), a change made since the caller read it (in another
    process) included; a move that does not happen (an early webhook moved the job first)
    answers None and changes nothing."""
    job = await a_job_another_process_changed(store, other_store)
    counting = counted(store)

    answered = await store.jobs.transition_answering(
        job.id, ("creating", "unknown"), "submitted", provider_id="task-1"
    )

    [trip] = counting.trips
    assert [sql.split(" ", 1)[0] for sql, _ in trip.statements] == ["UPDATE"]
    assert answered is not None and answered == await store.jobs.get_job(job.id)
    assert (answered.status, answered.provider_id) == ("submitted", "task-1")
    assert answered.webhook_secret == "sealed-new"
    again = await store.jobs.transition_answering(
        job.id, ("creating", "unknown"), "submitted", provider_id="task-2"
    )
    assert again is None
    assert await store.jobs.get_job(job.id) == answered


async def test_a_move_noting_result_keys_keeps_a_change_made_since_and_answers_it(
    store: Store, other_store: Store
) -> None:
    """A result's delivery notes its image's size as it records the job posted; a button
    pressed meanwhile (in another process) was marked in the stored result: the move keeps the
    mark and its answer shows it, from the move's own statement."""
    job = await create_job(store.admission, new_job(status="posting"))
    await store.jobs.change_job_result(job.id, lambda result: {**result, "seed": "7"})
    read = await store.jobs.get_job(job.id)
    assert read is not None
    await other_store.jobs.change_job_result(job.id, lambda result: {**result, "pressed": ["u1"]})
    counting = counted(store)

    link = JobMessage("discord", "c1", "m-result", job.id, "result")
    result = await store.jobs.transition_noting(
        job.id,
        "posting",
        "posted",
        noted={"width": 64, "height": 32, "seed": "8"},
        links=[link],
        result_message_id="m-result",
        fence=read.lease,
    )

    statements = [sql for trip in counting.trips for sql, _ in trip.statements]
    assert len(counting.trips) == 1 and not any(sql.startswith("SELECT") for sql in statements)
    moved = await store.jobs.get_job(job.id)
    assert moved is not None and result == moved.result
    assert result == {"seed": "8", "pressed": ["u1"], "width": 64, "height": 32}
    assert (moved.status, moved.result_message_id) == ("posted", "m-result")
    assert await store.message_links.job_for_message("discord", "c1", "m-result") == moved
    assert await store.jobs.transition_noting(job.id, "posting", "posted") is None


async def test_a_move_notes_only_what_both_backends_set_alike(store: Store) -> None:
    job = await create_job(store.admission, new_job(status="posting"))
    for noted in ({"size": {"width": 1}}, {"width": None}):
        with pytest.raises(StorageError, match="objects or null"):
            await store.jobs.transition_noting(job.id, "posting", "posted", noted=noted)
    with pytest.raises(StorageError, match="not both"):
        await store.jobs.transition_noting(
            job.id, "posting", "posted", noted={"width": 1}, result={}
        )
    assert (await store.jobs.get_job(job.id) or job).status == "posting"


async def test_leases_and_statuses_asked_together_are_read_in_one_statement(
    store: Store,
) -> None:
    running = await create_job(store.admission, new_job())
    posted = await create_job(store.admission, new_job(status="posting"))
    assert await store.jobs.transition(posted.id, "posting", "posted")
    counting = counted(store)

    answers = await asyncio.gather(
        *(
            store.jobs.lease_and_status(job_id)
            for job_id in (running.id, posted.id, "gone", running.id)
        )
    )

    assert running.lease is not None
    assert answers == [
        (running.lease, "creating"),
        (posted.lease, "posted"),
        None,
        (running.lease, "creating"),
    ]
    assert len(counting.trips) == 1, f"{len(counting.trips)} reads for 4 asked together"


async def test_transitions_outside_the_lifecycle_are_refused(store: Store) -> None:
    job = await create_job(store.admission, new_job())
    with pytest.raises(StorageError, match="cannot go from 'posted'"):
        await store.jobs.transition(job.id, "posted", "posting")
    with pytest.raises(StorageError, match="unknown job status"):
        await store.jobs.transition(job.id, "creating", "done")  # type: ignore[arg-type]
    with pytest.raises(StorageError, match="not updatable"):
        await store.jobs.transition(job.id, "creating", "submitted", status="posted")
    with pytest.raises(StorageError, match="at least one status"):
        await store.jobs.transition(job.id, [], "submitted")


def test_the_status_vocabulary_is_consistent() -> None:
    assert set(JOB_TRANSITIONS) == ALL_STATUSES
    assert UNFINISHED_STATUSES | TERMINAL_STATUSES == ALL_STATUSES
    assert not UNFINISHED_STATUSES & TERMINAL_STATUSES
    assert ACTIVE_STATUSES <= UNFINISHED_STATUSES
    assert all(not JOB_TRANSITIONS[status] for status in TERMINAL_STATUSES)


async def test_update_job_sets_fields_whatever_the_status(store: Store) -> None:
    job = await create_job(store.admission, new_job(status="posted"))
    assert await store.jobs.update_job(job.id, progress_message_id="m1", last_webhook_at=7.0)
    updated = await store.jobs.get_job(job.id)
    assert updated is not None
    assert (updated.progress_message_id, updated.last_webhook_at, updated.status) == (
        "m1",
        7.0,
        "posted",
    )
    assert not await store.jobs.update_job("missing", error="x")
    with pytest.raises(StorageError, match="not updatable"):
        await store.jobs.update_job(job.id, created_at=0)


async def test_list_unfinished_jobs_in_creation_order_with_filters(
    store: Store, clock: ManualClock
) -> None:
    ids = []
    for status in ("submitted", "posted", "processing", "finished", "creating"):
        clock.advance(1)
        ids.append((await create_job(store.admission, new_job(status=status))).id)
    clock.advance(1)
    diffusion = await create_job(store.admission, new_job(family="diffusion", status="processing"))

    listed = await store.tracking.list_unfinished_jobs()
    assert [job.id for job in listed] == [ids[0], ids[2], ids[3], ids[4], diffusion.id]
    polled = await store.tracking.list_unfinished_jobs(IN_FLIGHT_STATUSES, family="task")
    assert [job.id for job in polled] == [ids[0], ids[2]]
    first_page = await store.tracking.list_unfinished_jobs(limit=2)
    second_page = await store.tracking.list_unfinished_jobs(limit=2, after=first_page[-1])
    assert [job.id for job in first_page + second_page] == [ids[0], ids[2], ids[3], ids[4]]

    assert await store.jobs.update_job(ids[0], last_webhook_at=clock.now)
    assert await store.jobs.update_job(ids[2], next_poll_at=clock.now + 60)
    quiet = await store.tracking.list_unfinished_jobs(
        IN_FLIGHT_STATUSES, webhook_quiet_since=clock.now - 10, due_at=clock.now
    )
    assert [job.id for job in quiet] == [diffusion.id]


async def test_mark_polled_stamps_many_jobs(store: Store, clock: ManualClock) -> None:
    jobs = [await create_job(store.admission, new_job(status="pending")) for _ in range(3)]
    assert await store.tracking.mark_polled([job.id for job in jobs[:2]], at=123.0) == 2
    stamps = [(await store.jobs.get_job(job.id)).last_polled_at for job in jobs]  # type: ignore[union-attr]
    assert stamps == [123.0, 123.0, None]


async def test_many_moves_go_as_one_batch_and_each_is_its_own_compare_and_set(
    store: Store, other_store: Store, clock: ManualClock
) -> None:
    jobs = [await create_job(store.admission, new_job(requester_id=f"u{n}")) for n in range(4)]
    assert await store.jobs.transition(jobs[3].id, "creating", "failed")
    counting = counted(store)
    moves = [
        JobMove(jobs[0].id, ("creating", "pending"), "finished", {"credits": 8, "actions": ["U1"]}),
        JobMove(jobs[1].id, "creating", "processing"),
        JobMove(jobs[2].id, ("creating", "pending"), "finished", {"credits": 4, "actions": []}),
        JobMove(jobs[3].id, ("creating", "pending"), "finished", {"credits": 1, "actions": []}),
        JobMove("no-such-job", ("creating", "pending"), "finished", {"credits": 1, "actions": []}),
    ]

    first, second = await asyncio.gather(
        store.jobs.transition_many(moves), other_store.jobs.transition_many(moves)
    )

    assert [a or b for a, b in zip(first, second, strict=True)] == [True] * 3 + [False] * 2
    assert not any(a and b for a, b in zip(first, second, strict=True)), "one winner each"
    assert len(counting.trips) == 2, "one batch per kind of move"
    done = [await store.jobs.get_job(job.id) for job in jobs]
    assert [(j.status, j.credits) for j in done if j] == [
        ("finished", 8), ("processing", None), ("finished", 4), ("failed", None)
    ]  # fmt: skip
    assert done[0] is not None and done[0].actions == ["U1"]
    assert done[0].finished_at == clock.now and done[1] is not None and done[1].finished_at is None
    assert await store.jobs.transition_many([]) == []
