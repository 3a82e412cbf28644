"""Diffusion API (family C): ``POST /diff/{txt2img,img2img,upscale,controlnet,fetch}``.

Small txt2img/img2img jobs (width × height ≤ 512 × 512 and at most 31 steps) answer ``success``
with their output at once; larger ones and every controlnet job answer ``processing`` with an
``eta`` and are read later with fetch. Outputs expire 7 simulated days after they are ready.
Credits are charged when the job is accepted.
"""

from __future__ import annotations

import hashlib
import json
import math
from collections.abc import Awaitable, Callable
from typing import Any

from aiohttp import web

from simulator.images import CellArt, StoredImage, image_url, single_spec
from simulator.state import (
    STATE,
    DiffusionJob,
    SimulatorState,
    api_key_header,
    request_record,
)
from simulator.task_rules import RuleError, check_image_url
from simulator.tasks import base_url_of, error_response, forbidden, unauthorized

STEPS = (21, 31, 41, 51)
DEFAULT_SIZE = 512
DEFAULT_STEPS = 31
DEFAULT_GUIDANCE = 7.5
DEFAULT_MODEL = "sim-diffusion-1"
IMMEDIATE_MAX_PIXELS = 512 * 512
IMMEDIATE_MAX_STEPS = 31
RETENTION_SECONDS = 7 * 86400
PROCESSING_MESSAGE = "Try to fetch request after given estimated time"
FIRST_JOB_ID = 100001
CONTROLNET_EXTRA_SECONDS = 8
OUTPUT_LONG_SIDE = 256


def _number(
    data: dict[str, Any], name: str, low: float | None, high: float | None, default: float | None
) -> float | None:
    value = data.get(name)
    if value is None:
        return default
    try:
        if isinstance(value, bool):
            raise ValueError
        number = float(value)
    except (TypeError, ValueError):
        raise RuleError(f"{name} must be a number (got {value!r})") from None
    if (
        not math.isfinite(number)
        or (low is not None and number < low)
        or (high is not None and number > high)
    ):
        raise RuleError(f"{name} must be within {low} to {high} (got {value})")
    return number


def _digits(value: object) -> str:
    if isinstance(value, bool) or not isinstance(value, (int, str)):
        return ""
    return str(value).strip()


def _whole(data: dict[str, Any], name: str, low: int, high: int, default: int | None) -> int | None:
    value = data.get(name)
    if value is None:
        return default
    text = _digits(value)
    if not text.isdigit():
        raise RuleError(f"{name} must be a whole number from {low} to {high} (got {value!r})")
    number = int(text)
    if not low <= number <= high:
        raise RuleError(f"{name} must be a whole number from {low} to {high} (got {number})")
    return number


def _text(data: dict[str, Any], name: str, *, required: bool = False) -> str:
    value = data.get(name)
    if value is None or value == "":
        if required:
            raise RuleError(f"{name} is required")
        return ""
    if not isinstance(value, str):
        raise RuleError(f"{name} must be a string (got {value!r})")
    return value


def _url(data: dict[str, Any], name: str, *, required: bool = False) -> str:
    value = _text(data, name, required=required)
    if value:
        check_image_url(value, name)
    return value


def _side(data: dict[str, Any], name: str) -> int | None:
    """``width`` or ``height``: the spec makes them strings (``"512"``), maximum 1024."""
    value = data.get(name)
    if value is not None and not isinstance(value, str):
        raise RuleError(f'{name} must be a string such as "512" (got {value!r})')
    return _whole(data, name, 1, 1024, DEFAULT_SIZE)


def _steps(data: dict[str, Any]) -> int:
    value = data.get("num_inference_steps")
    if value is None:
        return DEFAULT_STEPS
    if not isinstance(value, str):
        raise RuleError(f'num_inference_steps must be a string such as "31" (got {value!r})')
    text = _digits(value)
    if not text.isdigit() or int(text) not in STEPS:
        raise RuleError(f"num_inference_steps must be one of 21, 31, 41, 51 (got {value!r})")
    return int(text)


