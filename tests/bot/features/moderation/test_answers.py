"""A streamed answer withheld from its first sure match on, a word split across pieces
included; an answer matching nothing passes unchanged. A message's other answers (``n`` > 1)
matching a rule are left out of the ``Use N`` offer, the store and every message (the real chat
world and the simulator)."""

from __future__ import annotations

import re
from collections.abc import AsyncIterator, Sequence
from pathlib import Path

from bot.api import StreamEnd
from bot.features.chat.alternatives import PICK_ACTION
from bot.features.moderation import RuleSet
from bot.features.moderation.answers import (
    WithheldFromMatch,
    withheld_answers_notice,
    withheld_notice,
)
from bot.kernel import Place, User
from storage import ModerationRule
from tests.bot.features.chat.support import ALICE, CHANNEL, ChatWorld, chat_world
from tests.fakes.deltas import PumpedDeltas, read_all

RULES = RuleSet([ModerationRule("nsfw", "nude"), ModerationRule("spam", "buy now")])
END = StreamEnd("stop")
ROOT = User("root", "Root", is_admin=True)


async def pieces(items: Sequence[str | StreamEnd]) -> AsyncIterator[str | StreamEnd]:
    for item in items:
        yield item


async def shown(items: Sequence[str | StreamEnd]) -> list[str | StreamEnd]:
    """What the screen lets through of ``items``, read to the end."""
    return await read_all(WithheldFromMatch(RULES, PumpedDeltas(pieces(items))))


async def test_an_answer_matching_nothing_passes_unchanged() -> None:
    items: list[str | StreamEnd] = ["A fox ", "in the sn", "ow, then", " a boat.", END]
    out = await shown(items)
    assert "".join(str(i) for i in out if i is not END) == "A fox in the snow, then a boat."
    assert out[-1] is END


async def test_the_answer_is_withheld_from_a_word_split_across_pieces() -> None:
    out = await shown(["Here is a n", "u", "de portrait and more", " text", END])
    assert out == ["Here is a ", withheld_notice("nsfw")]


async def test_a_piece_of_many_words_is_shown_up_to_the_match() -> None:
    out = await shown(["Here is a nude portrait and more text", END])
    assert out == ["Here is a ", withheld_notice("nsfw")]
    assert await shown(["ok fine, then buy now please"]) == [
        "ok fine, then buy ",
        withheld_notice("spam"),
    ]


async def test_a_phrase_and_a_match_in_the_last_piece_are_withheld() -> None:
    assert await shown(["Please buy ", "now"]) == ["Please buy ", withheld_notice("spam")]
    assert await shown(["ok ", "NUDE", END]) == ["ok ", withheld_notice("nsfw")]


async def test_other_answers_matching_a_rule_are_neither_shown_offered_nor_stored(
    tmp_path: Path,
) -> None:
    async with chat_world(tmp_path, tools=False, moderated=True) as world:
        await world.actor(ROOT, CHANNEL).command("settings", "", scope="channel", n=3)
        alice = world.actor(ALICE, CHANNEL)
        await alice.say("words: 6", mention=True)
        unruled = offered(world, world.threads()[0])
        assert len(unruled) == 3
        words = [set(re.findall(r"[a-z]+", answer.lower())) for answer in unruled]
        word = min(words[1] - words[0] - words[2])
        both = min((words[1] & words[2]) - words[0], default=None) or min(words[2] - words[0])
        rule = ModerationRule("secret", word)
        assert await world.store.moderation.add_rule("fake", "w1", rule, ROOT.id)

        await alice.say("words: 6", mention=True)
        thread = world.threads()[1]
        [offer] = [
            m for m in world.posted_in(thread) if any(b.action == PICK_ACTION for b in m.buttons)
        ]
        assert [b.label for b in offer.buttons] == ["Use 1", "Use 2"]
        assert offered(world, thread) == [unruled[0], unruled[2]]
        assert withheld_answers_notice(["secret"]) in offer.text
        assert all(word not in m.text.lower() for m in world.posted_in(thread))
        conversation = await world.store.conversations.find_conversation_by_message(
            "fake", thread.channel_id, offer.ref.message_id
        )
        assert conversation is not None
        turns = await world.store.conversations.conversation_tail(conversation.id, max_tokens=10**9)
        assert all(word not in (turn.content or "").lower() for turn in turns)
        await alice.press(offer, "Use 2")
        assert world.posted_in(thread)[-1].text.endswith(unruled[2])

        other = ModerationRule("secret", both)
        assert await world.store.moderation.add_rule("fake", "w1", other, ROOT.id)
        await alice.say("words: 6", mention=True)
        thread = world.threads()[2]
        assert not [
            m for m in world.posted_in(thread) if any(b.action == PICK_ACTION for b in m.buttons)
        ]
        assert world.posted_in(thread)[-1].text == withheld_answers_notice(["secret", "secret"])


async def test_a_whole_answer_withheld_is_previewed_as_shown(tmp_path: Path) -> None:
    async with chat_world(tmp_path, tools=False, moderated=True) as world:
        await world.actor(ROOT, CHANNEL).command("settings", "", scope="channel", n=2, stream=False)
        alice = world.actor(ALICE, CHANNEL)
        await alice.say("words: 5", mention=True)
        unruled = offered(world, world.threads()[0])
        words = [set(re.findall(r"[a-z]+", answer.lower())) for answer in unruled]
        word = min(words[0] - words[1])
        assert await world.store.moderation.add_rule(
            "fake", "w1", ModerationRule("secret", word), ROOT.id
        )

        await alice.say("words: 5", mention=True)
        thread = world.threads()[1]
        assert all(word not in m.text.lower() for m in world.posted_in(thread))
        assert offered(world, thread)[1] == unruled[1]


def offered(world: ChatWorld, thread: Place) -> list[str]:
    """The answers previewed under the reply in ``thread``."""
    [offer] = [
        m for m in world.posted_in(thread) if any(b.action == PICK_ACTION for b in m.buttons)
    ]
    return re.findall(r"^\*\*\d\.\*\* (.*)$", offer.text, re.MULTILINE)
