"""Image results with Block Kit buttons, presses (also after a restart), modals from buttons."""

from __future__ import annotations

from adapters.slack import SlackAdapter, SlackSurface
from bot.kernel import (
    MODAL_ACTIONS,
    Button,
    ButtonPress,
    Command,
    ImageFile,
    InboundEvent,
    MessageRef,
    Modal,
    ModalField,
    ModalSubmit,
    OutMessage,
    Place,
)
from tests.adapters.slack.conftest import PNG, RecordingCore, started_adapter
from tests.fakes.slack import FakeSlack

GRID_BUTTONS = (
    tuple(Button(f"U{i}", f"upscale{i}", "job-1") for i in range(1, 5)),
    (Button("🔄", "reroll", "job-1", style="primary"),),
    tuple(Button(f"V{i}", f"variation{i}", "job-1") for i in range(1, 5)),
)


def imagine_like_the_core(core: RecordingCore) -> None:
    """Script ``core`` to post a grid with buttons for a command, answer presses with an upscale
    and open a form for modal buttons; every posted ``MessageRef`` goes to ``core.results``."""

    async def script(event: InboundEvent, surface: SlackSurface) -> None:
        await act(event, surface, core.results)

    core.script = script


async def act(event: InboundEvent, surface: SlackSurface, recorded: list[MessageRef]) -> None:
    if isinstance(event, Command):
        grid = OutMessage(
            text=f"**{event.text}** — <@{event.user.id}> (fast)",
            images=(ImageFile("grid.png", PNG),),
            buttons=GRID_BUTTONS,
            mention_user_id=event.user.id,
        )
        recorded.append(await surface.send(event.place, grid, origin=event))
    elif isinstance(event, ButtonPress) and event.action in MODAL_ACTIONS:
        fields = (ModalField("zoom", "Zoom factor (1.0 to 2.0)", default="1.5"),)
        await surface.open_modal(event, Modal("Custom Zoom", event.action, event.ref, fields))
    elif isinstance(event, ButtonPress):
        upscale = OutMessage(
            text=f"Image #{event.action[-1]}",
            images=(ImageFile("upscale.png", PNG[::-1]),),
            buttons=((Button("Vary (Strong)", "high_variation", "job-2"),),),
        )
        recorded.append(await surface.send(event.place, upscale, origin=event))


async def test_an_image_result_is_one_message_with_its_image_and_buttons(
    fake: FakeSlack, url: str, core: RecordingCore
) -> None:
    imagine_like_the_core(core)

    await fake.post_command(url, fake.slash_command("/imagine", "a fox --ar 16:9"))

    posted = await fake.wait_for(lambda: fake.calls_to("chat.postMessage"))
    ignored = ("auth.test", "files.info", "users.info")
    methods = [c.method for c in fake.calls if c.method not in ignored]
    assert methods == [
        "files.getUploadURLExternal",
        "files.completeUploadExternal",
        "chat.postMessage",
    ]
    (completed,) = fake.calls_to("files.completeUploadExternal")
    assert "channel_id" not in completed.args and "channels" not in completed.args
    file_id = fake.calls_to("files.getUploadURLExternal")[0].response["file_id"]
    assert fake.uploads == [(file_id, PNG)]
    ready = [c for c in fake.calls_to("files.info") if c.response["file"]["mimetype"]]
    assert ready and fake.calls.index(ready[0]) < fake.calls.index(posted[0])
    (buttons_message,) = fake.bot_messages("C1")
    assert buttons_message.files == [] and buttons_message.image_files == [file_id]
    assert [b["type"] for b in buttons_message.blocks] == [
        "section",
        "image",
        "actions",
        "actions",
        "actions",
    ]
    assert buttons_message.ts == posted[0].response["ts"]
    await core.wait_for(lambda: core.results)
    assert core.results[0].message_id == buttons_message.ts
    assert buttons_message.action_ids == [b.custom_id for row in GRID_BUTTONS for b in row]
    assert [b["value"] for b in buttons_message.buttons] == buttons_message.action_ids
    assert buttons_message.button("🔄")["style"] == "primary"
    assert [len(b["elements"]) for b in buttons_message.blocks if b["type"] == "actions"] == [
        4,
        1,
        4,
    ]
    assert buttons_message.pings() == {"@U1"}
    assert buttons_message.sections.startswith("<@U1> *a fox --ar 16:9* — &lt;@U1&gt; (fast)")


