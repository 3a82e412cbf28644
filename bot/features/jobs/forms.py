"""The editors' forms: Custom Zoom, Vary (Region), Use as init, Use as reference and a describe
pick's prompt —
what they ask, how a submission is read, and the same form again with the user's values and
what was wrong.

Remix (``remix_`` actions) asks for the prompt a follow-up runs with. Custom Zoom offers the
common factors as a select plus a free value. Vary (Region) offers the
preset areas as a select, and a ``region`` field for coordinates — or, in the playground, an
editor that draws rectangles and freehand outlines on the image; the form's notice previews the
chosen area as a small map. Use as init is pre-filled with the image's prompt. Use as reference
asks for a new prompt and the image's role in it (image prompt, style, character or object).
"""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from decimal import Decimal, InvalidOperation
from typing import cast

from bot.features.jobs.masks import PRESETS, Polygon, Region, Shape, parse_region
from bot.kernel import (
    N_,
    REMIX_ACTIONS,
    Choice,
    CommandError,
    CommandSpec,
    Event,
    FormError,
    Modal,
    ModalField,
    OptionValue,
    Role,
    SurfaceError,
    _,
    command,
    validate_options,
    written_literally,
)
from bot.outbox import OpenForm, Outbox, WritePolicy

log = logging.getLogger(__name__)

ZOOM_FIELD = "zoom"
ZOOM_VALUE_FIELD = "zoom_value"
AREA_FIELD = "area"
REGION_FIELD = "region"
PROMPT_FIELD = "prompt"
STRENGTH_FIELD = "strength"
ZOOM_FACTORS = ("1.25", "1.5", "1.75", "2")
ZOOM_CHOICES = tuple(Choice(f"{factor}×", factor) for factor in ZOOM_FACTORS)
_AREA_LABELS = {
    # Translators: the areas of an image the Vary (Region) form offers.
    "left half": N_("Left half"),
    "right half": N_("Right half"),
    "top half": N_("Top half"),
    "bottom half": N_("Bottom half"),
    "top left": N_("Top left"),
    "top right": N_("Top right"),
    "bottom left": N_("Bottom left"),
    "bottom right": N_("Bottom right"),
    "left third": N_("Left third"),
    "right third": N_("Right third"),
    "top third": N_("Top third"),
    "bottom third": N_("Bottom third"),
    "center": N_("Center"),
    "everything": N_("Everything"),
}
AREA_CHOICES = tuple(Choice(_AREA_LABELS[name], name) for name in PRESETS)
"""The preset areas (catalog labels: :func:`translated` where shown)."""
# Translators: the placeholder of the field where areas are typed or drawn.
REGION_HELP = N_("x,y,w,h in % (e.g. 10,10,40,60); several with ;")
MAP_SIDE = 6
MAP_IN, MAP_OUT = "🟦", "⬛"
PROMPT_MAX = 4000


def refused_form(modal: Modal, error: Exception) -> Modal:
    """``modal`` (filled with the submitted values) as it comes back after ``error``: beside the
    field a :class:`FormError` names, else above the fields."""
    text = str(error)
    if isinstance(error, FormError) and any(f.id == error.field for f in modal.fields):
        return replace(modal, errors=((error.field, text),))
    return replace(modal, notice="\n".join(part for part in (text, modal.notice) if part))


async def show_refused(outbox: Outbox, event: Event, modal: Modal | None, error: Exception) -> None:
    """Show a refused form again with the user's values and what was wrong (see
    :func:`refused_form`); where the platform cannot (or there is no form), ``error`` is
    raised, to be the answer."""
    if modal is None:
        raise error
    try:
        form = OpenForm(event, refused_form(modal, error))
        await outbox.write(event.place, form, WritePolicy.NOW)
    except SurfaceError as refused:
        log.info("could not show the form again (%s); answering with the error", refused)
        raise error from None


@dataclass(frozen=True)
class ZoomInput:
    """A Custom Zoom form: ``zoom_ratio`` normalised (``"1.8"``); ``prompt`` ``None`` = keep."""

    zoom_ratio: str
    prompt: str | None


@dataclass(frozen=True)
class RegionInput:
    """A Vary (Region) form: the areas to repaint and the prompt (``None`` = keep)."""

    regions: tuple[Shape, ...]
    prompt: str | None


@dataclass(frozen=True)
class InitInput:
    """A Use-as-init form: the img2img prompt and strength (``None`` = the default)."""

    prompt: str
    strength: float | None


