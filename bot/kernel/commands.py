"""The catalogue of genbot's slash commands, declared once for the core and every adapter.

Discord builds its app commands from it, Slack and the web playground show it as help, and the
core validates options against it and parses text-only commands (``a fox --ar 16:9 --fast``).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Literal, get_args

from bot.api import CHAT_MODELS as CHAT_MODELS
from bot.api import INFERENCE_STEPS, BlendDimension, ProcessMode
from bot.kernel.events import ChatModelChoices, DiffusionModelChoices, EventRouter
from bot.kernel.i18n import AUTO_LANGUAGE, LANGUAGES, N_
from bot.kernel.references import MAX_REFERENCES, REFERENCE_OPTIONS, ROLE_DESCRIPTIONS

OptionType = Literal["string", "integer", "number", "boolean", "attachment"]
Offered = Literal["chat_models", "diffusion_models"]
"""The lists whose values are offered as an option is typed (see :func:`offered`)."""

PROCESS_MODES: tuple[str, ...] = get_args(ProcessMode)
BLEND_DIMENSIONS: tuple[str, ...] = get_args(BlendDimension)
DIFFUSION_STEPS: tuple[str, ...] = INFERENCE_STEPS
MAX_ALTERNATIVES = 5
"""The most answers per chat message (``n``): one row of "Use" buttons."""


MAX_REPEAT = 40
"""The most ``--repeat`` takes (Midjourney's own most); ``[limits] max_jobs_per_command`` caps
the jobs of one command below it."""
MAX_SEED = 2**32 - 1
"""Seeds are 32-bit (the provider's own random seeds are; Midjourney's --seed is 0 to 2³²−1)."""


@dataclass(frozen=True)
class Option:
    """One option of a command.

    ``flags`` are the text spellings (``--ar``); ``flag_values`` are bare flags that set a value
    (``--fast`` sets ``process_mode`` to ``fast``). ``autocomplete`` names the list whose values
    adapters suggest as the option is typed (chat models, which are also its ``choices``; the
    diffusion models genbot knows, which are not the only ones allowed).
    """

    name: str
    type: OptionType
    description: str
    required: bool = False
    choices: tuple[str, ...] = ()
    min_value: float | None = None
    max_value: float | None = None
    flags: tuple[str, ...] = ()
    flag_values: tuple[tuple[str, str], ...] = ()
    autocomplete: Offered | None = None
    documents: bool = False
    """An ``attachment`` option that takes a text file or PDF, not an image (``/chat file``):
    platforms whose commands carry no files never fill it with images shared earlier."""


@dataclass(frozen=True)
class CommandSpec:
    """A command. ``name`` is dotted for group members (``diffusion.txt2img``).

    ``free_text`` names the option that takes the text left after flags are parsed (the prompt);
    ``keeps_unknown_flags`` leaves unknown ``--x`` flags in that text (Midjourney parameters
    such as ``--v 6`` belong to the prompt).
    """

    name: str
    description: str
    options: tuple[Option, ...] = ()
    free_text: str | None = None
    keeps_unknown_flags: bool = False
    examples: tuple[str, ...] = field(default=())
    numbered_uploads: int = 0
    """On text platforms, up to this many images sent with the command are numbered
    (``upload1``…, named ``#1``… in the text: :mod:`bot.kernel.references`) instead of
    filling the attachment options, whose names are Discord's."""
    expands: bool = False
    """The prompt is expanded before it is read: ``--name`` (saved options), the user's suffix,
    ``{a, b}`` permutations and ``--repeat`` (:mod:`bot.kernel.expansion`)."""
    files_by_form: bool = False
    """Where forms take files (:attr:`bot.kernel.surface.PlatformProfile.forms_take_files`), the
    command may come without its attachments: the feature asks for them in a form."""

    def option(self, name: str) -> Option | None:
        """The option called ``name``, if any."""
        return next((o for o in self.options if o.name == name), None)


_PROMPT = Option("prompt", "string", N_("What to create"), required=True)
_ASPECT = Option(
    "aspect_ratio", "string", N_("Aspect ratio such as 1:1, 16:9, 2:3"), flags=("--ar", "--aspect")
)
_MODE = Option(
    "process_mode",
    "string",
    N_("Speed: relax, mixed, fast or turbo"),
    choices=PROCESS_MODES,
    flags=("--mode",),
    flag_values=tuple((f"--{m}", m) for m in PROCESS_MODES),
)
_DIFFUSION_COMMON: tuple[Option, ...] = (
    Option("negative_prompt", "string", N_("What to avoid"), flags=("--neg", "--no")),
    Option(
        "model_id",
        "string",
        N_("Checkpoint model id"),
        flags=("--model",),
        autocomplete="diffusion_models",
    ),
    Option(
        "width",
        "integer",
        N_("Width in pixels (at most 1024)"),
        min_value=1,
        max_value=1024,
        flags=("--width", "--w"),
    ),
    Option(
        "height",
        "integer",
        N_("Height in pixels (at most 1024)"),
        min_value=1,
        max_value=1024,
        flags=("--height", "--h"),
    ),
    Option("steps", "string", N_("Inference steps"), choices=DIFFUSION_STEPS, flags=("--steps",)),
    Option(
        "guidance_scale",
        "number",
        N_("Guidance scale, 1 to 20"),
        min_value=1,
        max_value=20,
        flags=("--guidance", "--cfg"),
    ),
    Option(
        "seed",
        "integer",
        N_("Seed, 0 to 4294967295 (random when absent)"),
        min_value=0,
        max_value=MAX_SEED,
        flags=("--seed",),
    ),
    Option("lora_model", "string", N_("LoRA model ids, comma separated"), flags=("--lora",)),
    Option("lora_strength", "number", N_("LoRA strength"), flags=("--lora-strength",)),
)

_REFERENCE_OPTIONS: tuple[Option, ...] = tuple(
    Option(name, "attachment", ROLE_DESCRIPTIONS[role]) for name, role in REFERENCE_OPTIONS.items()
)

COMMANDS: tuple[CommandSpec, ...] = (
    CommandSpec(
        "chat",
        N_("Talk with the model; the answer streams in"),
        (
            Option("prompt", "string", N_("Your message"), required=True),
            Option(
                "model",
                "string",
                N_("Chat model"),
                choices=CHAT_MODELS,
                flags=("--model",),
                autocomplete="chat_models",
            ),
            Option(
                "temperature",
                "number",
                N_("Sampling temperature, 0 to 2"),
                min_value=0,
                max_value=2,
                flags=("--temperature", "--temp"),
            ),
            Option(
                "max_tokens",
                "integer",
                N_("Longest answer in tokens"),
                min_value=1,
                flags=("--max-tokens",),
            ),
            Option(
                "system", "string", N_("System prompt for this conversation"), flags=("--system",)
            ),
            Option(
                "file",
                "attachment",
                N_("A text file or PDF to read with your message"),
                documents=True,
            ),
        ),
        free_text="prompt",
        examples=(N_("/chat what is a good name for a fox? --model llm-3.5-turbo --temp 0.7"),),
    ),
    CommandSpec(
        "imagine",
        N_("Create four images from a prompt"),
        (
            _PROMPT,
            _ASPECT,
            _MODE,
            Option(
                "skip_prompt_check",
                "boolean",
                N_("Skip the provider's prompt check"),
                flag_values=(("--skip-check", "true"),),
            ),
            *_REFERENCE_OPTIONS,
            Option(
                "repeat",
                "integer",
                N_("Run it this many times (each a job of its own)"),
                min_value=1,
                max_value=MAX_REPEAT,
                flags=("--repeat", "--r"),
            ),
        ),
        free_text="prompt",
        keeps_unknown_flags=True,
        examples=(
            N_("/imagine a fox in the snow --ar 16:9 --fast"),
            N_("/imagine a fox --sref #2 --sw 200 (with 2 images attached: #1 an image prompt)"),
            N_("/imagine a {red, blue} fox --repeat 2"),
        ),
        numbered_uploads=MAX_REFERENCES,
        expands=True,
    ),
    CommandSpec(
        "describe",
        N_("Four prompts that could have made an image"),
        (
            Option("image", "attachment", N_("The image to describe")),
            Option("url", "string", N_("Or the image's https URL"), flags=("--url",)),
            _MODE,
        ),
        free_text="url",
        examples=(N_("/describe https://example.com/fox.png"),),
    ),
    CommandSpec(
        "blend",
        N_("Blend two to five images"),
        (
            Option("image1", "attachment", N_("First image"), required=True),
            Option("image2", "attachment", N_("Second image"), required=True),
            Option("image3", "attachment", N_("Third image")),
            Option("image4", "attachment", N_("Fourth image")),
            Option("image5", "attachment", N_("Fifth image")),
            Option(
                "dimension",
                "string",
                N_("Shape of the result"),
                choices=BLEND_DIMENSIONS,
                flags=("--dimension", "--dim"),
            ),
            _MODE,
        ),
        examples=(N_("/blend (with 2–5 images attached) --dimension portrait"),),
        files_by_form=True,
    ),
    CommandSpec(
        "diffusion.txt2img",
        N_("Diffusion: text to image"),
        (_PROMPT, *_DIFFUSION_COMMON),
        free_text="prompt",
        examples=(N_("/diffusion txt2img a fox --width 768 --steps 31 --seed 7"),),
    ),
    CommandSpec(
        "diffusion.img2img",
        N_("Diffusion: image to image"),
        (
            _PROMPT,
            Option("init_image", "attachment", N_("The starting image"), required=True),
            Option(
                "strength",
                "number",
                N_("How much to change it, 0 to 1"),
                min_value=0,
                max_value=1,
                flags=("--strength",),
            ),
            *_DIFFUSION_COMMON,
        ),
        free_text="prompt",
        examples=(
            N_("/diffusion img2img a fox in autumn --strength 0.6 (with an image attached)"),
        ),
        files_by_form=True,
    ),
    CommandSpec(
        "diffusion.upscale",
        N_("Diffusion: upscale an image"),
        (
            Option("image", "attachment", N_("The image to upscale"), required=True),
            Option(
                "scale", "integer", N_("Scale factor"), min_value=2, max_value=4, flags=("--scale",)
            ),
        ),
        examples=(N_("/diffusion upscale --scale 2 (with an image attached)"),),
    ),
    CommandSpec(
        "diffusion.controlnet",
        N_("Diffusion: generation guided by a control image"),
        (
            _PROMPT,
            Option("init_image", "attachment", N_("The starting image"), required=True),
            Option(
                "controlnet_model",
                "string",
                N_("ControlNet model id (canny, depth, openpose…)"),
                required=True,
                flags=("--controlnet",),
            ),
            Option("control_image", "attachment", N_("The control image")),
            Option("mask_image", "attachment", N_("A mask image")),
            Option(
                "controlnet_type", "string", N_("Preprocessor type"), flags=("--controlnet-type",)
            ),
            Option(
                "strength",
                "number",
                N_("How much to change the image, 0 to 1"),
                min_value=0,
                max_value=1,
                flags=("--strength",),
            ),
            Option(
                "controlnet_conditioning_scale",
                "number",
                N_("Conditioning scale, 1 to 20"),
                min_value=1,
                max_value=20,
                flags=("--conditioning",),
            ),
            *_DIFFUSION_COMMON,
        ),
        free_text="prompt",
        examples=(N_("/diffusion controlnet a fox --controlnet canny (with an image attached)"),),
        files_by_form=True,
    ),
    CommandSpec(
        "settings",
        N_("Show or change your defaults (admins: the channel's or workspace's)"),
        (
            Option(
                "model",
                "string",
                N_("Default chat model"),
                choices=CHAT_MODELS,
                flags=("--model",),
                autocomplete="chat_models",
            ),
            Option(
                "system_prompt", "string", N_("System prompt for this channel"), flags=("--system",)
            ),
            Option(
                "process_mode",
                "string",
                N_("Default image speed"),
                choices=PROCESS_MODES,
                flags=("--mode",),
            ),
            Option("aspect_ratio", "string", N_("Default aspect ratio"), flags=("--ar",)),
            Option(
                "temperature",
                "number",
                N_("Default temperature, 0 to 2"),
                min_value=0,
                max_value=2,
                flags=("--temperature", "--temp"),
            ),
            Option(
                "remix",
                "boolean",
                N_("Remix: change the prompt before 🔄, V1–V4, pan and zoom run"),
                flags=("--remix",),
            ),
            Option(
                "stream",
                "boolean",
                N_("Admins: answers appear as they are written (false: all at once)"),
                flags=("--stream",),
            ),
            Option(
                "top_p",
                "number",
                N_("Admins: nucleus sampling, 0 to 1"),
                min_value=0,
                max_value=1,
                flags=("--top-p",),
            ),
            Option(
                "presence_penalty",
                "number",
                N_("Admins: presence penalty, -2 to 2"),
                min_value=-2,
                max_value=2,
                flags=("--presence-penalty",),
            ),
            Option(
                "frequency_penalty",
                "number",
                N_("Admins: frequency penalty, -2 to 2"),
                min_value=-2,
                max_value=2,
                flags=("--frequency-penalty",),
            ),
            Option(
                "stop",
                "string",
                N_("Admins: up to 4 stop sequences, separated by | (- clears)"),
                flags=("--stop",),
            ),
            Option(
                "n",
                "integer",
                N_("Admins: answers per message, 1 to 5; extra ones are offered as alternatives"),
                min_value=1,
                max_value=MAX_ALTERNATIVES,
                flags=("--n",),
            ),
            Option(
                "language",
                "string",
                N_("The language genbot speaks to you (auto: your app's)"),
                choices=(AUTO_LANGUAGE, *LANGUAGES),
                flags=("--language", "--lang"),
            ),
            Option(
                "scope",
                "string",
                N_("Whose defaults: me (default), channel or workspace (admins)"),
                choices=("me", "channel", "workspace"),
                flags=("--scope",),
            ),
        ),
        examples=(N_("/settings --model llm-4 --ar 16:9"),),
    ),
    CommandSpec("usage", N_("Your tokens and credits today")),
    CommandSpec(
        "jobs",
        N_("Your finished jobs, newest first: search their prompts, filter by type, channel, date"),
        (
            Option("text", "string", N_("Words of the prompt")),
            Option(
                "type",
                "string",
                N_("imagine, upscale, describe, blend or diffusion"),
                choices=("imagine", "upscale", "describe", "blend", "diffusion"),
                flags=("--type",),
            ),
            Option("channel", "string", N_("A channel (#channel, or here)"), flags=("--channel",)),
            Option(
                "date",
                "string",
                N_("2026-11-29, 2026-11, today, or 2026-11-01..2026-11-15 (UTC)"),
                flags=("--date",),
            ),
            Option(
                "scope",
                "string",
                N_("me (default) or workspace (admins: everyone's jobs)"),
                choices=("me", "workspace"),
                flags=("--scope",),
            ),
            Option(
                "export",
                "boolean",
                N_("Your jobs found, images and a manifest, as a zip sent to you privately"),
                flags=("--export",),
            ),
        ),
        free_text="text",
        examples=(
            N_("/jobs lighthouse --type imagine --date 2026-11"),
            N_("/jobs export --date 2026-11"),
        ),
    ),
    CommandSpec(
        "show",
        N_("Post one of your finished jobs again here, with its buttons"),
        (
            Option(
                "job_id", "string", N_("The job's id (a result's ℹ️ info gives it)"), required=True
            ),
        ),
        free_text="job_id",
        examples=(N_("/show Zx3_k9Lq2bWe"),),
    ),
    CommandSpec(
        "forget-me",
        N_("What genbot keeps about you, and deleting it (admins: another user's)"),
        (Option("user", "string", N_("Admins: the user whose data to delete (a mention or id)")),),
        free_text="user",
        examples=(N_("/forget-me"), N_("/forget-me <@user>")),
    ),
    CommandSpec(
        "admin.moderation",
        N_("Admins: this workspace's moderation rules (add, remove, list), and bans (ban, unban)"),
        (
            Option(
                "action",
                "string",
                N_("add, remove or list rules; ban or unban a user"),
                choices=("add", "remove", "list", "ban", "unban"),
            ),
            Option(
                "entry",
                "string",
                N_("The word, phrase or pattern (add, remove); the user (ban, unban)"),
            ),
            Option("category", "string", N_("What a refusal names (add)"), flags=("--category",)),
            Option(
                "pattern",
                "boolean",
                N_("The entry is a regular expression (add)"),
                flags=("--pattern",),
            ),
            Option(
                "minutes",
                "integer",
                N_("How long the ban lasts (ban; default: the longest configured ban)"),
                min_value=1,
                max_value=30 * 24 * 60,
                flags=("--minutes",),
            ),
        ),
        free_text="entry",
        examples=(
            N_("/admin moderation add nude --category nsfw"),
            N_("/admin moderation remove nude"),
            N_("/admin moderation list"),
            N_("/admin moderation ban <@user> --minutes 60"),
            N_("/admin moderation unban <@user>"),
        ),
    ),
    CommandSpec(
        "admin.audit",
        N_("Admins: this workspace's audit log (admin actions, refusals, bans), or its export"),
        (
            Option("user", "string", N_("Only what this user did or underwent"), flags=("--user",)),
            Option(
                "kind",
                "string",
                N_("Only this kind (settings, moderation, moderation.banned, job…)"),
                flags=("--kind",),
            ),
            Option(
                "days",
                "integer",
                N_("Only the last N days"),
                min_value=1,
                max_value=3650,
                flags=("--days",),
            ),
            Option(
                "page", "integer", N_("Which page, newest first"), min_value=1, flags=("--page",)
            ),
            Option(
                "export",
                "boolean",
                N_("Every matching entry as a JSON-lines file, sent to you privately"),
                flags=("--export",),
            ),
        ),
        free_text="user",
        examples=(
            N_("/admin audit --kind moderation --days 7"),
            N_("/admin audit <@user> --page 2"),
            N_("/admin audit --days 30 --export"),
        ),
    ),
    CommandSpec(
        "prefer.option",
        N_("Your saved options: --name in any /imagine stands for them (set, list, delete)"),
        (
            Option(
                "action",
                "string",
                N_("set, list or delete"),
                choices=("set", "list", "delete"),
            ),
            Option("name", "string", N_("The option's name (neon: used as --neon)")),
            Option("value", "string", N_("What --name stands for (set): --style raw --sref <url>")),
            Option(
                "here",
                "boolean",
                N_("Only in this channel (set, delete; list shows both)"),
                flags=("--here",),
            ),
        ),
        free_text="value",
        keeps_unknown_flags=True,
        examples=(
            N_("/prefer option set neon --style raw --sref https://example.com/neon.png"),
            N_("/prefer option list"),
            N_("/prefer option delete neon"),
        ),
    ),
    CommandSpec(
        "prefer.suffix",
        N_("Your suffix: text appended to every /imagine prompt (- removes it)"),
        (
            Option("value", "string", N_("The suffix (empty: show it; -: remove it)")),
            Option("here", "boolean", N_("Only in this channel"), flags=("--here",)),
        ),
        free_text="value",
        keeps_unknown_flags=True,
        examples=(N_("/prefer suffix --ar 16:9 --v 6"), N_("/prefer suffix -")),
    ),
    CommandSpec(
        "help",
        N_("What genbot can do"),
        (Option("command", "string", N_("Only this command, or group (imagine, diffusion…)")),),
        free_text="command",
        examples=(N_("/help diffusion"),),
    ),
)

COMMANDS_BY_NAME: dict[str, CommandSpec] = {c.name: c for c in COMMANDS}


def command(name: str) -> CommandSpec:
    """The command called ``name``; raises ``KeyError`` for an unknown one."""
    return COMMANDS_BY_NAME[name]


def offered_models(router: EventRouter) -> tuple[str, ...]:
    """The chat models a picker offers: the router's (its plan's, see
    :class:`bot.kernel.events.ChatModelChoices`), else every model."""
    if isinstance(router, ChatModelChoices):
        return tuple(router.chat_models())
    return CHAT_MODELS


def offered(router: EventRouter) -> dict[Offered, tuple[str, ...]]:
    """The values pickers offer now, by list (:attr:`Option.autocomplete`): the chat models of
    :func:`offered_models` and the diffusion models the router knows
    (:class:`bot.kernel.events.DiffusionModelChoices`; none when it knows none)."""
    known = router.diffusion_models() if isinstance(router, DiffusionModelChoices) else ()
    return {"chat_models": offered_models(router), "diffusion_models": tuple(known)}


EVERY_CHAT_MODEL: dict[Offered, tuple[str, ...]] = {
    "chat_models": CHAT_MODELS,
    "diffusion_models": (),
}
"""What pickers offer without a router to ask: every chat model, no diffusion model."""


def option_choices(
    option: Option, lists: Mapping[Offered, Sequence[str]] = EVERY_CHAT_MODEL
) -> tuple[str, ...]:
    """The values to offer for ``option``: its list's in ``lists`` (see :func:`offered`) for an
    autocompleted option, else its own choices."""
    if option.autocomplete is None:
        return option.choices
    return tuple(lists.get(option.autocomplete, ()))
