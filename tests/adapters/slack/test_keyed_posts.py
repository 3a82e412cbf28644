"""Keyed messages (a job's result or failure report) are shown once on Slack, however often
the core sends them: an attempt that may have reached Slack is looked for before posting."""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator

import pytest

from adapters.slack import SlackSurface
from adapters.slack import keyed as slack_keyed
from bot.kernel import Button, ImageFile, OutMessage, Place, SurfaceError
from tests.adapters.slack.conftest import PNG
from tests.adapters.slack.test_surface import surface_for
from tests.fakes.slack import FakeSlack

C1 = Place("slack", "T0FAKE", "C1")
JOB = "a1b2c3d4e5f6"
RESULT = f"{JOB}.result"
LOOKUPS = ("conversations.history", "conversations.replies")


@pytest.fixture
async def surface(fake: FakeSlack) -> AsyncIterator[SlackSurface]:
    made = surface_for(fake)
    yield made
    await made.close()


def result(
    *, may_exist: bool = False, images: int = 0, text: str = "**a fox** — done"
) -> OutMessage:
    return OutMessage(
        text=text,
        images=tuple(ImageFile(f"imagine-{JOB}-{n}.png", PNG) for n in range(1, images + 1)),
        buttons=((Button("U1", "upscale1", JOB),),) if text else (),
        key=RESULT,
        may_exist=may_exist,
    )


def lookups(fake: FakeSlack) -> list[str]:
    return [c.method for c in fake.calls if c.method in LOOKUPS]


async def test_a_retried_result_that_reached_slack_is_not_posted_again(
    fake: FakeSlack, surface: SlackSurface
) -> None:
    first = await surface.send(C1, result())
    again = await surface.send(C1, result(may_exist=True))

    assert again == first
    (message,) = fake.bot_messages("C1")
    assert message.metadata == {"event_type": "genbot_message", "event_payload": {"key": RESULT}}
    assert len(fake.calls_to("chat.postMessage")) == 1
    (lookup,) = fake.calls_to("conversations.history")
    assert lookup.args["include_all_metadata"] in ("1", "true", True)


async def test_without_may_exist_nothing_is_looked_up(
    fake: FakeSlack, surface: SlackSurface
) -> None:
    await surface.send(C1, result())
    await surface.send(C1, result())
    await surface.send(C1, OutMessage(text="not keyed", may_exist=True))

    assert lookups(fake) == []
    assert len(fake.bot_messages("C1")) == 3
    assert fake.bot_messages("C1")[2].metadata is None


async def test_a_retry_whose_first_attempt_never_arrived_posts_once(
    fake: FakeSlack, surface: SlackSurface
) -> None:
    fake.user_says("hello")
    fake.fail_next("chat.postMessage")
    with pytest.raises(SurfaceError, match="internal_error"):
        await surface.send(C1, result())

    ref = await surface.send(C1, result(may_exist=True))

    (message,) = fake.bot_messages("C1")
    assert ref.message_id == message.ts
    assert lookups(fake) == ["conversations.history"]


async def test_in_a_thread_the_earlier_reply_is_found(
    fake: FakeSlack, surface: SlackSurface
) -> None:
    parent = fake.user_says("imagine a fox")
    thread = C1.in_thread(parent.ts)
    first = await surface.send(thread, result())
    fake.user_says("nice", thread_ts=parent.ts)

    again = await surface.send(thread, result(may_exist=True))

    assert again == first
    assert len(fake.thread("C1", parent.ts)) == 3
    assert lookups(fake) == ["conversations.replies"]


