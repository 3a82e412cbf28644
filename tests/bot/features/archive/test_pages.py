"""A ``/jobs`` page names each job's channel, and the channel searched, as mentions each
platform draws: no platform's syntax in the core's text."""

from __future__ import annotations

from bot.features.archive.pages import ArchivePages
from bot.features.archive.search import ArchiveQuery
from bot.kernel import MediaFetcher, Mention
from tests.bot.features.jobs.support import job_record


async def test_the_channels_are_mentions_not_markup() -> None:
    pages = ArchivePages(MediaFetcher(1024))
    job = job_record(id="j9", channel_id="C3", status="posted")
    page = await pages.page([job], ArchiveQuery(channel="C3"), more=False, first=True)
    assert "<#" not in page.text and "<@" not in page.text
    channel = str(Mention.channel("C3"))
    assert f"Channel: {channel}" in page.text and f" · {channel} · `j9`" in page.text
