"""Slash commands over signed HTTP: routing, images from the channel, ephemeral answers, modals."""

from __future__ import annotations

from urllib.parse import urlencode

import aiohttp
import pytest

from adapters.slack import SlackSurface
from bot.kernel import Command, InboundEvent, Modal, ModalField, ModalSubmit
from tests.adapters.slack.conftest import PNG, RecordingCore
from tests.fakes.slack import FakeSlack


@pytest.mark.parametrize(
    ("slash", "text", "name", "rest"),
    [
        ("/imagine", "a fox --ar 16:9 --fast", "imagine", "a fox --ar 16:9 --fast"),
        ("/chat", "  what is a fox? --temp 0.7 ", "chat", "what is a fox? --temp 0.7"),
        (
            "/diffusion",
            "txt2img a fox --width 768 --seed 7",
            "diffusion.txt2img",
            "a fox --width 768 --seed 7",
        ),
        ("/diffusion", "TXT2IMG a fox", "diffusion.txt2img", "a fox"),
        ("/genbot", "usage", "usage", ""),
        ("/genbot", "help", "help", ""),
        ("/genbot", "", "help", ""),
        ("/genbot", "settings --model llm-4", "settings", "--model llm-4"),
    ],
)
async def test_slash_commands_become_commands_with_their_text(
    fake: FakeSlack, url: str, core: RecordingCore, slash: str, text: str, name: str, rest: str
) -> None:
    fields = fake.slash_command(slash, text, user="U2", channel="C7")

    delivery = await fake.post_command(url, fields)

    assert (delivery.status, delivery.text) == (200, "")
    command = await core.next_of(Command)
    assert (command.name, command.text, dict(command.options)) == (name, rest, {})
    assert (command.user.id, command.user.name, command.user.is_admin) == ("U2", "bob", True)
    assert (command.place.channel_id, command.place.thread_id) == ("C7", None)
    assert command.place.workspace_id == fake.team_id
    assert command.key == f"slack:{fields['trigger_id']}"


async def test_an_unknown_subcommand_is_explained_without_bothering_the_core(
    fake: FakeSlack, url: str, core: RecordingCore
) -> None:
    await fake.post_command(url, fake.slash_command("/diffusion", "paint a fox"))
    await fake.post_command(url, fake.slash_command("/diffusion", ""))

    await fake.wait_for(lambda: len(fake.ephemerals) == 2)
    answers = fake.ephemerals
    assert (
        "Unknown subcommand '/diffusion paint'; use one of: txt2img, img2img, upscale, controlnet"
        in answers[0].text
    )
    assert "/diffusion txt2img a fox" in answers[0].text
    assert "/diffusion needs a subcommand" in answers[1].text
    assert {a.via for a in answers} == {"response_url"}
    assert core.events == []


async def test_an_error_from_the_core_answers_ephemerally_through_the_response_url(
    fake: FakeSlack, url: str, core: RecordingCore
) -> None:
    async def refuse(event: InboundEvent, surface: SlackSurface) -> None:
        await surface.send_ephemeral(event, "`--ar 99` is not an aspect ratio: use W:H like 16:9")

    core.script = refuse
    await fake.post_command(url, fake.slash_command("/imagine", "--ar 99"))

    (answer,) = await fake.wait_for(lambda: fake.ephemerals)
    assert answer.via == "response_url"
    assert answer.text == "`--ar 99` is not an aspect ratio: use W:H like 16:9"
    assert (answer.user, answer.channel) == ("U1", "C1")
    assert fake.calls_to("chat.postMessage") == []


async def test_settings_opens_a_modal_with_the_commands_trigger_and_comes_back_as_submit(
    fake: FakeSlack, url: str, core: RecordingCore
) -> None:
    settings = Modal(
        "Your genbot settings",
        "settings",
        "U1",
        (
            ModalField("model", "Default chat model", default="llm-3.5-turbo"),
            ModalField("system_prompt", "System prompt", required=False, multiline=True),
        ),
    )

    async def open_settings(event: InboundEvent, surface: SlackSurface) -> None:
        if isinstance(event, Command):
            await surface.open_modal(event, settings)

    core.script = open_settings
    fields = fake.slash_command("/genbot", "settings", channel="C3")
    await fake.post_command(url, fields)

    (view,) = await fake.wait_for(lambda: fake.views)
    assert view.trigger_id == fields["trigger_id"]
    assert view.callback_id == "gb:settings:U1"
    assert view.input_ids == ["model", "system_prompt"]

    submission = fake.view_submission(view, {"system_prompt": "Answer like a pirate"})
    delivery = await fake.post_interactive(url, submission)

    assert delivery.status == 200
    submit = await core.next_of(ModalSubmit)
    assert (submit.action, submit.ref) == ("settings", "U1")
    assert dict(submit.values) == {
        "model": "llm-3.5-turbo",
        "system_prompt": "Answer like a pirate",
    }
    assert (submit.place.channel_id, submit.place.workspace_id) == ("C3", fake.team_id)


async def test_describe_takes_the_image_the_user_just_shared(
    fake: FakeSlack, url: str, core: RecordingCore
) -> None:
    fake.user_says("an older one", files=[("old.png", b"old")])
    fake.user_says("someone else's", user="U2", files=[("theirs.png", b"theirs")])
    fake.user_says("", files=[("fox.png", PNG), ("notes.txt", b"text")])
    downloaded: list[bytes] = []

    async def fetch(event: InboundEvent, surface: SlackSurface) -> None:
        assert isinstance(event, Command)
        downloaded.append(await surface.download(event.attachments["image"]))

    core.script = fetch
    await fake.post_command(url, fake.slash_command("/describe", "--fast"))

    command = await core.next_of(Command)
    assert command.text == "--fast"
    image = command.attachments["image"]
    assert (image.filename, image.content_type, image.private) == ("fox.png", "image/png", True)
    await core.wait_for(lambda: downloaded)
    assert downloaded == [PNG]
    assert fake.downloads[-1][1] is True


