"""Buttons and modals.

Every genbot button is a :class:`GenbotButton`, a ``DynamicItem`` whose template matches the
``gb:<action>:<ref>`` custom ids, so a press on any message, posted by any earlier process, is
routed to the client's ``genbot_button``. Modals are plain forms whose submission the client
reads in ``on_interaction`` (not via discord.py's in-memory modal store, which a restart empties).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Protocol, runtime_checkable

import discord

from bot.kernel import Button, ButtonStyle, Modal, ModalField, decode_custom_id, encode_custom_id

MAX_ROWS = 5
REOPEN_ACTION = "reopen"
"""The adapter's own button: open a refused form again (never reaches the core)."""
MAX_PER_ROW = 5
_STYLES: dict[ButtonStyle, discord.ButtonStyle] = {
    "primary": discord.ButtonStyle.primary,
    "secondary": discord.ButtonStyle.secondary,
    "success": discord.ButtonStyle.success,
    "danger": discord.ButtonStyle.danger,
}


@runtime_checkable
class ButtonSink(Protocol):
    """The client side that acts on genbot button presses."""

    async def genbot_button(
        self, interaction: discord.Interaction[Any], action: str, ref: str
    ) -> None: ...


class GenbotButton(
    discord.ui.DynamicItem[discord.ui.Button[Any]],
    template=r"gb:(?P<action>[^:]+):(?P<ref>.*)",
):
    """A button carrying ``action`` and ``ref`` in its custom id."""

    def __init__(
        self,
        action: str,
        ref: str,
        *,
        label: str | None = None,
        style: discord.ButtonStyle = discord.ButtonStyle.secondary,
        row: int | None = None,
        disabled: bool = False,
        custom_id: str | None = None,
    ) -> None:
        super().__init__(
            discord.ui.Button(
                label=(label or action)[:80],
                style=style,
                custom_id=custom_id or encode_custom_id(action, ref),
                row=row,
                disabled=disabled,
            )
        )
        self.action = action
        self.ref = ref

    @classmethod
    async def from_custom_id(
        cls,
        interaction: discord.Interaction[Any],
        item: discord.ui.Item[Any],
        match: Any,
        /,
    ) -> GenbotButton:
        custom_id = getattr(item, "custom_id", "") or ""
        decoded = decode_custom_id(custom_id)
        if decoded is None:
            raise ValueError(f"not a genbot custom id: {custom_id!r}")
        action, ref = decoded
        button = item if isinstance(item, discord.ui.Button) else None
        label = button.label if button is not None else None
        style = button.style if button is not None else discord.ButtonStyle.secondary
        return cls(action, ref, label=label, style=style, custom_id=custom_id)

    async def callback(self, interaction: discord.Interaction[Any]) -> None:
        client = interaction.client
        if isinstance(client, ButtonSink):
            await client.genbot_button(interaction, self.action, self.ref)


def build_view(rows: Sequence[Sequence[Button]]) -> discord.ui.View | None:
    """A persistent view of ``rows`` of buttons, or ``None`` when there are none.

    Raises ``ValueError`` beyond Discord's 5 rows of 5 buttons.
    """
    rows = _checked_rows(rows)
    if not rows:
        return None
    view = discord.ui.View(timeout=None)
    for index, row in enumerate(rows):
        for button in row:
            view.add_item(_button_item(button, index))
    return view


def _checked_rows(rows: Sequence[Sequence[Button]]) -> list[Sequence[Button]]:
    kept = [row for row in rows if row]
    if len(kept) > MAX_ROWS or any(len(row) > MAX_PER_ROW for row in kept):
        raise ValueError(f"Discord shows at most {MAX_ROWS} rows of {MAX_PER_ROW} buttons")
    return kept


def _button_item(button: Button, row: int | None = None) -> GenbotButton:
    return GenbotButton(
        button.action,
        button.ref,
        label=button.label,
        style=_STYLES.get(button.style, discord.ButtonStyle.secondary),
        row=row,
        disabled=button.disabled,
        custom_id=button.custom_id,
    )


MODAL_COMPONENTS_MAX = 5
LABEL_DESCRIPTION_MAX = 100
SELECT_OPTIONS_MAX = 25


def _modal_input(field: ModalField) -> discord.ui.Item[Any]:
    if field.kind == "file":
        return discord.ui.FileUpload(
            custom_id=field.id,
            required=field.required,
            min_values=1 if field.required else 0,
            max_values=max(1, min(field.max_files, 10)),
        )
    if field.kind == "select" and field.choices:
        options = [
            discord.SelectOption(
                label=choice.label[:100],
                value=choice.value[:100],
                default=choice.value == field.default,
            )
            for choice in field.choices[:SELECT_OPTIONS_MAX]
        ]
        return discord.ui.Select(
            custom_id=field.id,
            options=options,
            placeholder=field.placeholder[:150] or None,
            required=field.required,
            min_values=1 if field.required else 0,
            max_values=1,
        )
    return discord.ui.TextInput(
        custom_id=field.id,
        placeholder=field.placeholder[:100] or None,
        default=field.default[:4000] or None,
        required=field.required,
        max_length=max(1, min(field.max_length, 4000)),
        style=discord.TextStyle.paragraph if field.multiline else discord.TextStyle.short,
    )


CARD_COLOUR = discord.Colour.blurple()


def build_card(
    text: str, filenames: Sequence[str], rows: Sequence[Sequence[Button]]
) -> discord.ui.LayoutView:
    """A Components V2 card: one container holding the text, the images (the message's
    attachments ``filenames``) as a gallery, and the button rows."""
    parts: list[discord.ui.Item[Any]] = []
    if text:
        parts.append(discord.ui.TextDisplay(text))
    if filenames:
        items = [discord.MediaGalleryItem(f"attachment://{name}") for name in filenames[:10]]
        parts.append(discord.ui.MediaGallery(*items))
    for row in _checked_rows(rows):
        action_row: discord.ui.ActionRow[Any] = discord.ui.ActionRow()
        for button in row:
            action_row.add_item(_button_item(button))
        parts.append(action_row)
    view = discord.ui.LayoutView(timeout=None)
    view.add_item(discord.ui.Container(*parts, accent_colour=CARD_COLOUR))
    return view


def build_modal(modal: Modal) -> discord.ui.Modal:
    """The Discord form for ``modal`` (title ≤ 45, ≤ 5 components), answered via custom id:
    its notice as text on top (left out when the fields need all five places), each field a
    labelled text input or select menu, a refused value's error as its label's description."""
    form = discord.ui.Modal(
        title=modal.title[:45] or "genbot", custom_id=modal.custom_id, timeout=None
    )
    fields = modal.fields[:MODAL_COMPONENTS_MAX]
    if modal.notice and len(fields) < MODAL_COMPONENTS_MAX:
        form.add_item(discord.ui.TextDisplay(modal.notice[:4000]))
    for field in fields:
        error = modal.error_of(field.id)
        form.add_item(
            discord.ui.Label(
                text=field.label[:45] or field.id,
                component=_modal_input(field),
                description=f"⚠️ {error}"[:LABEL_DESCRIPTION_MAX] if error else None,
            )
        )
    form.stop()
    return form


def reopen_view(token: str, label: str) -> discord.ui.View:
    """The button under a note that opens a form kept for ``token`` (filled in)."""
    view = discord.ui.View(timeout=None)
    view.add_item(GenbotButton(REOPEN_ACTION, token, label=label))
    return view
