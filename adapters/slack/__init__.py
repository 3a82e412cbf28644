"""genbot on Slack: slack-bolt ``AsyncApp`` in Socket Mode or HTTP mode (see README.md)."""

from .adapter import SlackAdapter
from .surface import SlackSurface

__all__ = ["SlackAdapter", "SlackSurface"]
