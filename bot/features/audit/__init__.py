"""The audit log (issue 30 item 4): every admin action, moderation refusal and ban, recorded
where it is performed (:mod:`~bot.features.audit.trail`), and ``/admin audit`` to read and
export it (:mod:`~bot.features.audit.command`)."""

from bot.features.audit.command import AuditAdmin
from bot.features.audit.trail import KINDS, AuditTrail

__all__ = ["KINDS", "AuditAdmin", "AuditTrail"]
