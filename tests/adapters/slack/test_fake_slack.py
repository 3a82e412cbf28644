"""The fake Slack itself, driven by the real slack-sdk: the parts the adapter does not use yet."""

from __future__ import annotations

import pytest
from slack_sdk.errors import SlackApiError
from slack_sdk.web.async_client import AsyncWebClient

from tests.fakes.slack import FakeSlack


async def test_chat_streaming_methods_build_one_message(fake: FakeSlack) -> None:
    client = AsyncWebClient(token=fake.bot_token, base_url=fake.api_url)
    parent = fake.user_says("question")

    stream = await client.chat_stream(
        channel="C1", thread_ts=parent.ts, recipient_team_id=fake.team_id, recipient_user_id="U1"
    )
    await stream.append(markdown_text="**Hello")
    await stream.append(markdown_text=" world**")
    await stream.stop()

    (_, answer) = fake.thread("C1", parent.ts)
    assert answer.text == "**Hello world**"
    assert not answer.streaming
    with pytest.raises(SlackApiError, match="message_not_in_streaming_state"):
        await client.chat_appendStream(channel="C1", ts=answer.ts, markdown_text="more")


async def test_replies_history_and_wrong_tokens(fake: FakeSlack) -> None:
    client = AsyncWebClient(token=fake.bot_token, base_url=fake.api_url)
    parent = fake.user_says("top")
    fake.user_says("reply", thread_ts=parent.ts)

    replies = await client.conversations_replies(channel="C1", ts=parent.ts)
    history = await client.conversations_history(channel="C1")

    assert [m["text"] for m in replies["messages"]] == ["top", "reply"]
    assert [m["text"] for m in history["messages"]] == ["top"]
    intruder = AsyncWebClient(token="xoxb-wrong", base_url=fake.api_url)
    with pytest.raises(SlackApiError, match="invalid_auth"):
        await intruder.auth_test()
    with pytest.raises(SlackApiError, match="invalid_blocks"):
        await client.chat_postMessage(channel="C1", text="x", blocks=[{"type": "markdown"}])


async def test_message_metadata_is_returned_only_when_asked_for(fake: FakeSlack) -> None:
    client = AsyncWebClient(token=fake.bot_token, base_url=fake.api_url)
    metadata = {"event_type": "job_done", "event_payload": {"id": "j1"}}
    posted = await client.chat_postMessage(channel="C1", text="done", metadata=metadata)
    await client.files_upload_v2(channel="C1", file=b"png", filename="fox.png")

    plain = await client.conversations_history(channel="C1")
    full = await client.conversations_history(channel="C1", include_all_metadata=True)
    thread = await client.conversations_replies(
        channel="C1", ts=posted["ts"], include_all_metadata=True
    )

    assert [m.get("metadata") for m in plain["messages"]] == [None, None]
    shared, text = full["messages"]
    assert text["metadata"] == metadata and "metadata" not in shared
    assert [f["name"] for f in shared["files"]] == ["fox.png"]
    assert thread["messages"][0]["metadata"] == metadata
    with pytest.raises(SlackApiError, match="invalid_metadata"):
        await client.chat_postMessage(channel="C1", text="x", metadata={"event_type": "e"})


async def test_a_start_past_its_tier_is_ratelimited_with_retry_after_as_on_slack() -> None:
    now = [1000.0]
    async with FakeSlack(tier_per_minute={"chat.startStream": 2}, clock=lambda: now[0]) as fake:
        client = AsyncWebClient(token=fake.bot_token, base_url=fake.api_url)
        parent = fake.user_says("question")

        async def start() -> None:
            await client.chat_startStream(
                channel="C1",
                thread_ts=parent.ts,
                recipient_team_id=fake.team_id,
                recipient_user_id="U1",
            )

        await start()
        now[0] += 20
        await start()
        now[0] += 10
        with pytest.raises(SlackApiError) as refused:
            await start()
        now[0] += 30
        await start()

    assert refused.value.response.status_code == 429
    assert refused.value.response["error"] == "ratelimited"
    assert refused.value.response.headers["Retry-After"] == "30"
    assert [c.status for c in fake.calls_to("chat.startStream")] == [200, 200, 429, 200]
    assert fake.ratelimited == [fake.calls_to("chat.startStream")[2]]


async def test_views_update_replaces_an_open_modal_with_its_current_hash_only(
    fake: FakeSlack,
) -> None:
    client = AsyncWebClient(token=fake.bot_token, base_url=fake.api_url)
    text = {"type": "section", "text": {"type": "mrkdwn", "text": "one"}}
    modal = {"type": "modal", "title": {"type": "plain_text", "text": "Form"}, "blocks": [text]}
    trigger = fake.slash_command("/imagine", "x")["trigger_id"]
    opened = (await client.views_open(trigger_id=trigger, view=modal))["view"]
    picture = {"type": "image", "slack_file": {"id": "F404"}, "alt_text": "a picture"}

    with pytest.raises(SlackApiError, match="invalid_arguments"):
        await client.views_update(view_id=opened["id"], view={**modal, "blocks": [picture]})
    updated = await client.views_update(
        view_id=opened["id"], hash=opened["hash"], view={**modal, "title": _plain("Two")}
    )
    with pytest.raises(SlackApiError, match="hash_conflict"):
        await client.views_update(view_id=opened["id"], hash=opened["hash"], view=modal)
    [view] = fake.views
    fake.view_submission(view, {})
    with pytest.raises(SlackApiError, match="not_found"):
        await client.views_update(view_id=opened["id"], view=modal)

    assert updated["view"]["title"]["text"] == "Two" and len(view.updates) == 1


def _plain(text: str) -> dict[str, str]:
    return {"type": "plain_text", "text": text}


async def test_a_group_dm_is_an_mpim_in_its_events_commands_presses_and_info(
    fake: FakeSlack,
) -> None:
    client = AsyncWebClient(token=fake.bot_token, base_url=fake.api_url)
    name = fake.group_dm("G0MPIM", "U1", "U2")
    said = fake.user_says("hi both", channel="G0MPIM")

    info = (await client.conversations_info(channel="G0MPIM"))["channel"]
    assert name == "mpdm-alice--bob-1" == info["name"]
    assert (info["is_mpim"], info["is_group"], info["is_im"], info["is_private"]) == (
        True,
        False,
        False,
        True,
    )
    assert fake.message_event(said)["channel_type"] == "mpim"
    assert "channel_type" not in fake.app_mention_event(said)
    assert fake.slash_command("/imagine", "x", channel="G0MPIM")["channel_name"] == name
    assert fake.slash_command("/imagine", "x", channel="G1")["channel_name"] == "g1"
    assert fake.message_event(fake.user_says("x", channel="G1"))["channel_type"] == "group"
