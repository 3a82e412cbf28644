"""Which follow-ups an image task offers: the provider's ``actions`` read tolerantly, and the
documented rules when it sends none.

The API documentation names only the grid's actions (``reroll``, ``upscale1..4``,
``variation1..4``); what an upscale offers, and how a provider spells it, is left open. So a
provider's name is matched loosely (:func:`canonical_action`: case, ``-``/``_``/spaces, a trailing
``x`` on factors, word order and a few synonyms), names that match nothing are logged once and
ignored, and a record with no actions gets what the documented endpoints allow for its task type
and model version (:func:`documented_follow_ups`) — docs/provider.md#follow-up-actions. A
derivative runs with its parent's model version (docs/provider.md#derivative-version).
"""

from __future__ import annotations

import logging
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Literal

from bot.features.jobs.params import BlendParams, ImageParams, JobResult, params_of
from storage import Job

log = logging.getLogger(__name__)

TaskShape = Literal["grid", "upscale", "other"]

GRID_FOLLOW_UPS: tuple[str, ...] = (
    "upscale1",
    "upscale2",
    "upscale3",
    "upscale4",
    "reroll",
    "variation1",
    "variation2",
    "variation3",
    "variation4",
)
GRID_TASK_TYPES = frozenset(
    {"imagine", "reroll", "variation", "blend", "inpaint", "outpaint", "pan"}
)
"""Task types whose result is a 2x2 grid."""
GENERATION_TASK_TYPES = GRID_TASK_TYPES | {"upscale"}
"""Task types that generate an image, so 🌱 Seed applies to them."""
DEFAULT_VERSION = "6"
VARY_VERSIONS = frozenset({"5.2", "6"})
SECOND_UPSCALES: Mapping[str, tuple[str, ...]] = {
    "4": ("upscale_light", "upscale_beta"),
    "5": ("upscale_2x", "upscale_4x"),
    "5.2": ("upscale_2x", "upscale_4x"),
    "6": ("upscale_subtle", "upscale_creative"),
}
FIRST_UPSCALES = frozenset({"upscale1", "upscale2", "upscale3", "upscale4"})
MAX_REMEMBERED_UNKNOWN = 256

_WORD = re.compile(r"\d+(?:\.\d+)?x?|[a-z]+")
_VERSION_FLAG = re.compile(r"(?:^|\s)--(?:v|version)(?:\s+|=)?(\d+(?:\.\d+)?)\b", re.IGNORECASE)
_NIJI_FLAG = re.compile(r"(?:^|\s)--niji\b", re.IGNORECASE)
_ASPECT_FLAG = re.compile(r"(?:^|\s)--(?:ar|aspect)\s+(\d+)\s*:\s*(\d+)", re.IGNORECASE)
_FILLER = frozenset({"out", "x", "to", "the", "image", "button"})
_VARY = frozenset({"variation", "variations", "vary", "v"})
_ZOOM = frozenset({"outpaint", "zoom"})
_UPSCALE = frozenset({"upscale", "upsample", "u"})
_DIRECTIONS = frozenset({"left", "right", "up", "down"})
_ZOOM_FACTORS = {2.0: "outpaint_2", 1.5: "outpaint_1.5", 1.0: "outpaint_square"}
_unknown_seen: set[str] = set()


def _words(name: str) -> list[str]:
    return _WORD.findall(name.lower())


def _factor(word: str) -> float | None:
    try:
        return float(word.removesuffix("x"))
    except ValueError:
        return None


def _vary(rest: set[str]) -> str | None:
    if len(rest) == 1 and (digit := next(iter(rest))) in ("1", "2", "3", "4"):
        return f"variation{digit}"
    if rest and rest <= {"high", "strong"}:
        return "high_variation"
    if rest and rest <= {"low", "subtle"}:
        return "low_variation"
    if rest == {"region"}:
        return "vary_region"
    return None


def _zoom(rest: set[str]) -> str | None:
    if rest == {"custom"}:
        return "outpaint_custom"
    if rest and rest <= {"make", "square"}:
        return "outpaint_square"
    if len(rest) == 1:
        factor = _factor(next(iter(rest)))
        return _ZOOM_FACTORS.get(factor) if factor is not None else None
    return None


def _upscale(rest: set[str]) -> str | None:
    if len(rest) != 1:
        return None
    word = next(iter(rest))
    if word in ("1", "2", "3", "4"):
        return f"upscale{word}"
    if word in ("2x", "4x", "subtle", "creative", "light", "beta"):
        return f"upscale_{word}"
    return None


