"""The webhook receiver: provider task notifications and re-hosted media over HTTP."""

from __future__ import annotations

from adapters.webhook.ports import NotifiedJob, TaskNotices
from adapters.webhook.receiver import WebhookReceiver

__all__ = ["NotifiedJob", "TaskNotices", "WebhookReceiver"]
