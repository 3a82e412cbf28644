"""genbot on Slack: slack-bolt ``AsyncApp`` in Socket Mode or HTTP mode (see README.md).

The package's names load slack-bolt when first used, so reading the settings
(:mod:`adapters.slack.settings`) costs nothing in a process that runs no Slack adapter.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from .adapter import SlackAdapter
    from .surface import SlackSurface

__all__ = ["SlackAdapter", "SlackSurface"]
_HOMES = {"SlackAdapter": "adapters.slack.adapter", "SlackSurface": "adapters.slack.surface"}


def __getattr__(name: str) -> object:
    if name not in _HOMES:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(importlib.import_module(_HOMES[name]), name)
