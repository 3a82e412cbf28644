"""What genbot writes about jobs: progress lines, results, failures. Pure functions.

User text (prompts) is clipped and has its mentions neutralised, so a prompt can neither ping
anyone nor push a message past a platform's length limit.
"""

from __future__ import annotations

from collections.abc import Sequence

from bot.actions import LABELS
from bot.text import neutralize_mentions
from storage import Job

SUBJECT_MAX = 300
TASK_TITLES: dict[str, str] = {
    "imagine": "Imagine",
    "reroll": "Reroll",
    "upscale": "Upscale",
    "variation": "Variation",
    "inpaint": "Vary (Region)",
    "outpaint": "Zoom Out",
    "pan": "Pan",
    "describe": "Describe",
    "blend": "Blend",
    "seed": "Seed",
}
DIFFUSION_TITLES: dict[str, str] = {
    "txt2img": "Diffusion",
    "img2img": "Diffusion img2img",
    "upscale": "Diffusion upscale",
    "controlnet": "Diffusion ControlNet",
}
NO_CHARGE_NOTE = "_No credits were charged._"
TIMEOUT_NOTE = "_genbot stopped waiting; if the service still finishes it, it may be charged._"
UNCONFIRMED_NOTE = "_It may or may not have been charged._"
RESTARTED_BEFORE_SUBMIT = (
    "genbot restarted before this job was submitted to the service, so it was not started "
    "and nothing was charged. Press the button again or run the command again."
)
RESTARTED_WHILE_CREATING = "genbot restarted while sending it"
ACCEPTED_NOTE = "_The service accepted it, so it was charged._"
DIGITS = ("1️⃣", "2️⃣", "3️⃣", "4️⃣")


def base_action(action: str | None) -> str | None:
    """The button action of a job's stored ``action`` key (``outpaint_custom:ab12`` and
    retries ``upscale1#2`` are stored with a suffix)."""
    if action is None:
        return None
    return action.split(":", 1)[0].split("#", 1)[0]


def title(job: Job) -> str:
    """``Upscale (U2)``, ``Imagine``, ``Diffusion img2img (Use as init)``…"""
    titles = DIFFUSION_TITLES if job.family == "diffusion" else TASK_TITLES
    name = titles.get(job.type, job.type)
    action = base_action(job.action)
    label = LABELS.get(action or "")
    if label and not name.startswith(label):
        return f"{name} ({label})"
    return name


def clip(text: str, limit: int = SUBJECT_MAX) -> str:
    """``text`` on one line, at most ``limit`` characters, mentions neutralised."""
    line = " ".join(text.split())
    if len(line) > limit:
        line = line[: limit - 1].rstrip() + "…"
    return neutralize_mentions(line)


def subject(job: Job) -> str:
    """What the job is about, for display: its prompt, or what it works on."""
    if job.prompt.strip():
        return clip(job.prompt)
    if job.type == "describe":
        return "an image"
    if job.type == "blend":
        count = len(job.parameters.get("image_urls", ()))
        return f"{count} images" if count else "images"
    if job.type == "upscale" and job.family == "diffusion":
        return "an image"
    return "(no prompt)"


def heading(job: Job) -> str:
    """``**Upscale (U2)** — a fox in the snow``."""
    return f"**{title(job)}** — {subject(job)}"


def status_line(status: str, elapsed: float | None = None) -> str:
    """The progress line for a provider (or our own) status."""
    if status == "processing":
        return "working…" if elapsed is None else f"working… {int(elapsed)}s"
    if status == "retry":
        return "retrying"
    if status in ("finished", "posting", "posted"):
        return "finished"
    if status in ("failed", "reporting", "failed_posted"):
        return "failed"
    return "waiting to start"


def progress_text(job: Job, status: str, elapsed: float | None = None) -> str:
    """The progress message while a job is on its way."""
    return f"⏳ {heading(job)}\n{status_line(status, elapsed)}"


def done_text(job: Job, elapsed: float | None) -> str:
    """The progress message once the result is posted."""
    took = f" in {int(elapsed)}s" if elapsed is not None else ""
    return f"✅ {heading(job)}\nfinished{took} — see below"


def failed_progress_text(job: Job) -> str:
    """The progress message once a failure is reported."""
    return f"❌ {heading(job)}\nfailed — see below"


def not_posted_text(job: Job) -> str:
    """The progress message when the result (or the failure report) could not be posted
    after genbot tried for a while."""
    if job.status in ("failed", "reporting"):
        return f"❌ {heading(job)}\nfailed, and genbot could not post the failure report"
    return f"❌ {heading(job)}\nfinished, but genbot could not post the result"


def unconfirmed_text(job: Job, reason: str) -> str:
    """The progress message of a job the provider may have received but never confirmed."""
    if job.webhook_secret:
        outlook = (
            "genbot is watching for it and will post the result here if it arrives — "
            "don't start it again."
        )
    else:
        outlook = (
            "genbot cannot follow it without that confirmation; if the service runs it, it may "
            "be charged — don't start it again right away."
        )
    return f"⚠️ {heading(job)}\nthe service did not confirm this job ({reason}). {outlook}"


def unconfirmed_error(minutes: float) -> str:
    """The failure of a job the provider never confirmed, once genbot stops waiting for it."""
    return (
        f"The service never confirmed this job and no result arrived within {minutes:g} "
        "minutes, so genbot stopped waiting for it."
    )


def create_failed_text(job: Job, reason: str) -> str:
    """The progress message when the provider refused to start the job (or we could not)."""
    return f"❌ {heading(job)}\ncould not start: {reason}"


def failure_text(job: Job, timed_out: bool = False) -> str:
    """The failure report: the provider's error messages and the credit note (a job the
    provider never confirmed, or accepted without an id, may have been charged)."""
    error = job.error or "The service reported a failure without details."
    if job.result.get("unconfirmed"):
        note = UNCONFIRMED_NOTE
    elif job.result.get("accepted"):
        note = ACCEPTED_NOTE
    else:
        note = TIMEOUT_NOTE if timed_out else NO_CHARGE_NOTE
    return f"❌ {heading(job)} failed.\n{clip(error, 1000)}\n{note}"


def result_text(job: Job) -> str:
    """The text above a posted image."""
    return heading(job)


def describe_text(job: Job, prompts: Sequence[str]) -> str:
    """The four prompts of a describe result, numbered like its ``1 2 3 4`` buttons."""
    lines = [f"{DIGITS[i]} {clip(prompt, 400)}" for i, prompt in enumerate(prompts[:4])]
    return "\n".join([f"**{title(job)}** — four prompts for your image:", *lines])


def seed_text(job: Job, seed: str) -> str:
    """The answer to 🌱 Seed."""
    return f"🌱 Seed of **{subject(job)}**: `{seed}`" if seed else f"🌱 {heading(job)}: no seed"


def unavailable_image_text(job: Job, reason: str, url: str) -> str:
    """A result whose image could not be re-uploaded: the reason and the (expiring) link."""
    link = f"\n{url}" if url else ""
    return f"{heading(job)}\n_(the image could not be uploaded: {reason})_{link}"
