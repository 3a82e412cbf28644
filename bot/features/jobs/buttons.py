"""genbot's button vocabulary: the actions, the rows they are drawn in, their labels, and the
forms (modals) some presses open. Pure. How a result arranges its buttons is
:mod:`bot.features.jobs.result_messages`; what a press asks of the provider is each feature's
table (:data:`bot.features.jobs.follow_up_calls.FOLLOW_UPS` for image follow-ups).

Action names are genbot's own (:mod:`bot.features.jobs.follow_ups` maps a provider's spelling to
them): grid ``upscale1..4``, ``reroll``, ``variation1..4``; upscale follow-ups ``high_variation``,
``low_variation``, ``vary_region``, ``outpaint_2``, ``outpaint_1.5``, ``outpaint_custom``,
``outpaint_square``, ``pan_left|right|up|down``,
``upscale_subtle|creative|2x|4x|light|beta``, ``seed``; describe ``describe_pick1..4``,
``describe_again`` (🔄) and ``describe_all`` (Imagine all);
diffusion ``diff_reroll``, ``diff_upscale``, ``diff_init``; and ``settings`` (a form only).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from bot.features.jobs.forms import form_for
from bot.kernel import (
    CHAT_MODELS,
    INFO_ACTION,
    REMIX_ACTIONS,
    REMIX_PREFIX,
    Choice,
    CommandError,
    FormError,
    Modal,
    ModalField,
    Option,
    OptionValue,
    command,
    option_choices,
    validate_options,
)

GRID_ROWS: tuple[tuple[str, ...], ...] = (
    ("upscale1", "upscale2", "upscale3", "upscale4", "reroll"),
    ("variation1", "variation2", "variation3", "variation4"),
)
UPSCALE_ROWS: tuple[tuple[str, ...], ...] = (
    ("high_variation", "low_variation", "vary_region"),
    ("outpaint_2", "outpaint_1.5", "outpaint_custom", "outpaint_square"),
    ("pan_left", "pan_right", "pan_up", "pan_down"),
    (
        "upscale_subtle",
        "upscale_creative",
        "upscale_2x",
        "upscale_4x",
        "upscale_light",
        "upscale_beta",
    ),
)
GRID_ACTIONS = frozenset(a for row in GRID_ROWS for a in row)
UPSCALE_ACTIONS = frozenset(a for row in UPSCALE_ROWS for a in row)
DESCRIBE_ACTIONS = ("describe_pick1", "describe_pick2", "describe_pick3", "describe_pick4")
DIFFUSION_ACTIONS = ("diff_reroll", "diff_upscale", "diff_init")
REFERENCE_ACTION = "use_reference"
"""Under every upscale and diffusion image: a form whose prompt is imagined with the image as a
reference (:mod:`bot.features.jobs.images`)."""
MAX_BUTTONS_PER_ROW = 5
MAX_ROWS = 5

LABELS: dict[str, str] = {
    **{f"upscale{i}": f"U{i}" for i in range(1, 5)},
    **{f"variation{i}": f"V{i}" for i in range(1, 5)},
    "reroll": "🔄",
    "high_variation": "Vary (Strong)",
    "low_variation": "Vary (Subtle)",
    "vary_region": "Vary (Region)",
    "outpaint_2": "Zoom Out 2x",
    "outpaint_1.5": "Zoom Out 1.5x",
    "outpaint_custom": "Custom Zoom",
    "outpaint_square": "Make Square",
    "pan_left": "⬅️",
    "pan_right": "➡️",
    "pan_up": "⬆️",
    "pan_down": "⬇️",
    "upscale_subtle": "Upscale (Subtle)",
    "upscale_creative": "Upscale (Creative)",
    "upscale_2x": "Upscale (2x)",
    "upscale_4x": "Upscale (4x)",
    "upscale_light": "Upscale (Light)",
    "upscale_beta": "Upscale (Beta)",
    "seed": "🌱 Seed",
    **{f"describe_pick{i}": str(i) for i in range(1, 5)},
    "describe_again": "🔄",
    "describe_all": "Imagine all",
    "diff_reroll": "🔄",
    "diff_upscale": "Upscale",
    "diff_init": "Use as init",
    REFERENCE_ACTION: "Use as reference",
    INFO_ACTION: "ℹ️",
}
"""The label of every button action."""
LABELS.update({action: LABELS[action.removeprefix(REMIX_PREFIX)] for action in REMIX_ACTIONS})


def _choices_hint(choices: tuple[str, ...]) -> str:
    listed = ", ".join(choices)
    return listed if len(listed) <= 100 else f"e.g. {choices[0]}"


def modal_for(
    action: str,
    ref: str,
    *,
    prompt: str = "",
    defaults: Mapping[str, str] | None = None,
    models: Sequence[str] = CHAT_MODELS,
) -> Modal | None:
    """The form a press of ``action`` opens, or ``None`` when it opens none.

    ``prompt`` pre-fills prompt fields (the parent job's prompt); ``defaults`` pre-fills the
    settings form (option name → current value), whose model field suggests ``models``. The
    editors (Custom Zoom, Vary (Region), Use as init) are :mod:`bot.features.jobs.forms`; settings
    fields are the option names of ``/settings``.
    """
    editor = form_for(action, ref, prompt)
    if editor is not None:
        return editor
    if action == "settings":
        current = defaults or {}
        spec = command("settings")
        names = SHARED_SETTINGS_FORM if ref in ("channel", "workspace") else OWN_SETTINGS_FORM
        fields = tuple(
            _settings_field(option, current.get(option.name, ""), models)
            for name in names
            if (option := spec.option(name)) is not None
        )
        return Modal("genbot settings", action, ref, fields)
    return None


OWN_SETTINGS_FORM = ("model", "temperature", "process_mode", "aspect_ratio", "remix")
"""A user's own settings form: their defaults (five fields: all a Discord form shows)."""
SHARED_SETTINGS_FORM = ("model", "temperature", "process_mode", "aspect_ratio", "system_prompt")
"""A channel's or workspace's settings form (admins): their defaults and the system prompt."""
ON_OFF = (Choice("On", "on"), Choice("Off", "off"))
FORM_LABELS = {"remix": "Remix: edit the prompt of 🔄, V, pan, zoom"}
"""Labels for options whose description is longer than a form label (45 characters)."""


def _settings_field(option: Option, current: str, models: Sequence[str]) -> ModalField:
    """A settings form field: a select for yes/no and fixed choices, else text (blank: left
    as it is)."""
    label = FORM_LABELS.get(option.name, option.description)[:45]
    if option.type == "boolean":
        return ModalField(
            option.name, label, "Unchanged", current, False, kind="select", choices=ON_OFF
        )
    if option.choices and option.autocomplete is None:
        choices = tuple(Choice(choice, choice) for choice in option.choices)
        return ModalField(
            option.name, label, "Unchanged", current, False, kind="select", choices=choices
        )
    long = option.name == "system_prompt"
    hint = _choices_hint(option_choices(option, {"chat_models": tuple(models)}))
    return ModalField(option.name, label, hint, current, False, 4000 if long else 100, long)


def read_settings(values: Mapping[str, str]) -> dict[str, OptionValue]:
    """Validate a submitted settings form like ``/settings`` options (blank fields are left
    out); a refused value is a :class:`~bot.kernel.FormError` about its field."""
    spec = command("settings")
    checked: dict[str, OptionValue] = {}
    for name, value in values.items():
        if not value.strip():
            continue
        try:
            checked.update(validate_options(spec, {name: value}))
        except CommandError as error:
            raise FormError(name, str(error)) from None
    return checked