def _seed(state: SimulatorState, data: dict[str, Any]) -> int:
    """The seed asked for: ``null`` is random; an absent seed is random too, except in the
    spec dialect (the documentation names only ``null``), where it is 0."""
    seed = data.get("seed")
    if seed is not None and (isinstance(seed, bool) or not isinstance(seed, int) or seed < 0):
        raise RuleError(f"seed must be a non-negative integer or null (got {seed!r})")
    if seed is None and ("seed" in data or state.config.rules.random_seed_when_absent):
        return state.task_rng.getrandbits(32)
    return seed or 0


def _common(state: SimulatorState, data: dict[str, Any]) -> dict[str, Any]:
    seed = _seed(state, data)
    return {
        "prompt": _text(data, "prompt"),
        "model_id": _text(data, "model_id") or DEFAULT_MODEL,
        "negative_prompt": _text(data, "negative_prompt"),
        "W": _side(data, "width"),
        "H": _side(data, "height"),
        "seed": seed,
        "steps": _steps(data),
        "guidance_scale": _number(data, "guidance_scale", 1, 20, DEFAULT_GUIDANCE),
        "lora": _text(data, "lora_model"),
        "lora_strength": _number(data, "lora_strength", None, None, None),
    }


def _strength(data: dict[str, Any]) -> float | None:
    return _number(data, "strength", 0, 1, None)


def _meta(kind: str, state: SimulatorState, data: dict[str, Any]) -> dict[str, Any]:
    meta = _common(state, data)
    if kind == "img2img":
        meta["init_image"] = _url(data, "init_image")
        meta["strength"] = _strength(data)
    elif kind == "controlnet":
        names = state.config.rules.controlnet_image_fields
        for name in ("control_image", "controlnet_image"):
            if name not in names and data.get(name) is not None:
                raise RuleError(f"unknown field {name}; the control image is {names[0]}")
        control_image = next((url for name in names if (url := _url(data, name))), "")
        guess_mode = data.get("guess_mode")
        if guess_mode is not None and not isinstance(guess_mode, (bool, str)):
            raise RuleError(f"guess_mode must be a boolean (got {guess_mode!r})")
        scale = _number(data, "controlnet_conditioning_scale", 1, 20, None)
        model_id = _text(data, "model_id", required=True)
        meta.update(
            model_id=model_id,
            init_image=_url(data, "init_image", required=True),
            controlnet_model=_text(data, "controlnet_model", required=True),
            controlnet_type=_text(data, "controlnet_type"),
            control_image=control_image,
            mask_image=_text(data, "mask_image"),
            guess_mode="yes" if guess_mode in (True, "yes", "true") else "no",
            strength=str(_strength(data) if data.get("strength") is not None else 1.0),
            controlnet_conditioning_scale=scale,
        )
    return meta


def _seed32(text: str) -> int:
    return int.from_bytes(hashlib.sha256(text.encode()).digest()[:4], "big")


def _art(kind: str, meta: dict[str, Any]) -> CellArt:
    prompt = meta.get("prompt") or "untitled"
    init = meta.get("init_image") or ""
    if kind in ("img2img", "controlnet") and init:
        return CellArt(prompt, meta["seed"], inner=CellArt(init, _seed32(init)), patch=True)
    return CellArt(prompt, meta["seed"])


async def _body(request: web.Request) -> dict[str, Any]:
    try:
        data = json.loads(await request.text())
    except (ValueError, UnicodeDecodeError):
        raise RuleError("the body must be a JSON object") from None
    if not isinstance(data, dict):
        raise RuleError("the body must be a JSON object")
    return data


def _create(
    request: web.Request,
    kind: str,
    account_key: str,
    seconds: float,
    immediate: bool,
    art: CellArt,
    size: tuple[int, int],
    long_side: int,
) -> DiffusionJob:
    state = request.app[STATE]
    job_id = max(state.diffusion_jobs, default=FIRST_JOB_ID - 1) + 1
    scale = state.config.time_scale
    now = state.now()
    ready_at = now if immediate else now + seconds * scale
    expires_at = ready_at + RETENTION_SECONDS * (scale if scale > 0 else 1)
    image_id = f"diff-{job_id}"
    state.images[image_id] = StoredImage(single_spec(size, art, long_side), ready_at, expires_at)
    url = image_url(base_url_of(request), "diffusion", image_id)
    job = DiffusionJob(
        job_id, kind, account_key, now, ready_at, expires_at, (url,), round(seconds, 2)
    )
    state.diffusion_jobs[job_id] = job
    state.count_creation(f"diff_{kind}")
    record = request_record(request)
    if record is not None:
        record.created_id = str(job_id)
    return job


