from __future__ import annotations

from adapters.web.forgotten import Forgotten
from adapters.web.notice import Notice


def test_a_forget_reads_back_as_it_was_sent() -> None:
    told = Forgotten("web-ann")

    assert Forgotten.read("web-ann", told.text()) == told


def test_a_saves_notice_is_not_a_forget() -> None:
    for text in ("", "[1]", Notice("m1", "bench0", news=True).text(), '{"k":"saved"}'):
        assert Forgotten.read("m1", text) is None


def test_a_genbot_that_knows_no_forget_reads_it_as_naming_no_channel() -> None:
    """It then looks for a message with the user's id, finds none and changes nothing."""
    assert Notice.read("web-ann", Forgotten("web-ann").text()) == Notice("web-ann", None)
