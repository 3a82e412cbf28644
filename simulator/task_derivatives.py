"""Builders of the derivative endpoints: reroll, upscale, variation, inpaint, outpaint, pan.

Derivatives inherit the origin's model version and process mode; ``process_mode`` in their body
is refused (400).
"""

from __future__ import annotations

import base64
import binascii
import math
import random
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from simulator import task_rules as rules
from simulator.images import FULL, Box, CellArt
from simulator.state import Account, SimulatorState
from simulator.task_builders import (
    ArtMaker,
    Builder,
    TaskDraft,
    build_blend,
    build_describe,
    build_imagine,
    build_seed,
    find_origin,
    fresh_art,
    ratio,
    require_account,
    webhook_fields,
)
from simulator.task_model import ImageTask
from simulator.task_rules import Body, RuleError, TaskKind

UPSCALE_LONG_SIDE = 384
SECOND_UPSCALE_LONG_SIDE = 512
VARIATION_JITTER = {"high_variation": 0.25, "low_variation": 0.06}
GRID_VARIATION_JITTER = 0.12
PAN_FRAMES: dict[str, Box] = {
    "left": (1 / 3, 0.0, 1.0, 1.0),
    "right": (0.0, 0.0, 2 / 3, 1.0),
    "up": (0.0, 1 / 3, 1.0, 1.0),
    "down": (0.0, 0.0, 1.0, 2 / 3),
}


@dataclass(frozen=True)
class Derivative:
    """The common inputs of a derivative request, after the common rules."""

    origin: ImageTask
    account: Account
    prompt: str
    aspect_field: tuple[int, int] | None
    webhook: tuple[str, str]
    skip_check: bool
    aspect_cap: bool = True

    def draft(
        self,
        task_type: str,
        aspect: tuple[int, int],
        task_input: dict[str, Any],
        art: ArtMaker,
        *,
        kind: TaskKind = "grid",
        index: str = "",
        long_side: int = 0,
        same_index: bool = False,
    ) -> TaskDraft:
        """The draft of a derivative task of ``self.origin``."""
        return TaskDraft(
            task_type, kind, self.account, self.prompt, self.origin.version, self.origin.mode,
            aspect, task_input, self.webhook, origin=self.origin, index=index, art=art,
            long_side=long_side, error=rules.trigger_error(self.prompt),
            same_index_key=(self.origin.task_id, task_type, index) if same_index else None,
        )  # fmt: skip

    def aspect_or_prompt(self) -> tuple[int, int]:
        """The aspect_ratio field, else ``--ar`` in the prompt, else 1:1 (the spec's default)."""
        return self.aspect_field or rules.choose_aspect(
            None, self.prompt, check=not self.skip_check, cap=self.aspect_cap
        )

    def cell(self, state: SimulatorState, index: str = "1") -> CellArt:
        """The origin's picture number ``index`` (its only one for an upscale)."""
        spec = state.images[self.origin.image_id].spec
        return spec.cells[int(index) - 1] if spec.is_grid else spec.cells[0]


def _derivative(
    state: SimulatorState,
    body: Body,
    account: Account | None,
    endpoint: str,
    field_rules: Callable[[], object] | None = None,
) -> Derivative:
    """Common fields and rules, then ``field_rules``, then the origin lookup."""
    origin_id = body.string("origin_task_id", required=True) or ""
    prompt_field = body.string("prompt")
    skip = body.boolean("skip_prompt_check")
    aspect_text = body.string("aspect_ratio")
    if body.data.get("process_mode") not in (None, ""):
        raise RuleError(
            f"process_mode is not accepted by {endpoint}; it inherits the mode of its origin task"
        )
    webhook = webhook_fields(state, body)
    dialect = state.config.rules
    if prompt_field is not None:
        rules.check_prompt(prompt_field, check=not skip, cap=dialect.prompt_length_cap)
    aspect = rules.parse_aspect(aspect_text, cap=dialect.aspect_cap) if aspect_text else None
    if field_rules is not None:
        field_rules()
    owner = require_account(account)
    origin = find_origin(state, origin_id, owner)
    prompt = prompt_field if prompt_field is not None else origin.prompt
    return Derivative(origin, owner, prompt, aspect, webhook, skip, dialect.aspect_cap)


def _needs_upscale(origin: ImageTask, endpoint: str) -> None:
    if origin.kind != "upscale":
        raise RuleError(f"{endpoint} needs an upscale task as origin")


def build_reroll(state: SimulatorState, body: Body, account: Account | None) -> TaskDraft:
    d = _derivative(state, body, account, "reroll")
    if d.origin.kind != "grid":
        raise RuleError("reroll needs a task with a 2x2 grid as origin")
    aspect = d.aspect_or_prompt()
    task_input = {"prompt": d.prompt, "aspect_ratio": ratio(aspect)}
    return d.draft("reroll", aspect, task_input, fresh_art(d.prompt))


