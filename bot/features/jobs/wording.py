"""What genbot writes about jobs: titles, progress lines, results, failures. Pure functions.

One title style for every job: what was asked while it runs or fails ("Upscale (Subtle)",
"Zoom out 2×"), what was done once its result is shown ("Upscaled (Subtle)", "Zoomed out 2×").
A title names the operation once, with the button's detail in parentheses or as a factor: never
the task type and the button label side by side ("Variation (Vary (Strong))").

User text (prompts) is clipped and has its mentions neutralised, so a prompt can neither ping
anyone nor push a message past a platform's length limit.

A running job's progress line (:func:`status_text`) says its status in words, the time since it
started (in steps of the progress tick, :data:`ELAPSED_STEP` s by default, so the text changes
only that often), the time left as this deployment has measured it for jobs of the same kind
(:class:`~bot.features.jobs.estimates.Estimates`; nothing before one was measured), and the
job's place among the requester's running jobs.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from bot.features.jobs.estimates import Estimates, Usual
from bot.features.jobs.params import (
    BlendParams,
    DiffusionParams,
    ImageParams,
    JobResult,
    asked_mode,
)
from bot.kernel import neutralize_mentions
from storage import Job

ELAPSED_STEP = 5
SUBJECT_MAX = 300
NO_CHARGE_NOTE = "_No credits were charged._"
TIMEOUT_NOTE = "_genbot stopped waiting; if the service still finishes it, it may be charged._"
UNCONFIRMED_NOTE = "_It may or may not have been charged._"
RESTARTED_BEFORE_SUBMIT = (
    "genbot restarted before this job was submitted to the service, so it was not started "
    "and nothing was charged. Press the button again or run the command again."
)
RESTARTED_WHILE_CREATING = "genbot restarted while sending it"
LOST_BEFORE_SUBMIT = (
    "genbot lost its database before this job was submitted to the service, so it was not "
    "started and nothing was charged. Run the command again."
)
LOST_WHILE_SENDING = "genbot lost its database while sending it"
ACCEPTED_NOTE = "_The service accepted it, so it was charged._"
DIGITS = ("1️⃣", "2️⃣", "3️⃣", "4️⃣")


Title = tuple[str, str]
"""(while asked, once done)."""

_ACTION_TITLES: dict[str, Title] = {
    **{f"upscale{i}": (f"Upscale #{i}", f"Upscaled #{i}") for i in range(1, 5)},
    **{f"variation{i}": (f"Vary #{i}", f"Varied #{i}") for i in range(1, 5)},
    "reroll": ("Reroll", "Rerolled"),
    "high_variation": ("Vary (Strong)", "Varied (Strong)"),
    "low_variation": ("Vary (Subtle)", "Varied (Subtle)"),
    "vary_region": ("Vary (Region)", "Varied (Region)"),
    "outpaint_2": ("Zoom out 2×", "Zoomed out 2×"),
    "outpaint_1.5": ("Zoom out 1.5×", "Zoomed out 1.5×"),
    "outpaint_square": ("Make square", "Made square"),
    "pan_left": ("Pan left", "Panned left"),
    "pan_right": ("Pan right", "Panned right"),
    "pan_up": ("Pan up", "Panned up"),
    "pan_down": ("Pan down", "Panned down"),
    "upscale_subtle": ("Upscale (Subtle)", "Upscaled (Subtle)"),
    "upscale_creative": ("Upscale (Creative)", "Upscaled (Creative)"),
    "upscale_2x": ("Upscale 2×", "Upscaled 2×"),
    "upscale_4x": ("Upscale 4×", "Upscaled 4×"),
    "upscale_light": ("Upscale (Light)", "Upscaled (Light)"),
    "upscale_beta": ("Upscale (Beta)", "Upscaled (Beta)"),
    "seed": ("Seed", "Seed"),
    **{f"describe_pick{i}": (f"Imagine prompt {i}", f"Imagined prompt {i}") for i in range(1, 5)},
    "describe_all": ("Imagine", "Imagined"),
    "describe_again": ("Describe again", "Described again"),
    "diff_reroll": ("Reroll", "Rerolled"),
    "diff_upscale": ("Upscale", "Upscaled"),
    "diff_init": ("Rework the image", "Reworked the image"),
}
_TASK_TITLES: dict[str, Title] = {
    "imagine": ("Imagine", "Imagined"),
    "reroll": ("Reroll", "Rerolled"),
    "upscale": ("Upscale", "Upscaled"),
    "variation": ("Vary", "Varied"),
    "inpaint": ("Vary (Region)", "Varied (Region)"),
    "outpaint": ("Zoom out", "Zoomed out"),
    "pan": ("Pan", "Panned"),
    "describe": ("Describe", "Described"),
    "blend": ("Blend", "Blended"),
    "seed": ("Seed", "Seed"),
}
_DIFFUSION_TITLES: dict[str, Title] = {
    "txt2img": ("Generate", "Generated"),
    "img2img": ("Generate from an image", "Generated from an image"),
    "upscale": ("Upscale", "Upscaled"),
    "controlnet": ("Generate with ControlNet", "Generated with ControlNet"),
}


def _base_action(action: str | None) -> str | None:
    """The button action of a job's stored ``action`` key (``outpaint_custom:ab12`` and
    retries ``upscale1#2`` are stored with a suffix)."""
    if action is None:
        return None
    return action.split(":", 1)[0].split("#", 1)[0]


