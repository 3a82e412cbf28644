"""The playground's event hub: unread marks a stream is told once per channel, and once more
when the channel first mentions the stream's user."""

from __future__ import annotations

from adapters.web.hub import EventHub
from adapters.web.subscriber import Subscriber


def everyone(_user_id: str) -> bool:
    return True


def marks(subscriber: Subscriber) -> list[tuple[str, str | None]]:
    told = [(payload["channel"], payload["mention"]) for _, payload in subscriber.pending]
    subscriber.pending.clear()
    return told


def test_a_stream_is_told_of_a_channel_once_and_once_more_when_it_first_mentions_its_user() -> None:
    hub = EventHub()
    ann, _ = hub.subscribe("general", "ann", None)
    for mention in (None, "bob", None):
        hub.mark_unread("bench0", mention, everyone)
    assert marks(ann) == [("bench0", None)]
    for mention in ("ann", "ann", None, "bob"):
        hub.mark_unread("bench0", mention, everyone)
    assert marks(ann) == [("bench0", "ann")]
    hub.mark_unread("bench1", "ann", everyone)
    hub.mark_unread("bench1", None, everyone)
    assert marks(ann) == [("bench1", "ann")]


def test_a_new_stream_is_told_again_and_the_channel_a_stream_shows_never() -> None:
    hub = EventHub()
    first, _ = hub.subscribe("general", "ann", None)
    hub.mark_unread("bench0", None, everyone)
    hub.mark_unread("general", None, everyone)
    assert marks(first) == [("bench0", None)]
    second, _ = hub.subscribe("general", "ann", None)
    hub.mark_unread("bench0", None, everyone)
    assert marks(first) == [] and marks(second) == [("bench0", None)]


def test_a_mark_a_stream_may_not_see_does_not_count_as_told() -> None:
    hub = EventHub()
    ann, _ = hub.subscribe("general", "ann", None)
    hub.mark_unread("bench0", None, lambda user_id: user_id != "ann")
    hub.mark_unread("bench0", None, everyone)
    assert marks(ann) == [("bench0", None)]