async def test_describe_with_a_url_leaves_the_url_to_the_core(
    fake: FakeSlack, url: str, core: RecordingCore
) -> None:
    fake.user_says("", files=[("fox.png", PNG)])

    await fake.post_command(url, fake.slash_command("/describe", "https://example.com/fox.png"))

    command = await core.next_of(Command)
    assert (command.text, dict(command.attachments)) == ("https://example.com/fox.png", {})


async def test_blend_takes_the_newest_shared_images_in_order(
    fake: FakeSlack, url: str, core: RecordingCore
) -> None:
    for name in ("a.png", "b.png", "c.png"):
        fake.user_says("", files=[(name, name.encode())])

    await fake.post_command(url, fake.slash_command("/blend", "--dimension portrait"))

    command = await core.next_of(Command)
    names = {slot: a.filename for slot, a in command.attachments.items()}
    assert names == {"image1": "a.png", "image2": "b.png", "image3": "c.png"}
    assert command.text == "--dimension portrait"


async def test_blend_takes_https_links_from_the_text(
    fake: FakeSlack, url: str, core: RecordingCore
) -> None:
    text = "https://example.com/one.png <https://example.com/two.jpg> --dimension square"

    await fake.post_command(url, fake.slash_command("/blend", text))

    command = await core.next_of(Command)
    assert not any(a.private for a in command.attachments.values())
    urls = {slot: a.url for slot, a in command.attachments.items()}
    assert urls == {
        "image1": "https://example.com/one.png",
        "image2": "https://example.com/two.jpg",
    }
    assert command.text == "--dimension square"


async def test_blend_without_enough_images_is_refused_before_the_core(
    fake: FakeSlack, url: str, core: RecordingCore
) -> None:
    fake.user_says("", files=[("only.png", PNG)])

    await fake.post_command(url, fake.slash_command("/blend", ""))

    (answer,) = await fake.wait_for(lambda: fake.ephemerals)
    assert "`/blend` needs 2 images" in answer.text
    assert core.events == []


async def test_img2img_takes_its_init_image_from_the_channel(
    fake: FakeSlack, url: str, core: RecordingCore
) -> None:
    fake.user_says("", channel="C5", files=[("start.png", PNG)])

    await fake.post_command(
        url, fake.slash_command("/diffusion", "img2img autumn fox", channel="C5")
    )

    command = await core.next_of(Command)
    assert (command.name, command.text) == ("diffusion.img2img", "autumn fox")
    assert command.attachments["init_image"].filename == "start.png"


async def test_controlnet_takes_only_the_newest_image_it_requires(
    fake: FakeSlack, url: str, core: RecordingCore
) -> None:
    for name in ("older.png", "newest.png"):
        fake.user_says("", files=[(name, PNG)])

    text = "controlnet a fox --controlnet canny"
    await fake.post_command(url, fake.slash_command("/diffusion", text))

    command = await core.next_of(Command)
    assert {k: a.filename for k, a in command.attachments.items()} == {"init_image": "newest.png"}


async def test_images_in_a_channel_genbot_cannot_read_ask_for_an_invite(
    fake: FakeSlack, url: str, core: RecordingCore
) -> None:
    fake.channels_without_bot.add("C9")

    await fake.post_command(url, fake.slash_command("/diffusion", "upscale", channel="C9"))

    (answer,) = await fake.wait_for(lambda: fake.ephemerals)
    assert "`/invite @genbot`" in answer.text
    assert core.events == []


async def test_a_replayed_signed_command_is_handled_once(
    fake: FakeSlack, url: str, core: RecordingCore
) -> None:
    """The same body and signature posted three times within Slack's five minutes (as anyone
    who saw one request could) is one command; a new invocation (a new ``trigger_id``) is
    another."""
    body = urlencode(fake.slash_command("/imagine", "a fox"))
    headers = fake.signed_headers(body, "application/x-www-form-urlencoded")
    async with aiohttp.ClientSession() as session:
        for _ in range(3):
            async with session.post(url, data=body.encode(), headers=headers) as response:
                assert response.status == 200
    await fake.post_command(url, fake.slash_command("/imagine", "a fox"))

    await fake.post_command(url, fake.slash_command("/genbot", "help"))
    last = await core.next_of(Command, count=3)
    assert last.name == "help"
    assert [event.name for event in core.of(Command)] == ["imagine", "imagine", "help"]


async def test_commands_carry_the_users_slack_language_read_once(
    fake: FakeSlack, url: str, core: RecordingCore
) -> None:
    fake.locales["U2"] = "de-DE"
    for count, text in enumerate(("usage", "help"), start=1):
        await fake.post_command(url, fake.slash_command("/genbot", text, user="U2"))
        command = await core.next_of(Command, count)
        assert (command.locale, command.place_locale) == ("de-DE", None)
    await fake.post_command(url, fake.slash_command("/genbot", "help", user="U1"))
    assert (await core.next_of(Command, 3)).locale == "en-US"
    asked = fake.calls_to("users.info")
    assert [(call.args["user"], call.args["include_locale"]) for call in asked] == [
        ("U2", "1"),
        ("U1", "1"),
    ], "one users.info per user while it is remembered"
