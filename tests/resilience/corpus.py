"""The bad-input corpus: commands, presses and forms that break a rule of the provider's spec
(or of genbot's own catalogue), each with the words its refusal must contain.

``CORE_CASES`` go straight to ``Router.handle`` the way an adapter hands them over: ``text``
commands as Slack and the playground send them (``a fox --ar 5:1``), ``options`` commands as
Discord sends them (typed values), and presses and form submissions on jobs seeded in the
database (``grid``, ``upscale``, ``diffusion``, ``describe``: ``seed_jobs`` in the test) or,
for the settings form, on the scope its reference names.
``WEB_CASES`` go through the playground's HTTP API (uploads and commands) and are refused
before the core runs.

Every keyword is matched case-insensitively and names the rule (``at most 1024``,
``21, 31, 41, 51``), not just that something failed.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

from bot.kernel import Attachment, OptionValue, Plan

CaseKind = Literal["text", "options", "press", "form"]
SeededKey = Literal["grid", "upscale", "diffusion", "describe"]

IMAGE = Attachment("fox.png", "https://images.example.org/fox.png", "image/png", 2048)
CDN_IMAGE = Attachment(
    "fox.png", "https://cdn.discordapp.com/attachments/1/2/fox.png", "image/png", 2048
)
PDF = Attachment("notes.pdf", "https://files.example.org/notes.pdf", "application/pdf", 4096)
HUGE_IMAGE = Attachment("huge.png", "https://images.example.org/huge.png", "image/png", 50 << 20)


@dataclass(frozen=True)
class CoreCase:
    """One invalid input for the core and the words its one ephemeral answer must contain."""

    id: str
    kind: CaseKind
    name: str
    keywords: tuple[str, ...]
    text: str = ""
    options: Mapping[str, OptionValue] = field(default_factory=dict)
    attachments: Mapping[str, Attachment] = field(default_factory=dict)
    target: SeededKey = "grid"
    ref: str | None = None
    values: Mapping[str, str] = field(default_factory=dict)
    plan: Plan = "developer"
    rehosting: bool = False
    """Run with a media host (``[webhook] public_url``), so attached files are read and
    re-hosted instead of refused for lack of one."""


def text(case_id: str, name: str, typed: str, *keywords: str, **extra: Any) -> CoreCase:
    return CoreCase(case_id, "text", name, keywords, text=typed, **extra)


def options(
    case_id: str, name: str, given: Mapping[str, OptionValue], *keywords: str, **extra: Any
) -> CoreCase:
    return CoreCase(case_id, "options", name, keywords, options=given, **extra)


def press(case_id: str, action: str, target: SeededKey, *keywords: str) -> CoreCase:
    return CoreCase(case_id, "press", action, keywords, target=target)


def form(
    case_id: str,
    action: str,
    target: SeededKey,
    values: Mapping[str, str],
    *keywords: str,
    ref: str | None = None,
) -> CoreCase:
    return CoreCase(case_id, "form", action, keywords, target=target, ref=ref, values=values)


INIT = {"init_image": IMAGE}
CONTROL = {"init_image": IMAGE}
ONE_OF_MODES = "relax, mixed, fast, turbo"
ONE_OF_STEPS = "21, 31, 41, 51"

CHAT_CASES = [
    text("chat-temperature-above-2", "chat", "hi --temp 2.5", "--temperature", "at most 2"),
    text("chat-temperature-below-0", "chat", "hi --temperature -0.1", "at least 0"),
    options("chat-temperature-option-3", "chat", {"prompt": "hi", "temperature": 3}, "at most 2"),
    text("chat-temperature-not-number", "chat", "hi --temp warm", "must be a number"),
    text("chat-temperature-nan", "chat", "hi --temp nan", "finite number"),
    text("chat-temperature-no-value", "chat", "hi --temp", "needs a value", "0 to 2"),
    text("chat-temperature-twice", "chat", "hi --temp 1 --temp 2", "given twice"),
    text("chat-max-tokens-zero", "chat", "hi --max-tokens 0", "--max-tokens", "at least 1"),
    options(
        "chat-max-tokens-fraction", "chat", {"prompt": "hi", "max_tokens": 1.5}, "whole number"
    ),
    text("chat-presence-penalty", "chat", "hi --presence-penalty 3", "no option --presence"),
    text("chat-frequency-penalty", "chat", "hi --frequency-penalty -3", "no option --frequency"),
    text("chat-top-p-unknown-flag", "chat", "hi --top-p 2", "no option --top-p", "--temperature"),
    text("chat-unknown-model", "chat", "hi --model gpt-4", "--model must be one of", "llm-4"),
    text("chat-llm4-free-plan", "chat", "hi --model llm-4", "developer plan", plan="free"),
    options(
        "chat-vision-free-plan",
        "chat",
        {"prompt": "hi", "model": "llm-4-vision-preview"},
        "developer plan",
        "free plan",
        plan="free",
    ),
    text("chat-missing-prompt", "chat", "--temp 1", "/chat needs the prompt"),
    options("chat-no-options", "chat", {}, "/chat needs the prompt"),
]

IMAGINE_CASES = [
    text("imagine-ar-not-a-ratio", "imagine", "a fox --ar 16-9", "must look like 16:9"),
    text("imagine-ar-zero", "imagine", "a fox --ar 0:1", "above zero"),
    text("imagine-ar-huge-numbers", "imagine", "a fox --ar 10000:9999", "at most 9999"),
    options(
        "imagine-ar-option-not-a-ratio",
        "imagine",
        {"prompt": "a fox", "aspect_ratio": "wide"},
        "aspect_ratio",
        "must look like 16:9",
    ),
    text("imagine-mode-unknown", "imagine", "a fox --mode warp", ONE_OF_MODES),
    options(
        "imagine-mode-option-unknown",
        "imagine",
        {"prompt": "a fox", "process_mode": "slow"},
        ONE_OF_MODES,
    ),
    options(
        "imagine-skip-check-not-boolean",
        "imagine",
        {"prompt": "a fox", "skip_prompt_check": "perhaps"},
        "true or false",
    ),
    options("imagine-missing-prompt", "imagine", {}, "/imagine needs the prompt"),
    text("imagine-only-flags", "imagine", "--ar 16:9 --fast", "/imagine needs the prompt"),
    text("imagine-version-word", "imagine", "a fox --v seven", "--v", "version number"),
    options(
        "imagine-option-version-word",
        "imagine",
        {"prompt": "a fox --version 5.x"},
        "--v",
        "version number",
    ),
    options(
        "imagine-option-prompt-with-bad-ar",
        "imagine",
        {"prompt": "a fox --ar 9-1"},
        "must look like 16:9",
    ),
    text("imagine-unknown-saved-option", "imagine", "a city --nein", "--nein is not one of"),
    options(
        "imagine-option-unknown-saved-option",
        "imagine",
        {"prompt": "a city --nein"},
        "not one of your saved options",
    ),
    text(
        "imagine-permutations-past-the-cap",
        "imagine",
        "{a, b, c} {d, e, f, g} fox",
        "12 jobs",
        "at most 10",
    ),
    text("imagine-repeat-past-the-cap", "imagine", "{a, b} fox --repeat 6", "at most 10"),
    text("imagine-repeat-zero", "imagine", "a fox --repeat 0", "--repeat must be at least 1"),
    options(
        "imagine-option-repeat-in-prompt-zero",
        "imagine",
        {"prompt": "a fox --repeat 0"},
        "--repeat must be a whole number",
    ),
    text("imagine-unclosed-brace", "imagine", "{red, blue fox", "never closed"),
]

DESCRIBE_BLEND_CASES = [
    options("describe-nothing", "describe", {}, "`/describe` needs an image"),
    text("describe-ftp-url", "describe", "ftp://example.org/fox.png", "http or https"),
    text("describe-cdn-url", "describe", CDN_IMAGE.url, "cdn.discordapp.com"),
    text("describe-mode-unknown", "describe", "https://example.org/a.png --mode hyper", "turbo"),
    options("describe-pdf", "describe", {}, "not an image", attachments={"image": PDF}),
    options("describe-too-large", "describe", {}, "too large", attachments={"image": HUGE_IMAGE}),
    options(
        "blend-pdf",
        "blend",
        {},
        "not an image",
        attachments={"image1": IMAGE, "image2": PDF},
    ),
    options("blend-one-image", "blend", {}, "/blend needs image2", attachments={"image1": IMAGE}),
    options("blend-no-image", "blend", {}, "/blend needs image1"),
    text(
        "blend-dimension-unknown",
        "blend",
        "--dimension round",
        "square, portrait, landscape",
        attachments={"image1": IMAGE, "image2": IMAGE},
    ),
    text(
        "blend-free-text",
        "blend",
        "two foxes",
        "takes no free text",
        attachments={"image1": IMAGE, "image2": IMAGE},
    ),
    options(
        "blend-cdn-images",
        "blend",
        {},
        "https link",
        attachments={"image1": CDN_IMAGE, "image2": CDN_IMAGE},
    ),
]

TXT2IMG = "diffusion.txt2img"
DIFFUSION_CASES = [
    text("txt2img-width-2048", TXT2IMG, "a fox --width 2048", "--width", "at most 1024"),
    text("txt2img-height-1025", TXT2IMG, "a fox --height 1025", "--height", "at most 1024"),
    text("txt2img-width-zero", TXT2IMG, "a fox --w 0", "at least 1"),
    options("txt2img-width-fraction", TXT2IMG, {"prompt": "a fox", "width": 512.5}, "whole number"),
    text("txt2img-steps-30", TXT2IMG, "a fox --steps 30", ONE_OF_STEPS),
    options("txt2img-steps-100", TXT2IMG, {"prompt": "a fox", "steps": "100"}, ONE_OF_STEPS),
    text("txt2img-guidance-below-1", TXT2IMG, "a fox --guidance 0.5", "at least 1"),
    text("txt2img-guidance-above-20", TXT2IMG, "a fox --cfg 25", "at most 20"),
    text("txt2img-seed-negative", TXT2IMG, "a fox --seed -5", "--seed", "at least 0"),
    text("txt2img-seed-word", TXT2IMG, "a fox --seed abc", "whole number"),
    text("txt2img-missing-prompt", TXT2IMG, "--width 512", "needs the prompt"),
    text("txt2img-unknown-flag", TXT2IMG, "a fox --sampler euler", "no option --sampler"),
    text(
        "img2img-strength-above-1",
        "diffusion.img2img",
        "a fox --strength 1.5",
        "--strength",
        "at most 1",
        attachments=INIT,
    ),
    options(
        "img2img-strength-negative",
        "diffusion.img2img",
        {"prompt": "a fox", "strength": -0.2},
        "at least 0",
        attachments=INIT,
    ),
    text("img2img-missing-init", "diffusion.img2img", "a fox", "needs init_image"),
    text(
        "img2img-init-too-large",
        "diffusion.img2img",
        "a fox",
        "too large",
        attachments={"init_image": HUGE_IMAGE},
    ),
    text(
        "upscale-scale-8",
        "diffusion.upscale",
        "--scale 8",
        "at most 4",
        attachments={"image": IMAGE},
    ),
    text(
        "upscale-scale-1",
        "diffusion.upscale",
        "--scale 1",
        "at least 2",
        attachments={"image": IMAGE},
    ),
    text("upscale-missing-image", "diffusion.upscale", "--scale 2", "needs image"),
    text(
        "controlnet-conditioning-below-1",
        "diffusion.controlnet",
        "a fox --controlnet canny --model m1 --conditioning 0.5",
        "--conditioning",
        "at least 1",
        attachments=CONTROL,
    ),
    text(
        "controlnet-conditioning-above-20",
        "diffusion.controlnet",
        "a fox --controlnet canny --model m1 --conditioning 21",
        "at most 20",
        attachments=CONTROL,
    ),
    text(
        "controlnet-missing-model",
        "diffusion.controlnet",
        "a fox --model m1",
        "needs --controlnet",
        attachments=CONTROL,
    ),
    text(
        "controlnet-missing-checkpoint",
        "diffusion.controlnet",
        "a fox --controlnet canny",
        "--model",
        attachments=CONTROL,
    ),
    text(
        "controlnet-width-4096",
        "diffusion.controlnet",
        "a fox --controlnet canny --model m1 --width 4096",
        "at most 1024",
        attachments=CONTROL,
    ),
]

OTHER_COMMAND_CASES = [
    text("settings-temperature-9", "settings", "--temp 9", "at most 2"),
    text("settings-model-unknown", "settings", "--model llm-9", "must be one of"),
    text("settings-ar-not-a-ratio", "settings", "--ar 1x9", "must look like 16:9"),
    text("settings-mode-unknown", "settings", "--mode blazing", ONE_OF_MODES),
    text("settings-llm4-free-plan", "settings", "--model llm-4", "developer plan", plan="free"),
    text("usage-free-text", "usage", "now please", "takes no free text"),
    text("unknown-command", "paint", "a fox", "does not know the command /paint"),
]

BUTTON_AND_FORM_CASES = [
    press("press-upscale5", "upscale5", "grid", "no longer supported"),
    press("press-variation0", "variation0", "grid", "no longer supported"),
    press("press-describe-pick5", "describe_pick5", "describe", "no longer supported"),
    press("press-light-on-v6", "upscale_light", "upscale", "does not apply"),
    press("press-grid-upscale-on-upscale", "upscale1", "upscale", "does not apply"),
    press("press-diffusion-button-on-task", "diff_reroll", "grid", "does not work"),
    form("zoom-2.5", "outpaint_custom", "upscale", {"zoom": "2.5"}, "at most 2"),
    form("zoom-1", "outpaint_custom", "upscale", {"zoom": "1"}, "above 1"),
    form("zoom-word", "outpaint_custom", "upscale", {"zoom": "huge"}, "number above 1"),
    form("zoom-negative", "outpaint_custom", "upscale", {"zoom": "-1.5x"}, "above 1"),
    form("region-unknown-preset", "vary_region", "upscale", {"region": "left-ish"}, "left half"),
    form("region-past-edge", "vary_region", "upscale", {"region": "10,10,95,50"}, "image's edge"),
    form("region-zero-width", "vary_region", "upscale", {"region": "10,10,0,50"}, "above 0"),
    form("region-three-numbers", "vary_region", "upscale", {"region": "10,10,50"}, "four numbers"),
    form("region-over-100", "vary_region", "upscale", {"region": "0,0,150,50"}, "0 and 100"),
    form("region-empty", "vary_region", "upscale", {"region": "  "}, "which part"),
    form(
        "init-strength-1.7",
        "diff_init",
        "diffusion",
        {"prompt": "a fox", "strength": "1.7"},
        "at most 1",
    ),
    form(
        "init-strength-word",
        "diff_init",
        "diffusion",
        {"prompt": "a fox", "strength": "strong"},
        "must be a number",
    ),
    form("init-no-prompt", "diff_init", "diffusion", {"prompt": ""}, "needs a prompt"),
    form(
        "settings-form-temperature",
        "settings",
        "grid",
        {"temperature": "3"},
        "at most 2",
        ref="me",
    ),
]

CORE_CASES: tuple[CoreCase, ...] = (
    *CHAT_CASES,
    *IMAGINE_CASES,
    *DESCRIBE_BLEND_CASES,
    *DIFFUSION_CASES,
    *OTHER_COMMAND_CASES,
    *BUTTON_AND_FORM_CASES,
)


@dataclass(frozen=True)
class WebCase:
    """One invalid request to the playground and the words of its ``400`` answer.

    ``uploads`` are the files sent to ``/api/upload`` (name, bytes, content type): their
    refusal is checked when ``command`` is empty; otherwise they must be accepted and are
    attached to ``command``.
    """

    id: str
    keywords: tuple[str, ...]
    uploads: tuple[tuple[str, bytes, str], ...] = ()
    command: str = ""
    field_name: str = "file"


def png_bytes(seed: int = 0, size: int = 8) -> bytes:
    """A small valid PNG (distinct per ``seed``)."""
    import io

    from PIL import Image

    buffer = io.BytesIO()
    Image.new("RGB", (size, size), (seed * 37 % 256, 90, 160)).save(buffer, format="PNG")
    return buffer.getvalue()


WEB_UPLOAD_LIMIT = 64 * 1024
"""``[limits] max_upload_bytes`` of the web cases' genbot."""


