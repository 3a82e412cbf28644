"""Image (family B) and diffusion (family C) jobs: features, the tracker, webhooks, and the
messages a job shows.

The composition root (:func:`genbot.compose.build_job_engines`) makes and wires them; this
package's face names the parts.
"""

from __future__ import annotations

from bot.features.jobs.admission import Tiers
from bot.features.jobs.cancel import JobCancel
from bot.features.jobs.chat_jobs import ChatJobs
from bot.features.jobs.describe import DescribeButtons
from bot.features.jobs.diffusion import DiffusionJobs
from bot.features.jobs.experience import Experience
from bot.features.jobs.images import ImageJobs
from bot.features.jobs.messages import JobMessages
from bot.features.jobs.region_preview import PreviewButtons
from bot.features.jobs.starter import JobSpec, JobStarter, Submitted
from bot.features.jobs.tracking.retry import DeliveryRetry
from bot.features.jobs.tracking.ticker import ProgressTicker
from bot.features.jobs.tracking.tracker import Tracker
from bot.features.jobs.tracking.watch import JobWatch
from bot.features.jobs.upload_forms import UploadForms
from bot.features.jobs.webhook_secrets import WebhookSecrets

__all__ = [
    "ChatJobs",
    "DeliveryRetry",
    "DescribeButtons",
    "DiffusionJobs",
    "Experience",
    "ImageJobs",
    "JobCancel",
    "JobMessages",
    "JobSpec",
    "JobStarter",
    "JobWatch",
    "PreviewButtons",
    "ProgressTicker",
    "Submitted",
    "Tiers",
    "Tracker",
    "UploadForms",
    "WebhookSecrets",
]