def translated(choices: tuple[Choice, ...]) -> tuple[Choice, ...]:
    """``choices`` (catalog labels) with their labels in the language spoken."""
    return tuple(Choice(_(choice.label), choice.value) for choice in choices)


def _value(values: Mapping[str, str] | None, key: str, default: str = "") -> str:
    return values.get(key, default) if values is not None else default


def _prompt_field(label: str, prompt: str, values: Mapping[str, str] | None) -> ModalField:
    text = _value(values, PROMPT_FIELD, prompt)[:PROMPT_MAX]
    return ModalField(
        PROMPT_FIELD, label, _("Leave as is to keep it"), text, False, PROMPT_MAX, True
    )


def zoom_form(ref: str, prompt: str, values: Mapping[str, str] | None = None) -> Modal:
    """Custom Zoom: a common factor, or another one typed, and the prompt."""
    chosen = _value(values, ZOOM_FIELD, "" if values is not None else "2")
    factor = ModalField(
        ZOOM_FIELD, _("Zoom out by"), _("Pick a factor"), chosen, False, kind="select",
        choices=ZOOM_CHOICES,
    )  # fmt: skip
    typed = ModalField(
        ZOOM_VALUE_FIELD, _("Or another factor (above 1, at most 2)"), "1.8",
        _value(values, ZOOM_VALUE_FIELD), False, 10,
    )  # fmt: skip
    # Translators: the label of a form's field holding an image prompt.
    prompt_field = _prompt_field(_("Prompt"), prompt, values)
    return Modal(_("Custom Zoom"), "outpaint_custom", ref, (factor, typed, prompt_field))


def region_form(
    ref: str,
    prompt: str,
    *,
    image_url: str = "",
    values: Mapping[str, str] | None = None,
) -> Modal:
    """Vary (Region): a preset area and/or drawn or typed areas, and what to put there. The
    notice shows a map of the areas chosen so far."""
    area = ModalField(
        # Translators: the label of the Vary (Region) form's menu of areas, and its placeholder.
        AREA_FIELD, _("Area"), _("Pick a part of the image"), _value(values, AREA_FIELD), False,
        kind="select", choices=translated(AREA_CHOICES),
    )  # fmt: skip
    drawn = ModalField(
        REGION_FIELD, _("Or draw / give areas"), _(REGION_HELP), _value(values, REGION_FIELD),
        False,
        PROMPT_MAX, kind="region", image_url=image_url,
    )  # fmt: skip
    what = _prompt_field(_("What to put there"), prompt, values)
    notice = ""
    if values is not None:
        try:
            chosen = _regions(values)
        except CommandError:
            chosen = ()
        if chosen:
            notice = _("Area:\n{map}", map=region_map(chosen))
    return Modal(_("Vary (Region)"), "vary_region", ref, (area, drawn, what), notice)


def init_form(ref: str, prompt: str, values: Mapping[str, str] | None = None) -> Modal:
    """Use as init: the img2img prompt (the image's own, to edit) and the strength."""
    text = ModalField(
        PROMPT_FIELD, _("Prompt"), _("A fox in autumn"),
        _value(values, PROMPT_FIELD, prompt)[:4000], multiline=True,
    )  # fmt: skip
    strength = ModalField(
        STRENGTH_FIELD, _("Strength: how much to change, 0 to 1"), "0.6",
        _value(values, STRENGTH_FIELD), False, 10,
    )  # fmt: skip
    return Modal(_("Use as init image"), "diff_init", ref, (text, strength))


ROLE_FIELD = "role"
ROLE_CHOICES = (
    # Translators: what an image is used as in a new prompt (the Use as reference form).
    Choice(N_("Image prompt"), "image"),
    Choice(N_("Style (--sref)"), "style"),
    Choice(N_("Character (--cref)"), "character"),
    Choice(N_("Object (--oref)"), "object"),
)


@dataclass(frozen=True)
class ReferenceInput:
    """A submitted Use-as-reference form: the new prompt and the image's role in it."""

    prompt: str
    role: Role


