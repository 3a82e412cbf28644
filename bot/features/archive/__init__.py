"""The archive (issue 28): ``/jobs`` (search), ``/show`` and a result's info."""

from bot.features.archive.feature import ArchiveFeature, ArchiveStorage
from bot.features.archive.pages import ArchivePages

__all__ = ["ArchiveFeature", "ArchivePages", "ArchiveStorage"]
