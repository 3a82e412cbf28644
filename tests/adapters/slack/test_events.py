"""Events API over signed HTTP: mentions, DMs, threads, and what must never be answered."""

from __future__ import annotations

from adapters.slack import SlackSurface
from bot.kernel import InboundEvent, MessageRef, OutMessage, Place, UserMessage
from tests.adapters.slack.conftest import RecordingCore
from tests.fakes.slack import FakeSlack


async def reply_in_thread(event: InboundEvent, surface: SlackSurface) -> None:
    """What the core does with a mention: open a thread on it and answer there."""
    assert isinstance(event, UserMessage)
    place = event.place
    if event.mentions_bot and place.thread_id is None:
        place = await surface.start_thread(MessageRef(place, event.message_id), "chat")
    await surface.send(place, OutMessage(text=f"You said: **{event.text}**", from_model=True))


async def sentinel(fake: FakeSlack, url: str, core: RecordingCore) -> UserMessage:
    """Deliver a DM and wait for it: every earlier delivery has been decided by then."""
    message = fake.user_says("sentinel", channel="D9")
    assert (
        await fake.post_event(url, fake.event_callback(fake.message_event(message)))
    ).status == 200
    found = await core.wait_for(
        lambda: [e for e in core.of(UserMessage) if e.message_id == message.ts]
    )
    return found[0]


async def seen(core: RecordingCore, *texts: str) -> None:
    """Wait until the core saw user messages with every one of ``texts``."""
    await core.wait_for(lambda: set(texts) <= {e.text for e in core.of(UserMessage)})


async def test_app_mention_is_a_user_message_answered_in_its_thread(
    fake: FakeSlack, url: str, core: RecordingCore
) -> None:
    core.script = reply_in_thread
    message = fake.user_says(f"<@{fake.bot_user_id}> hello &lt;there&gt;", user="U2")

    delivery = await fake.post_event(url, fake.event_callback(fake.app_mention_event(message)))

    assert delivery.status == 200
    event = await core.next_of(UserMessage)
    assert event.mentions_bot
    assert event.text == "hello <there>"
    assert event.message_id == message.ts
    assert (event.place.platform, event.place.workspace_id) == ("slack", fake.team_id)
    assert (event.place.channel_id, event.place.thread_id, event.place.is_dm) == ("C1", None, False)
    assert (event.user.id, event.user.name, event.user.is_admin) == ("U2", "bob", True)
    reply = await fake.wait_for(lambda: fake.thread("C1", message.ts)[1:])
    assert reply[0].markdown == "You said: **hello <there>**"


async def test_direct_message_needs_no_mention(
    fake: FakeSlack, url: str, core: RecordingCore
) -> None:
    message = fake.user_says("draw me a fox", channel="D1")

    await fake.post_event(url, fake.event_callback(fake.message_event(message)))

    event = await core.next_of(UserMessage)
    assert (event.text, event.place.channel_id, event.place.is_dm) == ("draw me a fox", "D1", True)
    assert not event.mentions_bot
    assert event.user.is_admin is False


async def test_thread_reply_continues_the_thread(
    fake: FakeSlack, url: str, core: RecordingCore
) -> None:
    parent = fake.user_says(f"<@{fake.bot_user_id}> start")
    reply = fake.user_says("and then?", thread_ts=parent.ts)

    await fake.post_event(url, fake.event_callback(fake.message_event(reply)))

    event = await core.next_of(UserMessage)
    assert (event.text, event.place.thread_id, event.message_id) == (
        "and then?",
        parent.ts,
        reply.ts,
    )


async def test_files_in_a_message_become_attachments(
    fake: FakeSlack, url: str, core: RecordingCore
) -> None:
    message = fake.user_says("look", channel="D1", files=[("fox.png", b"png-bytes")])

    await fake.post_event(url, fake.event_callback(fake.message_event(message)))

    event = await core.next_of(UserMessage)
    (attachment,) = event.attachments
    assert (attachment.filename, attachment.content_type, attachment.size) == (
        "fox.png",
        "image/png",
        9,
    )
    assert attachment.private, "a Slack file URL opens only with the bot token"
    assert core.surface is not None
    assert await core.surface.download(attachment) == b"png-bytes"
    assert fake.downloads[-1][1] is True


async def test_channel_chatter_outside_threads_is_ignored(
    fake: FakeSlack, url: str, core: RecordingCore
) -> None:
    for channel in ("C1", "COPEN", "G1"):
        chatter = fake.user_says("just talking", channel=channel)
        await fake.post_event(url, fake.event_callback(fake.message_event(chatter)))

    await sentinel(fake, url, core)
    assert sorted(e.text for e in core.of(UserMessage)) == ["sentinel"]


async def test_a_group_dm_is_private_and_only_its_mentions_are_heard(
    fake: FakeSlack, url: str, core: RecordingCore
) -> None:
    fake.group_dm("G7", "U1", "U2")
    chatter = fake.user_says("between the two of us", channel="G7")
    mention = fake.user_says(f"<@{fake.bot_user_id}> join us", channel="G7")
    reply = fake.user_says("in the thread", channel="G7", thread_ts=mention.ts)
    again = fake.user_says(f"<@{fake.bot_user_id}> and here", channel="G7", thread_ts=mention.ts)

    for said in (chatter, mention, reply, again):
        await fake.post_event(url, fake.event_callback(fake.message_event(said)))
    for said in (mention, again):
        await fake.post_event(url, fake.event_callback(fake.app_mention_event(said)))

    await seen(core, "join us", "and here")
    await sentinel(fake, url, core)
    heard = {e.text: e.place for e in core.of(UserMessage)}
    assert set(heard) == {"join us", "and here", "sentinel"}
    assert heard["join us"] == Place("slack", fake.team_id, "G7", mention.ts, is_dm=True)
    assert heard["and here"] == Place("slack", fake.team_id, "G7", mention.ts, is_dm=True)


