"""A job's images on Slack: uploaded privately, shown in the one message by ``image`` blocks
once Slack has processed them, kept when the message is edited, PNG where Slack needs it."""

from __future__ import annotations

import io
from collections.abc import AsyncIterator

import pytest
from PIL import Image

from adapters.slack import SlackSurface
from adapters.slack import uploads as slack_uploads
from adapters.slack.uploads import SlackUploads
from bot.kernel import Button, ImageFile, MessageRef, OutMessage, Place, SurfaceError
from tests.adapters.slack.conftest import PNG
from tests.adapters.slack.test_surface import surface_for
from tests.fakes.slack import FakeSlack

C1 = Place("slack", "T0FAKE", "C1")
JOB = "f00dfeedbeef"


class ManualTime:
    """The fake's clock, moved only by the surface's pauses."""

    def __init__(self) -> None:
        self.now = 1000.0
        self.pauses: list[float] = []

    def clock(self) -> float:
        return self.now

    async def sleep(self, seconds: float) -> None:
        self.pauses.append(seconds)
        self.now += seconds


@pytest.fixture
async def surface(fake: FakeSlack) -> AsyncIterator[SlackSurface]:
    made = surface_for(fake)
    yield made
    await made.close()


def result(images: tuple[ImageFile, ...], *, may_exist: bool = False) -> OutMessage:
    return OutMessage(
        text="**a fox** — Upscaled (Subtle)",
        images=images,
        buttons=((Button("Vary (Strong)", "high_variation", JOB),),),
        key=f"{JOB}.result",
        may_exist=may_exist,
        card=True,
    )


def grid() -> tuple[ImageFile, ...]:
    return (ImageFile(f"imagine-{JOB}.png", PNG),)


def on_manual_time(fake: FakeSlack, surface: SlackSurface, processing: float) -> ManualTime:
    time = ManualTime()
    fake.clock = time.clock
    fake.file_processing_seconds = processing
    surface.uploads = SlackUploads(surface.uploads._call, sleep=time.sleep)
    return time


async def test_the_fake_refuses_a_file_before_it_is_processed(fake: FakeSlack) -> None:
    time = ManualTime()
    fake.clock, fake.file_processing_seconds = time.clock, 2.0
    surface = surface_for(fake)
    upload = await surface.client.files_upload_v2(file_uploads=[{"file": PNG, "filename": "a.png"}])
    file_id = upload["files"][0]["id"]
    block = {"type": "image", "slack_file": {"id": file_id}, "alt_text": "a"}

    early = await surface.client.files_info(file=file_id)
    with pytest.raises(Exception, match="invalid_blocks"):
        await surface.client.chat_postMessage(channel="C1", text="x", blocks=[block])
    time.now += 2.0
    ready = await surface.client.files_info(file=file_id)
    await surface.client.chat_postMessage(channel="C1", text="x", blocks=[block])
    await surface.close()

    assert early["file"]["mimetype"] == "" and ready["file"]["mimetype"] == "image/png"
    (refused,) = [c for c in fake.calls_to("chat.postMessage") if not c.ok]
    assert refused.response["errors"] == ["invalid slack file [json-pointer:/blocks/0]/slack_file"]
    assert fake.files[file_id].channel is None and fake.bot_messages("C1")[0].files == []


async def test_the_result_is_posted_once_slack_has_processed_its_image(
    fake: FakeSlack, surface: SlackSurface
) -> None:
    time = on_manual_time(fake, surface, processing=1.0)

    ref = await surface.send(C1, result(grid()))

    (message,) = fake.bot_messages("C1")
    assert ref.message_id == message.ts and len(message.image_files) == 1
    assert sum(time.pauses) >= 1.0
    assert [c.ok for c in fake.calls_to("chat.postMessage")] == [True]
    infos = fake.calls_to("files.info")
    assert infos[-1].response["file"]["mimetype"] == "image/png"
    assert all(c.response["file"]["mimetype"] == "" for c in infos[:-1]) and len(infos) > 1


async def test_the_wait_is_bounded_and_a_refused_post_is_retried_with_the_same_upload(
    fake: FakeSlack, surface: SlackSurface, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(slack_uploads, "READY_WAITS", (0.5, 0.5))
    time = on_manual_time(fake, surface, processing=60.0)

    with pytest.raises(SurfaceError, match="invalid_blocks"):
        await surface.send(C1, result(grid()))
    assert time.pauses == [0.5, 0.5]
    time.now += 60.0
    await surface.send(C1, result(grid(), may_exist=True))

    (message,) = fake.bot_messages("C1")
    assert message.image_files == [fake.uploads[0][0]] and len(fake.uploads) == 1


async def test_an_edit_without_images_keeps_the_images_also_after_a_restart(
    fake: FakeSlack, surface: SlackSurface
) -> None:
    fake.min_seconds_between_updates = 0.0
    ref = await surface.send(C1, result(grid()))
    (message,) = fake.bot_messages("C1")
    shown = list(message.image_files)
    marked = OutMessage(
        text="**a fox** — Upscaled (Subtle)",
        buttons=((Button("Vary (Strong)", "high_variation", JOB, style="primary"),),),
        card=True,
    )

    await surface.edit(ref, marked)
    assert message.image_files == shown and message.button("Vary (Strong)")["style"] == "primary"
    assert fake.calls_to("conversations.history") == []

    restarted = surface_for(fake)
    await restarted.edit(MessageRef(C1, ref.message_id), marked)
    await restarted.close()

    assert message.image_files == shown
    assert len(fake.calls_to("conversations.history")) == 1
    assert message.metadata is not None and message.metadata["event_payload"]["files"] == shown


async def test_a_chat_message_edit_looks_nothing_up(fake: FakeSlack) -> None:
    surface = surface_for(fake)
    await surface.send(C1, OutMessage(text="thinking…", from_model=True))
    restarted = surface_for(fake)
    (message,) = fake.bot_messages("C1")

    await restarted.edit(MessageRef(C1, message.ts), OutMessage(text="done", from_model=True))
    await surface.close()
    await restarted.close()

    assert fake.calls_to("conversations.history") == [] and message.markdown == "done"


async def test_an_image_slack_cannot_show_in_a_block_is_sent_as_png(
    fake: FakeSlack, surface: SlackSurface
) -> None:
    buffer = io.BytesIO()
    Image.new("RGB", (8, 8), "teal").save(buffer, format="WEBP")
    webp = ImageFile(f"imagine-{JOB}.webp", buffer.getvalue(), "image/webp")

    await surface.send(C1, result((webp,)))

    (message,) = fake.bot_messages("C1")
    (file_id,) = message.image_files
    assert fake.files[file_id].name == f"imagine-{JOB}.png"
    assert (fake.files[file_id].data or b"").startswith(b"\x89PNG")
