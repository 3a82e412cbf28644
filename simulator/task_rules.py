"""The deterministic rules of the image task API (family B), free of HTTP.

Every rule here is documented in ``simulator/README.md``; keep the two in step.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from typing import Any, Literal
from urllib.parse import urlsplit

Mode = Literal["relax", "fast", "turbo"]
TaskKind = Literal["grid", "upscale", "describe", "seed"]

VERSIONS = ("4", "5", "5.1", "5.2", "6")
DEFAULT_VERSION = "6"
PROCESS_MODES = ("relax", "mixed", "fast", "turbo")

BODY_PARSING_FAILED = "body parsing failed"
ORIGIN_MISSING = "original task does not exist"
SAME_INDEX = "task with same index already created"
NO_CREDIT = "insufficient credit balance"

GRID_ACTIONS = (
    "reroll",
    "upscale1",
    "upscale2",
    "upscale3",
    "upscale4",
    "variation1",
    "variation2",
    "variation3",
    "variation4",
)
WORDED_ACTIONS = {
    "high_variation": "vary_strong",
    "low_variation": "vary_subtle",
    "outpaint_2": "zoom_out_2x",
    "outpaint_1.5": "zoom_out_1.5x",
    "outpaint_custom": "custom_zoom",
    "outpaint_square": "make_square",
}
"""The variant dialect's names for upscale actions (as the buttons read); others keep theirs."""
GRID_INDEXES = ("1", "2", "3", "4")
SECOND_UPSCALES: dict[str, tuple[str, ...]] = {
    "light": ("4",),
    "beta": ("4",),
    "2x": ("5", "5.1", "5.2"),
    "4x": ("5", "5.1", "5.2"),
    "subtle": ("6",),
    "creative": ("6",),
}
VARY_INDEXES = ("high_variation", "low_variation")
VARY_VERSIONS = ("5.2", "6")
PAN_DIRECTIONS = ("up", "down", "left", "right")
BLEND_DIMENSIONS: dict[str, tuple[int, int]] = {
    "square": (1, 1),
    "portrait": (2, 3),
    "landscape": (3, 2),
}
CDN_HOSTS = ("cdn.discordapp.com", "media.discordapp.net")
LOOPBACK_HOSTS = ("127.0.0.1", "localhost", "::1")
TRIGGER_ERRORS = {
    "fail": "Simulated failure: the prompt asked the job to fail.",
    "forbidden": "Banned prompt detected: the job was refused by the moderation check.",
}
MAX_PROMPT_CHARS = 6000
STRING_FIELDS = frozenset({
    "prompt", "aspect_ratio", "process_mode", "webhook_endpoint", "webhook_secret",
    "origin_task_id", "index", "mask", "zoom_ratio", "direction", "image_url", "dimension",
    "task_id",
})  # fmt: skip
MAX_ASPECT_RATIO = 4.0

# (queue seconds, run seconds) per mode, before time_scale.
MODE_DURATIONS: dict[Mode, tuple[float, float]] = {
    "relax": (20.0, 40.0),
    "fast": (4.0, 16.0),
    "turbo": (1.0, 7.0),
}
KIND_DURATION_FACTOR: dict[TaskKind, float] = {
    "grid": 1.0,
    "upscale": 0.5,
    "describe": 0.5,
    "seed": 0.0,
}
SEED_TASK_SECONDS = 1.0
MODE_PRICE_FACTOR: dict[Mode, int] = {"relax": 1, "fast": 2, "turbo": 4}
STAGED_CHANCE = 0.2
RETRY_CHANCE = 0.1


class RuleError(Exception):
    """A request broke a rule: answered 400 ``{"error": {"message": ...}}``."""


class BodyFailure(Exception):
    """A creation call failed in the body (2.5): ``{"task_id": "", "status": "failed", ...}``."""


@dataclass(frozen=True)
class Body:
    """Typed access to a JSON request body; a missing required field or a wrong JSON type is a
    :class:`BodyFailure` ("body parsing failed")."""

    data: dict[str, Any]

    def check_types(self) -> None:
        """Every known field present (and not null) has its JSON type, before any rule runs."""
        for name, value in self.data.items():
            if value is None:
                continue
            if name in STRING_FIELDS and not isinstance(value, str):
                raise BodyFailure(BODY_PARSING_FAILED)
            if name == "skip_prompt_check" and not isinstance(value, bool):
                raise BodyFailure(BODY_PARSING_FAILED)
            if name in ("image_urls", "task_ids"):
                self.string_list(name)

    def string(self, name: str, *, required: bool = False) -> str | None:
        value = self.data.get(name)
        if value is None:
            if required:
                raise BodyFailure(BODY_PARSING_FAILED)
            return None
        if not isinstance(value, str):
            raise BodyFailure(BODY_PARSING_FAILED)
        return value

    def boolean(self, name: str) -> bool:
        value = self.data.get(name)
        if value is None:
            return False
        if not isinstance(value, bool):
            raise BodyFailure(BODY_PARSING_FAILED)
        return value

    def string_list(self, name: str) -> list[str]:
        value = self.data.get(name)
        if not isinstance(value, list) or not all(isinstance(item, str) for item in value):
            raise BodyFailure(BODY_PARSING_FAILED)
        return list(value)