def _titles(job: Job) -> Title:
    action = _base_action(job.action)
    if action == "outpaint_custom":
        zoom = ImageParams.of(job).zoom_ratio
        factor = f" {zoom}×" if zoom else " (custom)"
        return f"Zoom out{factor}", f"Zoomed out{factor}"
    if action in _ACTION_TITLES:
        return _ACTION_TITLES[action]
    table = _DIFFUSION_TITLES if job.family == "diffusion" else _TASK_TITLES
    return table.get(job.type, (job.type, job.type))


def asked_title(job: Job) -> str:
    """What the job asks for: ``Upscale (Subtle)``, ``Zoom out 2×``, ``Imagine``."""
    return _titles(job)[0]


def done_title(job: Job) -> str:
    """What the job did: ``Upscaled (Subtle)``, ``Zoomed out 2×``, ``Imagined``."""
    return _titles(job)[1]


def clip(text: str, limit: int = SUBJECT_MAX) -> str:
    """``text`` on one line, at most ``limit`` characters, mentions neutralised."""
    line = " ".join(text.split())
    if len(line) > limit:
        line = line[: limit - 1].rstrip() + "…"
    return neutralize_mentions(line)


def subject(job: Job) -> str:
    """What the job is about, for display: its prompt, or what it works on (a follow-up of an
    image without a prompt: what that image was)."""
    if job.prompt.strip():
        return clip(job.prompt)
    if job.family == "diffusion":
        return clip(DiffusionParams.of(job).subject or "your image")
    if job.type == "describe":
        return "your image"
    if job.type == "blend":
        count = len(BlendParams.of(job).image_urls)
        return f"a blend of {count} images" if count else "a blend"
    return clip(ImageParams.of(job).subject or "an image without a prompt")


def heading(job: Job) -> str:
    """``**Upscale (Subtle)** — a fox in the snow``."""
    return f"**{asked_title(job)}** — {subject(job)}"


def progress_text(
    job: Job,
    status: str,
    elapsed: float,
    estimates: Estimates,
    position: Position | None = None,
    step: float = ELAPSED_STEP,
) -> str:
    """The progress message while a job is on its way: its heading and :func:`status_text`."""
    return f"⏳ {heading(job)}\n{status_text(job, status, elapsed, estimates, position, step)}"


def not_posted_text(job: Job) -> str:
    """The progress message when the result (or the failure report) could not be posted
    after genbot tried for a while."""
    if job.status in ("failed", "reporting"):
        return f"❌ {heading(job)}\nfailed, and genbot could not post the failure report"
    return f"❌ {heading(job)}\nfinished, but genbot could not post the result"


def moved_text(job: Job) -> str:
    """What a progress message that could not become the result says (Slack, where a
    message cannot gain images, when it could not be removed)."""
    return f"✅ {heading(job)} — the result is posted below"


