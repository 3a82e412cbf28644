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

from bot.events import Button, ButtonStyle, Modal, decode_custom_id, encode_custom_id

MAX_ROWS = 5
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
    ) -> None:
        super().__init__(
            discord.ui.Button(
                label=(label or action)[:80],
                style=style,
                custom_id=encode_custom_id(action, ref),
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
        decoded = decode_custom_id(getattr(item, "custom_id", "") or "")
        if decoded is None:
            raise ValueError(f"not a genbot custom id: {getattr(item, 'custom_id', '')!r}")
        action, ref = decoded
        button = item if isinstance(item, discord.ui.Button) else None
        label = button.label if button is not None else None
        style = button.style if button is not None else discord.ButtonStyle.secondary
        return cls(action, ref, label=label, style=style)

    async def callback(self, interaction: discord.Interaction[Any]) -> None:
        client = interaction.client
        if isinstance(client, ButtonSink):
            await client.genbot_button(interaction, self.action, self.ref)


def build_view(rows: Sequence[Sequence[Button]]) -> discord.ui.View | None:
    """A persistent view of ``rows`` of buttons, or ``None`` when there are none.

    Raises ``ValueError`` beyond Discord's 5 rows of 5 buttons.
    """
    rows = [row for row in rows if row]
    if not rows:
        return None
    if len(rows) > MAX_ROWS or any(len(row) > MAX_PER_ROW for row in rows):
        raise ValueError(f"Discord shows at most {MAX_ROWS} rows of {MAX_PER_ROW} buttons")
    view = discord.ui.View(timeout=None)
    for index, row in enumerate(rows):
        for button in row:
            style = _STYLES.get(button.style, discord.ButtonStyle.secondary)
            view.add_item(
                GenbotButton(
                    button.action,
                    button.ref,
                    label=button.label,
                    style=style,
                    row=index,
                    disabled=button.disabled,
                )
            )
    return view


def build_modal(modal: Modal) -> discord.ui.Modal:
    """The Discord form for ``modal`` (title ≤ 45, ≤ 5 text inputs), answered via custom id."""
    form = discord.ui.Modal(
        title=modal.title[:45] or "genbot", custom_id=modal.custom_id, timeout=None
    )
    for field in modal.fields[:5]:
        form.add_item(
            discord.ui.TextInput(
                label=field.label[:45] or field.id,
                custom_id=field.id,
                placeholder=field.placeholder[:100] or None,
                default=field.default[:4000] or None,
                required=field.required,
                max_length=max(1, min(field.max_length, 4000)),
                style=discord.TextStyle.paragraph if field.multiline else discord.TextStyle.short,
            )
        )
    form.stop()
    return form
