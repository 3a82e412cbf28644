"""The account feature: ``/settings`` (with options, or as a form), ``/usage`` and ``/help``.

``/settings`` stores model, temperature, process mode and aspect ratio for the user and the system
prompt for the channel (``-`` as the system prompt restores the default). Without options it
opens the settings form pre-filled with what is stored (Slack's ``/genbot settings`` relies on
this); a blank field in the form leaves its setting unchanged. Every answer is ephemeral.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from bot.actions import modal_for, read_settings
from bot.chat.prompting import allowed_models
from bot.core import SurfaceRegistry, UserError
from bot.events import ButtonPress, Command, Event, ModalSubmit, OptionValue
from bot.parsing import help_text
from bot.text import split_text
from storage import SETTING_NAMES, ScopeSettings, Store

SETTINGS_ACTION = "settings"
CLEAR_SYSTEM_PROMPT = "-"
USER_SETTINGS = ("model", "temperature", "process_mode", "aspect_ratio")
CHAT_HELP = (
    "**Chat** — DM genbot, mention it in a channel (it opens a thread) or reply to its answers: "
    "each is a conversation it remembers. Model: `/settings model` (your default) or "
    "`/chat model` (this conversation); llm-4 models need the Developer plan. System prompt: "
    "`/settings system_prompt` (this channel; `-` restores the default) or `/chat system` "
    "(this conversation). Temperature: `/settings temperature` or `/chat temperature`; "
    "answer length: `/chat max_tokens`. Say `draw …` to have it start an image job; attach "
    "an image with llm-4-vision-preview to have it looked at."
)
LABELS = {
    "model": "model",
    "temperature": "temperature",
    "process_mode": "image speed",
    "aspect_ratio": "aspect ratio",
    "system_prompt": "system prompt",
}


def _shown(value: Any) -> str:
    if isinstance(value, float):
        return f"{value:g}"
    return "" if value is None else str(value)


def _preview(text: str, limit: int = 200) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"


class AccountFeature:
    """``/settings``, ``/usage``, ``/help`` and the settings form.

    ``plan`` is the workspace's provider plan (``llm-4*`` models are refused on ``free``);
    ``daily_credit_budget`` is shown by ``/usage`` when set.
    """

    commands = frozenset({"settings", "usage", "help"})
    actions = frozenset({SETTINGS_ACTION})

    def __init__(
        self,
        store: Store,
        surfaces: SurfaceRegistry,
        *,
        plan: str = "developer",
        daily_credit_budget: int | None = None,
    ) -> None:
        self.store = store
        self.surfaces = surfaces
        self.plan = plan
        self.daily_credit_budget = daily_credit_budget

    async def on_command(self, event: Command, options: Mapping[str, OptionValue]) -> None:
        """Route ``/settings``, ``/usage`` and ``/help``."""
        if event.name == "help":
            await self._help(event)
        elif event.name == "usage":
            await self._usage(event)
        elif options:
            await self._save(event, options)
        else:
            await self._open_form(event)

    async def on_button(self, event: ButtonPress) -> None:
        """A settings button opens the settings form."""
        await self._open_form(event)

    async def on_modal(self, event: ModalSubmit) -> None:
        """A submitted settings form: validated like ``/settings`` options, then stored."""
        if event.action != SETTINGS_ACTION:
            raise UserError("This form is no longer supported.")
        await self._save(event, read_settings(event.values))

    async def _tell(self, event: Event, text: str) -> None:
        await self.surfaces.get(event.place.platform).send_ephemeral(event, text)

    async def _help(self, event: Event) -> None:
        limit = self.surfaces.get(event.place.platform).limits.max_text
        for piece in split_text(f"{help_text()}\n\n{CHAT_HELP}", limit):
            await self._tell(event, piece)

    async def _usage(self, event: Event) -> None:
        totals = await self.store.usage_for_user(event.place.platform, event.user.id)
        budget = (
            f" of your daily budget of {self.daily_credit_budget:,}"
            if self.daily_credit_budget is not None
            else ""
        )
        await self._tell(
            event,
            f"Your usage today (UTC): {totals.tokens:,} chat tokens "
            f"({totals.tokens_prompt:,} prompt + {totals.tokens_completion:,} completion) and "
            f"{totals.credits:,} image credits{budget}.",
        )

    async def _scopes(self, event: Event) -> tuple[ScopeSettings | None, ScopeSettings | None]:
        platform = event.place.platform
        user = await self.store.get_scope_settings("user", platform, event.user.id)
        channel = await self.store.get_scope_settings("channel", platform, event.place.channel_id)
        return user, channel

    async def _open_form(self, event: Event) -> None:
        user, channel = await self._scopes(event)
        current = {name: _shown(getattr(user, name, None)) for name in USER_SETTINGS}
        current["system_prompt"] = _shown(getattr(channel, "system_prompt", None))
        modal = modal_for(SETTINGS_ACTION, "", defaults=current)
        assert modal is not None
        await self.surfaces.get(event.place.platform).open_modal(event, modal)

    async def _save(self, event: Event, values: Mapping[str, OptionValue]) -> None:
        model = values.get("model")
        if isinstance(model, str) and model not in allowed_models(self.plan):
            raise UserError(
                f"{model} needs the Developer plan; this workspace is on the free plan. "
                f"Choose one of: {', '.join(allowed_models(self.plan))}."
            )
        user, channel = await self._scopes(event)
        mine: dict[str, Any] = {}
        for name in USER_SETTINGS:
            if name in values and values[name] != getattr(user, name, None):
                mine[name] = values[name]
        given = values.get("system_prompt")
        prompt = None if given is None else str(given)
        new_prompt = None if prompt == CLEAR_SYSTEM_PROMPT else prompt
        prompt_changed = prompt is not None and new_prompt != getattr(
            channel, "system_prompt", None
        )
        platform = event.place.platform
        if mine:
            await self.store.set_scope_settings("user", platform, event.user.id, **mine)
        if prompt_changed:
            await self.store.set_scope_settings(
                "channel", platform, event.place.channel_id, system_prompt=new_prompt
            )
        await self._tell(event, self._confirmation(mine, prompt_changed, new_prompt))

    @staticmethod
    def _confirmation(mine: Mapping[str, Any], prompt_changed: bool, prompt: str | None) -> str:
        sentences: list[str] = []
        if mine:
            changes = ", ".join(
                f"{LABELS[name]} → {_shown(value)}"
                for name in SETTING_NAMES
                if name in mine
                for value in (mine[name],)
            )
            sentences.append(f"Saved your defaults: {changes}.")
        if prompt_changed:
            if prompt is None:
                sentences.append("This channel's system prompt is back to the default.")
            else:
                sentences.append(f"Saved this channel's system prompt: “{_preview(prompt)}”.")
        return " ".join(sentences) or "Nothing changed: those are already your settings."
