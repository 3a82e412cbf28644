"""Socket Mode: the adapter connects to the websocket ``apps.connections.open`` names and acks."""

from __future__ import annotations

from bot.kernel import Button, ButtonPress, Command, OutMessage, UserMessage
from tests.adapters.slack.conftest import RecordingCore, started_adapter
from tests.fakes.slack import FakeSlack


async def test_socket_mode_hello_envelopes_and_acks(fake: FakeSlack, core: RecordingCore) -> None:
    adapter = await started_adapter(fake, core, socket_mode=True)
    try:
        assert adapter.events_url is None
        await fake.wait_for(lambda: fake.socket_connected)
        (opened,) = fake.calls_to("apps.connections.open")
        assert opened.token == fake.app_token

        mention = fake.user_says(f"<@{fake.bot_user_id}> over the socket")
        envelope = fake.event_callback(fake.app_mention_event(mention))
        event_ack = await fake.socket_push("events_api", envelope)
        command_ack = await fake.socket_push(
            "slash_commands", fake.slash_command("/imagine", "a fox --ar 16:9")
        )
        redelivered = await fake.socket_push(
            "events_api", envelope, retry_attempt=1, retry_reason="timeout"
        )

        acked = await fake.wait_for(
            lambda: len(fake.socket_acks) >= 3 and {a["envelope_id"] for a in fake.socket_acks}
        )
        assert acked == {event_ack, command_ack, redelivered}
        message = await core.next_of(UserMessage)
        assert (message.text, message.mentions_bot, message.place.channel_id) == (
            "over the socket",
            True,
            "C1",
        )
        command = await core.next_of(Command)
        assert (command.name, command.text) == ("imagine", "a fox --ar 16:9")

        assert core.surface is not None
        buttons = ((Button("U1", "upscale1", "job"),),)
        ref = await core.surface.send(message.place, OutMessage(text="grid", buttons=buttons))
        posted = fake.message("C1", ref.message_id)
        assert posted is not None
        press_payload = fake.block_actions(posted, "gb:upscale1:job")
        press_ack = await fake.socket_push("interactive", press_payload)
        press = await core.next_of(ButtonPress)
        assert (press.action, press.ref, press.message_id) == ("upscale1", "job", ref.message_id)
        await fake.wait_for(lambda: press_ack in {a["envelope_id"] for a in fake.socket_acks})
        assert len(core.of(UserMessage)) == 1
    finally:
        await adapter.stop()
    assert core.errors == []