async def _upscale(request: web.Request) -> web.Response:
    """``POST /diff/upscale``: always answered at once; ``output`` is a single URL string."""
    state = request.app[STATE]
    account = state.account_for(api_key_header(request))
    if account is None:
        return unauthorized()
    if account.suspended:
        return forbidden()
    rules = state.config.rules
    try:
        data = await _body(request)
        url = _url(data, "url", required=True)
        low, high = (2, 4) if rules.upscale_scale_range else (1, 2**31)
        scale = _whole(data, "scale", low, high, 2) or 2
    except RuleError as error:
        return error_response(400, str(error))
    if not account.spend(rules.price("upscale")):
        return error_response(400, "insufficient credit balance")
    art = CellArt(url, _seed32(url))
    job = _create(request, "upscale", account.key, 1.0 + scale, True, art, (1, 1), 128 * scale)
    answer = {"status": "success", "generationTime": job.generation_time, "id": job.job_id}
    return web.json_response({**answer, "output": job.output[0]})


def _generation_handler(kind: str) -> Callable[[web.Request], Awaitable[web.Response]]:
    async def handle(request: web.Request) -> web.Response:
        state = request.app[STATE]
        account = state.account_for(api_key_header(request))
        if account is None:
            return unauthorized()
        if account.suspended:
            return forbidden()
        try:
            meta = _meta(kind, state, await _body(request))
        except RuleError as error:
            return error_response(400, str(error))
        if not account.spend(state.config.rules.price(kind)):
            return error_response(400, "insufficient credit balance")
        width, height, steps = meta["W"], meta["H"], meta["steps"]
        immediate = kind != "controlnet" and (
            width * height <= IMMEDIATE_MAX_PIXELS and steps <= IMMEDIATE_MAX_STEPS
        )
        extra = CONTROLNET_EXTRA_SECONDS if kind == "controlnet" else 0
        seconds = 2 + width * height / IMMEDIATE_MAX_PIXELS * steps / 10 + extra
        long_side = min(OUTPUT_LONG_SIDE, max(width, height))
        art = _art(kind, meta)
        job = _create(
            request, kind, account.key, seconds, immediate, art, (width, height), long_side
        )
        if immediate:
            return web.json_response({
                "status": "success", "generationTime": job.generation_time, "id": job.job_id,
                "output": list(job.output), "meta": meta,
            })  # fmt: skip
        return web.json_response({
            "status": "processing", "eta": round(job.ready_at - job.created_at, 2),
            "id": job.job_id, "messege": PROCESSING_MESSAGE, "meta": meta,
        })  # fmt: skip

    return handle


async def fetch(request: web.Request) -> web.Response:
    """``POST /diff/fetch``: the job's output once ready, else ``processing`` with the eta left."""
    state = request.app[STATE]
    key = api_key_header(request)
    if key is not None and state.account_for(key) is None:
        return unauthorized()
    try:
        data = await _body(request)
        job_id = _whole(data, "id", 0, 2**63, None)
    except RuleError as error:
        return error_response(400, str(error))
    if job_id is None:
        return error_response(400, "id is required")
    job = state.diffusion_jobs.get(job_id)
    if job is None or not state.readable(job.account_key, key):
        return error_response(400, f"no diffusion job with id {job_id}")
    now = state.now()
    if now < job.ready_at:
        return web.json_response(
            {
                "status": "processing",
                "id": job.job_id,
                "output": [],
                "eta": round(job.ready_at - now, 2),
                "messege": PROCESSING_MESSAGE,
            }
        )
    return web.json_response({"id": job.job_id, "output": list(job.output), "status": "success"})


def add_diffusion_routes(app: web.Application) -> None:
    """Register ``POST /diff/*`` on ``app``."""
    for kind in ("txt2img", "img2img", "controlnet"):
        app.router.add_post(f"/diff/{kind}", _generation_handler(kind))
    app.router.add_post("/diff/upscale", _upscale)
    app.router.add_post("/diff/fetch", fetch)
