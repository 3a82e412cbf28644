"""Fetching users' files for the core: Slack's private files with the bot token of the
workspace they were shared in (the URL names it), other https links without any token."""

from __future__ import annotations

import asyncio
from collections.abc import Callable

import aiohttp
import yarl

from bot.kernel import Attachment, SurfaceError, _, format_bytes

from .tokens import TeamTokens, team_of_file

SLACK_FILE_HOSTS = frozenset({"files.slack.com"})
CHUNK_BYTES = 64 * 1024


class FileFetcher:
    """Downloads attachments up to ``max_bytes``, each within ``timeout`` seconds."""

    def __init__(
        self,
        tokens: TeamTokens,
        api_url: str,
        http: Callable[[], aiohttp.ClientSession],
        *,
        max_bytes: int,
        timeout: float,
    ) -> None:
        self._tokens = tokens
        self._api_origin = yarl.URL(api_url).origin()
        self._http = http
        self.max_bytes = max_bytes
        self.timeout = timeout

    def trusted(self, url: yarl.URL) -> bool:
        """Whether ``url`` may receive a bot token: Slack's file host or the API's own
        origin."""
        if url.origin() == self._api_origin:
            return True
        return url.scheme == "https" and url.host in SLACK_FILE_HOSTS

    async def download(self, attachment: Attachment) -> bytes:
        """The attachment's bytes; :class:`SurfaceError` saying why not."""
        if attachment.data is not None:
            return attachment.data
        url = yarl.URL(attachment.url)
        if url.scheme not in ("http", "https") or not url.host:
            raise SurfaceError(
                _("{file}: only http(s) links can be fetched", file=attachment.filename)
            )
        headers = {}
        if self.trusted(url):
            token = await self._tokens.bot_token(team_of_file(attachment.url) or "")
            headers["Authorization"] = f"Bearer {token}"
        name, limit = attachment.filename, self.max_bytes
        try:
            async with (
                asyncio.timeout(self.timeout),
                self._http().get(url, headers=headers) as response,
            ):
                if response.status != 200:
                    raise SurfaceError(
                        _(
                            "{file}: fetching it failed (HTTP {status})",
                            file=name,
                            status=response.status,
                        )
                    )
                if response.content_type == "text/html":
                    raise SurfaceError(
                        _(
                            "{file}: got a web page instead of the file "
                            "(does the Slack app have the files:read scope?)",
                            file=name,
                        )
                    )
                data = bytearray()
                async for chunk in response.content.iter_chunked(CHUNK_BYTES):
                    data += chunk
                    if len(data) > limit:
                        raise SurfaceError(
                            _(
                                "{file} is larger than {size}",
                                file=name,
                                size=format_bytes(limit),
                            )
                        )
        except (aiohttp.ClientError, TimeoutError) as error:
            raise SurfaceError(
                _("{file}: fetching it failed ({error})", file=name, error=type(error).__name__)
            ) from None
        return bytes(data)
