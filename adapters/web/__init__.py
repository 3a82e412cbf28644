"""The web playground: genbot's chat product in a browser, with no chat platform account."""

from adapters.web.adapter import WEB_LIMITS, WebAdapter

__all__ = ["WEB_LIMITS", "WebAdapter"]
