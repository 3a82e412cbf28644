"""Slack's refusals as the core's surface errors."""

from __future__ import annotations

from bot.kernel import SurfaceError


class SlackRefused(SurfaceError):
    """Slack answered a call with an error; ``code`` is Slack's error code."""

    def __init__(self, method: str, code: str) -> None:
        super().__init__(f"Slack refused {method}: {code}")
        self.code = code