def canonical_action(name: str) -> str | None:
    """genbot's name for a provider's action name, or ``None`` when it cannot be placed.

    ``outpaint_1.5x``, ``Zoom-Out-2x``, ``upscale_2X``, ``vary_strong``, ``Strong Variation``,
    ``left_pan`` and ``U1`` all match. A bare digit after upscale/variation is a grid index
    (``upscale2`` is U2); a factor needs its ``x`` (``upscale_2x``).
    """
    words = set(_words(name)) - _FILLER
    if words in ({"reroll"}, {"re", "roll"}, {"rerun"}):
        return "reroll"
    if words == {"seed"}:
        return "seed"
    if words == {"inpaint"}:
        return "vary_region"
    if words & _VARY:
        return _vary(words - _VARY)
    if words & _ZOOM:
        return _zoom(words - _ZOOM)
    if words and words <= {"make", "square"}:
        return "outpaint_square"
    if "pan" in words:
        rest = words - {"pan"}
        return f"pan_{next(iter(rest))}" if len(rest) == 1 and rest <= _DIRECTIONS else None
    if words & _UPSCALE:
        return _upscale(words - _UPSCALE)
    return None


def _log_unknown(name: str) -> None:
    if name in _unknown_seen or len(_unknown_seen) >= MAX_REMEMBERED_UNKNOWN:
        return
    _unknown_seen.add(name)
    log.warning("the provider offered an action genbot cannot place: %r (ignored)", name[:80])


def canonical_actions(names: Iterable[object]) -> list[str]:
    """The provider's action names in genbot's spelling, in order, without repeats; names that
    cannot be placed are ignored (and logged once each)."""
    placed: list[str] = []
    for name in names:
        action = canonical_action(name) if isinstance(name, str) else None
        if action is None:
            _log_unknown(str(name))
        elif action not in placed:
            placed.append(action)
    return placed


def prompt_version(prompt: str) -> str | None:
    """The model version a prompt names (the last ``--v 5.2`` / ``--version 6``; ``--niji``
    counts as 6), or ``None`` when it names none."""
    found = _VERSION_FLAG.findall(prompt)
    if found:
        return str(found[-1])
    if _NIJI_FLAG.search(prompt):
        return DEFAULT_VERSION
    return None


def version_rules(version: str) -> str:
    """Which documented rule set a version falls under: ``4``, ``5``, ``5.2`` or ``6`` (later
    versions keep 6's; 5.1 and other 5.x keep 5's), or ``""`` for older ones."""
    try:
        number = float(version)
    except ValueError:
        return DEFAULT_VERSION
    if number >= 6:
        return "6"
    if number >= 5.2:
        return "5.2"
    if number >= 5:
        return "5"
    if number >= 4:
        return "4"
    return ""


def documented_follow_ups(shape: TaskShape, version: str, *, square: bool | None = None,
                          first_upscale: bool = True) -> list[str]:  # fmt: skip
    """The follow-ups the documented endpoints allow (sections 4.2 and 9 of the API
    documentation): U1–U4, 🔄 and V1–V4 on a grid; on an upscale vary strong/subtle (5.2 and
    6), vary region, zoom out 2x/1.5x/custom, make square (unless the image is known to be
    square), pan in four directions, and — on a first upscale — the second upscale of its
    version (light/beta on 4, 2x/4x on 5.x, subtle/creative on 6)."""
    if shape == "grid":
        return list(GRID_FOLLOW_UPS)
    if shape != "upscale":
        return []
    rules = version_rules(version)
    offered: list[str] = []
    if rules in VARY_VERSIONS:
        offered += ["high_variation", "low_variation"]
    offered += ["vary_region", "outpaint_2", "outpaint_1.5", "outpaint_custom"]
    if square is not True:
        offered.append("outpaint_square")
    offered += ["pan_left", "pan_right", "pan_up", "pan_down"]
    if first_upscale:
        offered += SECOND_UPSCALES.get(rules, ())
    return offered


def task_shape(job: Job) -> TaskShape:
    """What a family B job's result is: a grid, an upscale, or neither (describe, seed)."""
    if job.family != "task":
        return "other"
    if job.type == "upscale":
        return "upscale"
    return "grid" if job.type in GRID_TASK_TYPES else "other"


