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
    AUTO_LANGUAGE,
    CHAT_MODELS,
    INFO_ACTION,
    LANGUAGES,
    N_,
    REMIX_ACTIONS,
    REMIX_PREFIX,
    Choice,
    CommandError,
    FormError,
    Modal,
    ModalField,
    Option,
    OptionValue,
    _,
    command,
    language_name,
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
    # Translators: buttons under an upscaled image (Midjourney's names for them).
    "high_variation": N_("Vary (Strong)"),
    "low_variation": N_("Vary (Subtle)"),
    "vary_region": N_("Vary (Region)"),
    "outpaint_2": N_("Zoom Out 2x"),
    "outpaint_1.5": N_("Zoom Out 1.5x"),
    "outpaint_custom": N_("Custom Zoom"),
    "outpaint_square": N_("Make Square"),
    "pan_left": "⬅️",
    "pan_right": "➡️",
    "pan_up": "⬆️",
    "pan_down": "⬇️",
    "upscale_subtle": N_("Upscale (Subtle)"),
    "upscale_creative": N_("Upscale (Creative)"),
    "upscale_2x": N_("Upscale (2x)"),
    "upscale_4x": N_("Upscale (4x)"),
    "upscale_light": N_("Upscale (Light)"),
    "upscale_beta": N_("Upscale (Beta)"),
    # Translators: the button that shows an image's seed.
    "seed": N_("🌱 Seed"),
    **{f"describe_pick{i}": str(i) for i in range(1, 5)},
    "describe_again": "🔄",
    # Translators: the button that imagines all four prompts of a /describe.
    "describe_all": N_("Imagine all"),
    "diff_reroll": "🔄",
    # Translators: a button under a diffusion image.
    "diff_upscale": N_("Upscale"),
    # Translators: a button under a diffusion image: start img2img from it.
    "diff_init": N_("Use as init"),
    # Translators: a button under an image: imagine a new prompt with it as a reference.
    REFERENCE_ACTION: N_("Use as reference"),
    INFO_ACTION: "ℹ️",
}
"""The label of every button action (catalog texts: translate where used, ``_(LABELS[a])``)."""
LABELS.update({action: LABELS[action.removeprefix(REMIX_PREFIX)] for action in REMIX_ACTIONS})


def _choices_hint(choices: tuple[str, ...]) -> str:
    listed = ", ".join(choices)
    return listed if len(listed) <= 100 else _("e.g. {example}", example=choices[0])


def modal_for(
    action: str,
    ref: str,
    *,
    prompt: str = "",
    defaults: Mapping[str, str] | None = None,
    models: Sequence[str] = CHAT_MODELS,
    max_fields: int = 5,
) -> Modal | None:
    """The form a press of ``action`` opens, or ``None`` when it opens none.

    ``prompt`` pre-fills prompt fields (the parent job's prompt); ``defaults`` pre-fills the
    settings form (option name → current value), whose model field suggests ``models`` and which
    holds the first ``max_fields`` of its fields (what the platform's forms hold). The
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
            for name in names[:max_fields]
            if (option := spec.option(name)) is not None
        )
        # Translators: the title of the settings form.
        return Modal(_("genbot settings"), action, ref, fields)
    return None


OWN_SETTINGS_FORM = ("model", "temperature", "process_mode", "aspect_ratio", "remix", "language")
"""A user's own settings form: their defaults (Discord's shows the first five, all it holds)."""
SHARED_SETTINGS_FORM = ("model", "temperature", "process_mode", "aspect_ratio", "system_prompt")
"""A channel's or workspace's settings form (admins): their defaults and the system prompt."""
FORM_LABELS = {"remix": N_("Remix: edit the prompt of 🔄, V, pan, zoom")}
"""Labels for options whose description is longer than a form label (45 characters)."""


def _settings_field(option: Option, current: str, models: Sequence[str]) -> ModalField:
    """A settings form field: a select for yes/no and fixed choices, else text (blank: left
    as it is)."""
    label = _(FORM_LABELS.get(option.name, option.description))[:45]
    # Translators: the placeholder of a settings form field left blank (keeps its value).
    unchanged = _("Unchanged")
    if option.type == "boolean":
        # Translators: the choices of a yes/no setting in the settings form.
        on_off = (Choice(_("On"), "on"), Choice(_("Off"), "off"))
        return ModalField(
            option.name, label, unchanged, current, False, kind="select", choices=on_off
        )
    if option.name == "language":
        # Translators: in the settings form's language field: genbot follows the user's app.
        auto = Choice(_("Automatic (your app's language)"), AUTO_LANGUAGE)
        languages = tuple(Choice(language_name(tag), tag) for tag in LANGUAGES)
        return ModalField(
            option.name, label, unchanged, current, False, kind="select", choices=(auto, *languages)
        )
    if option.choices and option.autocomplete is None:
        choices = tuple(Choice(choice, choice) for choice in option.choices)
        return ModalField(
            option.name, label, unchanged, current, False, kind="select", choices=choices
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
