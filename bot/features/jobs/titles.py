"""One title style for every job: what was asked while it runs or fails ("Upscale (Subtle)",
"Zoom out 2×"), what was done once its result is shown ("Upscaled (Subtle)", "Zoomed out 2×").

A title names the operation once, with the button's detail in parentheses or as a factor: never
the task type and the button label side by side ("Variation (Vary (Strong))"). Pure functions.
"""

from __future__ import annotations

from storage import ImageParams, Job

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


def base_action(action: str | None) -> str | None:
    """The button action of a job's stored ``action`` key (``outpaint_custom:ab12`` and
    retries ``upscale1#2`` are stored with a suffix)."""
    if action is None:
        return None
    return action.split(":", 1)[0].split("#", 1)[0]


def _titles(job: Job) -> Title:
    action = base_action(job.action)
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
