"""Images with buttons, presses (also after a restart), and modals."""

from __future__ import annotations

import asyncio

import pytest

from bot.features.jobs.forms import form_for, refused_form
from bot.kernel import (
    Button,
    ButtonPress,
    Command,
    FormError,
    ImageFile,
    Modal,
    ModalField,
    ModalSubmit,
    OutMessage,
    Place,
    SurfaceError,
)
from tests.adapters.discord.harness import Harness, RecordingCore
from tests.fakes.discord import EPHEMERAL, FakeDiscord, FakeMessage

GRID_PNG = b"\x89PNG\r\n\x1a\n grid pixels"
JOB = "job-7f3a"
GRID = OutMessage(
    text="**a fox** — <@{user}>",
    images=(ImageFile("grid.png", GRID_PNG),),
    buttons=(
        (*(Button(f"U{i}", f"upscale{i}", JOB) for i in range(1, 5)), Button("🔄", "reroll", JOB)),
        tuple(Button(f"V{i}", f"variation{i}", JOB) for i in range(1, 5)),
    ),
)
ZOOM_FACTORS_SHOWN = ["1.25", "1.5", "1.75", "2"]
VARY_REGION = Modal(
    "Vary (Region)",
    "vary_region",
    JOB,
    (
        ModalField("prompt", "New prompt", placeholder="what to paint"),
        ModalField("mask", "Mask (x,y,w,h)", multiline=True, required=False),
    ),
)


def general_place(fake: FakeDiscord) -> Place:
    return Place("discord", str(fake.guild_id), str(fake.channel("general").id))


async def post_grid(bot: Harness) -> FakeMessage:
    fake = bot.fake
    grid = OutMessage(
        text=GRID.text.format(user=fake.user("alice").id),
        images=GRID.images,
        buttons=GRID.buttons,
        mention_user_id=str(fake.user("alice").id),
    )
    ref = await bot.adapters[-1].surface.send(general_place(fake), grid)
    return fake.messages[int(ref.message_id)]


async def test_a_grid_carries_its_image_and_nine_buttons(bot: Harness) -> None:
    message = await post_grid(bot)
    assert [(a.filename, a.data) for a in message.attachments] == [("grid.png", GRID_PNG)]
    rows = [[b["label"] for b in row["components"]] for row in message.components]
    assert rows == [["U1", "U2", "U3", "U4", "🔄"], ["V1", "V2", "V3", "V4"]]
    assert message.custom_ids[:2] == [f"gb:upscale1:{JOB}", f"gb:upscale2:{JOB}"]
    assert message.custom_ids[4] == f"gb:reroll:{JOB}"
    assert message.pings.users == {bot.fake.user("alice").id}


async def test_a_press_becomes_a_button_press_after_a_silent_deferral(
    bot: Harness, core: RecordingCore
) -> None:
    fake = bot.fake
    grid = await post_grid(bot)
    interaction = await fake.press(fake.user("bob"), grid, "U2")
    press = await core.next_event(ButtonPress)
    assert (press.action, press.ref, press.message_id) == ("upscale2", JOB, str(grid.id))
    assert press.user.id == str(fake.user("bob").id)
    assert press.place == general_place(fake)
    assert interaction.response_type == 6
    assert core.seen_answered == [True]


async def test_discord_py_keeps_no_sent_view_and_a_press_arrives_once(
    bot: Harness, core: RecordingCore
) -> None:
    fake = bot.fake
    grid = await post_grid(bot)
    card = OutMessage(text="**Upscaled #2** — a fox", buttons=GRID.buttons, card=True)
    surface = bot.adapters[-1].surface
    ref = await surface.send(general_place(fake), card)
    await surface.edit(ref, card)
    assert bot.adapters[-1].client.persistent_views == [], "every view is stopped before sent"
    for message in (grid, fake.messages[int(ref.message_id)]):
        await fake.press(fake.user("bob"), message, "U2")
        press = await core.next_event(ButtonPress)
        assert (press.action, press.ref, press.message_id) == ("upscale2", JOB, str(message.id))
    await asyncio.sleep(0.2)
    assert [type(e) for e in core.events] == [ButtonPress] * 2, "each press reached it once"


async def test_buttons_on_old_messages_work_after_a_restart(
    harness: Harness, core: RecordingCore
) -> None:
    fake = harness.fake
    first = await harness.start(core)
    grid = await post_grid(harness)
    await harness.stop(first)
    await fake.wait_for(lambda: not fake.sessions, what="the first client gone")

    second_core = RecordingCore()
    await harness.start(second_core)
    await fake.press(fake.user("alice"), grid, "V3")
    press = await second_core.next_event(ButtonPress)
    assert (press.action, press.ref, press.message_id) == ("variation3", JOB, str(grid.id))
    assert core.events == []


