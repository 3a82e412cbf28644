"""Fan-out of live events to the browsers watching a channel (server-sent events).

Each channel numbers its events; the latest ones are kept so that a browser reconnecting with
``Last-Event-ID`` (or opening the stream right after loading history) misses nothing. Events
meant for one user (ephemeral replies, modals) reach only that user's streams. One user keeps at
most ``max_streams_per_user`` streams open (:class:`TooManyStreams` beyond), so one browser
session cannot hold the listener's connections. Streams also hear, unnumbered, that something
new arrived in another channel (to mark it unread): once per channel and stream, and once more
when it first mentions the stream's user, since a page keeps a channel marked until it opens it,
and opening a channel opens a new stream.
"""

from __future__ import annotations

from collections import Counter, deque
from collections.abc import Callable
from dataclasses import dataclass, field

from adapters.web.subscriber import Payload, Subscriber
from bot.kernel import ngettext

MAX_STREAMS_PER_USER = 16


class TooManyStreams(Exception):
    """A user asked for one more stream than they may keep open (the text says so)."""


@dataclass
class _Feed:
    seq: int = 0
    recent: deque[tuple[int, Payload, str | None]] = field(default_factory=deque)
    subscribers: set[Subscriber] = field(default_factory=set)


class EventHub:
    """Numbered, per-channel event feeds with replay of recent events."""

    def __init__(
        self,
        replay_size: int = 1000,
        max_pending: int = 2000,
        max_streams_per_user: int = MAX_STREAMS_PER_USER,
    ) -> None:
        self._replay_size = replay_size
        self._max_pending = max_pending
        self._max_streams_per_user = max_streams_per_user
        self._feeds: dict[str, _Feed] = {}
        self._streams: Counter[str] = Counter()
        self._floor = 0
        """Where a channel's numbers start: past every number a forgotten feed gave
        (:meth:`forget`), so a browser that last saw one is told to reload, never replayed
        what a new feed numbered alike."""

    def _feed(self, channel: str) -> _Feed:
        feed = self._feeds.get(channel)
        if feed is None:
            feed = self._feeds[channel] = _Feed(seq=self._floor)
        return feed

    def last_seq(self, channel: str) -> int:
        """The number of the channel's latest event (0 before any)."""
        feed = self._feeds.get(channel)
        return self._floor if feed is None else feed.seq

    def forget(self, channel: str) -> None:
        """Drop the channel's feed and the events it keeps for replay, unless a stream is open
        on it (a later event starts a new feed, numbered past this one's)."""
        feed = self._feeds.get(channel)
        if feed is None or feed.subscribers:
            return
        del self._feeds[channel]
        if feed.seq > self._floor:
            self._floor = feed.seq + 1

    def publish(self, channel: str, payload: Payload, visible_to: str | None = None) -> int:
        """Send ``payload`` to the channel's streams (only ``visible_to``'s, when set)."""
        feed = self._feed(channel)
        feed.seq += 1
        event = {**payload, "channel": channel, "seq": feed.seq}
        feed.recent.append((feed.seq, event, visible_to))
        while len(feed.recent) > self._replay_size:
            feed.recent.popleft()
        for subscriber in list(feed.subscribers):
            if visible_to is None or subscriber.user_id == visible_to:
                subscriber.deliver(feed.seq, event)
            if subscriber.closed:
                feed.subscribers.discard(subscriber)
        return feed.seq

    def mark_unread(
        self, channel: str, mention: str | None, audience: Callable[[str], bool]
    ) -> None:
        """Mark ``channel`` unread (mentioning ``mention``) for the streams watching other
        channels, of the users ``audience`` admits, unless a stream was told so already (see
        :meth:`Subscriber.news_of`): not numbered, not replayed."""
        event = {"type": "activity", "mention": mention, "channel": channel}
        for name, feed in self._feeds.items():
            if name == channel:
                continue
            for subscriber in list(feed.subscribers):
                if audience(subscriber.user_id) and subscriber.news_of(channel, mention):
                    subscriber.deliver(None, event)
                if subscriber.closed:
                    feed.subscribers.discard(subscriber)

    def subscribe(
        self, channel: str, user_id: str, after: int | None
    ) -> tuple[Subscriber, list[tuple[int, Payload]] | None]:
        """Open a stream. Returns it with the events after ``after`` that ``user_id`` may see,
        or ``None`` instead of that list when they are no longer all kept (reload history).
        :class:`TooManyStreams` when ``user_id`` has as many open as they may."""
        if self._streams[user_id] >= self._max_streams_per_user:
            raise TooManyStreams(
                ngettext(
                    "You have {n} live view of the playground open — the most one person may; "
                    "close a tab and reload this one.",
                    "You have {n} live views of the playground open — the most one person may; "
                    "close a tab and reload this one.",
                    self._streams[user_id],
                )
            )
        feed = self._feed(channel)
        subscriber = Subscriber(channel, user_id, self._max_pending)
        feed.subscribers.add(subscriber)
        self._streams[user_id] += 1
        if after is None or after == feed.seq:
            return subscriber, []
        oldest_kept = feed.recent[0][0] if feed.recent else feed.seq + 1
        if after > feed.seq or after < oldest_kept - 1:
            return subscriber, None
        replay = [
            (seq, event)
            for seq, event, visible_to in feed.recent
            if seq > after and (visible_to is None or visible_to == user_id)
        ]
        return subscriber, replay

    def unsubscribe(self, subscriber: Subscriber) -> None:
        """End ``subscriber``'s stream (once per stream :meth:`subscribe` opened)."""
        subscriber.close()
        feed = self._feeds.get(subscriber.channel)
        if feed is not None:
            feed.subscribers.discard(subscriber)
        self._streams[subscriber.user_id] -= 1
        if self._streams[subscriber.user_id] <= 0:
            del self._streams[subscriber.user_id]

    def subscriber_count(self, channel: str | None = None) -> int:
        """Open streams, in one channel or in all."""
        feeds = [self._feeds.get(channel)] if channel is not None else self._feeds.values()
        return sum(len(feed.subscribers) for feed in feeds if feed is not None)

    def close_all(self) -> None:
        """End every stream (shutting down)."""
        for feed in self._feeds.values():
            for subscriber in feed.subscribers:
                subscriber.close()
            feed.subscribers.clear()
