"""Per-user chat caps (bot/features/chat/caps.py): answers at once, answers a minute, admins
uncapped."""

from __future__ import annotations

import pytest

from bot.features.chat.caps import ChatCaps
from bot.kernel import User, UserError

ALICE, BOB, ROOT = User("alice"), User("bob"), User("root", is_admin=True)


def test_answers_at_once_are_capped_per_user_and_freed_when_done() -> None:
    caps = ChatCaps(max_concurrent=2)
    with caps.answering("web", ALICE), caps.answering("web", ALICE):
        with (
            pytest.raises(UserError, match="already writing 2 answers for you — at most 2"),
            caps.answering("web", ALICE),
        ):
            pass
        with caps.answering("web", BOB), caps.answering("slack", ALICE):
            pass
        with caps.answering("web", ROOT), caps.answering("web", ROOT), caps.answering("web", ROOT):
            pass
    with caps.answering("web", ALICE):
        pass


def test_answers_a_minute_are_capped_and_the_refusal_says_when_to_try_again() -> None:
    now = [1000.0]
    caps = ChatCaps(per_minute=3, clock=lambda: now[0])
    for second in range(3):
        now[0] = 1000.0 + second
        with caps.answering("web", ALICE):
            pass
    with (
        pytest.raises(UserError, match=r"3 answers in the last minute.*try again in 58 s"),
        caps.answering("web", ALICE),
    ):
        pass
    with caps.answering("web", BOB):
        pass
    now[0] = 1060.5
    with caps.answering("web", ALICE):
        pass