def job_version(job: Job) -> str:
    """The model version a job ran with: the one recorded when it started (a derivative keeps
    its parent's), else the one its prompt names, else the default (6)."""
    return _version(job, ImageParams.of(job))


def _version(job: Job, params: ImageParams) -> str:
    return params.model_version or prompt_version(job.prompt) or DEFAULT_VERSION


def version_for(prompt: str, parent: Job | None) -> str:
    """The version to record for a new job: its parent's, else its prompt's, else 6."""
    if parent is not None:
        return job_version(parent)
    return prompt_version(prompt) or DEFAULT_VERSION


def _aspect_square(text: object) -> bool | None:
    if not isinstance(text, str):
        return None
    width, sep, height = text.partition(":")
    if not sep or not width.strip().isdigit() or not height.strip().isdigit():
        return None
    return int(width) == int(height)


def is_square(job: Job, size: tuple[int, int] | None = None) -> bool | None:
    """Whether a job's image is square: from its size (given, or stored once posted), else its
    aspect ratio option, else the prompt's ``--ar``, else the API's default 1:1. ``None`` when
    it cannot tell."""
    if size is None:
        size = JobResult.of(job).size
    if size is not None:
        return size[0] == size[1]
    if job.type != "upscale":
        return None
    from_option = _aspect_square(ImageParams.of(job).aspect_ratio)
    if from_option is not None:
        return from_option
    found = _ASPECT_FLAG.search(job.prompt)
    if found is not None:
        return found.group(1) == found.group(2)
    return True


def _remix(job: Job) -> bool:
    params = params_of(job)
    return isinstance(params, ImageParams | BlendParams) and params.remix


def refused_actions(job: Job) -> frozenset[str]:
    """Follow-ups of ``job`` the provider refused (their buttons are shown disabled)."""
    return frozenset(JobResult.of(job).refused_actions)


def offered_follow_ups(job: Job, size: tuple[int, int] | None = None) -> list[str]:
    """The follow-ups a finished family B job offers, in genbot's spelling: the provider's
    ``actions`` when it sent any, else the documented ones for its type and version; plus
    ``seed`` on every generation task."""
    shape = task_shape(job)
    offered = canonical_actions(job.actions)
    offered = [a for a in offered if a != "seed"]
    if not offered:
        base = (job.action or "").partition("#")[0]
        offered = documented_follow_ups(
            shape,
            job_version(job),
            square=is_square(job, size),
            first_upscale=base in FIRST_UPSCALES,
        )
    if job.family == "task" and job.type in GENERATION_TASK_TYPES:
        offered.append("seed")
    return offered


@dataclass(frozen=True)
class ParentTask:
    """A family B job as the parent of a follow-up, read once: its provider task, the
    follow-ups it offers (:func:`offered_follow_ups`) and those the provider refused, and what
    a follow-up inherits from it — its aspect ratio, the process mode it is shown with (the
    one it was asked for, except relax when the provider's ``meta.process_mode``, its
    account's setting, says relax, as :func:`bot.features.jobs.wording.speed` shows it:
    docs/provider.md#mode-fallback) and its model version (:func:`job_version`)."""

    task_id: str
    offered: tuple[str, ...]
    refused: frozenset[str]
    aspect_ratio: str | None
    process_mode: str | None
    model_version: str


def parent_task(job: Job) -> ParentTask | None:
    """``job`` as the parent of a follow-up; ``None`` when it is no image task the provider
    knows (another family, or no task id)."""
    if job.family != "task" or job.provider_id is None:
        return None
    params, result = ImageParams.of(job), JobResult.of(job)
    return ParentTask(
        task_id=job.provider_id,
        offered=tuple(offered_follow_ups(job)),
        refused=frozenset(result.refused_actions),
        aspect_ratio=params.aspect_ratio,
        process_mode="relax" if result.mode == "relax" else params.process_mode,
        model_version=_version(job, params),
    )


@dataclass(frozen=True)
class Offer:
    """What a finished family B job offers under its result, read once: its follow-ups
    (:func:`offered_follow_ups`), those the provider refused (shown disabled), and whether the
    follow-ups that take a prompt open the Remix form (its requester had Remix on,
    ``parameters["remix"]``)."""

    actions: tuple[str, ...]
    refused: frozenset[str]
    remix: bool


def offer(job: Job, size: tuple[int, int] | None = None) -> Offer:
    """What ``job`` offers under its result (``size``: its image's, when known)."""
    return Offer(tuple(offered_follow_ups(job, size)), refused_actions(job), _remix(job))
