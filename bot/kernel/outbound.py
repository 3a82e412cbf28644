"""What the core asks a platform to show: messages (text, images, buttons), forms, and a
user's home (:class:`HomeView`, drawn by surfaces that have one).

A button's or a form's state travels in its custom id (:func:`encode_custom_id`), so a press or
a submission comes back to the core as an event (:class:`bot.kernel.events.ButtonPress`,
:class:`bot.kernel.events.ModalSubmit`) however long after. Nothing here knows about any platform
library.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Literal

from bot.kernel.events import MessageRef
from bot.kernel.i18n import N_, _
from storage import Job, UsageTotals

ButtonStyle = Literal["primary", "secondary", "success", "danger"]

CUSTOM_ID_PREFIX = "gb"
CUSTOM_ID_MAX = 100


@dataclass(frozen=True)
class Button:
    """A button. Its state travels in ``custom_id``: the action and a job reference, encoded
    once when the button is made (:func:`encode_custom_id`; ``ValueError`` when they do not
    make one). ``disabled``: shown but not pressable (platforms without disabled buttons leave
    it out). A button whose action is in :data:`MENU_ITEMS` is drawn in the message's menu by
    platforms that have one (:attr:`menu_text`, in the language spoken when the button is made)."""

    label: str
    action: str
    ref: str
    style: ButtonStyle = "secondary"
    disabled: bool = False
    custom_id: str = field(init=False, repr=False, compare=False)
    menu_text: str | None = field(init=False, repr=False, compare=False)
    """The text of this button as an item of a message's menu (Slack's overflow, the
    playground's ⋯), or None: it is a button everywhere."""

    def __post_init__(self) -> None:
        object.__setattr__(self, "custom_id", encode_custom_id(self.action, self.ref))
        menu = MENU_ITEMS.get(self.action)
        object.__setattr__(self, "menu_text", _(menu) if menu is not None else None)


ButtonRows = tuple[tuple[Button, ...], ...]
"""Rows of buttons, as a message carries them."""
STOP_ACTION = "chat_stop"
"""The action of a streaming chat answer's ⏹ Stop: a platform's own stop control is heard as a
press of it on the answer's message (with no ref: the answer is the one that message shows)."""
GOOD_ACTION = "chat_good"
BAD_ACTION = "chat_bad"
"""The actions of the 👍 and 👎 under a chat answer: a platform with an element of its own for
such feedback shows the pair as that element (Slack's ``feedback_buttons``)."""

ButtonDraft = tuple[str, str, ButtonStyle, bool]
"""A button of :func:`button_rows` before it names its ref: ``(label, action, style,
disabled)``."""


def button_rows(ref: str, rows: Sequence[Sequence[ButtonDraft]]) -> tuple[tuple[Button, ...], ...]:
    """Rows of buttons all naming ``ref``, made in one call: each exactly the
    :class:`Button` its draft describes (the same custom id)."""
    return tuple(
        tuple(Button(label, action, ref, style, disabled) for label, action, style, disabled in row)
        for row in rows
    )


@dataclass(frozen=True)
class ImageFile:
    """Image bytes to upload with a message; ``url`` is where it can also be seen (a link to
    show instead where the platform will not take the bytes), when known."""

    filename: str
    data: bytes
    content_type: str = "image/png"
    url: str = ""


@dataclass(frozen=True)
class OutMessage:
    """A message for the platform.

    ``from_model`` marks text written by the model: adapters must make it ping nobody.
    ``mention_user_id`` lets genbot's own text mention the requester.

    ``key`` names a message that must be shown once however often it is sent (a job's result
    or failure report): a surface that already posted a message with this key in the place
    returns that message instead of posting another, as far as its platform lets it tell
    (Discord: within its nonce window of a few minutes; Slack: when ``may_exist``, among the
    recent messages; the playground: always). ``may_exist`` says an earlier send with the key
    may have reached the platform (it failed or the process died before its outcome was
    recorded), so a surface whose platform does not deduplicate by itself looks for it.
    """

    text: str = ""
    images: tuple[ImageFile, ...] = ()
    buttons: tuple[tuple[Button, ...], ...] = ()
    from_model: bool = False
    mention_user_id: str | None = None
    key: str | None = None
    may_exist: bool = False
    card: bool = False
    """A job's message (progress, result, failure report): a surface that frames such messages
    (Discord's Components V2 cards) does so; every write of one such message sets it."""


FieldKind = Literal["text", "select", "region", "file"]
"""``text``: a text input; ``select``: one of ``choices`` (``""`` when none is chosen);
``region``: an area of ``image_url`` in :func:`bot.features.jobs.masks.parse_region` syntax — an
editor to draw on where the platform has one (the playground), else a text input; ``file``: up to
``max_files`` uploaded files (only where
:attr:`bot.kernel.surface.PlatformProfile.forms_take_files`), given in
:attr:`bot.kernel.events.ModalSubmit.attachments`."""


@dataclass(frozen=True)
class Choice:
    """One option of a ``select`` field."""

    label: str
    value: str


@dataclass(frozen=True)
class ModalField:
    """One input of a modal (a text input unless ``kind`` says otherwise)."""

    id: str
    label: str
    placeholder: str = ""
    default: str = ""
    required: bool = True
    max_length: int = 4000
    multiline: bool = False
    kind: FieldKind = "text"
    choices: tuple[Choice, ...] = ()
    image_url: str = ""
    max_files: int = 1