def build_upscale(state: SimulatorState, body: Body, account: Account | None) -> TaskDraft:
    index = body.string("index", required=True) or ""
    d = _derivative(state, body, account, "upscale")
    rules.upscale_rule(index, d.origin.kind, d.origin.version, d.origin.index)
    first = index in rules.GRID_INDEXES
    art = d.cell(state, index if first else "1")
    return d.draft(
        "upscale", d.origin.aspect, {"prompt": d.prompt, "index": index}, lambda rng: (art,),
        kind="upscale", index=index, same_index=True,
        long_side=UPSCALE_LONG_SIDE if first else SECOND_UPSCALE_LONG_SIDE,
    )  # fmt: skip


def build_variation(state: SimulatorState, body: Body, account: Account | None) -> TaskDraft:
    index = body.string("index", required=True) or ""
    d = _derivative(state, body, account, "variation")
    rules.variation_rule(index, d.origin.kind, d.origin.version)
    aspect = d.aspect_or_prompt()
    base = d.cell(state, index if index in rules.GRID_INDEXES else "1")
    amount = VARIATION_JITTER.get(index, GRID_VARIATION_JITTER)

    def art(rng: random.Random) -> tuple[CellArt, ...]:
        return tuple(
            CellArt(d.prompt, base.art_seed, amount, rng.getrandbits(32), base.inner,
                    base.frame, base.patch)
            for _ in range(4)
        )  # fmt: skip

    task_input = {"prompt": d.prompt, "index": index, "aspect_ratio": ratio(aspect)}
    return d.draft("variation", aspect, task_input, art, index=index, same_index=True)


def _check_mask(mask: str) -> None:
    encoded = mask.split(",", 1)[1] if mask.startswith("data:") else mask
    try:
        if not base64.b64decode(encoded, validate=True):
            raise ValueError
    except (binascii.Error, ValueError):
        raise RuleError("mask must be a non-empty base64-encoded image") from None


def _around(prompt: str, inner: CellArt, frame: Box = FULL, patch: bool = False) -> ArtMaker:
    return lambda rng: tuple(
        CellArt(prompt, rng.getrandbits(32), inner=inner, frame=frame, patch=patch)
        for _ in range(4)
    )


def build_inpaint(state: SimulatorState, body: Body, account: Account | None) -> TaskDraft:
    mask = body.string("mask", required=True) or ""
    d = _derivative(state, body, account, "inpaint", lambda: _check_mask(mask))
    _needs_upscale(d.origin, "inpaint")
    art = _around(d.prompt, d.cell(state), patch=True)
    return d.draft("inpaint", d.origin.aspect, {"prompt": d.prompt}, art)


def _frame_for_zoom(canvas: tuple[int, int], parent: tuple[int, int], zoom: float) -> Box:
    fit = min(canvas[0] / parent[0], canvas[1] / parent[1]) / zoom
    width, height = parent[0] * fit / canvas[0], parent[1] * fit / canvas[1]
    return ((1 - width) / 2, (1 - height) / 2, (1 + width) / 2, (1 + height) / 2)


def build_outpaint(state: SimulatorState, body: Body, account: Account | None) -> TaskDraft:
    zoom_text = body.string("zoom_ratio")
    default = state.config.rules.defaults_undocumented_values
    d = _derivative(
        state,
        body,
        account,
        "outpaint",
        lambda: rules.outpaint_zoom(zoom_text, (1, 2), default=default),
    )
    _needs_upscale(d.origin, "outpaint")
    zoom = rules.outpaint_zoom(zoom_text, d.origin.aspect, default=default)
    canvas = (1, 1) if zoom == 1 else d.aspect_or_prompt()
    frame = _frame_for_zoom(canvas, d.origin.aspect, zoom)
    task_input = {"prompt": d.prompt, "zoom_ratio": zoom_text or "2", "aspect_ratio": ratio(canvas)}
    return d.draft("outpaint", canvas, task_input, _around(d.prompt, d.cell(state), frame))


def _check_direction(direction: str) -> None:
    if direction not in rules.PAN_DIRECTIONS:
        raise RuleError(f"direction must be one of up, down, left, right (got {direction!r})")


def build_pan(state: SimulatorState, body: Body, account: Account | None) -> TaskDraft:
    given = body.string("direction")
    if not given and not state.config.rules.defaults_undocumented_values:
        raise RuleError(rules.undocumented_default("direction"))
    direction = given or "right"
    d = _derivative(state, body, account, "pan", lambda: _check_direction(direction))
    _needs_upscale(d.origin, "pan")
    width, height = d.origin.aspect
    wide = direction in ("left", "right")
    aspect = (width * 3, height * 2) if wide else (width * 2, height * 3)
    divisor = math.gcd(*aspect)
    aspect = (aspect[0] // divisor, aspect[1] // divisor)
    art = _around(d.prompt, d.cell(state), PAN_FRAMES[direction])
    return d.draft("pan", aspect, {"prompt": d.prompt, "direction": direction}, art)


BUILDERS: dict[str, Builder] = {
    "imagine": build_imagine,
    "reroll": build_reroll,
    "upscale": build_upscale,
    "variation": build_variation,
    "inpaint": build_inpaint,
    "outpaint": build_outpaint,
    "pan": build_pan,
    "describe": build_describe,
    "blend": build_blend,
    "seed": build_seed,
}
