"""The Slack surface against the fake Web API: safety of text, budgets, ephemerals, files."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator

import pytest
from prometheus_client import REGISTRY
from slack_sdk.web.async_client import AsyncWebClient

from adapters.slack import SlackSurface
from adapters.slack.inbound import SlackOrigin
from adapters.slack.settings import SlackSettings
from bot.kernel import (
    Attachment,
    Button,
    Command,
    ImageFile,
    MessageGone,
    MessageRef,
    Modal,
    ModalField,
    OutMessage,
    Place,
    RateLimited,
    SurfaceError,
    SurfaceRegistry,
    User,
    UserMessage,
)
from bot.outbox import Edit, Outbox, Post, WritePolicy
from tests.adapters.slack.conftest import PNG
from tests.fakes.slack import FakeSlack

C1 = Place("slack", "T0FAKE", "C1")


def surface_for(
    fake: FakeSlack, settings: SlackSettings | None = None, *, max_upload_bytes: int = 8 << 20
) -> SlackSurface:
    client = AsyncWebClient(token=fake.bot_token, base_url=fake.api_url)
    return SlackSurface(
        client,
        profile=(settings or SlackSettings()).platform_profile(),
        bot_token=fake.bot_token,
        api_url=fake.api_url,
        max_upload_bytes=max_upload_bytes,
    )


@pytest.fixture
async def surface(fake: FakeSlack) -> AsyncIterator[SlackSurface]:
    made = surface_for(fake)
    yield made
    await made.close()


def said(text: str, place: Place = C1) -> UserMessage:
    return UserMessage(user=User("U1"), place=place, message_id="1.000001", text=text)


async def test_model_text_pings_nobody_but_still_reads_the_same(
    fake: FakeSlack, surface: SlackSurface
) -> None:
    text = (
        "Hi <!everyone> <!here|here> <!channel> <@U2> <@W9|bob> <!subteam^S1|devs> @here @channel"
    )

    ref = await surface.send(C1, OutMessage(text=text, from_model=True))

    message = fake.message("C1", ref.message_id)
    assert message is not None
    assert message.pings() == set()
    assert message.markdown.replace("\u200b", "") == text
    assert "<!everyone>" not in message.text and "&lt;!everyone&gt;" in message.text


async def test_model_pings_in_any_case_or_written_as_entities_ping_nobody(
    fake: FakeSlack, surface: SlackSurface
) -> None:
    text = "@Here @HERE @Channel &#60;!here> &lt;!channel&gt; &#x3c;@U2&#x3e; &#64;everyone"

    ref = await surface.send(C1, OutMessage(text=text, from_model=True))

    message = fake.message("C1", ref.message_id)
    assert message is not None
    assert message.pings() == set()
    assert message.markdown.replace("\u200b", "") == text


async def test_a_full_model_message_with_pings_still_fits_one_markdown_block(
    fake: FakeSlack, surface: SlackSurface
) -> None:
    pings = "<!here> <@U2> @channel " * 30
    text = pings + "x" * (surface.profile.max_text - len(pings))

    ref = await surface.send(C1, OutMessage(text=text, from_model=True))

    message = fake.message("C1", ref.message_id)
    assert message is not None and message.pings() == set()
    assert message.markdown.replace("\u200b", "") == text


async def test_genbot_text_mentions_only_the_requester(
    fake: FakeSlack, surface: SlackSurface
) -> None:
    prompt = "a fox <!channel> @everyone & <b>"

    ref = await surface.send(C1, OutMessage(text=f"**{prompt}** — 42%", mention_user_id="U1"))

    message = fake.message("C1", ref.message_id)
    assert message is not None
    assert message.pings() == {"@U1"}
    assert message.sections == "<@U1> *a fox &lt;!channel&gt; @everyone &amp; &lt;b&gt;* — 42%"
    assert message.text == message.sections


async def test_long_genbot_text_is_split_into_sections(
    fake: FakeSlack, surface: SlackSurface
) -> None:
    text = "\n".join(f"line {i:04d} " + "x" * 60 for i in range(110))

    ref = await surface.send(C1, OutMessage(text=text))

    message = fake.message("C1", ref.message_id)
    assert message is not None
    sections = [b["text"]["text"] for b in message.blocks if b["type"] == "section"]
    assert len(sections) == 3 and all(len(s) <= 3000 for s in sections)
    assert "\n".join(sections) == text
    assert len(message.text) <= 3000


async def test_a_second_update_within_a_second_is_rate_limited(
    fake: FakeSlack, surface: SlackSurface
) -> None:
    ref = await surface.send(C1, OutMessage(text="…", from_model=True))
    await surface.edit(ref, OutMessage(text="Once upon", from_model=True))

    with pytest.raises(RateLimited) as refused:
        await surface.edit(ref, OutMessage(text="Once upon a time", from_model=True))

    assert refused.value.retry_after >= 1.0
    assert len(fake.ratelimited) == 1 and fake.ratelimited[0].status == 429
    message = fake.message("C1", ref.message_id)
    assert message is not None and message.markdown == "Once upon"


async def test_the_workspace_update_window_is_rate_limited() -> None:
    async with FakeSlack(updates_per_minute=3) as fake:
        surface = surface_for(fake)
        refs = [await surface.send(C1, OutMessage(text=f"m{i}")) for i in range(4)]
        for ref in refs[:3]:
            await surface.edit(ref, OutMessage(text="edited"))

        with pytest.raises(RateLimited) as refused:
            await surface.edit(refs[3], OutMessage(text="edited"))

        assert refused.value.retry_after > 50
        await surface.close()


async def test_a_refused_update_is_counted_as_rate_limited_by_the_outbox() -> None:
    def counted(name: str, method: str) -> float:
        labels = {"platform": "slack", "method": method}
        return REGISTRY.get_sample_value(f"genbot_platform_{name}_total", labels) or 0.0

    before = {name: counted(name, "edit") for name in ("writes", "rate_limited")}
    async with FakeSlack(updates_per_minute=3) as fake:
        inner = surface_for(fake)
        outbox = Outbox(SurfaceRegistry([inner]))
        now = WritePolicy.NOW
        refs = [await outbox.write(C1, Post(OutMessage(text=f"m{i}")), now) for i in range(4)]
        for ref in refs[:3]:
            await outbox.write(C1, Edit(ref, OutMessage(text="edited")), now)
        with pytest.raises(RateLimited):
            await outbox.write(C1, Edit(refs[3], OutMessage(text="edited")), now)
        await inner.close()

    assert len(fake.ratelimited) == 1
    assert counted("writes", "edit") - before["writes"] == 4
    assert counted("rate_limited", "edit") - before["rate_limited"] == 1


async def test_streamed_edits_within_the_budget_are_never_refused() -> None:
    settings = SlackSettings(message_updates_per_second=10.0)
    async with FakeSlack(min_seconds_between_updates=0.1) as fake:
        surface = surface_for(fake, settings)
        assert surface.profile.min_seconds_between_edits_of_one_message == pytest.approx(0.1)
        assert surface.profile.edits_per_minute_per_workspace == 50
        assert surface.profile.max_text == 11900
        words = ["the", "quick", "brown", "fox", "jumps", "over", "the", "lazy", "dog"]
        ref = await surface.send(C1, OutMessage(text=words[0], from_model=True))
        for count in range(2, len(words) + 1):
            await asyncio.sleep(surface.profile.min_seconds_between_edits_of_one_message)
            await surface.edit(ref, OutMessage(text=" ".join(words[:count]), from_model=True))

        message = fake.message("C1", ref.message_id)
        assert message is not None
        assert fake.ratelimited == []
        assert message.markdown == " ".join(words)
        assert message.history[:3] == ["the", "the quick", "the quick brown"]
        await surface.close()


async def test_edits_can_remove_buttons(fake: FakeSlack, surface: SlackSurface) -> None:
    ref = await surface.send(
        C1, OutMessage(text="pick", buttons=((Button("U1", "upscale1", "j"),),))
    )
    await surface.edit(ref, OutMessage(text="done"))

    message = fake.message("C1", ref.message_id)
    assert message is not None and message.buttons == [] and message.sections == "done"


async def test_messages_cannot_gain_images_so_a_progress_message_is_deleted_and_linked(
    fake: FakeSlack, surface: SlackSurface
) -> None:
    assert not surface.profile.edits_add_images
    ref = await surface.send(C1, OutMessage(text="⏳ working"))
    assert await surface.link(ref) == f"https://fake.slack.com/archives/C1/p{ref.message_id}"
    await surface.delete(ref)

    assert fake.message("C1", ref.message_id) is None
    with pytest.raises(MessageGone):
        await surface.delete(ref)
    with pytest.raises(MessageGone):
        await surface.edit(ref, OutMessage(text="done"))


async def test_ephemeral_answers_use_post_ephemeral_in_the_thread(
    fake: FakeSlack, surface: SlackSurface
) -> None:
    in_thread = C1.in_thread("1.000001")

    await surface.send_ephemeral(said("x", in_thread), "No credits left <!here>")

    (notice,) = fake.ephemerals
    assert (notice.via, notice.user, notice.channel, notice.thread_ts) == (
        "chat.postEphemeral",
        "U1",
        "C1",
        "1.000001",
    )
    assert notice.text == "No credits left &lt;!here&gt;"


async def test_refusals_become_surface_errors_with_slacks_reason(
    fake: FakeSlack, surface: SlackSurface
) -> None:
    fake.channels_without_bot.add("C404")

    with pytest.raises(SurfaceError, match="not_in_channel"):
        await surface.send(Place("slack", "T0FAKE", "C404"), OutMessage(text="hello"))

    modal = Modal("Vary (Region)", "vary_region", "j", (ModalField("prompt", "Prompt"),))
    with pytest.raises(SurfaceError, match="click or a command"):
        await surface.open_modal(said("x"), modal)


async def test_an_expired_trigger_is_reported(fake: FakeSlack, surface: SlackSurface) -> None:
    command = Command(
        user=User("U1"), place=C1, name="settings", context=SlackOrigin(trigger_id="trig.unknown")
    )
    modal = Modal("Settings", "settings", "U1", (ModalField("model", "Model"),))

    with pytest.raises(SurfaceError, match="invalid_trigger_id"):
        await surface.open_modal(command, modal)


async def test_images_without_text_or_buttons_are_one_message_of_images(
    fake: FakeSlack, surface: SlackSurface
) -> None:
    ref = await surface.send(
        C1, OutMessage(images=(ImageFile("a.png", PNG), ImageFile("b.png", b"2")))
    )

    (message,) = fake.bot_messages("C1")
    assert ref.message_id == message.ts
    assert [fake.files[f].name for f in message.image_files] == ["a.png", "b.png"]
    assert message.files == []


async def test_start_thread_uses_the_message_ts_and_stays_in_a_thread(
    surface: SlackSurface,
) -> None:
    opened = await surface.start_thread(MessageRef(C1, "5.000001"), "chat")
    again = await surface.start_thread(MessageRef(opened, "6.000001"), "chat")

    assert opened == C1.in_thread("5.000001") == again


async def test_downloads_send_the_token_only_to_slack(
    fake: FakeSlack, surface: SlackSurface
) -> None:
    fake.external_files["fox.png"] = PNG
    shared = fake.user_says("", files=[("own.png", b"own")]).files[0]

    elsewhere = await surface.download(Attachment("fox.png", url=fake.external_url("fox.png")))
    from_slack = await surface.download(Attachment("own.png", url=shared.url_private))

    assert (elsewhere, from_slack) == (PNG, b"own")
    assert [r.authorization for r in fake.external_requests] == [None]
    assert fake.downloads == [(shared.id, True)]


async def test_a_sign_in_page_instead_of_a_file_is_an_error(
    fake: FakeSlack, surface: SlackSurface
) -> None:
    shared = fake.user_says("", files=[("own.png", b"own")]).files[0]
    foreign_origin = shared.url_private.replace("127.0.0.1", "localhost")

    with pytest.raises(SurfaceError, match="files:read"):
        await surface.download(Attachment("own.png", url=foreign_origin))

    assert fake.downloads == [(shared.id, False)]


async def test_large_downloads_arrive_whole(fake: FakeSlack, surface: SlackSurface) -> None:
    big = bytes(range(256)) * 4096
    shared = fake.user_says("", files=[("big.png", big)]).files[0]

    assert await surface.download(Attachment("big.png", url=shared.url_private)) == big


async def test_downloads_larger_than_the_limit_are_refused(fake: FakeSlack) -> None:
    surface = surface_for(fake, max_upload_bytes=4)
    fake.external_files["big.png"] = b"12345"

    with pytest.raises(SurfaceError, match="larger than"):
        await surface.download(Attachment("big.png", url=fake.external_url("big.png")))
    await surface.close()
