from __future__ import annotations

from adapters.web.notice import MOST_BYTES, Notice


def test_a_notice_reads_back_as_it_was_sent() -> None:
    news = Notice("m1", "bench0", news=True, mention="u1", visible_to="u2")
    edit = Notice("m2", "dm-u1")

    assert Notice.read("m1", news.text()) == news
    assert Notice.read("m2", edit.text()) == edit


def test_a_notice_that_says_nothing_readable_names_no_channel() -> None:
    """An earlier genbot's notice carries the id alone: its message is read, as it was."""
    assert Notice.read("m1", "") == Notice("m1", None)
    assert Notice.read("m1", "[1]") == Notice("m1", None)
    assert Notice.read("m1", '{"c": 3}') == Notice("m1", None)


def test_only_news_carries_whom_it_is_for() -> None:
    assert Notice("m1", "bench0", mention="u1", visible_to="u2").text() == '{"c":"bench0"}'


def test_a_notice_too_long_to_send_is_sent_empty_and_its_message_read() -> None:
    """A PostgreSQL notice over 8000 bytes would fail the save it is sent with."""
    long = Notice("m1", "bench0", news=True, mention="u" * MOST_BYTES)

    assert long.text() == ""
    assert Notice.read("m1", long.text()) == Notice("m1", None)