async def test_edits_are_heard_as_edits_and_bot_and_own_messages_are_ignored(
    fake: FakeSlack, url: str, core: RecordingCore
) -> None:
    mine = fake.user_says("hi", channel="D1")
    edited = fake.message_changed_event(mine, "hi again")
    bot_post = fake.message_event(fake.user_says("I am a bot", channel="D1"))
    bot_post["bot_id"] = "BOTHER"
    own = fake.message_event(fake.user_says("genbot talking", channel="D1", user=fake.bot_user_id))

    for event in (edited, bot_post, own):
        assert (await fake.post_event(url, fake.event_callback(event))).status == 200

    await sentinel(fake, url, core)
    assert sorted(e.text for e in core.of(UserMessage)) == ["hi again", "sentinel"]
    [heard] = [e for e in core.of(UserMessage) if e.edited]
    assert (heard.text, heard.message_id) == ("hi again", mine.ts)


async def test_a_mention_delivered_also_as_a_message_is_handled_once(
    fake: FakeSlack, url: str, core: RecordingCore
) -> None:
    message = fake.user_says(f"<@{fake.bot_user_id}> once please")

    await fake.post_event(url, fake.event_callback(fake.app_mention_event(message)))
    await fake.post_event(url, fake.event_callback(fake.message_event(message)))

    await seen(core, "once please")
    await sentinel(fake, url, core)
    assert sorted(e.text for e in core.of(UserMessage)) == ["once please", "sentinel"]


async def test_a_retried_delivery_is_answered_once(
    fake: FakeSlack, url: str, core: RecordingCore
) -> None:
    core.script = reply_in_thread
    envelope = fake.event_callback(
        fake.app_mention_event(fake.user_says(f"<@{fake.bot_user_id}> hi"))
    )

    first = await fake.post_event(url, envelope)
    retry = await fake.post_event(url, envelope, retry_num=1, retry_reason="http_timeout")
    late_retry = await fake.post_event(url, envelope, retry_num=2, retry_reason="http_error")

    assert (first.status, retry.status, late_retry.status) == (200, 200, 200)
    await seen(core, "hi")
    await sentinel(fake, url, core)
    assert sorted(e.text for e in core.of(UserMessage)) == ["hi", "sentinel"]
    await fake.wait_for(lambda: len(fake.calls_to("chat.postMessage")) >= 1)
    assert len(fake.calls_to("chat.postMessage")) == 1


async def test_a_retry_whose_first_delivery_never_arrived_is_handled(
    fake: FakeSlack, url: str, core: RecordingCore
) -> None:
    envelope = fake.event_callback(fake.message_event(fake.user_says("lost once", channel="D1")))

    await fake.post_event(url, envelope, retry_num=1, retry_reason="connection_failed")
    await fake.post_event(url, envelope, retry_num=2, retry_reason="connection_failed")

    await seen(core, "lost once")
    await sentinel(fake, url, core)
    assert sorted(e.text for e in core.of(UserMessage)) == ["lost once", "sentinel"]


async def test_a_timed_out_retry_of_an_unseen_event_is_dropped(
    fake: FakeSlack, url: str, core: RecordingCore
) -> None:
    envelope = fake.event_callback(fake.message_event(fake.user_says("slow", channel="D1")))

    await fake.post_event(url, envelope, retry_num=1, retry_reason="http_timeout")

    await sentinel(fake, url, core)
    assert sorted(e.text for e in core.of(UserMessage)) == ["sentinel"]


async def test_a_bad_signature_gets_401_and_nothing_runs(
    fake: FakeSlack, url: str, core: RecordingCore
) -> None:
    calls_before = len(fake.calls)
    message = fake.user_says("forged", channel="D1")
    envelope = fake.event_callback(fake.message_event(message))

    forged = await fake.post_event(url, envelope, secret="not-the-signing-secret")
    command = await fake.post_command(url, fake.slash_command("/imagine", "a fox"), secret="nope")

    assert (forged.status, command.status) == (401, 401)
    assert len(fake.calls) == calls_before
    await sentinel(fake, url, core)
    assert core.events == [core.of(UserMessage)[0]]


async def test_the_url_verification_challenge_is_answered(fake: FakeSlack, url: str) -> None:
    challenge = {"token": "legacy", "challenge": "3eZbrw1aBm2rZgRNFdxV", "type": "url_verification"}

    delivery = await fake.post_event(url, challenge)

    assert delivery.status == 200
    assert "3eZbrw1aBm2rZgRNFdxV" in delivery.text


async def test_messages_carry_the_users_slack_language(
    fake: FakeSlack, url: str, core: RecordingCore
) -> None:
    fake.locales["U1"] = "ja-JP"
    message = fake.user_says("hello", channel="D1")
    await fake.post_event(url, fake.event_callback(fake.message_event(message)))
    event = await core.next_of(UserMessage)
    assert (event.locale, event.place_locale) == ("ja-JP", None)
