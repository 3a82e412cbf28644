"""Retention and deletion (issue 28 item 6): ``/forget-me`` and the purge of what is older
than its kind's ``[storage.keep_days]``."""

from bot.features.retention.answers import UserAnswers
from bot.features.retention.forget import ForgetFeature
from bot.features.retention.purge import RetentionPurge

__all__ = ["ForgetFeature", "RetentionPurge", "UserAnswers"]
