"""What the playground's gallery (``/gallery``) asks of the core: :class:`ResultGallery`
(implemented by :class:`bot.features.archive.gallery.Gallery`, wired by the composition root).
Every call names the user and the place they look from; the core decides what they may see
(their own results, an admin's workspace search as ``/jobs`` allows it) and checks every job
an image or a form names through the one ref check (:mod:`bot.refs`)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Protocol

from bot.kernel.events import Place, User
from bot.kernel.outbound import ImageFile, Modal


@dataclass(frozen=True)
class GalleryResult:
    """One result in the gallery: a finished job with an image (its first)."""

    job_id: str
    title: str
    prompt: str
    type: str
    created_at: float
    where: str
    """Its channel's id, or ``""`` for a DM with genbot."""
    images: int
    """How many images the job made (the gallery shows the first)."""
    forms: tuple[tuple[str, str], ...]
    """The forms the gallery offers on it: ``(action, label)`` ("Use as init" …)."""


@dataclass(frozen=True)
class GalleryPage:
    """A page of results, newest first; ``after``: the ref of the next page (None: no more)."""

    heading: str
    results: tuple[GalleryResult, ...]
    after: str | None


class ResultGallery(Protocol):
    """The gallery's view of a user's results; :class:`bot.kernel.UserError` for a refusal to
    show as is (a job the user may not see reads as one that does not exist)."""

    async def page(
        self, user: User, place: Place, filters: Mapping[str, str], after: str | None, limit: int
    ) -> GalleryPage:
        """Up to ``limit`` of the results ``filters`` find (``/jobs``' options: ``text``,
        ``type``, ``channel``, ``date``, ``scope``), after the job ``after``."""
        ...

    async def image(self, user: User, place: Place, job_id: str, *, small: bool) -> ImageFile:
        """The first image of the job ``job_id`` (``small``: a thumbnail)."""
        ...

    async def form(self, user: User, place: Place, job_id: str, action: str) -> Modal:
        """The form ``action`` of the job ``job_id`` (one its result offers, such as "Use as
        init": img2img from its image): what the playground submits as the form's
        :class:`bot.kernel.ModalSubmit` in ``place``."""
        ...
