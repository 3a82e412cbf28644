"""What genbot writes about jobs: titles, progress lines, results, failures. Pure functions.

One title style for every job: what was asked while it runs or fails ("Upscale (Subtle)",
"Zoom out 2×"), what was done once its result is shown ("Upscaled (Subtle)", "Zoomed out 2×").
A title names the operation once, with the button's detail in parentheses or as a factor: never
the task type and the button label side by side ("Variation (Vary (Strong))").

After the title comes what the job ran, as Midjourney titles a result: the prompt with every
parameter the job ran with (:func:`shown_prompt`: ``--ar`` from the option or a default
included, image references as the user named them, ``#2``), then an image task's speed
(:func:`speed`): ``**Imagined** — a cat --no dogs --seed 42 --ar 2:3 (turbo)``. The speed is
said once per message: a progress message says it on its progress line (``Drawing (turbo) ·
0:05``), every other title after the prompt.

User text (prompts) is clipped and has its mentions neutralised, so a prompt can neither ping
anyone nor push a message past a platform's length limit.

A running job's progress line (:func:`status_text`) says its status in words, the time since it
started (in steps of the progress tick, :data:`ELAPSED_STEP` s by default, so the text changes
only that often), the time left as this deployment has measured it for jobs of the same kind
(:class:`~bot.features.jobs.estimates.Estimates`; nothing before one was measured), and the
job's place among the requester's running jobs.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

from bot.features.jobs.estimates import Estimates, Usual
from bot.features.jobs.params import (
    BlendParams,
    DiffusionParams,
    ImageParams,
    JobResult,
    Untranslated,
    asked_mode,
    run_mode,
)
from bot.kernel import N_, _, format_number, ngettext
from storage import Job

ELAPSED_STEP = 5
SUBJECT_MAX = 300
NO_CHARGE_NOTE = N_("_No credits were charged._")
TIMEOUT_NOTE = N_("_genbot stopped waiting; if the service still finishes it, it may be charged._")
UNCONFIRMED_NOTE = N_("_It may or may not have been charged._")
RESTARTED_BEFORE_SUBMIT = N_(
    "genbot restarted before this job was submitted to the service, so it was not started "
    "and nothing was charged. Press the button again or run the command again."
)
# Translators: why a job may not have reached the service ("the service did not confirm this
# job (genbot restarted while sending it)").
RESTARTED_WHILE_CREATING = N_("genbot restarted while sending it")
LOST_BEFORE_SUBMIT = N_(
    "genbot lost its database before this job was submitted to the service, so it was not "
    "started and nothing was charged. Run the command again."
)
LOST_WHILE_SENDING = N_("genbot lost its database while sending it")
ACCEPTED_NOTE = N_("_The service accepted it, so it was charged._")
"""The texts above are catalog texts: translate them where they are shown, ``_(TIMEOUT_NOTE)``."""
DIGITS = ("1️⃣", "2️⃣", "3️⃣", "4️⃣")


Title = tuple[str, str]
"""(while asked, once done): catalog texts, translated by :func:`_titles`."""

_NUMBERED_TITLES: dict[str, Title] = {
    # Translators: a job's title while it runs and once done; {number} is the image's (1–4).
    "upscale": (N_("Upscale #{number}"), N_("Upscaled #{number}")),
    "variation": (N_("Vary #{number}"), N_("Varied #{number}")),
    "describe_pick": (N_("Imagine prompt {number}"), N_("Imagined prompt {number}")),
}
"""Titles of the actions numbered 1–4 (``upscale2``)."""
_NUMBERED_ACTIONS = frozenset(f"{name}{i}" for name in _NUMBERED_TITLES for i in range(1, 5))
_ACTION_TITLES: dict[str, Title] = {
    # Translators: a job's title while it runs and once done (the button that started it).
    "reroll": (N_("Reroll"), N_("Rerolled")),
    "high_variation": (N_("Vary (Strong)"), N_("Varied (Strong)")),
    "low_variation": (N_("Vary (Subtle)"), N_("Varied (Subtle)")),
    "vary_region": (N_("Vary (Region)"), N_("Varied (Region)")),
    "outpaint_2": (N_("Zoom out 2×"), N_("Zoomed out 2×")),
    "outpaint_1.5": (N_("Zoom out 1.5×"), N_("Zoomed out 1.5×")),
    "outpaint_square": (N_("Make square"), N_("Made square")),
    "pan_left": (N_("Pan left"), N_("Panned left")),
    "pan_right": (N_("Pan right"), N_("Panned right")),
    "pan_up": (N_("Pan up"), N_("Panned up")),
    "pan_down": (N_("Pan down"), N_("Panned down")),
    "upscale_subtle": (N_("Upscale (Subtle)"), N_("Upscaled (Subtle)")),
    "upscale_creative": (N_("Upscale (Creative)"), N_("Upscaled (Creative)")),
    "upscale_2x": (N_("Upscale 2×"), N_("Upscaled 2×")),
    "upscale_4x": (N_("Upscale 4×"), N_("Upscaled 4×")),
    "upscale_light": (N_("Upscale (Light)"), N_("Upscaled (Light)")),
    "upscale_beta": (N_("Upscale (Beta)"), N_("Upscaled (Beta)")),
    # Translators: the title of a job that looks up an image's seed (a noun).
    "seed": (N_("Seed"), N_("Seed")),
    "describe_all": (N_("Imagine"), N_("Imagined")),
    "describe_again": (N_("Describe again"), N_("Described again")),
    "diff_reroll": (N_("Reroll"), N_("Rerolled")),
    "diff_upscale": (N_("Upscale"), N_("Upscaled")),
    "diff_init": (N_("Rework the image"), N_("Reworked the image")),
}
_TASK_TITLES: dict[str, Title] = {
    "imagine": (N_("Imagine"), N_("Imagined")),
    "reroll": (N_("Reroll"), N_("Rerolled")),
    "upscale": (N_("Upscale"), N_("Upscaled")),
    "variation": (N_("Vary"), N_("Varied")),
    "inpaint": (N_("Vary (Region)"), N_("Varied (Region)")),
    "outpaint": (N_("Zoom out"), N_("Zoomed out")),
    "pan": (N_("Pan"), N_("Panned")),
    "describe": (N_("Describe"), N_("Described")),
    "blend": (N_("Blend"), N_("Blended")),
    "seed": (N_("Seed"), N_("Seed")),
}
_DIFFUSION_TITLES: dict[str, Title] = {
    "txt2img": (N_("Generate"), N_("Generated")),
    "img2img": (N_("Generate from an image"), N_("Generated from an image")),
    "upscale": (N_("Upscale"), N_("Upscaled")),
    "controlnet": (N_("Generate with ControlNet"), N_("Generated with ControlNet")),
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
        if zoom:
            return _("Zoom out {zoom}×", zoom=zoom), _("Zoomed out {zoom}×", zoom=zoom)
        return _("Zoom out (custom)"), _("Zoomed out (custom)")
    if action in _ACTION_TITLES:
        asked, done = _ACTION_TITLES[action]
        return _(asked), _(done)
    if action in _NUMBERED_ACTIONS:
        asked, done = _NUMBERED_TITLES[action[:-1]]
        return _(asked, number=action[-1]), _(done, number=action[-1])
    table = _DIFFUSION_TITLES if job.family == "diffusion" else _TASK_TITLES
    asked, done = table.get(job.type, (job.type, job.type))
    return _(asked), _(done)


def asked_title(job: Job) -> str:
    """What the job asks for: ``Upscale (Subtle)``, ``Zoom out 2×``, ``Imagine``."""
    return _titles(job)[0]


def done_title(job: Job) -> str:
    """What the job did: ``Upscaled (Subtle)``, ``Zoomed out 2×``, ``Imagined``."""
    return _titles(job)[1]


ZWSP = "\u200b"
_AT_WORD_RE = re.compile(r"@(?=(?:everyone|here|channel)\b)", re.IGNORECASE)
_USER_OR_ROLE_RE = re.compile(r"<@(?=[!&]?\w)")
_SPECIAL_RE = re.compile(r"<!(?=[A-Za-z])")


def neutralize_mentions(text: str) -> str:
    """Break mass and user mentions with a zero-width space so they ping nobody.

    Covers ``@everyone``, ``@here``, ``@channel``, Discord ``<@id>``, ``<@!id>``, ``<@&role>``,
    and Slack ``<@U…>``, ``<!channel>``, ``<!here>``, ``<!everyone>``, ``<!subteam^…>``.
    Idempotent. Adapters also keep genbot's text from pinging (Discord's allowed mentions,
    Slack's escaping); this is a second guard, for the user text job messages show.
    """
    text = _AT_WORD_RE.sub("@" + ZWSP, text)
    text = _USER_OR_ROLE_RE.sub("<@" + ZWSP, text)
    return _SPECIAL_RE.sub("<!" + ZWSP, text)


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
    # Translators: what a job without a prompt is about, after its title ("Upscaled — your image").
    if job.family == "diffusion":
        return clip(DiffusionParams.of(job).subject or _("your image"))
    if job.type == "describe":
        return _("your image")
    if job.type == "blend":
        count = len(BlendParams.of(job).image_urls)
        if not count:
            return _("a blend")
        return ngettext("a blend of {n} image", "a blend of {n} images", count)
    return clip(ImageParams.of(job).subject or _("an image without a prompt"))


_RESHAPING = frozenset({"outpaint_square", "pan_left", "pan_right", "pan_up", "pan_down"})
"""Follow-ups whose image takes another shape than the aspect ratio they inherit."""
_ASPECT_WORDS = frozenset({"--ar", "--aspect", "—ar", "—aspect"})
_SPEEDLESS = frozenset({"describe", "seed"})
"""Image tasks that draw nothing: no speed in their titles."""


def shown_prompt(job: Job) -> str:
    """What an image task ran, for its titles: its prompt, each reference image genbot hosted
    named as its user named it (``#2``: the hosted links expire), and the aspect ratio it was
    asked with (an option, or a default) as ``--ar`` when the prompt does not say it (not for
    Make Square and pans, whose image takes another shape); other jobs: :func:`subject`."""
    if job.family != "task" or not job.prompt.strip():
        return subject(job)
    params = ImageParams.of(job)
    names = dict(params.reference_names)
    words = [names.get(word, word) for word in job.prompt.split()]
    aspect = params.aspect_ratio
    reshaped = _base_action(job.action) in _RESHAPING
    if aspect and not reshaped and not _ASPECT_WORDS.intersection(w.lower() for w in words):
        words += ["--ar", aspect]
    return clip(" ".join(words))


def speed(job: Job) -> str:
    """The speed an image task is shown with: the mode it was asked for (``relax``, ``fast``,
    ``turbo``; ``mixed`` or none: the one written in the prompt, else relax), except ``relax``
    when the provider says the account it ran on is set to relax (``meta.process_mode`` is the
    account's setting, not the job's mode: docs/provider.md#mode-fallback); "" for jobs that
    draw nothing or are no image task."""
    if job.family != "task" or job.type in _SPEEDLESS:
        return ""
    return "relax" if JobResult.of(job).mode == "relax" else run_mode(job)


def about(job: Job) -> str:
    """What a title says after the operation: :func:`shown_prompt` and :func:`speed`,
    ``a cat --ar 2:3 (turbo)``."""
    mode = speed(job)
    return f"{shown_prompt(job)} ({mode})" if mode else shown_prompt(job)


def heading(job: Job) -> str:
    """``**Upscale (Subtle)** — a fox in the snow --ar 2:3 (fast)``."""
    return f"**{asked_title(job)}** — {about(job)}"


def progress_text(
    job: Job,
    status: str,
    elapsed: float,
    estimates: Estimates,
    position: Position | None = None,
    step: float = ELAPSED_STEP,
) -> str:
    """The progress message while a job is on its way: its heading (without the speed:
    :func:`status_text` says it) and :func:`status_text`."""
    title = f"**{asked_title(job)}** — {shown_prompt(job)}"
    return f"⏳ {title}\n{status_text(job, status, elapsed, estimates, position, step)}"


def not_posted_text(job: Job) -> str:
    """The progress message when the result (or the failure report) could not be posted
    after genbot tried for a while."""
    if job.status in ("failed", "reporting"):
        return _(
            "❌ {heading}\nfailed, and genbot could not post the failure report",
            heading=heading(job),
        )
    return _("❌ {heading}\nfinished, but genbot could not post the result", heading=heading(job))


def moved_text(job: Job) -> str:
    """What a progress message that could not become the result says (Slack, where a
    message cannot gain images, when it could not be removed)."""
    return _("✅ {heading} — the result is posted below", heading=heading(job))


def cancelled_text(job: Job) -> str:
    """What a cancelled job's progress message says where it cannot be deleted."""
    return _("🚫 {heading} — cancelled", heading=heading(job))


def not_started_text(job: Job) -> str:
    """What the progress message of a job whose request the provider refused says where it
    cannot be deleted (the reason is told only to the requester)."""
    return _("❌ {heading} — did not start", heading=heading(job))


def admin_cancelled_text(job: Job) -> str:
    """What the progress message of a job an admin cancelled says to its requester (mentioned
    with it), in place of the deleted message a cancel of their own leaves."""
    return _(
        "🚫 {heading}\na genbot admin cancelled this job: no result will be posted. The service "
        "has no way to stop a job, so it may still finish it and charge its credits to you; they "
        "count toward your daily budget.",
        heading=heading(job),
    )


def unconfirmed_text(job: Job, reason: str) -> str:
    """The progress message of a job the provider may have received but never confirmed."""
    if job.webhook_secret:
        return _(
            "⚠️ {heading}\nthe service did not confirm this job ({reason}). genbot is watching "
            "for it and will post the result here if it arrives — don't start it again.",
            heading=heading(job),
            reason=reason,
        )
    return _(
        "⚠️ {heading}\nthe service did not confirm this job ({reason}). genbot cannot follow it "
        "without that confirmation; if the service runs it, it may be charged — don't start it "
        "again right away.",
        heading=heading(job),
        reason=reason,
    )


def unconfirmed_error(minutes: float) -> str:
    """The failure of a job the provider never confirmed, once genbot stops waiting for it."""
    return _(
        "The service never confirmed this job and no result arrived within {minutes} "
        "minutes, so genbot stopped waiting for it.",
        minutes=format_number(minutes, grouping=False),
    )


def create_failed_text(job: Job, reason: str) -> str:
    """The progress message when the provider refused to start the job (or we could not)."""
    return _("❌ {heading}\ncould not start: {reason}", heading=heading(job), reason=reason)


def failure_text(job: Job, timed_out: bool = False) -> str:
    """The failure report: what failed, the provider's error messages and whether credits were
    charged (a job the provider never confirmed, or accepted without an id, may have been)."""
    error = job.error or _("The service reported a failure without details.")
    if JobResult.of(job).unconfirmed or JobResult.of(job).lost:
        note = UNCONFIRMED_NOTE
    elif JobResult.of(job).accepted:
        note = ACCEPTED_NOTE
    else:
        note = TIMEOUT_NOTE if timed_out else NO_CHARGE_NOTE
    failed = _("❌ **{title}** failed — {subject}", title=asked_title(job), subject=about(job))
    return f"{failed}\n{clip(error, 1000)}\n{_(note)}"


CANCELLED_NOTE = N_(
    "Cancelled: its message is removed and no result will be posted. The service has no way to "
    "stop a job, so it still runs there and is charged: until it ends it counts toward the jobs "
    "you may run at once, and its credits count toward your daily budget."
)
UNCONFIRMED_CANCELLED_NOTE = N_(
    "Cancelled: its message is removed and no result will be posted. The service never "
    "confirmed this job, so it no longer counts toward the jobs you may run at once; if the "
    "service did run it, it may still charge its credits, which count toward your daily budget."
)


def cancelled_note(job: Job) -> str:
    """What the requester who cancelled ``job`` (as it was before the cancel) is told."""
    note = UNCONFIRMED_CANCELLED_NOTE if job.status == "unknown" else CANCELLED_NOTE
    return _(note)


def result_text(job: Job) -> str:
    """The text with a result image: ``**Upscaled (Subtle)** — a fox --ar 2:3 (fast)``, and for
    diffusion the model, seed, size, steps and guidance it was made with."""
    text = f"**{done_title(job)}** — {about(job)}"
    details = diffusion_details(job) if job.family == "diffusion" else ""
    notes = [note for note in (details, references_note(job), translation_note(job)) if note]
    return "\n".join((text, *notes))


NOT_TRANSLATED_NOTES: dict[Untranslated, str] = {
    "timeout": N_(
        "🌐 Not translated: the translation took too long, so your prompt went as written."
    ),
    "error": N_(
        "🌐 Not translated: the translation service failed, so your prompt went as written."
    ),
    "unreadable": N_(
        "🌐 Not translated: the translation came back unusable, so your prompt went as written."
    ),
    "budget": N_(
        "🌐 Not translated: your chat token budget is used up, so your prompt went as written."
    ),
}


def not_translated_text(reason: Untranslated) -> str:
    """Why a prompt genbot tried to translate went as written."""
    return _(NOT_TRANSLATED_NOTES[reason])


def translation_note(job: Job) -> str:
    """The prompt as its user wrote it when the job's is its English translation, or why it
    could not be translated (:mod:`bot.features.jobs.prompt_translation`); "" otherwise."""
    if job.family != "task":
        return ""
    params = ImageParams.of(job)
    if params.translated_from:
        return _("🌐 Translated from: {prompt}", prompt=clip(params.translated_from, SUBJECT_MAX))
    return not_translated_text(params.not_translated) if params.not_translated else ""


def references_note(job: Job) -> str:
    """What to say when the provider never fetched reference images genbot hosted for the job
    (docs/provider.md#references): it may not read references at all; "" when it fetched
    every one."""
    unread = JobResult.of(job).references_unread
    if not unread:
        return ""
    hosted = len(ImageParams.of(job).references)
    if hosted == 1:
        return _("_The image service never fetched your reference image: it may have ignored it._")
    return ngettext(
        "_The image service never fetched {n} of your {hosted} reference images: it may have "
        "ignored it._",
        "_The image service never fetched {n} of your {hosted} reference images: it may have "
        "ignored them._",
        unread,
        hosted=hosted,
    )


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
    # Translators: the details under a diffusion image ("model sd-1.5 · seed 1234 · 30 steps").
    parts = [
        _("model {model}", model=clip(str(model), 60)) if model is not None else "",
        _("seed {seed}", seed=seed) if seed is not None else "",
        f"{width}×{height}" if width is not None and height is not None else "",
        _steps(steps) if steps is not None else "",
        _("guidance {guidance}", guidance=_decimal(guidance)) if guidance is not None else "",
    ]
    return " · ".join(part for part in parts if part)


def _decimal(value: object) -> object:
    """A number the provider answered, with the language's decimal sign (other values as
    they are)."""
    if isinstance(value, int | float) and not isinstance(value, bool):
        return format_number(value, grouping=False)
    return value


def _steps(steps: object) -> str:
    """``30 steps`` (the number as the provider wrote it)."""
    count = int(steps) if isinstance(steps, int | str) and str(steps).isdigit() else 0
    return ngettext("{steps} step", "{steps} steps", count, steps=steps)


def describe_text(job: Job, prompts: Sequence[str]) -> str:
    """The four prompts of a describe result, numbered like its ``1 2 3 4`` buttons."""
    lines = [f"{DIGITS[i]} {clip(prompt, 400)}" for i, prompt in enumerate(prompts[:4])]
    if withheld := JobResult.of(job).withheld:
        lines.append(
            ngettext(
                "🚫 {n} withheld: matched genbot's rules on {categories}",
                "🚫 {n} withheld: matched genbot's rules on {categories}",
                len(withheld),
                categories=", ".join(f"**{c}**" for c in dict.fromkeys(withheld)),
            )
        )
    heading = _("**{title}** — four prompts for your image:", title=done_title(job))
    return "\n".join([heading, *lines])


def seed_text(job: Job, seed: str) -> str:
    """The answer to 🌱 Seed."""
    if seed:
        return _("🌱 Seed of **{subject}**: `{seed}`", subject=shown_prompt(job), seed=seed)
    return _("🌱 {heading}: no seed", heading=heading(job))


def unavailable_image_text(job: Job, reason: str, url: str) -> str:
    """A result whose image could not be re-uploaded: the reason and the (expiring) link."""
    link = f"\n{url}" if url else ""
    unavailable = _("_(the image could not be uploaded: {reason})_", reason=reason)
    return f"{result_text(job)}\n{unavailable}{link}"


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
    """``Queued``, ``Waiting to be queued`` (staged: cached, not yet in the provider's queue),
    ``Drawing``, ``Upscaling``, ``Describing``, ``Retrying``…"""
    if status == "creating":
        # Translators: a running job's status, first on its progress line ("Drawing (fast) · 0:35").
        return _("Sending")
    if status in ("submitted", "pending"):
        return _("Queued")
    if status == "staged":
        # Translators: the provider holds the job but has not put it in its queue yet.
        return _("Waiting to be queued")
    if status == "retry":
        return _("Retrying")
    if status in ("finished", "posting"):
        return _("Finishing")
    if status == "processing":
        work = work_of(job)
        if job.type == "seed":
            return _("Looking up the seed")
        if work == "upscale":
            return _("Upscaling")
        if work == "describe":
            return _("Describing")
        return _("Drawing")
    return _("Waiting")


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
            seconds = max(round(left / ELAPSED_STEP) * ELAPSED_STEP, ELAPSED_STEP)
            return _("about {seconds} s left", seconds=seconds)
        return _("about {minutes} min left", minutes=round(left / 60))
    if elapsed > usual.longest + ELAPSED_STEP:
        return _("taking longer than usual")
    return ""


def position_text(position: Position | None) -> str:
    """``your job 2 of 3``, or nothing for a lone job."""
    if position is None or position.total < 2:
        return ""
    return _("your job {index} of {total}", index=position.index, total=position.total)


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
