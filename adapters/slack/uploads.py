"""What an upload left on Slack: the message that shows text-less images, and the ids of the
files uploaded with a message (whether now or by an earlier attempt)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from bot.events import ImageFile, Place

from .keyed import EarlierPost

FILE_REF_PREFIX = "file:"
"""A message id made of a file's id, when Slack did not say which message shows the file."""


def _shared_ts(upload: Mapping[str, Any], channel_id: str) -> str | None:
    for file in upload.get("files") or []:
        for shares in (file.get("shares") or {}).values():
            for share in shares.get(channel_id) or []:
                if share.get("ts"):
                    return str(share["ts"])
    return None


def images_ref(
    upload: Mapping[str, Any] | None,
    earlier: EarlierPost,
    images: tuple[ImageFile, ...],
    place: Place,
) -> str:
    """The message id of a text-less image post: the upload's, else the earlier one's."""
    if upload is None:
        return earlier.files[images[0].filename]
    return _shared_ts(upload, place.channel_id) or _file_ref(upload)


def file_ids(
    upload: Mapping[str, Any] | None, earlier: EarlierPost, images: tuple[ImageFile, ...]
) -> list[str]:
    """The Slack file ids of ``images``: uploaded now, or found from an earlier attempt."""
    uploaded = {
        str(f.get("name")): str(f.get("id"))
        for f in (upload or {}).get("files") or []
        if f.get("id")
    }
    ids = [uploaded.get(i.filename) or earlier.file_ids.get(i.filename) for i in images]
    return [i for i in ids if i]


def _file_ref(upload: Mapping[str, Any]) -> str:
    files = upload.get("files") or [{}]
    return FILE_REF_PREFIX + str(files[0].get("id", "unknown"))