def cancelled_text(job: Job) -> str:
    """What a cancelled job's progress message says where it cannot be deleted."""
    return f"🚫 {heading(job)} — cancelled"


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
    """The failure report: what failed, the provider's error messages and whether credits were
    charged (a job the provider never confirmed, or accepted without an id, may have been)."""
    error = job.error or "The service reported a failure without details."
    if JobResult.of(job).unconfirmed or JobResult.of(job).lost:
        note = UNCONFIRMED_NOTE
    elif JobResult.of(job).accepted:
        note = ACCEPTED_NOTE
    else:
        note = TIMEOUT_NOTE if timed_out else NO_CHARGE_NOTE
    return f"❌ **{asked_title(job)}** failed — {subject(job)}\n{clip(error, 1000)}\n{note}"


CANCELLED_NOTE = (
    "Stopped following this job and removed its message. The service has no way to cancel a "
    "job, so it may still finish there and its credits are charged."
)


def result_text(job: Job) -> str:
    """The text with a result image: ``**Upscaled (Subtle)** — a fox``, and for diffusion the
    model, seed, size, steps and guidance it was made with; for an image task that ran in
    another mode than asked, which (:func:`mode_note`)."""
    text = f"**{done_title(job)}** — {subject(job)}"
    details = diffusion_details(job) if job.family == "diffusion" else mode_note(job)
    notes = [note for note in (details, references_note(job)) if note]
    return "\n".join((text, *notes))


def references_note(job: Job) -> str:
    """What to say when the provider never fetched reference images genbot hosted for the job
    (docs/provider.md#references): it may not read references at all; "" when it fetched
    every one."""
    unread = JobResult.of(job).references_unread
    if not unread:
        return ""
    hosted = len(ImageParams.of(job).references)
    which = "your reference image" if hosted == 1 else f"{unread} of your {hosted} reference images"
    return (
        f"_The image service never fetched {which}: it may have ignored "
        f"{'it' if unread == 1 else 'them'}._"
    )


def mode_note(job: Job) -> str:
    """What to say when the provider ran a task in another process mode than genbot asked for
    (mode rule 3: with fast hours used up fast and turbo run as relax; an account without relax
    time runs relax as fast). genbot cannot see the account, only the mode a task ran in
    (docs/provider.md#mode-fallback); "" when it ran as asked or the record names no mode."""
    ran = JobResult.of(job).mode
    asked = asked_mode(job)
    if ran is None or ran == asked or ran not in ("relax", "fast", "turbo"):
        return ""
    if ran == "relax":
        return f"_Ran in relax mode, not {asked}: the account's fast hours may be used up._"
    if asked == "relax":
        return (
            f"_Ran in {ran} mode, not relax: the account may have no relax time (the basic plan "
            "has none), so this used fast hours._"
        )
    return f"_Ran in {ran} mode, not {asked}._"


def diffusion_details(job: Job) -> str:
    """``model sd-1.5 · seed 1234 · 512×512 · 30 steps · guidance 7.5`` from what the provider
    answered (its ``meta``), else what genbot asked for."""
    meta = JobResult.of(job).meta
    body = DiffusionParams.of(job).body

    def pick(*names: str) -> object:
        for source in (meta, body):
            for name in names:
                value = source.get(name)
                if value not in (None, ""):
                    return value
        return None

    model, seed = pick("model_id"), pick("seed")
    width, height = pick("W", "width"), pick("H", "height")
    steps, guidance = pick("steps", "num_inference_steps"), pick("guidance_scale")
    parts = [
        f"model {clip(str(model), 60)}" if model is not None else "",
        f"seed {seed}" if seed is not None else "",
        f"{width}×{height}" if width is not None and height is not None else "",
        f"{steps} steps" if steps is not None else "",
        f"guidance {guidance}" if guidance is not None else "",
    ]
    return " · ".join(part for part in parts if part)


