"""Which kind of conversation a channel id is, asked of the fake Slack once and kept."""

from __future__ import annotations

from slack_sdk.web.async_client import AsyncWebClient

from adapters.slack.conversation_types import ConversationTypes
from tests.fakes.slack import FakeSlack


async def test_a_group_dm_is_told_by_conversations_info_once(fake: FakeSlack) -> None:
    client = AsyncWebClient(token=fake.bot_token, base_url=fake.api_url)
    fake.group_dm("C0MPIM", "U1", "U2")
    types = ConversationTypes()

    assert await types.of(client, fake.team_id, "C0MPIM") == "mpim"
    assert await types.of(client, fake.team_id, "C0MPIM") == "mpim"
    assert await types.of(client, fake.team_id, "G0PRIVATE") == "group"
    assert await types.of(client, fake.team_id, "C1") == "channel"
    assert await types.of(client, fake.team_id, "D1") == "im"
    asked = [call.args["channel"] for call in fake.calls_to("conversations.info")]
    assert asked == ["C0MPIM", "G0PRIVATE", "C1"]


async def test_an_unanswered_question_is_no_answer_and_is_asked_again(fake: FakeSlack) -> None:
    client = AsyncWebClient(token=fake.bot_token, base_url=fake.api_url)
    fake.group_dm("G0MPIM", "U1", "U2")
    types = ConversationTypes(kept=1)

    fake.fail_next("conversations.info", "channel_not_found")
    assert await types.of(client, fake.team_id, "G0MPIM") is None
    assert await types.of(client, fake.team_id, "G0MPIM") == "mpim"
    assert await types.of(client, fake.team_id, "C1") == "channel"
    assert await types.of(client, fake.team_id, "G0MPIM") == "mpim"
    assert len(fake.calls_to("conversations.info")) == 4, "only one conversation is kept"
