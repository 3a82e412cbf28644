"""The in-memory model's bounds: channels keep their latest messages, streams their pace."""

from __future__ import annotations

from dataclasses import replace
from itertools import count

import pytest

from adapters.web.hub import EventHub
from adapters.web.messages import MessageStore, WebMessage, safe_filename, sniff_image_type
from adapters.web.uploads import UploadCache, UploadCacheFull
from bot.kernel import ImageFile
from tests.adapters.web.fakes import png
from tests.resilience.hostile_files import noise_png

MADE = count()
"""When each message of these tests was made, in their order."""


def message(store: MessageStore, channel: str = "general") -> WebMessage:
    return WebMessage(
        id=store.new_id(), channel=channel, thread=None, kind="bot", author={}, created=next(MADE)
    )


def test_a_full_channel_drops_its_oldest_message_and_the_images_only_it_showed() -> None:
    store = MessageStore(max_messages_per_channel=2)
    first, second, third = message(store), message(store), message(store)
    store.replace_images(first, (ImageFile("a.png", png(1, 1)), ImageFile("b.png", png(2, 2))))
    store.replace_images(second, (ImageFile("b.png", png(2, 2)),))
    for item in (first, second, third):
        store.add(item)
    assert store.get(first.id) is None
    assert [m.id for m in store.history("general", "anyone")] == [second.id, third.id]
    kept = {image["key"] for image in second.images}
    dropped = {image["key"] for image in first.images} - kept
    assert all(store.image(key) is not None for key in kept)
    assert all(store.image(key) is None for key in dropped) and dropped


class Reading(WebMessage):
    """A message that counts how often any such message's images are read."""

    reads = 0

    def image_keys(self) -> set[str]:
        Reading.reads += 1
        return super().image_keys()


def test_a_message_leaving_a_full_channel_reads_no_other_kept_message() -> None:
    """Whether the images of a message that leaves are still shown was found by reading every
    kept message's images: 500 reads per result posted anew into a full channel (7 % of
    genbot's CPU in the 3000-job burst); the store counts who shows each image instead."""
    store = MessageStore(max_messages_per_channel=500)
    image = ImageFile("a.png", png(1, 1))
    Reading.reads = 0
    for _ in range(600):
        kept = Reading(
            id=store.new_id(),
            channel="general",
            thread=None,
            kind="bot",
            author={},
            created=next(MADE),
        )
        store.replace_images(kept, (image,))
        store.add(kept)
    assert Reading.reads <= 5 * 600, f"{Reading.reads} reads of messages' images"
    assert store.image(kept.images[0]["key"]) is not None


def test_an_image_goes_when_the_last_kept_message_showing_it_changes_or_leaves() -> None:
    store = MessageStore()
    a, b = ImageFile("a.png", png(1, 1)), ImageFile("b.png", png(2, 2))
    first, second = message(store), message(store)
    for kept in (first, second):
        store.replace_images(kept, (a,))
        store.add(kept)
    key_a = first.images[0]["key"]
    edited = replace(first)
    store.replace_images(edited, (b,))
    store.update(edited)
    key_b = first.images[0]["key"]
    assert store.image(key_a) is not None, "the second message still shows it"
    store.merge(replace(second, images=[], version=1), {})
    assert store.image(key_a) is None and store.image(key_b) is not None
    store.replace_images(first, ())
    assert store.image(key_b) is None, "its own kept message stopped showing it"
    store.replace_images(first, (a,))
    store.remove(first.id)
    assert store.image(key_a) is None


def test_a_message_kept_late_takes_its_place_by_its_time_then_its_id() -> None:
    store = MessageStore(max_messages_per_channel=3)
    made = {name: replace(message(store), id=name, created=t) for name, t in
            [("b", 1.0), ("c", 2.0), ("a", 2.0), ("d", 3.0), ("e", 0.5)]}  # fmt: skip
    for name in ("d", "c", "b", "a"):
        store.add(made[name])
    assert [m.id for m in store.history("general", "anyone")] == ["a", "c", "d"]
    assert store.get("b") is None, "the full channel dropped its oldest message"

    store.add(made["e"])
    assert [m.id for m in store.history("general", "anyone")] == ["a", "c", "d"]


