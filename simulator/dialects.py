"""The simulator's three dialects: where the API documentation is silent or allows two readings,
which road each one takes (``simulator/README.md``, "Dialects").

``default`` fills the documentation's gaps with concrete choices; ``spec`` knows only what the
documentation states (and refuses a request that leaves a value to a default the documentation
never gives); ``variant`` takes the other road wherever the documentation allows two. Route
modules ask :func:`rules_for` instead of comparing dialect names.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Literal

Dialect = Literal["default", "spec", "variant"]
DIALECTS: tuple[Dialect, ...] = ("default", "spec", "variant")
ActionNames = Literal["simulator", "documented_only", "worded"]
WebhookBody = Literal["record", "signal", "wrapped"]
DescribeOutput = Literal["prompts_and_lines", "keycap_lines", "numbered_paragraphs"]
FunctionCallShape = Literal["function_call", "tool_calls"]


@dataclass(frozen=True)
class DialectRules:
    """One dialect's choices (each field names what it decides)."""

    actions: ActionNames
    """``simulator``: grids and upscales carry actions in the simulator's own names;
    ``documented_only``: only imagine and blend grids carry actions, exactly the nine the
    documentation lists; ``worded``: like ``simulator`` but named the way a button reads
    (``zoom_out_2x``, ``vary_strong``, ``make_square``)."""
    webhook_body: WebhookBody
    """``record``: the fetch record; ``signal``: ``{"task_id", "status"}`` only; ``wrapped``:
    the multi_fetch record under ``{"data": …}``."""
    webhook_paths: bool
    """Whether a webhook address may carry a path (the documentation shows ``https://domain``)."""
    plan_refusal_status: int
    """The status of a chat request for a model the key's plan lacks."""
    describe_output: DescribeOutput
    """``prompts_and_lines``: ``task_result.prompts`` and ``1️⃣ …`` lines in ``message``;
    ``keycap_lines``: only the lines; ``numbered_paragraphs``: only ``message``, as ``1. …``
    paragraphs separated by blank lines."""
    defaults_undocumented_values: bool
    """Whether outpaint ``zoom_ratio``, pan ``direction`` and blend ``dimension`` fall back to a
    default of the simulator's (2, right, square); without, leaving them out is refused."""
    aspect_cap: bool
    """Whether aspect ratios beyond 4:1 either way are refused."""
    prompt_length_cap: bool
    """Whether prompts over 6000 characters are refused (unless ``skip_prompt_check``)."""
    known_versions_only: bool
    """Whether a ``--v`` other than 4, 5, 5.1, 5.2, 6 is refused; without, a newer version is
    accepted and follows 6's rules."""
    random_seed_when_absent: bool
    """Whether a diffusion request without ``seed`` gets a random seed; without, it gets 0 (only
    ``null`` is documented as random)."""
    chat_choice_cap: bool
    """Whether ``n`` is capped at 10."""
    length_finish_reason: bool
    """Whether an answer cut by ``max_tokens`` says ``finish_reason: length`` (the documentation
    lists only ``stop`` and ``function_call``)."""
    chat_ranges: bool
    """Whether the rules the documentation does not state are applied to chat: ``top_p``
    within 0–1, ``max_tokens`` a whole number, ``logit_bias`` keys and values in range."""
    sse_blank_lines: bool
    """Whether each server-sent event ends with a blank line; without, events are single
    ``data:`` lines one after another."""
    function_role: bool
    """Whether a ``function`` role message (and a message ``name``) is accepted."""
    function_call_shape: FunctionCallShape
    """How a function call is answered: ``function_call`` (message and delta) or ``tool_calls``
    (a list of calls, streamed as ``delta.tool_calls`` pieces, ``finish_reason: tool_calls``)."""
    data_urls: bool
    """Whether a vision ``image_url`` may be a ``data:`` URL."""
    controlnet_image_fields: tuple[str, ...]
    """The names controlnet accepts for its control image (others are refused)."""
    diffusion_prices: tuple[tuple[str, int], ...]
    """Credits per diffusion endpoint."""
    upscale_scale_range: bool
    """Whether diffusion upscale ``scale`` must be 2–4 (else any whole number from 1)."""
    reads_references: bool
    """Whether imagine reads image references in its prompt (image URLs, ``--sref``,
    ``--cref``, ``--oref``, weights) and fetches them; without, they are plain prompt text."""

    def price(self, endpoint: str) -> int:
        """Credits a diffusion job of ``endpoint`` costs."""
        return dict(self.diffusion_prices)[endpoint]


DEFAULT = DialectRules(
    actions="simulator",
    webhook_body="record",
    webhook_paths=True,
    plan_refusal_status=403,
    describe_output="prompts_and_lines",
    defaults_undocumented_values=True,
    aspect_cap=True,
    prompt_length_cap=True,
    known_versions_only=True,
    random_seed_when_absent=True,
    chat_choice_cap=True,
    length_finish_reason=True,
    chat_ranges=True,
    sse_blank_lines=True,
    function_role=True,
    function_call_shape="function_call",
    data_urls=True,
    controlnet_image_fields=("control_image", "controlnet_image"),
    diffusion_prices=(("txt2img", 2), ("img2img", 2), ("controlnet", 3), ("upscale", 1)),
    upscale_scale_range=True,
    reads_references=True,
)
SPEC = replace(
    DEFAULT,
    actions="documented_only",
    webhook_body="signal",
    plan_refusal_status=401,
    describe_output="keycap_lines",
    defaults_undocumented_values=False,
    aspect_cap=False,
    prompt_length_cap=False,
    known_versions_only=False,
    random_seed_when_absent=False,
    chat_choice_cap=False,
    length_finish_reason=False,
    chat_ranges=False,
    upscale_scale_range=False,
    reads_references=False,
)
VARIANT = replace(
    DEFAULT,
    actions="worded",
    webhook_body="wrapped",
    webhook_paths=False,
    describe_output="numbered_paragraphs",
    sse_blank_lines=False,
    function_role=False,
    function_call_shape="tool_calls",
    data_urls=False,
    controlnet_image_fields=("controlnet_image",),
    diffusion_prices=(("txt2img", 3), ("img2img", 4), ("controlnet", 5), ("upscale", 2)),
)
RULES: dict[Dialect, DialectRules] = {"default": DEFAULT, "spec": SPEC, "variant": VARIANT}


def rules_for(dialect: Dialect) -> DialectRules:
    """The choices of ``dialect``."""
    return RULES[dialect]