def _flag_value(prompt: str, names: tuple[str, ...]) -> str | None:
    """The value after the last ``--name`` flag in ``prompt``."""
    found: str | None = None
    words = prompt.split()
    for position, word in enumerate(words[:-1]):
        if word.lower() in names:
            found = words[position + 1]
    return found


def prompt_version(prompt: str, *, check: bool, known_only: bool = True) -> str:
    """The model version named by ``--v N`` / ``--version N`` (default 6). Without
    ``known_only`` (the spec dialect) a version number above 6 is accepted and keeps 6's rules."""
    value = _flag_value(prompt, ("--v", "--version"))
    if value is None:
        return DEFAULT_VERSION
    normalized = value[:-2] if value.endswith(".0") else value
    if normalized in VERSIONS:
        return normalized
    if not known_only and re.fullmatch(r"\d+(\.\d+)?", normalized) and float(normalized) > 6:
        return DEFAULT_VERSION
    if check:
        raise RuleError(f"unsupported model version --v {value}; use one of {', '.join(VERSIONS)}")
    return DEFAULT_VERSION


def prompt_mode(prompt: str) -> Mode | None:
    """The last of ``--relax``, ``--fast``, ``--turbo`` written in the prompt."""
    found: Mode | None = None
    for word in prompt.lower().split():
        if word == "--relax":
            found = "relax"
        elif word == "--fast":
            found = "fast"
        elif word == "--turbo":
            found = "turbo"
    return found


def select_mode(process_mode: str | None, prompt: str) -> Mode:
    """Mode selection by ``process_mode`` and the prompt (docs/provider.md, "Image tasks")."""
    if process_mode in ("relax", "fast", "turbo"):
        return process_mode  # type: ignore[return-value]
    return prompt_mode(prompt) or "relax"


def check_process_mode(value: str | None) -> str | None:
    """``process_mode`` must be one of relax, mixed, fast, turbo (absent or empty is fine)."""
    if value in (None, ""):
        return None
    if value not in PROCESS_MODES:
        raise RuleError(f"process_mode must be one of {', '.join(PROCESS_MODES)} (got {value!r})")
    return value


def parse_aspect(text: str, field: str = "aspect_ratio", *, cap: bool = True) -> tuple[int, int]:
    """``W:H`` with positive integers, at most 4:1 either way when ``cap``."""
    match = re.fullmatch(r"\s*(\d{1,4})\s*:\s*(\d{1,4})\s*", text)
    if not match or int(match.group(1)) == 0 or int(match.group(2)) == 0:
        raise RuleError(f"{field} must look like W:H with positive whole numbers (got {text!r})")
    width, height = int(match.group(1)), int(match.group(2))
    if cap and max(width / height, height / width) > MAX_ASPECT_RATIO:
        raise RuleError(f"{field} must be between 1:4 and 4:1 (got {text})")
    divisor = math.gcd(width, height)
    return width // divisor, height // divisor


def choose_aspect(
    field_value: str | None, prompt: str, *, check: bool, cap: bool = True
) -> tuple[int, int]:
    """The ``aspect_ratio`` field, else ``--ar W:H`` in the prompt, else 1:1."""
    if field_value:
        return parse_aspect(field_value, cap=cap)
    in_prompt = _flag_value(prompt, ("--ar", "--aspect"))
    if in_prompt is None:
        return (1, 1)
    try:
        return parse_aspect(in_prompt, "--ar", cap=cap)
    except RuleError:
        if check:
            raise
        return (1, 1)


def check_prompt(prompt: str, *, check: bool, cap: bool = True) -> None:
    """A prompt must hold text; unless ``skip_prompt_check`` (or without ``cap``), at most 6000
    characters."""
    if not prompt.strip():
        raise RuleError("prompt must not be empty")
    if check and cap and len(prompt) > MAX_PROMPT_CHARS:
        raise RuleError(f"prompt must be at most {MAX_PROMPT_CHARS} characters")


def trigger_error(prompt: str) -> str | None:
    """The execution error a trigger word (whole word ``fail`` or ``forbidden``) provokes."""
    for word, message in TRIGGER_ERRORS.items():
        if re.search(rf"\b{word}\b", prompt, re.IGNORECASE):
            return message
    return None


def check_webhook(url: str, *, insecure: bool, paths: bool = True) -> None:
    """https on port 443 only; with ``--insecure-webhooks`` also http(s) on loopback, any port.
    Without ``paths`` the address must be bare (``https://domain``, no path, query or
    fragment)."""
    try:
        parts = urlsplit(url)
        port = parts.port
    except ValueError as error:
        raise RuleError(f"webhook_endpoint is not a valid URL: {error}") from None
    if not paths and (parts.path not in ("", "/") or parts.query or parts.fragment):
        raise RuleError(
            "webhook_endpoint must be of the form https://domain: a path is not accepted"
        )
    host = (parts.hostname or "").lower()
    if insecure and parts.scheme in ("http", "https") and host in LOOPBACK_HOSTS:
        return
    if parts.scheme != "https" or not host:
        raise RuleError("webhook_endpoint must be an https://domain address")
    if port not in (None, 443):
        raise RuleError(f"webhook_endpoint may only use port 443 (got {port})")


