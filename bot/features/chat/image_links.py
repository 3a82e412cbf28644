"""Images of a conversation as links, for a provider that refuses them inline.

genbot sends a private image (a Slack file, whose URL needs the platform's credentials) to the
vision model as a ``data:`` URL of its bytes. The API documentation says only that vision
content is "an array of content parts"; when the provider refuses a ``data:`` URL
(:class:`bot.api.InlineImagesRefused`, learnt once per process), every such image is hosted on
genbot's media host and sent as its link instead (docs/provider.md#vision-parts). Links are
reused while they are young, so a long conversation does not host its images at every turn.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import time
from collections import OrderedDict
from collections.abc import Awaitable, Callable, Mapping, Sequence
from typing import Any

from bot.api.chat_forms import DATA_URL_PREFIX, InlineImagesRefused
from bot.kernel import UserError, _

HostImage = Callable[[bytes], Awaitable[str]]
"""Keeps an image's bytes and returns a public link to them (raises ``ValueError`` with a
sentence for users when the bytes are not an image it can serve)."""
REMEMBERED = 128
NO_HOST = InlineImagesRefused.user_message


def _data_bytes(url: str) -> bytes:
    _, _, encoded = url.partition(",")
    try:
        return base64.b64decode(encoded, validate=True)
    except (binascii.Error, ValueError):
        return b""


class ImageLinks:
    """Turns the ``data:`` URLs of request messages into hosted links (``host`` None: genbot
    has no public address, so such a message cannot be sent)."""

    def __init__(
        self,
        host: HostImage | None,
        *,
        reuse_seconds: float = 1800.0,
        monotonic: Callable[[], float] = time.monotonic,
    ) -> None:
        self._host = host
        self._reuse_seconds = reuse_seconds
        self._monotonic = monotonic
        self._links: OrderedDict[str, tuple[str, float]] = OrderedDict()

    async def linked(self, messages: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
        """``messages`` with every ``data:`` image URL replaced by a hosted link; a
        :class:`UserError` when there is one and nowhere to host it."""
        return [await self._message(message) for message in messages]

    async def _message(self, message: Mapping[str, Any]) -> dict[str, Any]:
        content = message.get("content")
        if not isinstance(content, list):
            return dict(message)
        parts = []
        for part in content:
            url = part.get("image_url", {}).get("url", "") if isinstance(part, dict) else ""
            if isinstance(url, str) and url.startswith(DATA_URL_PREFIX):
                image_url = {**part["image_url"], "url": await self._link(url)}
                part = {**part, "image_url": image_url}
            parts.append(part)
        return {**message, "content": parts}

    async def _link(self, url: str) -> str:
        if self._host is None:
            raise UserError(_(NO_HOST))
        key = hashlib.sha256(url.encode()).hexdigest()
        now = self._monotonic()
        known = self._links.get(key)
        if known is not None and now - known[1] < self._reuse_seconds:
            return known[0]
        try:
            link = await self._host(_data_bytes(url))
        except ValueError as error:
            unreadable = _(
                "An image of this conversation could not be passed on: {error}", error=error
            )
            raise UserError(unreadable) from None
        self._links[key] = (link, now)
        self._links.move_to_end(key)
        while len(self._links) > REMEMBERED:
            self._links.popitem(last=False)
        return link
