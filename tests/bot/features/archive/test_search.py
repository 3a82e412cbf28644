"""What ``/jobs`` searches for: words, type, channel and date read from the options, refused
when genbot cannot use them, scoped to the user, and carried whole in a page's ref."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from bot.features.archive.search import ArchiveQuery, date_range, words_of
from bot.kernel import Command, Place, User, UserError, encode_custom_id, speaking

NOW = datetime(2026, 11, 29, 5, 30, tzinfo=UTC).timestamp()
ALICE = User("alice")
GENERAL = Place("discord", "g1", "c1")


def day(text: str) -> float:
    return datetime.fromisoformat(text).replace(tzinfo=UTC).timestamp()


def jobs(user: User = ALICE, place: Place = GENERAL, **options: str) -> ArchiveQuery:
    return asked(options, user, place)


def asked(options: dict[str, str], user: User = ALICE, place: Place = GENERAL) -> ArchiveQuery:
    return ArchiveQuery.of(Command(user=user, place=place, name="jobs"), options, NOW)


def test_words_are_letters_and_digits_folded_once_each() -> None:
    assert words_of("A red-Fox, the RED fox_2 «été»") == ("a", "red", "fox", "the", "2", "été")
    assert words_of("*** --") == ()


@pytest.mark.parametrize(
    ("text", "since", "until"),
    [
        ("2026-11-03", "2026-11-03", "2026-11-04"),
        ("2026-02", "2026-02-01", "2026-03-01"),
        ("2025", "2025-01-01", "2026-01-01"),
        ("today", "2026-11-29", "2026-11-30"),
        ("yesterday", "2026-11-28", "2026-11-29"),
        ("2026-11-01..2026-11-15", "2026-11-01", "2026-11-16"),
        ("2026-11..today", "2026-11-01", "2026-11-30"),
    ],
)
def test_dates_are_whole_utc_days(text: str, since: str, until: str) -> None:
    assert date_range(text, NOW) == (day(since), day(until))


END_OF_9999 = day("9999-12-31") + 86400


@pytest.mark.parametrize(
    ("text", "since", "until"),
    [
        ("9999", day("9999-01-01"), END_OF_9999),
        ("9999-12", day("9999-12-01"), END_OF_9999),
        ("9999-12-31", day("9999-12-31"), END_OF_9999),
        ("1900-01-01..9999-12-31", day("1900-01-01"), END_OF_9999),
        ("0001", day("0001-01-01"), day("0002-01-01")),
        ("2024-02", day("2024-02-01"), day("2024-03-01")),
    ],
)
def test_every_day_a_date_can_hold_is_a_search_the_last_one_included(
    text: str, since: float, until: float
) -> None:
    query = jobs(date=text)
    search = query.search(Command(user=ALICE, place=GENERAL, name="jobs"), NOW)
    assert (search.since, search.until) == (since, until)
    assert ArchiveQuery.from_ref(query.ref("j1").partition("~")[2]).date == text


@pytest.mark.parametrize(
    ("options", "told"),
    [
        ({"date": "last week"}, "is not a date"),
        ({"date": "2026-13-01"}, "is not a date"),
        ({"date": "0000"}, "is not a date"),
        ({"date": "9999-13"}, "is not a date"),
        ({"date": "10000"}, "is not a date"),
        ({"date": "2026-11-15..2026-11-01"}, "ends before it starts"),
        ({"type": "video"}, "is not a type"),
        ({"channel": "two words"}, "is not a channel"),
        ({"scope": "workspace"}, "Only genbot admins"),
    ],
)
def test_filters_genbot_cannot_use_are_refused_with_why(options: dict[str, str], told: str) -> None:
    with pytest.raises(UserError, match=told):
        asked(options)


@pytest.mark.parametrize("language", ["ja", "zh-Hans"])
def test_a_refused_date_is_told_without_a_space_after_a_full_width_stop(language: str) -> None:
    """qa2 D12: the refusal and the help are two sentences; in Japanese and Chinese none is
    written after 。 (an ASCII space was)."""
    with speaking(language), pytest.raises(UserError) as refused:
        asked({"date": "2026-13-01"})

    assert "。" in str(refused.value) and "。 " not in str(refused.value)


def test_a_query_is_the_users_and_its_ref_carries_it_whole() -> None:
    query = jobs(text="Red fox", type="imagine", channel="<#c9|art>", date="2026-11")
    search = query.search(Command(user=ALICE, place=GENERAL, name="jobs"), NOW, after="j1")
    assert (search.platform, search.requester_id, search.workspace_id) == ("discord", "alice", "g1")
    assert (search.words, search.family, search.channel_id) == (("red", "fox"), "task", "c9")
    assert "imagine" in search.types and "variation" in search.types
    assert (search.since, search.until, search.after) == (
        day("2026-11-01"),
        day("2026-12-01"),
        "j1",
    )
    ref = query.ref("Zx3_k9Lq2bWe")
    assert len(encode_custom_id("jobs_page", ref)) <= 100
    job_id, _, detail = ref.partition("~")
    assert job_id == "Zx3_k9Lq2bWe" and ArchiveQuery.from_ref(detail) == query
    assert jobs(channel="here").channel == "c1"


def test_in_a_dm_the_search_spans_workspaces_and_admins_search_everyone_in_a_channel() -> None:
    dm = Place("discord", "@me", "d1", is_dm=True)
    mine = jobs(place=dm).search(Command(user=ALICE, place=dm, name="jobs"), NOW)
    assert (mine.requester_id, mine.workspace_id) == ("alice", None)
    admin = User("root", is_admin=True)
    everyone = jobs(user=admin, scope="workspace")
    search = everyone.search(Command(user=admin, place=GENERAL, name="jobs"), NOW)
    assert (search.requester_id, search.workspace_id) == (None, "g1")
    with pytest.raises(UserError, match="from one of its channels"):
        jobs(user=admin, place=dm, scope="workspace")
    with pytest.raises(UserError, match="Only genbot admins"):
        everyone.search(Command(user=ALICE, place=GENERAL, name="jobs"), NOW)