def reference_form(ref: str, values: Mapping[str, str] | None = None) -> Modal:
    """Use as reference: what to imagine, and the image's role (an image prompt by
    default)."""
    text = ModalField(
        PROMPT_FIELD, _("Prompt"), _("A fox in this style"),
        _value(values, PROMPT_FIELD)[:PROMPT_MAX], True, PROMPT_MAX, True,
    )  # fmt: skip
    role = ModalField(
        ROLE_FIELD, _("Use the image as"), _("Image prompt"), _value(values, ROLE_FIELD, "image"),
        False, kind="select", choices=translated(ROLE_CHOICES),
    )  # fmt: skip
    return Modal(_("Use as reference"), "use_reference", ref, (text, role))


def read_reference(values: Mapping[str, str]) -> ReferenceInput:
    """Validate a submitted Use-as-reference form: a prompt, and a role (typed as its label or
    value where forms have no menus)."""
    prompt = _optional(values, PROMPT_FIELD)
    if prompt is None:
        raise FormError(PROMPT_FIELD, _("Write what to imagine with the image."))
    typed = (_optional(values, ROLE_FIELD) or "image").lower()
    for choice in ROLE_CHOICES:
        labels = {choice.label.lower(), _(choice.label).lower()}
        if typed in {choice.value, *labels, *(label.split()[0] for label in labels)}:
            return ReferenceInput(prompt, cast(Role, choice.value))
    names = ", ".join(choice.value for choice in ROLE_CHOICES)
    raise FormError(ROLE_FIELD, _("Use the image as one of: {names}.", names=names))


def pick_form(action: str, ref: str, prompt: str, values: Mapping[str, str] | None = None) -> Modal:
    """A describe pick (``describe_pickN``): its prompt, to edit before it is imagined."""
    text = _value(values, PROMPT_FIELD, prompt)[:PROMPT_MAX]
    field = ModalField(PROMPT_FIELD, _("Prompt"), "", text, True, PROMPT_MAX, True)
    return Modal(_("Imagine prompt {number}", number=action[-1]), action, ref, (field,))


def remix_form(
    action: str, ref: str, prompt: str, values: Mapping[str, str] | None = None
) -> Modal:
    """Remix: the prompt a follow-up runs with (the image's own, to edit)."""
    text = ModalField(
        PROMPT_FIELD, _("Prompt"), _("What to draw"),
        _value(values, PROMPT_FIELD, prompt)[:PROMPT_MAX], True, PROMPT_MAX, True,
    )  # fmt: skip
    # Translators: the title of the form that edits a prompt before a button runs it.
    return Modal(_("Remix"), action, ref, (text,))


def form_for(
    action: str,
    ref: str,
    prompt: str,
    *,
    image_url: str = "",
    values: Mapping[str, str] | None = None,
) -> Modal | None:
    """The editor ``action`` opens (again, with ``values``: see :func:`refused_form`), or
    ``None``. ``prompt`` is a job's stored prompt, or the described prompt a describe pick
    imagines: the editors whose prompt is read as ``/imagine``'s, ``{…}`` choices and all
    (:mod:`bot.features.jobs.form_prompts`: Custom Zoom, Vary (Region), Remix, a describe pick)
    show it with its ``\\``, ``{`` and ``}`` escaped (:func:`bot.kernel.written_literally`), so
    that it runs as it is; Use as init sends its prompt as typed, so shows it unchanged."""
    if action == "outpaint_custom":
        return zoom_form(ref, written_literally(prompt), values)
    if action == "vary_region":
        return region_form(ref, written_literally(prompt), image_url=image_url, values=values)
    if action == "use_reference":
        return reference_form(ref, values)
    if action == "diff_init":
        return init_form(ref, prompt, values)
    if action.startswith("describe_pick"):
        return pick_form(action, ref, written_literally(prompt), values)
    if action in REMIX_ACTIONS:
        return remix_form(action, ref, written_literally(prompt), values)
    return None


def parse_zoom(text: str) -> str:
    """A custom zoom ratio in (1, 2] (``1.8``, ``1.8x``), normalised as the decimal typed
    (``1.50`` → ``1.5``), every digit kept: the API takes any decimal in (1, 2], so ``1.0000001``
    is sent as typed, never rounded to ``1`` (which would be Make Square); else
    :class:`CommandError`."""
    cleaned = text.strip().lower().removesuffix("x").removesuffix("×").strip()
    try:
        zoom = Decimal(cleaned)
    except InvalidOperation:
        raise CommandError(
            _("The zoom must be a number above 1, at most 2 (got {value}).", value=repr(text))
        ) from None
    if not zoom.is_finite() or not 1 < zoom <= 2:
        raise CommandError(
            _("The zoom must be above 1 and at most 2 (got {value}).", value=text.strip())
        )
    written = format(zoom.normalize(), "f")
    return written.rstrip("0").rstrip(".") if "." in written else written


