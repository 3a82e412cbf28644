"""A posted job's result shown again somewhere else (the home's "Post again", ``/show``): the
same text, images and buttons, and the copy mapped to the job, so its buttons (and a press
naming no job, as Discord's "Image info" does) act on that job.

Where the surface :class:`~bot.kernel.Reposts` (Slack copies the files it already holds) the
copy is made there; without it, or when it cannot, the result is built again from the
provider's images (or its link).
"""

from __future__ import annotations

import logging

from bot.features.jobs.messages import place_of
from bot.features.jobs.result_messages import ResultMessages
from bot.kernel import Event, MessageRef, RateLimited, Reposts, SurfaceError
from bot.outbox import Outbox, Post, Repost, WritePolicy, WriteRateLimited
from storage import Job, MessageLinks

log = logging.getLogger(__name__)


class ResultCopies:
    """Posts results again (see the module docstring)."""

    def __init__(self, outbox: Outbox, results: ResultMessages, links: MessageLinks) -> None:
        self._outbox = outbox
        self._results = results
        self._links = links

    async def post_again(self, job: Job, event: Event) -> MessageRef:
        """Post ``job``'s result (it must be posted) in ``event``'s place; the copy."""
        assert job.result_message_id is not None
        message = self._results.marked(job)
        original = MessageRef(place_of(job), job.result_message_id)
        ref: MessageRef | None = None
        if self._outbox.can(event.place.platform, Reposts):
            try:
                ref = await self._outbox.write(
                    event.place, Repost(original, message), WritePolicy.RAISE
                )
            except (SurfaceError, RateLimited, WriteRateLimited) as error:
                log.info("could not copy the result of %s: %s", job.id, error)
        if ref is None:
            rebuilt, _ = await self._results.result(job, link_instead=True)
            ref = await self._outbox.write(event.place, Post(rebuilt, event), WritePolicy.RAISE)
        await self._links.link_message(
            job.platform, event.place.channel_id, ref.message_id, job.id, "other"
        )
        return ref
