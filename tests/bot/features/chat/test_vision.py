"""Images: content parts for the vision model; for other models a note and a switch button."""

from __future__ import annotations

import base64
import json
from dataclasses import replace
from pathlib import Path

from bot.api import InlineImagesRefused
from bot.features.chat import VISION_ACTION, VISION_LABEL, VISION_MODEL
from bot.kernel import Attachment, ButtonPress
from tests.bot.features.chat.support import (
    ALICE,
    BOB,
    CHANNEL,
    CHAT_PATH,
    DM,
    ChatWorld,
    chat_world,
    sim_config,
)
from tests.bot.features.jobs.support import png

FOX = Attachment("fox.png", url="https://images.example/fox.png", content_type="image/png")
OWL = Attachment("owl.jpg", url="https://images.example/owl.jpg")
SLACK_FOX = "https://files.slack.com/files-pri/T1-F1/fox.png"
NOTES = Attachment(
    "notes.txt", url="https://files.example/notes.txt", content_type="text/plain", data=b"owls"
)


async def test_the_vision_model_gets_image_parts(world: ChatWorld) -> None:
    await world.actor().command("settings", model=VISION_MODEL)
    await world.actor().say("What animals are these?", attachments=(FOX, OWL, NOTES))
    body = world.chat_bodies()[-1]
    assert body["model"] == VISION_MODEL
    assert body["messages"][-1]["content"] == [
        {
            "type": "text",
            "text": "What animals are these?\n\n--- notes.txt (1 line) ---\nowls\n"
            "--- end of notes.txt ---",
        },
        {"type": "image_url", "image_url": {"url": FOX.url}},
        {"type": "image_url", "image_url": {"url": OWL.url}},
    ]
    (answer,) = world.texts_in(DM)
    assert answer.startswith(f"I see 2 images: {FOX.url} and {OWL.url}")


async def test_other_models_note_it_and_offer_the_switch(world: ChatWorld) -> None:
    alice = world.actor()
    await alice.say("echo: hello first")
    await alice.say("What is in this picture?", attachments=(FOX,))
    assert len(world.chat_bodies()) == 1, "nothing is sent to a model that cannot see"
    note = world.posted_in(DM)[-1]
    assert "llm-3.5-turbo cannot see images" in note.text and VISION_MODEL in note.text
    button = note.button(VISION_LABEL)
    assert button.action == VISION_ACTION
    await alice.press(note, VISION_LABEL)
    assert world.posted_in(DM)[1].text == f"Switched this conversation to {VISION_MODEL}."
    assert world.posted_in(DM)[1].buttons == []
    body = world.chat_bodies()[-1]
    assert body["model"] == VISION_MODEL
    assert body["messages"][-1]["content"][1] == {
        "type": "image_url",
        "image_url": {"url": FOX.url},
    }
    assert world.texts_in(DM)[-1].startswith(f"I see 1 image: {FOX.url}")
    await alice.say("what was my first message")
    assert world.chat_bodies()[-1]["model"] == VISION_MODEL
    assert world.texts_in(DM)[-1] == 'Your first message was: "echo: hello first"'
    stale_press = ButtonPress(
        user=ALICE, place=DM, message_id=note.ref.message_id, action=button.action, ref=button.ref
    )
    await world.core.handle(stale_press)
    await world.core.handle(replace(stale_press, ref="999"))
    assert world.platform.ephemerals_for("alice") == [
        f"This conversation already uses {VISION_MODEL}.",
        "This conversation no longer exists.",
    ]


async def test_only_the_user_whose_image_it_is_may_switch_a_thread_to_the_vision_model(
    world: ChatWorld,
) -> None:
    """In a thread anyone may follow, a bystander's press of the switch is refused as 🔁's is,
    before anything is stored, posted or asked (it would be answered and charged to them)."""
    alice = world.actor(ALICE, CHANNEL)
    await alice.command("chat", prompt="echo: look")
    [thread] = world.threads()
    await alice.say("What is in this picture?", place=thread, attachments=(FOX,))
    note = world.posted_in(thread)[-1]
    shown, calls = note.text, len(world.chat_bodies())

    await world.actor(BOB, thread).press(note, VISION_LABEL)

    assert world.platform.ephemerals_for(BOB.id) == [
        "Only the person this answer is for can use this button."
    ]
    assert len(world.chat_bodies()) == calls, "nothing asked of the provider"
    assert (note.text, world.posted_in(thread)[-1]) == (shown, note), "nothing posted"
    conversation = await world.store.conversations.get_conversation(1)
    assert conversation is not None and conversation.model != VISION_MODEL, "not switched"
    await world.actor(ALICE, thread).press(note, VISION_LABEL)
    assert world.chat_bodies()[-1]["model"] == VISION_MODEL