def _pngs(count: int) -> tuple[tuple[str, bytes, str], ...]:
    return tuple((f"fox{i}.png", png_bytes(i), "image/png") for i in range(count))


WEB_CASES: tuple[WebCase, ...] = (
    WebCase(
        "upload-archive", ("not an image",), (("notes.zip", b"PK\x03\x04", "application/zip"),)
    ),
    WebCase(
        "upload-pdf-named-png",
        ("not an image", "png"),
        (("fox.png", b"%PDF-1.7 not really", "image/png"),),
    ),
    WebCase(
        "upload-too-large",
        ("too large", "64 KiB"),
        (("big.png", png_bytes() + b"\0" * WEB_UPLOAD_LIMIT, "image/png"),),
    ),
    WebCase("upload-empty", ("is empty",), (("void.png", b"", "image/png"),)),
    WebCase("upload-eleven-files", ("at most 10 images",), _pngs(11)),
    WebCase("upload-wrong-field", ("named 'file'",), _pngs(1), field_name="image"),
    WebCase("describe-two-images", ("takes one image", "attached 2"), _pngs(2), "/describe"),
    WebCase("blend-six-images", ("at most 5 images", "attached 6"), _pngs(6), "/blend"),
    WebCase("usage-with-image", ("does not take images",), _pngs(1), "/usage"),
    WebCase("imagine-six-images", ("at most 5 images", "attached 6"), _pngs(6), "/imagine a fox"),
    WebCase("command-too-long", ("your message", "at most 4,000"), (), "/chat " + "a" * 4001),
    WebCase("command-unknown", ("unknown command", "/paint"), (), "/paint a fox"),
    WebCase("diffusion-no-subcommand", ("needs a subcommand", "txt2img"), (), "/diffusion"),
    WebCase("diffusion-unknown-subcommand", ("unknown subcommand",), (), "/diffusion sketch x"),
    WebCase("command-without-slash", ("starts with '/'",), (), "imagine a fox"),
)
