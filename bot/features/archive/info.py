"""A result's info (ℹ️, Discord's "Image info"): everything genbot knows about how it was made,
shown privately — the job's id (what ``/show`` takes), the full prompt in a code block (the
platform's copy button, or one selection, copies it), the parameters, seed, model or version,
the provider's task id, what it was made from (the grid it came from and that grid's prompt, up
to the first job), the credits charged and the time it took. Pure."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Final

from bot.features.jobs import wording
from bot.features.jobs.params import DiffusionParams, ImageParams, JobResult
from bot.kernel import Mention, _, format_duration, format_moment, format_number, written
from storage import Job

PROMPT_MAX: Final = 1500
"""The longest prompt shown whole (a platform's message holds about 2,000 characters)."""
HIDDEN_KEYS: Final = frozenset(
    {"key", "webhook", "track_id", "prompt", "subject", "remix", "language"}
)
"""Parameters never shown: secrets, addresses of genbot's own, and what is shown elsewhere."""
FACT_KEYS: Final = frozenset({"model_version", "model_id", "seed"})
"""Parameters the info shows on a line of their own (**Model**, **Seed**: see
:func:`model_and_seed`), so not among the other parameters."""
MOST_ANCESTORS: Final = 5


def when(seconds: float) -> str:
    """A moment in UTC: ``2026-11-29 05:12 UTC``."""
    return format_moment(seconds)


def where(job: Job) -> str:
    """Where a job was asked for: its channel, or a DM."""
    # Translators: where a job was asked for, as in "Asked by @ann on … in a DM with genbot".
    return _("a DM with genbot") if job.is_dm else str(Mention.channel(job.channel_id))


def duration(seconds: float) -> str:
    """``42 s``, ``3 min 5 s``."""
    return format_duration(seconds)


def _code(text: str) -> str:
    clipped = text if len(text) <= PROMPT_MAX else text[:PROMPT_MAX] + "…"
    return "```\n" + clipped.replace("```", "`\u200b``") + "\n```"


def _shown(value: object) -> str | None:
    if isinstance(value, bool):
        return _("yes") if value else _("no")
    if isinstance(value, int | float):
        return format_number(value, grouping=False)
    if isinstance(value, str) and value:
        # Translators: a parameter whose value is a link to an image.
        return _("(an image)") if value.startswith(("http://", "https://")) else value
    return None


def shown_parameters(job: Job) -> dict[str, str]:
    """The parameters a job was asked with, as shown to its user (no keys, secrets, webhooks;
    links as "(an image)")."""
    raw: Mapping[str, Any] = (
        DiffusionParams.of(job).body if job.family == "diffusion" else job.parameters
    )
    shown = {}
    for name, value in raw.items():
        text = _shown(value)
        if text is not None and name not in HIDDEN_KEYS and "secret" not in name:
            shown[name] = text
    return shown


def parameters(job: Job) -> str:
    """The parameters a job was asked with but the model and seed, ``name value`` joined by
    `` · ``."""
    return " · ".join(
        f"{name.replace('_', ' ')} {wording.clip(text, 80)}"
        for name, text in shown_parameters(job).items()
        if name not in FACT_KEYS
    )


def model_and_seed(job: Job) -> tuple[str | None, str | None]:
    """The job's model (or version) and seed, where known."""
    result = JobResult.of(job)
    if job.family == "diffusion":
        meta, body = result.meta, DiffusionParams.of(job).body
        model = meta.get("model_id") or body.get("model_id")
        seed = meta.get("seed") or body.get("seed")
        return (str(model) if model else None), (str(seed) if seed not in (None, "") else None)
    version = ImageParams.of(job).model_version
    # Translators: the model of an image job, as in "**Model** version 6".
    return (_("version {version}", version=version) if version else None), result.seed


def _origin(job: Job, parent: Job) -> str:
    pressed = wording.done_title(job)
    prompt = wording.clip(parent.prompt, 120) if parent.prompt else wording.subject(parent)
    # Translators: what a result was made from, as in
    # "Upscaled image 2 of `abc` — **Grid** — “a fox”".
    return _(
        "{pressed} of `{job}` — **{title}** — “{prompt}”",
        pressed=pressed,
        job=parent.id,
        title=wording.done_title(parent),
        prompt=prompt,
    )


def info_text(job: Job, ancestors: Sequence[Job]) -> str:
    """The info of ``job``; ``ancestors``: its parent, that one's parent, and so on."""
    lines = [
        _(
            "**ℹ️ {title}** · job `{job}` ({show} posts it again)",
            title=wording.done_title(job),
            job=job.id,
            show=written("show", job.id),
        )
    ]
    if job.prompt:
        lines += [_("**Prompt**"), _code(job.prompt)]
    else:
        # Translators: what a job without a prompt was made of (an image, a grid).
        lines.append(_("**Of** {subject}", subject=wording.subject(job)))
    if params := parameters(job):
        lines.append(_("**Parameters** {parameters}", parameters=params))
    model, seed = model_and_seed(job)
    image_id = JobResult.of(job).image_id
    facts = [
        _("**Model** {model}", model=model) if model else "",
        _("**Seed** {seed}", seed=seed) if seed else "",
        _("**Task** `{task}`", task=job.provider_id) if job.provider_id else "",
        _("**Image** `{image}`", image=image_id) if image_id else "",
    ]
    if line := " · ".join(fact for fact in facts if fact):
        lines.append(line)
    child = job
    for parent in ancestors:
        lines.append(_("**Made from** {origin}", origin=_origin(child, parent)))
        child = parent
    credits = _("none recorded") if job.credits is None else str(job.credits)
    process = JobResult.of(job).process_time
    took = ""
    if job.finished_at and process:
        took = _(
            "**Time taken** {took} (the provider worked {worked})",
            took=duration(job.finished_at - job.created_at),
            worked=duration(process),
        )
    elif job.finished_at:
        took = _("**Time taken** {took}", took=duration(job.finished_at - job.created_at))
    lines.append(
        " · ".join(part for part in (_("**Credits** {credits}", credits=credits), took) if part)
    )
    lines.append(
        _(
            "Asked by {user} on {when} in {where}",
            user=Mention.user(job.requester_id),
            when=when(job.created_at),
            where=where(job),
        )
    )
    return "\n".join(lines)