def describe_text(job: Job, prompts: Sequence[str]) -> str:
    """The four prompts of a describe result, numbered like its ``1 2 3 4`` buttons (and the
    mode it ran in when that is not the one asked for)."""
    lines = [f"{DIGITS[i]} {clip(prompt, 400)}" for i, prompt in enumerate(prompts[:4])]
    if withheld := JobResult.of(job).withheld:
        lines.append(
            f"🚫 {len(withheld)} withheld: matched genbot's rules on "
            f"{', '.join(f'**{c}**' for c in dict.fromkeys(withheld))}"
        )
    note = mode_note(job)
    heading = f"**{done_title(job)}** — four prompts for your image:"
    return "\n".join([heading, *lines, *([note] if note else [])])


def seed_text(job: Job, seed: str) -> str:
    """The answer to 🌱 Seed."""
    return f"🌱 Seed of **{subject(job)}**: `{seed}`" if seed else f"🌱 {heading(job)}: no seed"


def unavailable_image_text(job: Job, reason: str, url: str) -> str:
    """A result whose image could not be re-uploaded: the reason and the (expiring) link."""
    link = f"\n{url}" if url else ""
    return f"{result_text(job)}\n_(the image could not be uploaded: {reason})_{link}"


# The progress line --------------------------------------------------------------------------------


@dataclass(frozen=True)
class Position:
    """A job's place (1-based) among its requester's running jobs, oldest first."""

    index: int
    total: int


def work_of(job: Job) -> str:
    """The kind of work, for status words: draw, upscale or describe."""
    if job.type == "describe":
        return "describe"
    if job.type == "upscale":
        return "upscale"
    return "draw"


def status_word(job: Job, status: str) -> str:
    """``Queued``, ``Starting``, ``Drawing``, ``Upscaling``, ``Describing``, ``Retrying``…"""
    if status == "creating":
        return "Sending"
    if status in ("submitted", "pending"):
        return "Queued"
    if status == "staged":
        return "Starting"
    if status == "retry":
        return "Retrying"
    if status in ("finished", "posting"):
        return "Finishing"
    if status == "processing":
        work = work_of(job)
        if job.type == "seed":
            return "Looking up the seed"
        return {"upscale": "Upscaling", "describe": "Describing"}.get(work, "Drawing")
    return "Waiting"


def stepped(seconds: float, step: float = ELAPSED_STEP) -> int:
    """``seconds`` floored to whole ``step`` s (at least 1 s steps)."""
    size = max(int(step), 1)
    return max(int(seconds) // size * size, 0)


def clock_text(seconds: float, step: float = ELAPSED_STEP) -> str:
    """``0:35``, ``12:05``: minutes and seconds, floored to ``step``."""
    whole = stepped(seconds, step)
    return f"{whole // 60}:{whole % 60:02d}"


def left_text(usual: Usual | None, elapsed: float) -> str:
    """``about 25 s left``, ``about 3 min left``, nothing (nothing measured yet, or past the
    median but within what has been seen), or ``taking longer than usual`` (past the longest
    seen)."""
    if usual is None:
        return ""
    left = usual.median - elapsed
    if left >= ELAPSED_STEP / 2:
        if left < 90:
            return f"about {max(round(left / ELAPSED_STEP) * ELAPSED_STEP, ELAPSED_STEP)} s left"
        return f"about {round(left / 60)} min left"
    if elapsed > usual.longest + ELAPSED_STEP:
        return "taking longer than usual"
    return ""


def position_text(position: Position | None) -> str:
    """``your job 2 of 3``, or nothing for a lone job."""
    if position is None or position.total < 2:
        return ""
    return f"your job {position.index} of {position.total}"


def status_text(
    job: Job,
    status: str,
    elapsed: float,
    estimates: Estimates,
    position: Position | None = None,
    step: float = ELAPSED_STEP,
) -> str:
    """The progress line: ``Drawing (fast) · 0:35 · about 25 s left · your job 2 of 3``. The
    time moves in ``step``-second steps, so the line changes only that often; the time left is
    read from ``estimates`` only when the line shows it (not while sending or finishing)."""
    elapsed = stepped(elapsed, step)
    word = status_word(job, status)
    if job.family == "task" and status not in ("creating",):
        word = f"{word} ({asked_mode(job)})"
    parts = [word, clock_text(elapsed, step)]
    if status not in ("creating", "finished", "posting"):
        parts.append(left_text(estimates.usual(job), elapsed))
    parts.append(position_text(position))
    return " · ".join(part for part in parts if part)