def check_image_url(url: str, field: str) -> None:
    """An http(s) URL that is not on the chat platform's CDN."""
    parts = urlsplit(url.strip())
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise RuleError(f"{field} must be an http(s) URL (got {url!r})")
    if parts.hostname.lower() in CDN_HOSTS:
        raise RuleError(f"{field}: links on the chat platform's CDN are not accepted; re-host it")


def undocumented_default(field: str) -> str:
    """The spec dialect's refusal of a request that leaves ``field`` to a default."""
    return f"{field} has no documented default: send one of its values"


def upscale_rule(index: str, parent_kind: str, parent_version: str, parent_index: str) -> None:
    """Index rules of upscale, by version (docs/provider.md, "Image tasks")."""
    if index in GRID_INDEXES:
        if parent_kind != "grid":
            raise RuleError(f"upscale index {index} needs a task with a 2x2 grid as origin")
        return
    versions = SECOND_UPSCALES.get(index)
    if versions is None:
        allowed = ", ".join((*GRID_INDEXES, *SECOND_UPSCALES))
        raise RuleError(f"upscale index must be one of {allowed} (got {index!r})")
    if parent_kind != "upscale" or parent_index not in GRID_INDEXES:
        raise RuleError(f"upscale index {index} needs an upscale (index 1-4) task as origin")
    if parent_version not in versions:
        raise RuleError(
            f"upscale index {index} is only for version {'/'.join(versions)} tasks "
            f"(this task is version {parent_version})"
        )


def variation_rule(index: str, parent_kind: str, parent_version: str) -> None:
    """Index rules of variation."""
    if index in GRID_INDEXES:
        if parent_kind != "grid":
            raise RuleError(f"variation index {index} needs a task with a 2x2 grid as origin")
        return
    if index not in VARY_INDEXES:
        allowed = ", ".join((*GRID_INDEXES, *VARY_INDEXES))
        raise RuleError(f"variation index must be one of {allowed} (got {index!r})")
    if parent_kind != "upscale":
        raise RuleError(f"variation index {index} needs an upscale task as origin")
    if parent_version not in VARY_VERSIONS:
        raise RuleError(
            f"variation index {index} is only for version 5.2 and 6 tasks "
            f"(this task is version {parent_version})"
        )


def outpaint_zoom(
    zoom_ratio: str | None, parent_aspect: tuple[int, int], *, default: bool = True
) -> float:
    """zoom_ratio 1 (make square, non-square images only), 1.5, 2 or a decimal in (1, 2];
    absent is 2 with ``default``, else refused."""
    if not zoom_ratio and not default:
        raise RuleError(undocumented_default("zoom_ratio"))
    text = (zoom_ratio or "2").strip()
    try:
        zoom = float(text)
    except ValueError:
        raise RuleError(
            f"zoom_ratio must be a number: 1, 1.5, 2 or in (1, 2] (got {text!r})"
        ) from None
    if not math.isfinite(zoom) or zoom < 1 or zoom > 2:
        raise RuleError(f"zoom_ratio must be 1 (make square) or within (1, 2] (got {text})")
    if zoom == 1 and parent_aspect[0] == parent_aspect[1]:
        raise RuleError("zoom_ratio 1 (make square) applies only to non-square images")
    return zoom


def upscale_actions(version: str, aspect: tuple[int, int], from_grid: bool) -> list[str]:
    """Follow-ups an upscale task offers (documented in the README)."""
    actions: list[str] = []
    if version in VARY_VERSIONS:
        actions += ["high_variation", "low_variation"]
    actions += ["vary_region", "outpaint_2", "outpaint_1.5", "outpaint_custom"]
    if aspect[0] != aspect[1]:
        actions.append("outpaint_square")
    actions += ["pan_left", "pan_right", "pan_up", "pan_down"]
    if from_grid:
        actions += [f"upscale_{index}" for index, vs in SECOND_UPSCALES.items() if version in vs]
    return actions


def price(kind: TaskKind, mode: Mode, index: str = "") -> int:
    """Credits a task costs (frozen at creation, charged at finish)."""
    if kind == "seed":
        return 0
    if kind == "grid":
        base = 4
    elif kind == "upscale":
        base = 1 if index in GRID_INDEXES else 2
    else:
        base = 1
    return base * MODE_PRICE_FACTOR[mode]


def durations(kind: TaskKind, mode: Mode) -> tuple[float, float]:
    """(queue, run) seconds of a task before ``time_scale``."""
    if kind == "seed":
        return 0.0, SEED_TASK_SECONDS
    queue, run = MODE_DURATIONS[mode]
    factor = KIND_DURATION_FACTOR[kind]
    return queue * factor, run * factor
