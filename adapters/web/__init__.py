"""The web playground: genbot's chat product in a browser, with no chat platform account."""

from adapters.web.adapter import WebAdapter
from adapters.web.platform import WEB_LIMITS

__all__ = ["WEB_LIMITS", "WebAdapter"]