def _optional(values: Mapping[str, str], key: str) -> str | None:
    value = values.get(key, "").strip()
    return value or None


def read_zoom(values: Mapping[str, str]) -> ZoomInput:
    """Validate a submitted Custom Zoom form: the typed factor wins over the chosen one."""
    typed = _optional(values, ZOOM_VALUE_FIELD)
    raw = typed or _optional(values, ZOOM_FIELD)
    field = ZOOM_VALUE_FIELD if typed is not None else ZOOM_FIELD
    if raw is None:
        raise FormError(
            ZOOM_VALUE_FIELD, _("Pick a zoom factor, or type one above 1 and at most 2.")
        )
    try:
        zoom = parse_zoom(raw)
    except CommandError as error:
        raise FormError(field, str(error)) from None
    return ZoomInput(zoom, _optional(values, PROMPT_FIELD))


def _regions(values: Mapping[str, str]) -> tuple[Shape, ...]:
    chosen = [(key, text) for key in (AREA_FIELD, REGION_FIELD) if (text := _optional(values, key))]
    if not chosen:
        raise FormError(
            REGION_FIELD,
            _(
                "Which part of the image should change? Pick an area, draw one, or give x,y,w,h "
                "in percent."
            ),
        )
    shapes: list[Shape] = []
    for key, text in chosen:
        try:
            shapes += parse_region(text)
        except CommandError as error:
            raise FormError(key, str(error)) from None
    return tuple(shapes)


def read_remix(values: Mapping[str, str]) -> str:
    """The prompt of a submitted Remix form (it must not be empty)."""
    prompt = _optional(values, PROMPT_FIELD)
    if prompt is None:
        raise FormError(PROMPT_FIELD, _("Remix needs a prompt: write what to draw."))
    return prompt


def read_region(values: Mapping[str, str]) -> RegionInput:
    """Validate a submitted Vary (Region) form: the preset area and the drawn or typed ones
    together (syntax: :func:`bot.features.jobs.masks.parse_region`)."""
    return RegionInput(_regions(values), _optional(values, PROMPT_FIELD))


def read_init(values: Mapping[str, str]) -> InitInput:
    """Validate a submitted Use-as-init form: a prompt, and a strength from 0 to 1 if given."""
    prompt = _optional(values, PROMPT_FIELD)
    if prompt is None:
        raise FormError(PROMPT_FIELD, _("Use as init needs a prompt describing the new image."))
    spec = command("diffusion.img2img")
    try:
        validate_options(spec, {"prompt": prompt}, attachments=("init_image",))
    except CommandError as error:
        raise FormError(PROMPT_FIELD, str(error)) from None
    raw = _optional(values, STRENGTH_FIELD)
    if raw is None:
        return InitInput(prompt, None)
    try:
        checked = validate_options(
            spec, {"prompt": prompt, "strength": raw}, attachments=("init_image",)
        )
    except CommandError as error:
        raise FormError(STRENGTH_FIELD, str(error)) from None
    strength = checked["strength"]
    assert isinstance(strength, float)
    return InitInput(prompt, strength)


def _inside(shape: Shape, x: float, y: float) -> bool:
    if isinstance(shape, Region):
        return shape.x <= x <= shape.x + shape.w and shape.y <= y <= shape.y + shape.h
    return _in_polygon(shape, x, y)


def _in_polygon(polygon: Polygon, x: float, y: float) -> bool:
    inside = False
    points = polygon.points
    for (x1, y1), (x2, y2) in zip(points, (*points[1:], points[0]), strict=True):
        if (y1 > y) != (y2 > y) and x < (x2 - x1) * (y - y1) / (y2 - y1) + x1:
            inside = not inside
    return inside


def region_map(shapes: Sequence[Shape], side: int = MAP_SIDE) -> str:
    """A ``side`` × ``side`` map of the image, 🟦 where a cell's centre is to be repainted."""
    rows = []
    for row in range(side):
        y = (row + 0.5) / side
        cells = (
            MAP_IN if any(_inside(s, (col + 0.5) / side, y) for s in shapes) else MAP_OUT
            for col in range(side)
        )
        rows.append("".join(cells))
    return "\n".join(rows)


