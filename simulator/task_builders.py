"""Turn each creation endpoint's body into a :class:`TaskDraft`, applying the spec's rules.

Checks run in a fixed order: JSON types and required fields (body parsing failed) → field rules
(400) → origin task (original task does not exist) → rules that depend on the origin (400).
Credits and the same-index rule are checked when the draft is committed (``simulator.tasks``).
Derivative endpoints live in ``simulator.task_derivatives``.
"""

from __future__ import annotations

import hashlib
import random
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from simulator import task_rules as rules
from simulator.images import CellArt
from simulator.references import reference_urls
from simulator.state import Account, SimulatorState
from simulator.task_model import ImageTask
from simulator.task_rules import Body, BodyFailure, Mode, RuleError, TaskKind

ArtMaker = Callable[[random.Random], tuple[CellArt, ...]]
Builder = Callable[[SimulatorState, Body, "Account | None"], "TaskDraft"]
DESCRIBE_SUBJECTS = (
    "a lighthouse on a rocky cliff",
    "a fox asleep in fresh snow",
    "a neon-lit street market at night",
    "an astronaut tending a rooftop garden",
    "a paper boat drifting on a rain puddle",
    "a steam locomotive crossing a viaduct",
    "a koi pond under cherry blossoms",
    "a desert caravan at dawn",
)
DESCRIBE_STYLES = (
    "oil painting",
    "watercolor",
    "35mm film photograph",
    "isometric 3D render",
    "ukiyo-e woodblock print",
    "charcoal sketch",
    "storybook illustration",
    "cinematic still",
)
DESCRIBE_MOODS = (
    "soft golden light",
    "dramatic rim lighting",
    "muted pastel palette",
    "high contrast",
    "misty atmosphere",
    "vibrant saturated colors",
)


@dataclass
class TaskDraft:
    """Everything needed to create a task once credits and the same-index rule pass."""

    task_type: str
    kind: TaskKind
    account: Account
    prompt: str
    version: str
    mode: Mode
    aspect: tuple[int, int]
    task_input: dict[str, Any]
    webhook: tuple[str, str] = ("", "")
    origin: ImageTask | None = None
    index: str = ""
    art: ArtMaker | None = None
    long_side: int = 0
    describe_prompts: tuple[str, ...] = ()
    seed_value: str = ""
    same_index_key: tuple[str, str, str] | None = None
    error: str | None = None
    references: tuple[str, ...] = ()
    """Reference image URLs to fetch before the task runs (imagine)."""


def ratio(aspect: tuple[int, int]) -> str:
    """``W:H`` text of an aspect ratio."""
    return f"{aspect[0]}:{aspect[1]}"


def fresh_art(prompt: str, references: int = 0) -> ArtMaker:
    """Four new pictures for ``prompt`` (made with ``references`` reference images)."""
    return lambda rng: tuple(
        CellArt(prompt, rng.getrandbits(32), references=references) for _ in range(4)
    )


def webhook_fields(state: SimulatorState, body: Body) -> tuple[str, str]:
    """``(webhook_endpoint, webhook_secret)`` after the address rules."""
    endpoint = body.string("webhook_endpoint") or ""
    secret = body.string("webhook_secret") or ""
    if endpoint:
        rules.check_webhook(
            endpoint,
            insecure=state.config.insecure_webhooks,
            paths=state.config.rules.webhook_paths,
        )
    return endpoint, secret


def find_origin(state: SimulatorState, origin_id: str, account: Account | None) -> ImageTask:
    """The finished task ``origin_id`` of ``account`` (body failure when unknown, 400 if busy)."""
    task = state.tasks.get(origin_id)
    if task is None or (account is not None and task.account_key != account.key):
        raise BodyFailure(rules.ORIGIN_MISSING)
    status = task.status_at(state.now())
    if status != "finished":
        raise RuleError(f"origin task {origin_id} is not finished (status: {status})")
    return task


def require_account(account: Account | None) -> Account:
    if account is None:
        raise RuleError("X-API-KEY is required")
    return account