async def test_a_long_thread_is_read_page_by_page(
    fake: FakeSlack, surface: SlackSurface, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(slack_keyed, "THREAD_PAGE", 2)
    parent = fake.user_says("imagine a fox")
    thread = C1.in_thread(parent.ts)
    for n in range(4):
        fake.user_says(f"reply {n}", thread_ts=parent.ts)
    first = await surface.send(thread, result())

    again = await surface.send(thread, result(may_exist=True))

    assert again == first
    assert lookups(fake) == ["conversations.replies"] * 3
    cursors = [c.args.get("cursor") for c in fake.calls_to("conversations.replies")]
    assert cursors[0] is None and all(cursors[1:])


async def test_a_retry_in_the_same_process_reuses_its_upload(
    fake: FakeSlack, surface: SlackSurface
) -> None:
    fake.fail_next("chat.postMessage")
    with pytest.raises(SurfaceError):
        await surface.send(C1, result(images=2))

    ref = await surface.send(C1, result(images=2, may_exist=True))

    (posted,) = fake.bot_messages("C1")
    assert ref.message_id == posted.ts and posted.action_ids
    assert len(fake.uploads) == 2
    assert posted.image_files == [file_id for file_id, _ in fake.uploads]
    assert fake.calls_to("files.list") == [], "remembered: nothing to look for"


async def test_after_a_crash_genbots_earlier_upload_is_found_not_uploaded_again(
    fake: FakeSlack, surface: SlackSurface
) -> None:
    fake.fail_next("chat.postMessage")
    with pytest.raises(SurfaceError):
        await surface.send(C1, result(images=2))
    restarted = surface_for(fake)

    ref = await restarted.send(C1, result(images=2, may_exist=True))
    await restarted.close()

    (posted,) = fake.bot_messages("C1")
    assert ref.message_id == posted.ts
    assert len(fake.uploads) == 2
    assert posted.image_files == [file_id for file_id, _ in fake.uploads]
    assert posted.metadata == {
        "event_type": "genbot_message",
        "event_payload": {"key": RESULT, "files": posted.image_files},
    }
    (listed,) = fake.calls_to("files.list")
    assert listed.args["user"] == fake.bot_user_id


async def test_only_the_missing_images_are_uploaded(fake: FakeSlack, surface: SlackSurface) -> None:
    fake.fail_next("chat.postMessage")
    with pytest.raises(SurfaceError):
        await surface.send(C1, result(images=1))
    restarted = surface_for(fake)

    await restarted.send(C1, result(images=2, may_exist=True))
    await restarted.close()

    (posted,) = fake.bot_messages("C1")
    first, second = (fake.files[f] for f in posted.image_files)
    assert (first.name, second.name) == (f"imagine-{JOB}-1.png", f"imagine-{JOB}-2.png")
    assert [file_id for file_id, _ in fake.uploads] == [first.id, second.id]


async def test_images_an_earlier_version_shared_in_the_channel_are_shown_not_uploaded(
    fake: FakeSlack, surface: SlackSurface
) -> None:
    await surface.client.files_upload_v2(
        file_uploads=[{"file": PNG, "filename": f"imagine-{JOB}-1.png"}], channel="C1"
    )
    (share,) = fake.bot_messages("C1")

    await surface.send(C1, result(images=1, may_exist=True))

    shared, posted = fake.bot_messages("C1")
    assert shared is share and posted.image_files == [share.files[0].id]
    assert len(fake.uploads) == 1


async def test_an_image_only_message_that_landed_is_returned(
    fake: FakeSlack, surface: SlackSurface
) -> None:
    first = await surface.send(C1, result(images=1, text=""))

    again = await surface.send(C1, result(images=1, text="", may_exist=True))

    assert again == first
    assert len(fake.bot_messages("C1")) == 1
    assert len(fake.calls_to("files.completeUploadExternal")) == 1


async def test_a_failed_lookup_fails_the_send_instead_of_risking_a_duplicate(
    fake: FakeSlack, surface: SlackSurface
) -> None:
    fake.fail_next("conversations.history", "internal_error")

    with pytest.raises(SurfaceError, match=r"conversations\.history: internal_error"):
        await surface.send(C1, result(images=1, may_exist=True))

    assert fake.calls_to("chat.postMessage") == []
    assert fake.uploads == []


async def test_a_lookup_that_cannot_work_is_skipped_with_a_warning(
    fake: FakeSlack, surface: SlackSurface, caplog: pytest.LogCaptureFixture
) -> None:
    fake.fail_next("conversations.history", "missing_scope")

    with caplog.at_level(logging.WARNING):
        ref = await surface.send(C1, result(may_exist=True))

    (message,) = fake.bot_messages("C1")
    assert ref.message_id == message.ts
    assert any("missing_scope" in r.getMessage() for r in caplog.records)


async def test_a_keyed_message_is_found_without_posting(
    fake: FakeSlack, surface: SlackSurface
) -> None:
    progress = f"{JOB}.progress"
    shown = await surface.send(C1, OutMessage(text="⏳ a fox — Waiting to start…", key=progress))

    assert await surface.posted(C1, progress) == shown
    assert await surface.posted(C1, RESULT) is None
    assert len(fake.calls_to("chat.postMessage")) == 1