def shape_key(shape: Shape) -> tuple[float, ...]:
    """A shape as plain numbers (part of a form submission's idempotency key)."""
    if isinstance(shape, Region):
        return (shape.x, shape.y, shape.w, shape.h)
    return tuple(value for point in shape.points for value in point)


IMAGE_FIELD = "image"
IMAGES_FIELD = "images"
URL_FIELD = "url"
DIMENSION_FIELD = "dimension"
DIMENSION_CHOICES = (
    # Translators: the shapes a blend can take.
    Choice(N_("Square"), "square"),
    Choice(N_("Portrait"), "portrait"),
    Choice(N_("Landscape"), "landscape"),
)


def describe_upload_form() -> Modal:
    """/describe without an image: upload one, or give its link."""
    image = ModalField(IMAGE_FIELD, _("Image to describe"), required=False, kind="file")
    link = ModalField(
        URL_FIELD, _("Or its https link"), "https://…", required=False, max_length=2000
    )
    return Modal(_("Describe an image"), "describe_upload", "", (image, link))


def blend_upload_form() -> Modal:
    """/blend with fewer than two images: upload two to five."""
    images = ModalField(IMAGES_FIELD, _("Images to blend (2 to 5)"), kind="file", max_files=5)
    shape = ModalField(
        DIMENSION_FIELD,
        # Translators: the label of the blend form's choice of shape (square, portrait, landscape).
        _("Shape"),
        _("Square"),
        "",
        False,
        kind="select",
        choices=translated(DIMENSION_CHOICES),
    )
    return Modal(_("Blend images"), "blend_upload", "", (images, shape))


INIT_IMAGE_FIELD = "init_image"
CONTROL_IMAGE_FIELD = "control_image"
MASK_IMAGE_FIELD = "mask_image"
OPTIONS_FIELD = "options"
DIFFUSION_UPLOADS = {"img2img": "img2img_upload", "controlnet": "controlnet_upload"}
"""The diffusion endpoints whose command may come without its starting image, and the action
of the form that asks for it."""
_UPLOAD_TITLES = {"img2img": N_("Image to image"), "controlnet": N_("ControlNet")}


def diffusion_upload_form(
    endpoint: str,
    options: Mapping[str, OptionValue] | None = None,
    *,
    values: Mapping[str, str] | None = None,
) -> Modal:
    """``/diffusion img2img|controlnet`` without its starting image: upload it (for controlnet
    also a control image and a mask, both optional), with the command's prompt and its other
    options as flags (``--strength 0.6 --seed 7``), both editable."""
    spec = command(f"diffusion.{endpoint}")
    given = dict(options or {})
    prompt = _value(values, PROMPT_FIELD, str(given.pop(PROMPT_FIELD, "")))[:PROMPT_MAX]
    flags = _value(values, OPTIONS_FIELD, flags_text(spec, given))
    fields = [ModalField(INIT_IMAGE_FIELD, _("Starting image"), kind="file")]
    if endpoint == "controlnet":
        fields += [
            ModalField(
                CONTROL_IMAGE_FIELD, _("Control image (optional)"), required=False, kind="file"
            ),
            ModalField(MASK_IMAGE_FIELD, _("Mask image (optional)"), required=False, kind="file"),
        ]
    fields += [
        ModalField(PROMPT_FIELD, _("Prompt"), _("A fox in autumn"), prompt, True, PROMPT_MAX, True),
        ModalField(
            # Translators: the label of a field holding a command's options as --flags.
            OPTIONS_FIELD,
            _("Options"),
            "--strength 0.6 --steps 31 --seed 7",
            flags,
            False,
            1000,
        ),
    ]
    return Modal(_(_UPLOAD_TITLES[endpoint]), DIFFUSION_UPLOADS[endpoint], "", tuple(fields))


def flags_text(spec: CommandSpec, options: Mapping[str, OptionValue]) -> str:
    """``options`` written as ``spec``'s text flags (what
    :func:`bot.kernel.command_text.parse_command_text` reads back); options without a flag are left
    out."""
    words: list[str] = []
    for option in spec.options:
        if option.name not in options or not option.flags or option.type == "attachment":
            continue
        value = str(options[option.name])
        if not value or any(c.isspace() for c in value):
            value = f"'{value}'" if '"' in value else f'"{value}"'
        words.append(f"{option.flags[0]} {value}")
    return " ".join(words)
