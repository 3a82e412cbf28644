"""``/admin audit`` names an entry's channel as a mention each platform draws: no platform's
syntax in the core's text."""

from __future__ import annotations

from bot.features.audit.command import entry_line
from bot.kernel import Mention
from storage import AuditEntry


def test_the_channel_is_a_mention_not_markup() -> None:
    banned = AuditEntry("moderation.banned", "slack", "T1", "C3", "genbot", "U7")
    added = AuditEntry("moderation.rule_added", "slack", "T1", "C3", "U1", "")
    for line in (entry_line(banned), entry_line(added)):
        assert "<#" not in line and "<@" not in line
        assert line.endswith(f" in {Mention.channel('C3')}")
