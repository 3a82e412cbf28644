"""The web playground: genbot's chat product in a browser, with no chat platform account.

The package's names load the playground when first used, so reading the settings
(:mod:`adapters.web.settings`) costs nothing in a process that runs no playground.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from adapters.web.adapter import WebAdapter
    from adapters.web.platform import WEB_PROFILE

__all__ = ["WEB_PROFILE", "WebAdapter"]
_HOMES = {"WebAdapter": "adapters.web.adapter", "WEB_PROFILE": "adapters.web.platform"}


def __getattr__(name: str) -> object:
    if name not in _HOMES:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(importlib.import_module(_HOMES[name]), name)