async def test_an_ephemeral_reply_to_a_press_is_a_private_follow_up(
    bot: Harness, core: RecordingCore
) -> None:
    fake = bot.fake
    grid = await post_grid(bot)

    async def refuse(event: ButtonPress) -> None:
        assert core.surface is not None
        await core.surface.send_ephemeral(event, "Only the requester can upscale this grid.")

    core.on["press:upscale1"] = refuse
    carol = fake.user("carol")
    await fake.press(carol, grid, "U1")
    shown = await fake.wait_for(lambda: fake.ephemerals_for(carol), what="the refusal")
    assert [m.content for m in shown] == ["Only the requester can upscale this grid."]
    assert shown[0].flags & EPHEMERAL
    assert len(fake.bot_messages(grid.channel_id)) == 1


async def test_a_form_action_opens_the_modal_and_its_submission_arrives(
    bot: Harness, core: RecordingCore
) -> None:
    fake = bot.fake
    grid = await post_grid(bot)
    follow_up = OutMessage(
        text="upscaled", buttons=((Button("Vary (Region)", "vary_region", JOB),),)
    )
    ref = await bot.adapters[0].surface.send(general_place(fake), follow_up)

    async def open_form(event: ButtonPress) -> None:
        assert core.surface is not None
        await core.surface.open_modal(event, VARY_REGION)

    core.on["press:vary_region"] = open_form
    alice = fake.user("alice")
    opened = await fake.press(alice, fake.messages[int(ref.message_id)], "Vary (Region)")
    assert await fake.answered(opened) == 9
    assert core.seen_answered == [False]
    modal = opened.modal
    assert modal is not None and modal["custom_id"] == f"gb:vary_region:{JOB}"
    assert modal["title"] == "Vary (Region)"
    assert [row["type"] for row in modal["components"]] == [18, 18]
    assert [row["label"] for row in modal["components"]] == ["New prompt", "Mask (x,y,w,h)"]
    inputs = [row["component"] for row in modal["components"]]
    assert [(i["custom_id"], i["style"], i["required"]) for i in inputs] == [
        ("prompt", 1, True),
        ("mask", 2, False),
    ]

    submitted = await fake.submit_modal(opened, {"prompt": "a red hat", "mask": "0,0,10,10"})
    event = await core.next_event(ModalSubmit)
    assert (event.action, event.ref) == ("vary_region", JOB)
    assert dict(event.values) == {"prompt": "a red hat", "mask": "0,0,10,10"}
    assert event.user.id == str(alice.id) and event.place == general_place(fake)
    assert await fake.answered(submitted) == 5
    assert str(grid.id) != ref.message_id


async def test_a_form_after_a_deferred_command_is_offered_behind_a_button(
    bot: Harness, core: RecordingCore
) -> None:
    async def offer_form(event: Command) -> None:
        assert core.surface is not None
        await core.surface.open_modal(event, VARY_REGION)

    core.on["settings"] = offer_form
    fake = bot.fake
    alice = fake.user("alice")
    await fake.slash(alice, fake.channel("general"), "settings")
    [note] = await fake.wait_for(lambda: fake.ephemerals_for(alice), what="the answer")
    assert note.content == "Vary (Region): open the form."
    opened = await fake.press(alice, note, "📎 Open the form")
    assert await fake.answered(opened) == 9
    assert opened.modal is not None and opened.modal["custom_id"] == f"gb:vary_region:{JOB}"


@pytest.mark.parametrize("rows", [6, 1])
async def test_too_many_buttons_are_refused_before_reaching_discord(
    bot: Harness, rows: int
) -> None:
    per_row = 5 if rows == 6 else 6
    buttons = tuple(
        tuple(Button(f"B{r}{c}", f"a{r}{c}", "x") for c in range(per_row)) for r in range(rows)
    )
    posts = len(bot.fake.requests_to("POST", r"/channels/\d+/messages"))
    with pytest.raises(SurfaceError):
        await bot.adapters[0].surface.send(
            general_place(bot.fake), OutMessage("x", buttons=buttons)
        )
    assert len(bot.fake.requests_to("POST", r"/channels/\d+/messages")) == posts