def build_imagine(state: SimulatorState, body: Body, account: Account | None) -> TaskDraft:
    prompt = body.string("prompt", required=True) or ""
    skip = body.boolean("skip_prompt_check")
    aspect_field = body.string("aspect_ratio")
    mode_field = rules.check_process_mode(body.string("process_mode"))
    webhook = webhook_fields(state, body)
    dialect = state.config.rules
    rules.check_prompt(prompt, check=not skip, cap=dialect.prompt_length_cap)
    version = rules.prompt_version(prompt, check=not skip, known_only=dialect.known_versions_only)
    aspect = rules.choose_aspect(aspect_field, prompt, check=not skip, cap=dialect.aspect_cap)
    mode = rules.select_mode(mode_field, prompt)
    references = reference_urls(prompt) if dialect.reads_references else ()
    task_input = {"prompt": prompt, "aspect_ratio": ratio(aspect)}
    return TaskDraft(
        "imagine", "grid", require_account(account), prompt, version, mode, aspect, task_input,
        webhook, art=fresh_art(prompt, len(references)), error=rules.trigger_error(prompt),
        references=references,
    )  # fmt: skip


def describe_prompts(image_url: str) -> tuple[str, ...]:
    """The four prompts describe answers for an image URL (a hash of the URL picks them)."""
    digest = hashlib.sha256(image_url.encode()).digest()
    subject = DESCRIBE_SUBJECTS[digest[0] % len(DESCRIBE_SUBJECTS)]
    return tuple(
        f"{subject}, {DESCRIBE_STYLES[(digest[1] + 3 * i) % len(DESCRIBE_STYLES)]}, "
        f"{DESCRIBE_MOODS[(digest[2] + i) % len(DESCRIBE_MOODS)]} --ar 1:1"
        for i in range(4)
    )


def build_describe(state: SimulatorState, body: Body, account: Account | None) -> TaskDraft:
    image_url = body.string("image_url", required=True) or ""
    mode_field = rules.check_process_mode(body.string("process_mode"))
    webhook = webhook_fields(state, body)
    rules.check_image_url(image_url, "image_url")
    mode = rules.select_mode(mode_field, "")
    return TaskDraft(
        "describe", "describe", require_account(account), "", rules.DEFAULT_VERSION, mode,
        (1, 1), {"image_url": image_url}, webhook,
        describe_prompts=describe_prompts(image_url), error=rules.trigger_error(image_url),
    )  # fmt: skip


def build_blend(state: SimulatorState, body: Body, account: Account | None) -> TaskDraft:
    urls = body.string_list("image_urls")
    dimension = body.string("dimension")
    if not dimension:
        if not state.config.rules.defaults_undocumented_values:
            raise RuleError(rules.undocumented_default("dimension"))
        dimension = "square"
    mode_field = rules.check_process_mode(body.string("process_mode"))
    webhook = webhook_fields(state, body)
    if not 2 <= len(urls) <= 5:
        raise RuleError(f"image_urls must hold 2 to 5 URLs (got {len(urls)})")
    for position, url in enumerate(urls):
        rules.check_image_url(url, f"image_urls[{position}]")
    if dimension not in rules.BLEND_DIMENSIONS:
        raise RuleError(f"dimension must be square, portrait or landscape (got {dimension!r})")
    joined = " ".join(urls)
    art_prompt = f"blend of {len(urls)} " + hashlib.sha256(joined.encode()).hexdigest()[:24]
    mode = rules.select_mode(mode_field, "")
    task_input = {"image_urls": urls, "dimension": dimension}
    return TaskDraft(
        "blend", "grid", require_account(account), "", rules.DEFAULT_VERSION, mode,
        rules.BLEND_DIMENSIONS[dimension], task_input, webhook,
        art=fresh_art(art_prompt), error=rules.trigger_error(joined),
    )  # fmt: skip


def build_seed(state: SimulatorState, body: Body, account: Account | None) -> TaskDraft:
    task_id = body.string("task_id", required=True) or ""
    if body.data.get("webhook_endpoint"):
        raise RuleError("seed does not accept webhook_endpoint")
    origin = find_origin(state, task_id, account)
    if origin.kind not in ("grid", "upscale"):
        raise RuleError("seed needs an image generation task (one with images)")
    owner = state.accounts[origin.account_key]
    return TaskDraft(
        "seed", "seed", owner, origin.prompt, origin.version, origin.mode, origin.aspect,
        {"task_id": task_id}, origin=origin, seed_value=str(origin.art_seed),
    )  # fmt: skip
