"""The archive (issue 28): ``/jobs`` (search and export), ``/show``, a result's info
and the playground's gallery."""

from bot.features.archive.export import ArchiveExport
from bot.features.archive.feature import ArchiveFeature, ArchiveStorage
from bot.features.archive.gallery import Gallery
from bot.features.archive.pages import ArchivePages

__all__ = ["ArchiveExport", "ArchiveFeature", "ArchivePages", "ArchiveStorage", "Gallery"]
