"""Chat completion routes (placeholder until the chat simulator lands)."""

from aiohttp import web


def add_chat_routes(app: web.Application) -> None:
    """Register ``POST /v1/chat/completions`` on ``app``."""
