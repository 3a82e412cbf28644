"""Text helpers shared by the platform adapters."""

from __future__ import annotations

ELLIPSIS = "…"


def truncate(text: str, limit: int) -> str:
    """``text`` cut to at most ``limit`` characters, ending with an ellipsis when cut."""
    if len(text) <= limit:
        return text
    return text[: limit - 1] + ELLIPSIS if limit > 0 else ""