async def test_a_button_on_an_old_message_works_after_a_restart(
    fake: FakeSlack, core: RecordingCore
) -> None:
    imagine_like_the_core(core)
    first = await started_adapter(fake, core)
    assert first.events_url is not None
    await fake.post_command(first.events_url, fake.slash_command("/imagine", "a fox"))
    await core.wait_for(lambda: core.results)
    await first.stop()
    old = fake.message("C1", core.results[0].message_id)
    assert old is not None

    second: SlackAdapter = await started_adapter(fake, core)
    try:
        assert second.events_url is not None
        delivery = await fake.post_interactive(
            second.events_url, fake.block_actions(old, "gb:upscale1:job-1", user="U2")
        )
        assert delivery.status == 200
        press = await core.next_of(ButtonPress)
        assert (press.action, press.ref, press.message_id) == ("upscale1", "job-1", old.ts)
        assert (press.place.channel_id, press.place.thread_id) == ("C1", None)
        assert (press.user.id, press.user.is_admin) == ("U2", True)
        await core.wait_for(lambda: len(core.results) == 2)
        upscaled = fake.message("C1", core.results[1].message_id)
        assert upscaled is not None and upscaled.action_ids == ["gb:high_variation:job-2"]
    finally:
        await second.stop()
    assert core.errors == []


async def test_a_press_in_a_thread_keeps_the_thread_and_a_modal_button_opens_a_form(
    fake: FakeSlack, url: str, core: RecordingCore
) -> None:
    imagine_like_the_core(core)
    assert core.surface is not None
    parent = fake.user_says("start")
    thread = parent.channel, parent.ts
    place = await core.surface.start_thread(MessageRef(channel_c1(fake), parent.ts), "t")
    buttons = ((Button("Custom Zoom", "outpaint_custom", "job-9"),),)
    ref = await core.surface.send(place, OutMessage(text="Upscaled", buttons=buttons))
    message = fake.message("C1", ref.message_id)
    assert message is not None and message.thread_ts == parent.ts

    payload = fake.block_actions(message, "gb:outpaint_custom:job-9")
    await fake.post_interactive(url, payload)

    press = await core.next_of(ButtonPress)
    assert (press.place.thread_id, press.message_id) == (parent.ts, ref.message_id)
    (view,) = await fake.wait_for(lambda: fake.views)
    assert view.trigger_id == payload["trigger_id"]
    assert view.callback_id == "gb:outpaint_custom:job-9"

    await fake.post_interactive(url, fake.view_submission(view, {"zoom": "1.8"}))

    submit = await core.next_of(ModalSubmit)
    assert (submit.action, submit.ref, dict(submit.values)) == (
        "outpaint_custom",
        "job-9",
        {"zoom": "1.8"},
    )
    assert (submit.place.channel_id, submit.place.thread_id) == thread


async def test_a_press_on_a_message_with_replies_stays_in_the_channel(
    fake: FakeSlack, url: str, core: RecordingCore
) -> None:
    assert core.surface is not None
    ref = await core.surface.send(
        channel_c1(fake), OutMessage(text="grid", buttons=((Button("U1", "upscale1", "j"),),))
    )
    fake.user_says("nice fox", thread_ts=ref.message_id)
    grid = fake.message("C1", ref.message_id)
    assert grid is not None and grid.thread_ts == grid.ts

    await fake.post_interactive(url, fake.block_actions(grid, "gb:upscale1:j"))

    press = await core.next_of(ButtonPress)
    assert (press.place.channel_id, press.place.thread_id, press.message_id) == (
        "C1",
        None,
        grid.ts,
    )


async def test_a_malformed_genbot_button_is_acknowledged_and_ignored(
    fake: FakeSlack, url: str, core: RecordingCore
) -> None:
    assert core.surface is not None
    buttons = ((Button("A", "reroll", "j"),),)
    ref = await core.surface.send(channel_c1(fake), OutMessage(text="x", buttons=buttons))
    message = fake.message("C1", ref.message_id)
    assert message is not None
    message.blocks[-1]["elements"][0]["action_id"] = "gb:no-reference"

    delivery = await fake.post_interactive(url, fake.block_actions(message, "gb:no-reference"))

    assert delivery.status == 200
    assert core.events == []


def channel_c1(fake: FakeSlack) -> Place:
    return Place("slack", fake.team_id, "C1")
