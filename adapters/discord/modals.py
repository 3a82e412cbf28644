"""Forms (modals) on Discord: each a plain form answered through its custom id, whose
submission the client reads in ``on_interaction`` (not via discord.py's in-memory modal store,
which a restart empties), and the button that opens a refused form again.
"""

from __future__ import annotations

from typing import Any

import discord

from bot.kernel import Modal, ModalField, encode_custom_id

REOPEN_ACTION = "reopen"
"""The adapter's own button: open a refused form again (never reaches the core)."""


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
    """The button under a note that opens a form kept for ``token`` (filled in); its press
    reaches the client's button handler like every genbot button's (the view is stopped:
    discord.py keeps nothing of it)."""
    view = discord.ui.View(timeout=None)
    button: discord.ui.Button[Any] = discord.ui.Button(
        label=label[:80], custom_id=encode_custom_id(REOPEN_ACTION, token)
    )
    view.add_item(button)
    view.stop()
    return view