async def test_history_with_images_is_text_for_other_models(world: ChatWorld) -> None:
    alice = world.actor(ALICE, CHANNEL)
    await alice.command("chat", prompt="echo: look", model=VISION_MODEL)
    thread = next(m.ref.place for m in world.platform.messages.values() if m.ref.place.thread_id)
    await alice.say("and this?", place=thread, attachments=(FOX,))
    await alice.command("chat", prompt="echo: back to text", model="llm-3.5-turbo")
    assert world.platform.threads and len(world.platform.threads) == 2
    alice_in_thread = world.actor(ALICE, thread)
    await alice_in_thread.command("chat", prompt="echo: in the thread", model="llm-3.5-turbo")
    body = world.chat_bodies()[-1]
    assert body["model"] == "llm-3.5-turbo"
    contents = [m["content"] for m in body["messages"]]
    assert f"and this?\n[image: {FOX.url}]" in contents
    assert all(isinstance(c, str) for c in contents)


async def test_free_plan_answers_the_text_without_the_images(tmp_path: Path) -> None:
    async with chat_world(tmp_path, plan="free") as world:
        await world.actor().say("echo: only words", attachments=(FOX,))
        note, answer = world.posted_in(DM)
        assert "needs the Developer plan" in note.text and note.buttons == []
        sent = world.chat_bodies()[-1]["messages"][-1]["content"]
        assert sent == f"echo: only words\n[image: {FOX.url}]"
        assert answer.text == f"only words\n[image: {FOX.url}]"


async def test_private_files_reach_the_vision_model_as_their_bytes(world: ChatWorld) -> None:
    private = Attachment(
        "fox.png",
        url="https://files.slack.com/files-pri/T1-F1/fox.png",
        content_type="image/png",
        data=b"\x89PNG fox bytes",
        private=True,
    )
    await world.actor().command("settings", model=VISION_MODEL)
    await world.actor().say("What is this?", attachments=(private,))
    body = world.chat_bodies()[-1]
    sent = body["messages"][-1]["content"][1]["image_url"]["url"]
    assert sent == "data:image/png;base64," + base64.b64encode(b"\x89PNG fox bytes").decode()
    assert "files.slack.com" not in json.dumps(body)


async def test_a_provider_refusing_inline_images_gets_them_as_links(tmp_path: Path) -> None:
    # The variant dialect refuses data: URLs (docs/provider.md#vision-parts).
    fox = png(40, 30)
    private = Attachment("fox.png", url=SLACK_FOX, content_type="image/png", data=fox, private=True)
    config = sim_config(dialect="variant", insecure_webhooks=True)
    async with chat_world(tmp_path, config=config, webhooks=True) as world:
        alice = world.actor()
        await alice.command("settings", model=VISION_MODEL)
        await alice.say("What is this?", attachments=(private,))
        await alice.say("echo: and now?")
        refused, hosted, later = world.sim.state.requests_to(CHAT_PATH)
        assert refused.status == 400 and hosted.status == later.status == 200
        link = hosted.body["messages"][-1]["content"][1]["image_url"]["url"]
        assert link.startswith(world.genbot.settings.webhook.public_url + "/media/")
        assert later.body["messages"][1]["content"][1]["image_url"]["url"] == link
        served = await world.genbot.parts.jobs.media.fetch(link)
        assert served.data == fox
        assert world.texts_in(DM)[0].startswith(f"I see 1 image: {link}")


async def test_without_a_public_address_a_refused_inline_image_is_explained(
    tmp_path: Path,
) -> None:
    private = Attachment(
        "fox.png", url=SLACK_FOX, content_type="image/png", data=png(40, 30), private=True
    )
    async with chat_world(tmp_path, config=sim_config(dialect="variant")) as world:
        alice = world.actor()
        await alice.command("settings", model=VISION_MODEL)
        await alice.say("What is this?", attachments=(private,))
        assert world.platform.ephemerals_for("alice")[-1] == InlineImagesRefused.user_message