def test_a_copy_older_than_the_one_kept_never_replaces_it() -> None:
    store = MessageStore()
    shown = store.add(replace(message(store), text="⏳ Drawing", version=3))
    result = replace(shown, text="the grid", version=4)
    assert store.merge(result, {}) is shown and shown.text == "the grid"

    assert store.merge(replace(result, text="⏳ Drawing", version=3), {}) is None
    assert store.merge(replace(result, text="⏳ Drawing", version=4), {}) is None
    assert store.get(shown.id) is shown and shown.text == "the grid" and shown.version == 4


def test_each_user_keeps_a_bounded_number_of_pending_uploads() -> None:
    uploads = UploadCache(1 << 20, max_per_user=2)
    ids = [uploads.add("u1", f"{i}.png", png(), "image/png")[0] for i in range(3)]
    other, _ = uploads.add("u2", "x.png", png(), "image/png")
    assert uploads.get(ids[0], "u1") is None
    assert uploads.get(ids[2], "u1") is not None
    assert uploads.get(other, "u1") is None and uploads.get(other, "u2") is not None


def test_uploads_over_everyone_stay_within_the_cache_and_expire() -> None:
    now = [0.0]
    uploads = UploadCache(100, ttl=60, monotonic=lambda: now[0])
    with uploads.reserve(60):
        first, _ = uploads.add("u1", "a.png", b"a" * 60, "image/png")
    with pytest.raises(UploadCacheFull, match="as many uploads as it may"), uploads.reserve(41):
        pass
    with uploads.reserve(40):
        assert uploads.used_bytes == 100
        with pytest.raises(UploadCacheFull):
            uploads.reserve(1).__enter__()
    assert uploads.used_bytes == 60
    now[0] = 61.0
    assert uploads.get(first, "u1") is None and uploads.used_bytes == 0
    with uploads.reserve(100):
        uploads.add("u2", "b.png", b"b" * 100, "image/png")
    assert uploads.count() == 1


def test_a_stream_that_falls_behind_is_closed_and_can_resume_from_the_replay() -> None:
    hub = EventHub(replay_size=10, max_pending=3)
    slow, _ = hub.subscribe("general", "u1", None)
    for index in range(5):
        hub.publish("general", {"type": "post", "n": index})
    assert slow.closed and hub.subscriber_count("general") == 0
    _, replay = hub.subscribe("general", "u1", 2)
    assert replay is not None and [payload["n"] for _, payload in replay] == [2, 3, 4]
    for index in range(20):
        hub.publish("general", {"type": "post", "n": index})
    assert hub.subscribe("general", "u1", 2)[1] is None


def test_image_types_are_sniffed_and_filenames_made_safe() -> None:
    assert sniff_image_type(png()) == "image/png"
    assert sniff_image_type(b"\xff\xd8\xff\xe0rest") == "image/jpeg"
    assert sniff_image_type(b"GIF89a...") == "image/gif"
    assert sniff_image_type(b"RIFF\0\0\0\0WEBPVP8 ") == "image/webp"
    assert sniff_image_type(b"<svg onload=alert(1)>") is None
    assert safe_filename('..\\evil"name<>.png') == "evil_name_.png"
    assert safe_filename("") == "image.png"


def test_image_bytes_in_memory_are_capped_oldest_first() -> None:
    images = [ImageFile(f"{i}.png", noise_png(40, 40, seed=i)) for i in range(5)]
    size = len(images[0].data)
    store = MessageStore(max_image_bytes=int(size * 2.5))
    shown = []
    for image in images:
        kept = message(store)
        store.replace_images(kept, (image,))
        store.add(kept)
        shown.append(kept.images[0]["key"])
    assert [store.image(key) is not None for key in shown] == [False, False, False, True, True]
    assert all(m.images for m in store.history("general", "anyone"))