async def test_a_form_press_the_core_leaves_unanswered_is_still_acknowledged(
    bot: Harness, core: RecordingCore, monkeypatch: pytest.MonkeyPatch
) -> None:
    import asyncio

    from adapters.discord import client

    monkeypatch.setattr(client, "MODAL_GRACE_SECONDS", 0.05)
    release = asyncio.Event()

    async def slow(event: ButtonPress) -> None:
        await release.wait()

    core.on["press:outpaint_custom"] = slow
    fake = bot.fake
    ref = await bot.adapters[0].surface.send(
        general_place(fake),
        OutMessage("up", buttons=((Button("Custom Zoom", "outpaint_custom", JOB),),)),
    )
    pressed = await fake.press(
        fake.user("alice"), fake.messages[int(ref.message_id)], "Custom Zoom"
    )
    assert await fake.answered(pressed) == 6
    release.set()
    monkeypatch.setattr(client, "MODAL_GRACE_SECONDS", 30.0)
    quick = await fake.press(fake.user("alice"), fake.messages[int(ref.message_id)], "Custom Zoom")
    assert await fake.answered(quick) == 6


async def test_after_the_token_expires_private_text_is_addressed_in_place(
    bot: Harness, core: RecordingCore
) -> None:
    import asyncio

    fake = bot.fake
    grid = await post_grid(bot)
    expired = asyncio.Event()

    async def late_failure(event: ButtonPress) -> None:
        await expired.wait()
        assert core.surface is not None
        await core.surface.send_ephemeral(event, "The upscale failed: provider timeout.")

    core.on["press:upscale4"] = late_failure
    bob = fake.user("bob")
    interaction = await fake.press(bob, grid, "U4")
    await fake.answered(interaction)
    interaction.token_expired = True
    expired.set()
    posted = await fake.wait_for(
        lambda: [m for m in fake.bot_messages(grid.channel_id) if "failed" in m.content],
        what="the failure notice",
    )
    assert posted[0].content == f"<@{bob.id}> The upscale failed: provider timeout."
    assert posted[0].pings.users == {bob.id} and not posted[0].pings.everyone


async def test_selects_in_a_modal_and_a_refused_form_offered_again_filled_in(
    bot: Harness, core: RecordingCore
) -> None:
    fake = bot.fake
    follow_up = OutMessage(
        text="upscaled", buttons=((Button("Custom Zoom", "outpaint_custom", JOB),),)
    )
    ref = await bot.adapters[0].surface.send(general_place(fake), follow_up)
    form = form_for("outpaint_custom", JOB, "a fox")
    assert form is not None

    async def open_form(event: ButtonPress) -> None:
        assert core.surface is not None
        await core.surface.open_modal(event, form)

    async def refuse(event: ModalSubmit) -> None:
        assert core.surface is not None
        again = form_for("outpaint_custom", JOB, "a fox", values=event.values)
        assert again is not None
        await core.surface.open_modal(
            event, refused_form(again, FormError("zoom_value", "Too far."))
        )

    core.on["press:outpaint_custom"] = open_form
    core.on["submit:outpaint_custom"] = refuse
    alice = fake.user("alice")
    opened = await fake.press(alice, fake.messages[int(ref.message_id)], "Custom Zoom")
    assert await fake.answered(opened) == 9
    modal = opened.modal
    assert modal is not None
    select = modal["components"][0]["component"]
    assert select["type"] == 3 and [o["value"] for o in select["options"]] == ZOOM_FACTORS_SHOWN
    assert [o["value"] for o in select["options"] if o.get("default")] == ["2"]

    submitted = await fake.submit_modal(opened, {"zoom": "1.5", "zoom_value": "3"})
    event = await core.next_event(ModalSubmit)
    assert dict(event.values) == {"zoom": "1.5", "zoom_value": "3", "prompt": "a fox"}
    [note] = await fake.wait_for(lambda: fake.ephemerals_for(alice), what="the form offered again")
    assert note.content == "⚠️ Too far." and submitted.original_message_id == note.id

    reopened = await fake.press(alice, note, "✏️ Edit and resubmit")
    assert await fake.answered(reopened) == 9
    again = reopened.modal
    assert again is not None and [row["type"] for row in again["components"]] == [18, 18, 18]
    assert [row.get("description") for row in again["components"]] == [None, "⚠️ Too far.", None]
    fields = [row["component"] for row in again["components"]]
    assert [o["value"] for o in fields[0]["options"] if o.get("default")] == ["1.5"]
    assert (fields[1]["value"], fields[2]["value"]) == ("3", "a fox")
    expired = await fake.press(alice, note, "✏️ Edit and resubmit")
    assert await fake.answered(expired) == 4
