"""``/jobs export``: a zip of the user's results — each job's images and ``manifest.json`` (the
prompts and parameters) — for the jobs a ``/jobs`` search finds, newest first. It is bounded:
at most :data:`MOST_JOBS` jobs and :data:`MOST_BYTES` bytes; what is left out (older jobs, images
that no longer download, images past the size) is listed in the manifest and in the answer.
"""

from __future__ import annotations

import io
import json
import zipfile
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any, Final

from bot.features.archive.info import model_and_seed, shown_parameters
from bot.kernel import MediaError, MediaFetcher, _, ngettext, sentences
from storage import Job, JobArchive, JobSearch

MOST_JOBS: Final = 200
"""The most jobs one export holds (the newest)."""
MOST_BYTES: Final = 8 * 1024 * 1024
"""The most bytes one export's zip holds: under Discord's smallest upload limit (10 MiB)."""
MANIFEST: Final = "manifest.json"
NOT_DOWNLOADED: Final = "image(s) that could not be downloaded"
TOO_BIG: Final = "image(s) past the size limit"
"""Why an image was left out, as the manifest says it (in English, like all its fields)."""


def manifest_room(jobs: int) -> int:
    """Bytes kept free for the manifest of ``jobs`` jobs and the zip's own records while
    images are added."""
    return 1024 + 2048 * jobs


@dataclass
class Export:
    """A built export: the zip's bytes, how many jobs and images it holds, and what it left
    out (``(job id, why)``; ``older`` counts jobs past :data:`MOST_JOBS`)."""

    data: bytes
    jobs: int
    images: int
    left_out: list[tuple[str, str]] = field(default_factory=list)
    older: bool = False
    most_jobs: int = MOST_JOBS

    def summary(self) -> str:
        """What the export holds and left out, in a sentence or two."""
        # Translators: {jobs} is "1 job" / "3 jobs", {images} "1 image" / "3 images".
        held = _(
            "{jobs}, {images}, with manifest.json.",
            jobs=ngettext("{n} job", "{n} jobs", self.jobs),
            images=ngettext("{n} image", "{n} images", self.images),
        )
        older = ""
        if self.older:
            older = ngettext(
                "Only the newest {n} job is in it: narrow the search (`--date`, `--type`, words) "
                "for older ones.",
                "Only the newest {n} jobs are in it: narrow the search (`--date`, `--type`, "
                "words) for older ones.",
                self.most_jobs,
            )
        left_out = ""
        if self.left_out:
            reasons: dict[str, int] = {}
            for _job, why in self.left_out:
                reasons[why] = reasons.get(why, 0) + 1
            shown = "; ".join(_left_out(why, count) for why, count in reasons.items())
            left_out = _("Left out (listed in the manifest): {reasons}.", reasons=shown)
        return sentences(held, older, left_out)


def _left_out(why: str, count: int) -> str:
    """``count`` images left out for ``why`` (:data:`NOT_DOWNLOADED`, :data:`TOO_BIG`)."""
    if why == NOT_DOWNLOADED:
        return ngettext(
            "{n} image that could not be downloaded",
            "{n} images that could not be downloaded",
            count,
        )
    return ngettext("{n} image past the size limit", "{n} images past the size limit", count)


def _name(job: Job, number: int, data: bytes) -> str:
    day = datetime.fromtimestamp(job.created_at, UTC).strftime("%Y-%m-%d")
    extension = "jpg" if data[:3] == b"\xff\xd8\xff" else "webp" if data[8:12] == b"WEBP" else "png"
    return f"{day}_{job.id}_{number}.{extension}"


def _images(job: Job) -> list[list[str]]:
    """Each image of ``job``'s result with the links it is at: a diffusion job's links are its
    images; a task's are one image's links, the first that works wins (docs/provider.md)."""
    if job.family == "diffusion":
        return [[url] for url in job.result_urls]
    return [list(job.result_urls)] if job.result_urls else []


def _entry(job: Job, files: Sequence[str]) -> dict[str, Any]:
    model, seed = model_and_seed(job)
    return {
        "id": job.id,
        "type": job.type,
        "created_at": datetime.fromtimestamp(job.created_at, UTC).isoformat(),
        "platform": job.platform,
        "workspace_id": job.workspace_id,
        "channel_id": job.channel_id,
        "prompt": job.prompt,
        "parameters": shown_parameters(job),
        "model": model,
        "seed": seed,
        "made_from": job.parent_job_id,
        "files": list(files),
    }


class ArchiveExport:
    """Builds exports from the archive (``archive``), downloading images with ``media``."""

    def __init__(
        self,
        archive: JobArchive,
        media: MediaFetcher,
        *,
        most_jobs: int = MOST_JOBS,
        most_bytes: int = MOST_BYTES,
    ) -> None:
        self.archive = archive
        self.media = media
        self.most_jobs = most_jobs
        self.most_bytes = most_bytes

    async def build(self, search: JobSearch) -> Export:
        """The export of what ``search`` finds (see the module docstring)."""
        found = await self.archive.search(search, self.most_jobs + 1)
        jobs, older = found[: self.most_jobs], len(found) > self.most_jobs
        buffer = io.BytesIO()
        entries: list[dict[str, Any]] = []
        left_out: list[tuple[str, str]] = []
        images = 0
        with zipfile.ZipFile(buffer, "w") as archive:
            for job in jobs:
                files: list[str] = []
                for number, links in enumerate(_images(job), start=1):
                    data = await self._download(links)
                    if data is None:
                        left_out.append((job.id, NOT_DOWNLOADED))
                        continue
                    if buffer.tell() + len(data) > self.most_bytes - manifest_room(len(jobs)):
                        left_out.append((job.id, TOO_BIG))
                        continue
                    name = _name(job, number, data)
                    archive.writestr(name, data, compress_type=zipfile.ZIP_STORED)
                    files.append(name)
                    images += 1
                entries.append(_entry(job, files))
            manifest = {
                "exported_at": datetime.now(UTC).isoformat(),
                "jobs": entries,
                "left_out": [{"id": job_id, "why": why} for job_id, why in left_out],
                "older_jobs_left_out": older,
            }
            archive.writestr(
                MANIFEST,
                json.dumps(manifest, ensure_ascii=False, indent=1),
                compress_type=zipfile.ZIP_DEFLATED,
            )
        return Export(buffer.getvalue(), len(jobs), images, left_out, older, self.most_jobs)

    async def _download(self, links: Sequence[str]) -> bytes | None:
        for url in links:
            try:
                return (await self.media.fetch(url)).data
            except MediaError:
                continue
        return None
