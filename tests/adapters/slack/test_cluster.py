"""Several genbot processes serving one Slack app (HTTP behind a load balancer, or each with
its own Socket Mode connection): an event Slack delivers to two of them is handled once, by
whichever remembered it first in the database; the channel a user looks at, heard by one, is
read by another."""

from __future__ import annotations

import asyncio
from collections.abc import Callable

from adapters.slack.adapter import SlackAdapter
from bot.kernel import LimitsSettings, UserMessage
from storage.postgres import PostgresStore
from tests.adapters.slack.conftest import RecordingCore, slack_settings
from tests.fakes.router import FakeRouter
from tests.fakes.slack import FakeSlack
from tests.postgres import PostgresCluster


def heard(core: RecordingCore, text: str) -> Callable[[], bool]:
    return lambda: text in {event.text for event in core.of(UserMessage)}


def connected(fake: FakeSlack, count: int) -> Callable[[], bool]:
    return lambda: fake.socket_connections >= count


async def sentinel(fake: FakeSlack, events_url: str, core: RecordingCore, text: str) -> None:
    """Deliver a DM to one process and wait for it: its earlier deliveries are decided."""
    message = fake.user_says(text, channel="D9")
    await fake.post_event(events_url, fake.event_callback(fake.message_event(message)))
    await core.wait_for(lambda: [e for e in core.of(UserMessage) if e.text == text])


async def test_an_event_delivered_to_two_processes_is_handled_once(
    fake: FakeSlack, postgres: PostgresCluster
) -> None:
    url = postgres.create_schema()
    cores = [RecordingCore(), RecordingCore()]
    stores = [await PostgresStore.open(url, pool_size=2) for _ in cores]
    adapters = [
        SlackAdapter(slack_settings(fake), LimitsSettings(), dedupe=store.dedupe)
        for store in stores
    ]
    try:
        for adapter, core in zip(adapters, cores, strict=True):
            core.surface = adapter.surface
            await adapter.start(FakeRouter(core, [adapter.surface]))
        urls = [adapter.events_url or "" for adapter in adapters]
        envelope = fake.event_callback(fake.message_event(fake.user_says("once", channel="D1")))
        assert (await fake.post_event(urls[0], envelope)).status == 200
        retried = await fake.post_event(urls[1], envelope, retry_num=1, retry_reason="http_error")
        assert retried.status == 200
        for n, (core, events_url) in enumerate(zip(cores, urls, strict=True)):
            message = fake.user_says(f"sentinel {n}", channel="D9")
            await fake.post_event(events_url, fake.event_callback(fake.message_event(message)))
            await core.wait_for(heard(core, f"sentinel {n}"))
        handled = [e.text for core in cores for e in core.of(UserMessage) if e.text == "once"]
        assert handled == ["once"]
    finally:
        for adapter in adapters:
            await adapter.stop()
        for store in stores:
            await store.close()


async def test_an_envelope_redelivered_to_another_socket_mode_process_is_handled_once(
    fake: FakeSlack, postgres: PostgresCluster
) -> None:
    url = postgres.create_schema()
    cores = [RecordingCore(), RecordingCore()]
    stores = [await PostgresStore.open(url, pool_size=2) for _ in cores]
    adapters = [
        SlackAdapter(slack_settings(fake, socket_mode=True), LimitsSettings(), dedupe=store.dedupe)
        for store in stores
    ]
    try:
        for count, (adapter, core) in enumerate(zip(adapters, cores, strict=True), start=1):
            core.surface = adapter.surface
            await adapter.start(FakeRouter(core, [adapter.surface]))
            await fake.wait_for(connected(fake, count))
        envelope = fake.event_callback(fake.message_event(fake.user_says("once", channel="D1")))
        first = await fake.socket_push("events_api", envelope, connection=0)
        await fake.wait_for(lambda: first in {a["envelope_id"] for a in fake.socket_acks})
        again = await fake.socket_push(
            "events_api", envelope, retry_attempt=1, retry_reason="timeout", connection=1
        )
        await fake.wait_for(lambda: again in {a["envelope_id"] for a in fake.socket_acks})
        for n, core in enumerate(cores):
            message = fake.user_says(f"sentinel {n}", channel="D9")
            sentinel_event = fake.event_callback(fake.message_event(message))
            await fake.socket_push("events_api", sentinel_event, connection=n)
            await core.wait_for(heard(core, f"sentinel {n}"))
        handled = [e.text for core in cores for e in core.of(UserMessage) if e.text == "once"]
        assert handled == ["once"]
        assert "once" in {e.text for e in cores[0].of(UserMessage)}
    finally:
        for adapter in adapters:
            await adapter.stop()
        for store in stores:
            await store.close()


async def test_the_channel_in_view_heard_by_one_process_is_read_by_another(
    fake: FakeSlack, postgres: PostgresCluster
) -> None:
    url = postgres.create_schema()
    cores = [RecordingCore(), RecordingCore()]
    stores = [await PostgresStore.open(url, pool_size=2) for _ in cores]
    adapters = [
        SlackAdapter(
            slack_settings(fake),
            LimitsSettings(),
            dedupe=store.dedupe,
            channels_in_view=store.channels_in_view,
        )
        for store in stores
    ]
    fake.user_says("The release moves to Friday.", user="U2", channel="C1")
    try:
        for adapter, core in zip(adapters, cores, strict=True):
            core.surface = adapter.surface
            await adapter.start(FakeRouter(core, [adapter.surface]))
        first, second = (adapter.events_url or "" for adapter in adapters)
        looked = fake.app_context_changed_event("U1", "C1")
        await fake.post_event(first, fake.event_callback(looked))
        for _ in range(250):
            if await stores[1].channels_in_view.find_channel_in_view(fake.team_id, "U1", 60):
                break
            await asyncio.sleep(0.02)
        asked = fake.user_says("Summarize this channel's last hour", channel="D1")
        await fake.post_event(second, fake.event_callback(fake.message_event(asked)))
        message = await cores[1].wait_for(lambda: next(iter(cores[1].of(UserMessage)), None))
    finally:
        for adapter in adapters:
            await adapter.stop()
        for store in stores:
            await store.close()
    (document,) = message.attachments
    assert document.filename == "channel-messages.txt" and document.data is not None
    assert "bob: The release moves to Friday." in document.data.decode()
    assert cores[0].of(UserMessage) == []