@dataclass(frozen=True)
class Modal:
    """A form the platform shows; its submission comes back as
    :class:`bot.kernel.events.ModalSubmit`.

    A refused submission comes back as the same form with the values the user gave and what
    was wrong: ``errors`` pairs a field's id with the sentence about its value (shown beside
    that field), ``notice`` (shown above the fields) says what is wrong with the form as a
    whole, or previews what they chose. ``preview``: a picture of what they chose, shown above
    the fields where the platform's forms show images (Slack); others leave it out."""

    title: str
    action: str
    ref: str
    fields: tuple[ModalField, ...]
    notice: str = ""
    preview: ImageFile | None = None
    errors: tuple[tuple[str, str], ...] = ()

    @property
    def custom_id(self) -> str:
        return encode_custom_id(self.action, self.ref)

    def error_of(self, field_id: str) -> str:
        """What was wrong with ``field_id``'s value in the refused submission (``""``: nothing)."""
        return next((text for about, text in self.errors if about == field_id), "")

    @property
    def refusal(self) -> str:
        """Every field's error, then the notice: the whole answer where a platform can show the
        form's problems only as one text (Discord's "Edit and resubmit" note)."""
        return "\n".join([*(text for _, text in self.errors), *filter(None, [self.notice])])


def encode_custom_id(action: str, ref: str) -> str:
    """``gb:<action>:<ref>``; raises ``ValueError`` when it would exceed 100 characters."""
    if ":" in action:
        raise ValueError(f"action must not contain ':' ({action!r})")
    custom_id = f"{CUSTOM_ID_PREFIX}:{action}:{ref}"
    if len(custom_id) > CUSTOM_ID_MAX:
        raise ValueError(f"custom id longer than {CUSTOM_ID_MAX} characters: {custom_id!r}")
    return custom_id


def decode_custom_id(custom_id: str) -> tuple[str, str] | None:
    """``(action, ref)`` from a custom id made by :func:`encode_custom_id`, else ``None``."""
    prefix, sep, rest = custom_id.partition(":")
    if prefix != CUSTOM_ID_PREFIX or not sep:
        return None
    action, sep, ref = rest.partition(":")
    if not action or not sep:
        return None
    return action, ref


INFO_ACTION = "info"
"""A result's info (ℹ️ under it): also what a platform's menu on a message asks for (Discord's
"Image info"), as a press whose ref names no job, so the pressed message's job."""
# Translators: the item of a message's menu (Slack's ⋯) that shows an image's details.
MENU_ITEMS: dict[str, str] = {INFO_ACTION: N_("ℹ️ Image info")}
"""The actions platforms with a menu on a message (Slack's overflow, the playground's ⋯) show
there, with this text, instead of as a button (Discord has no such menu: a button, and its own
message menu "Image info")."""
REMIX_PREFIX = "remix_"
REMIX_ACTIONS: frozenset[str] = frozenset(
    REMIX_PREFIX + action
    for action in (
        "reroll",
        *(f"variation{i}" for i in range(1, 5)),
        "high_variation",
        "low_variation",
        "outpaint_2",
        "outpaint_1.5",
        "pan_left",
        "pan_right",
        "pan_up",
        "pan_down",
    )
)
"""Follow-ups drawn for users with Remix on: each press opens a form to change the prompt
(``remix_`` + the action; see :mod:`bot.features.jobs.images`)."""
PROMPT_FORMS: frozenset[str] = frozenset(
    {
        "outpaint_custom",
        "vary_region",
        "use_reference",
        *(f"describe_pick{n}" for n in range(1, 5)),
        *REMIX_ACTIONS,
    }
)
"""The forms whose ``prompt`` field is read as ``/imagine``'s prompt, ``{…}`` choices expanded
(:mod:`bot.features.jobs.form_prompts`); every other form's prompt (Use as init, the diffusion
upload forms) is sent as typed."""
MODAL_ACTIONS: frozenset[str] = frozenset(
    {
        "vary_region",
        "region_edit",
        "outpaint_custom",
        "diff_init",
        "use_reference",
        "settings",
        "describe_pick1",
        "describe_pick2",
        "describe_pick3",
        "describe_pick4",
        *REMIX_ACTIONS,
    }
)
"""Button actions whose press may open a form. Adapters must not defer such a press: the core
answers it with :meth:`bot.kernel.surface.Surface.open_modal` (or an ephemeral refusal) right away —
or, for a describe pick that runs at once, starts the job (adapters acknowledge a slow press
late)."""


@dataclass(frozen=True)
class HomeSetting:
    """One default as the user gets it: its label, value and where it comes from."""

    label: str
    value: str
    source: str


@dataclass(frozen=True)
class HomeJob:
    """One of the user's recent image jobs; ``result`` is its posted result, when known."""

    job: Job
    title: str
    result: MessageRef | None
    repost: Button


@dataclass(frozen=True)
class HomeView:
    """What a user's home shows."""

    settings: tuple[HomeSetting, ...]
    change_settings: Button
    usage: UsageTotals
    daily_credit_budget: int | None
    jobs: tuple[HomeJob, ...]
