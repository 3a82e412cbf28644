"""The account feature: ``/settings`` (with options, or as a form), ``/usage`` and ``/help``.

Where ``/settings`` values go depends on its ``scope`` option (``me`` when absent):

- ``me``: model, temperature, process mode, aspect ratio and remix are the user's own defaults;
  the system prompt is the channel's (``-`` restores the default) — anyone in a channel may set
  it; the chat request parameters (stream, top_p, the penalties, stop, n) have no user level:
  only admins set them, per channel or workspace;
- ``channel`` (admins only): every value becomes this channel's default;
- ``workspace`` (admins only): every value becomes the workspace's default.

A user's own default wins over the channel's, which wins over the workspace's (see
:data:`storage.PRECEDENCE`); the system prompt has no user level. Without values ``/settings``
opens the settings form of its scope pre-filled with what is stored there (Slack's
``/genbot settings`` relies on this); the form's reference carries the scope, and a blank field
leaves its setting unchanged. Every answer is ephemeral.

``scope`` is read when the catalogue (:mod:`bot.kernel.commands`) offers it; until then
``/settings`` works as ``scope: me``.

Commands are named as the user's platform names them (:mod:`bot.kernel.command_names`:
Slack's ``/genbot settings``, Discord's mentions).
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping, Sequence
from contextlib import AbstractContextManager, nullcontext
from dataclasses import dataclass
from typing import Any, ClassVar, Final, Protocol

from bot.api.chat import allowed_chat_models, plan_allows
from bot.features.audit.trail import AuditTrail
from bot.features.jobs.admission import Tiers
from bot.features.jobs.buttons import modal_for, read_settings
from bot.features.jobs.forms import show_refused
from bot.kernel import (
    AUTO_LANGUAGE,
    N_,
    ButtonPress,
    Command,
    CommandError,
    Event,
    HomeOpened,
    LanguageChoices,
    ModalSubmit,
    Offered,
    OptionValue,
    RateLimited,
    SurfaceError,
    UserError,
    _,
    command,
    decide,
    format_number,
    format_percent,
    help_specs,
    help_text,
    language_name,
    named,
    ngettext,
    refill_time,
    sentences,
    speaking,
    split_text,
    written,
)
from bot.outbox import Notice, OpenForm, Outbox, WritePolicy
from bot.refs import RefKind, ScopeReferent, Work
from storage import (
    SETTING_NAMES,
    AnswerFeedback,
    FeedbackCount,
    ScopeKind,
    ScopeSettings,
    SettingsStore,
    SettingValues,
    Spent,
    UsageLedger,
    encode_stop,
)

log = logging.getLogger(__name__)

SETTINGS_ACTION = "settings"
CLEAR_SYSTEM_PROMPT = "-"
USER_SETTINGS = ("model", "temperature", "process_mode", "aspect_ratio", "remix", "language")
ADMIN_SETTINGS = ("stream", "top_p", "presence_penalty", "frequency_penalty", "stop", "n")
MAX_STOP_SEQUENCES = 4
SCOPE_OPTION = "scope"
SCOPES: Final = ("me", "channel", "workspace")
LABELS = {
    # Translators: the names of /settings values, in lists like "model → gpt, temperature → 0.7".
    "model": N_("model"),
    "temperature": N_("temperature"),
    "process_mode": N_("image speed"),
    "aspect_ratio": N_("aspect ratio"),
    "system_prompt": N_("system prompt"),
    "remix": N_("remix"),
    "stream": N_("streaming"),
    "top_p": N_("top_p"),
    "presence_penalty": N_("presence penalty"),
    "frequency_penalty": N_("frequency penalty"),
    "stop": N_("stop sequences"),
    "n": N_("answers per message"),
    "language": N_("language"),
}


def chat_help() -> str:
    """The chat part of ``/help``, with commands named as the event's platform names them."""
    settings, chat = named("settings"), named("chat")
    scoped = (
        " "
        + _(
            "Admins set a channel's or the workspace's defaults with {settings} scope "
            "channel / workspace.",
            settings=settings,
        )
        if command("settings").option(SCOPE_OPTION) is not None
        else ""
    )
    # Translators: {scoped} is empty or one more sentence ("Admins set …"), with its leading space.
    return _(
        "**Chat** — DM genbot, mention it in a channel (it opens a thread) or reply to its "
        "answers: each is a conversation it remembers. Model: {settings} model (your "
        "default) or {chat} model (this conversation); llm-4 models need the Developer "
        "plan. System prompt: {settings} system_prompt (this channel; `-` restores the "
        "default) or {chat} system (this conversation). Temperature: {settings} or "
        "{chat} temperature; answer length: {chat} max_tokens.{scoped} Say `draw …` to "
        "have it start an image job; attach an image with llm-4-vision-preview to have it "
        "looked at.",
        settings=settings,
        chat=chat,
        scoped=scoped,
    )


def _shown(value: Any) -> str:
    """A stored value as ``/settings`` and its form take it (``on``/``off``, not translated)."""
    if isinstance(value, bool):
        return "on" if value else "off"
    if isinstance(value, float):
        return f"{value:g}"
    return "" if value is None else str(value)


def _stop_setting(text: str) -> str | None:
    """``/settings stop`` text (``###|END``; ``-`` clears) as stored."""
    if text.strip() == CLEAR_SYSTEM_PROMPT:
        return None
    sequences = [part for part in text.split("|") if part.strip()]
    if not sequences:
        raise UserError(_("stop needs at least one sequence (separate several with |; - clears)."))
    if len(sequences) > MAX_STOP_SEQUENCES:
        raise UserError(
            ngettext(
                "stop takes at most {n} sequences (got {got}).",
                "stop takes at most {n} sequences (got {got}).",
                MAX_STOP_SEQUENCES,
                got=len(sequences),
            )
        )
    return encode_stop(sequences)


def _value_shown(name: str, value: Any) -> str:
    if name == "language":
        return language_name(value) if isinstance(value, str) else AUTO_LANGUAGE
    if name == "stop" and isinstance(value, str):
        return " | ".join(SettingValues(stop=value).stop_sequences)
    return _shown(value)


def _form_value(name: str, value: Any) -> str:
    """A stored value as the settings form holds it (the language's tag, or ``auto``)."""
    if name == "language":
        return value if isinstance(value, str) else AUTO_LANGUAGE
    return _value_shown(name, value)


def _preview(text: str, limit: int = 200) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _said(name: str, value: Any) -> str:
    """A value as a confirmation says it: on/off in the user's language."""
    if isinstance(value, bool):
        # Translators: a setting's value that is switched on / off.
        return _("on") if value else _("off")
    if isinstance(value, float):
        return format_number(value, grouping=False)
    return _value_shown(name, value)


def _changes(values: Mapping[str, Any]) -> str:
    return ", ".join(
        _(
            "{setting} → {value}",
            setting=_(LABELS[name]),
            value=_preview(_said(name, values[name])),
        )
        for name in SETTING_NAMES
        if name in values
    )


def _flag(name: str) -> str:
    """How a text command spells /settings' option ``name`` (``--top-p``)."""
    [option] = [option for option in command("settings").options if option.name == name]
    return option.flags[0]


def _stored_value(name: str, value: OptionValue) -> Any:
    if name == "system_prompt" and value == CLEAR_SYSTEM_PROMPT:
        return None
    if name == "language" and value == AUTO_LANGUAGE:
        return None
    if name == "stop":
        return _stop_setting(str(value))
    return value


@dataclass(frozen=True)
class AccountStorage:
    """What ``/settings`` and ``/usage`` use."""

    settings: SettingsStore
    ledger: UsageLedger
    feedback: AnswerFeedback | None = None
    """Ratings of chat answers (admins' ``/usage`` shows them per model)."""


class RedrawsHomes(Protocol):
    """What shows a user's saved defaults on their home (the home feature, where the platform
    has one)."""

    async def on_home(self, event: HomeOpened) -> None: ...


class AccountFeature:
    """``/settings``, ``/usage``, ``/help`` and the settings form.

    ``plan`` is the workspace's provider plan (``llm-4*`` models are refused on ``free``);
    ``daily_credit_budget`` is shown by ``/usage`` when set and above 0 (0 means no budget);
    with ``tiers`` configured, ``/usage`` shows the user's tier and what is left of it instead.
    """

    commands = frozenset({"settings", "usage", "help"})
    actions: ClassVar[Mapping[str, RefKind]] = {SETTINGS_ACTION: RefKind.SCOPE}
    work: ClassVar[Mapping[str, Work]] = {SETTINGS_ACTION: Work.FREE}

    def __init__(
        self,
        store: AccountStorage,
        outbox: Outbox,
        *,
        audit: AuditTrail,
        plan: str = "developer",
        daily_credit_budget: int | None = None,
        home: RedrawsHomes | None = None,
        diffusion_models: Callable[[], Sequence[str]] = tuple,
        tiers: Tiers | None = None,
        languages: LanguageChoices | None = None,
    ) -> None:
        self.store = store
        self.languages = languages
        """The router's cache of ``/settings language`` choices, dropped when one changes."""
        self.tiers = tiers
        self.outbox = outbox
        self.audit = audit
        """Where a change of shared defaults is recorded (:mod:`bot.features.audit`)."""
        self.plan = plan
        self.daily_credit_budget = daily_credit_budget
        self.home = home
        self.diffusion_models = diffusion_models
        """The diffusion models genbot knows (``/help diffusion`` lists them)."""

    async def on_command(self, event: Command, options: Mapping[str, OptionValue]) -> None:
        """Route ``/settings``, ``/usage`` and ``/help``."""
        if event.name == "help":
            await self._help(event, str(options.get("command") or ""))
        elif event.name == "usage":
            await self._usage(event)
        else:
            scope = self._scope(event, options.get(SCOPE_OPTION))
            values = {name: value for name, value in options.items() if name != SCOPE_OPTION}
            if values:
                await self._save(event, values, scope)
            else:
                await self._open_form(event, scope)

    async def on_button(self, event: ButtonPress, referent: ScopeReferent) -> None:
        """A settings button opens the settings form of the scope in its reference."""
        await self._open_form(event, self._scope(event, referent.scope))

    def check_modal(self, event: ModalSubmit) -> None:
        """A settings form's values, checked like ``/settings`` options."""
        read_settings(event.values)

    async def on_modal(self, event: ModalSubmit, referent: ScopeReferent) -> None:
        """A submitted settings form: validated like ``/settings`` options, then stored in
        the scope its reference names; refused values bring the form back, filled in."""
        if event.action != SETTINGS_ACTION:
            raise UserError(_("This form is no longer supported."))
        scope = self._scope(event, referent.scope)
        try:
            values = read_settings(event.values)
            await self._save(event, values, scope)
        except (CommandError, UserError) as error:
            again = modal_for(
                SETTINGS_ACTION,
                event.ref,
                defaults=event.values,
                models=allowed_chat_models(self.plan),
                max_fields=self.outbox.profile(event.place.platform).max_form_fields,
            )
            await show_refused(self.outbox, event, again, error)

    def _scope(self, event: Event, given: OptionValue | None) -> str:
        """The scope asked for (``me`` when none), checked against who asks and where."""
        scope = str(given or "me").lower()
        if scope not in SCOPES:
            raise UserError(
                _(
                    "scope must be one of {scopes} (got {given}).",
                    scopes=", ".join(SCOPES),
                    given=repr(given),
                )
            )
        if scope == "me":
            return scope
        settings = named("settings")
        if not event.user.is_admin:
            raise UserError(
                _(
                    "Only genbot admins can change this channel's defaults; {settings} "
                    "without a scope changes yours.",
                    settings=settings,
                )
                if scope == "channel"
                else _(
                    "Only genbot admins can change this workspace's defaults; {settings} "
                    "without a scope changes yours.",
                    settings=settings,
                )
            )
        if scope == "workspace" and not event.place.workspace_id:
            raise UserError(
                _(
                    "There is no workspace here; set the workspace's defaults from one of its "
                    "channels."
                )
            )
        return scope

    def _scope_id(self, event: Event, scope: str) -> tuple[ScopeKind, str]:
        if scope == "workspace":
            return "workspace", event.place.workspace_id
        if scope == "channel":
            return "channel", event.place.channel_id
        return "user", event.user.id

    async def _tell(self, event: Event, text: str) -> None:
        await self.outbox.write(event.place, Notice(event, text), WritePolicy.NOW)

    async def _help(self, event: Event, about: str) -> None:
        offered: dict[Offered, tuple[str, ...]] = {
            "chat_models": tuple(allowed_chat_models(self.plan)),
            "diffusion_models": tuple(self.diffusion_models()),
        }
        text = help_text(about or None, offered)
        if not about or help_specs(about)[0].name == "chat":
            text = f"{text}\n\n{chat_help()}"
        for piece in split_text(text, self.outbox.profile(event.place.platform).max_text):
            await self._tell(event, piece)

    async def _usage(self, event: Event) -> None:
        totals = await self.store.ledger.usage_for_user(event.place.platform, event.user.id)
        if self.tiers is not None and self.tiers.configured:
            text = sentences(await self._tier_usage(event), _estimated(totals.estimated_credits))
        else:
            figures = {
                "tokens": format_number(totals.tokens),
                "prompt": format_number(totals.tokens_prompt),
                "completion": format_number(totals.tokens_completion),
                "credits": format_number(totals.credits),
            }
            usage = (
                _(
                    "Your usage today (UTC): {tokens} chat tokens ({prompt} prompt + "
                    "{completion} completion) and {credits} image credits of your daily "
                    "budget of {budget}.",
                    budget=format_number(self.daily_credit_budget),
                    **figures,
                )
                if self.daily_credit_budget
                else _(
                    "Your usage today (UTC): {tokens} chat tokens ({prompt} prompt + "
                    "{completion} completion) and {credits} image credits.",
                    **figures,
                )
            )
            text = sentences(usage, _estimated(totals.estimated_credits))
        if event.user.is_admin and self.store.feedback is not None:
            counts = await self.store.feedback.counts(
                event.place.platform, event.place.workspace_id
            )
            text += "\n\n" + feedback_lines(counts)
        await self._tell(event, text)

    async def _tier_usage(self, event: Event) -> str:
        """The user's tier and what is left of it in its window."""
        assert self.tiers is not None
        platform, user = event.place.platform, event.user
        tier = self.tiers.tier_of(platform, user)
        spent = await self.store.ledger.spent(platform, user.id, tier.refill)
        daily = tier.refill == "daily"
        credits = _left(spent.credits, tier.daily_credits, spent, False)
        tokens = _left(spent.tokens, tier.daily_chat_tokens, spent, True)
        lines = [
            _tier_line(tier.name, daily=daily, admin=user.is_admin),
            _("Image credits today (UTC): {left}", left=credits)
            if daily
            else _("Image credits in the last 24 hours: {left}", left=credits),
            _("Chat tokens today (UTC): {left}", left=tokens)
            if daily
            else _("Chat tokens in the last 24 hours: {left}", left=tokens),
            ngettext(
                "Image jobs at once: up to {n}.",
                "Image jobs at once: up to {n}.",
                tier.concurrent_jobs,
            )
            if tier.concurrent_jobs
            else _("Image jobs at once: no limit."),
            _(
                "Modes: {modes}. Models: {models}.",
                # Translators: in "Modes: all. Models: all." (no restriction).
                modes=", ".join(tier.modes) or _("all"),
                models=", ".join(tier.models) or _("all"),
            ),
        ]
        return "\n".join(lines)

    async def _stored(self, event: Event, scope: str) -> ScopeSettings | None:
        kind, scope_id = self._scope_id(event, scope)
        return await self.store.settings.get_scope_settings(kind, event.place.platform, scope_id)

    async def _channel(self, event: Event) -> ScopeSettings | None:
        return await self._stored(event, "channel")

    async def _open_form(self, event: Event, scope: str) -> None:
        stored = await self._stored(event, scope)
        current = {name: _form_value(name, getattr(stored, name, None)) for name in SETTING_NAMES}
        if scope == "me":
            current["system_prompt"] = _shown(
                getattr(await self._channel(event), "system_prompt", None)
            )
        modal = modal_for(
            SETTINGS_ACTION,
            "" if scope == "me" else scope,
            defaults=current,
            models=allowed_chat_models(self.plan),
            max_fields=self.outbox.profile(event.place.platform).max_form_fields,
        )
        assert modal is not None
        await self.outbox.write(event.place, OpenForm(event, modal), WritePolicy.NOW)

    async def _save(self, event: Event, values: Mapping[str, OptionValue], scope: str) -> None:
        model = values.get("model")
        if isinstance(model, str) and not plan_allows(self.plan, model):
            raise UserError(
                _(
                    "{model} needs the Developer plan; this workspace is on the free plan. "
                    "Choose one of: {models}.",
                    model=model,
                    models=", ".join(allowed_chat_models(self.plan)),
                )
            )
        if scope != "me":
            await self._save_shared(event, values, scope)
            return
        admin_only = [name for name in ADMIN_SETTINGS if name in values]
        if admin_only:
            raise UserError(
                _(
                    "Only genbot admins set {setting}, per channel: {command}.",
                    setting=_(LABELS[admin_only[0]]),
                    command=written("settings", f"--scope channel {_flag(admin_only[0])} …"),
                )
            )
        mine = await self._stored(event, "me")
        changed: dict[str, Any] = {
            name: _stored_value(name, values[name])
            for name in USER_SETTINGS
            if name in values and _stored_value(name, values[name]) != getattr(mine, name, None)
        }
        given = values.get("system_prompt")
        prompt = None if given is None else str(given)
        new_prompt = None if prompt == CLEAR_SYSTEM_PROMPT else prompt
        channel = await self._channel(event)
        prompt_changed = prompt is not None and new_prompt != getattr(
            channel, "system_prompt", None
        )
        platform = event.place.platform
        if changed:
            await self.store.settings.set_scope_settings("user", platform, event.user.id, **changed)
        if prompt_changed:
            await self.store.settings.set_scope_settings(
                "channel", platform, event.place.channel_id, system_prompt=new_prompt
            )
            await self.audit.record(
                "settings.changed",
                event.place,
                event.user.id,
                f"channel {event.place.channel_id}",
                before={"system_prompt": getattr(channel, "system_prompt", None)},
                after={"system_prompt": new_prompt},
            )
        with self._speaking_chosen(event, changed):
            await self._tell(event, self._confirmation(changed, prompt_changed, new_prompt))
            if changed and event.place.is_dm and self.home is not None:
                await self._redraw_home(event)

    def _speaking_chosen(
        self, event: Event, changed: Mapping[str, Any]
    ) -> AbstractContextManager[None]:
        """The language the user just chose (``auto``: their platform's), from the answer on;
        the cached choices are dropped so their next event reads it."""
        if "language" not in changed:
            return nullcontext()
        if self.languages is not None:
            self.languages.forget()
        return speaking(changed["language"] or decide(event).private)

    async def _redraw_home(self, event: Event) -> None:
        """Show the saved defaults on the user's home (best effort: they are saved and
        confirmed already)."""
        assert self.home is not None
        try:
            await self.home.on_home(HomeOpened(user=event.user, place=event.place))
        except (SurfaceError, RateLimited) as error:
            log.info("the home of %s shows older defaults until reopened: %s", event.user.id, error)

    async def _save_shared(
        self, event: Event, values: Mapping[str, OptionValue], scope: str
    ) -> None:
        """Channel or workspace defaults (the caller checked the user is an admin)."""
        stored = await self._stored(event, scope)
        wanted: dict[str, Any] = {
            name: _stored_value(name, value)
            for name, value in values.items()
            if name in SETTING_NAMES
        }
        changed = {
            name: value for name, value in wanted.items() if value != getattr(stored, name, None)
        }
        channel = scope == "channel"
        if not changed:
            await self._tell(
                event,
                _("Nothing changed: those are already this channel's defaults.")
                if channel
                else _("Nothing changed: those are already this workspace's defaults."),
            )
            return
        kind, scope_id = self._scope_id(event, scope)
        await self.store.settings.set_scope_settings(
            kind, event.place.platform, scope_id, **changed
        )
        if "language" in changed and self.languages is not None:
            self.languages.forget()
        before = {name: getattr(stored, name, None) for name in changed}
        await self.audit.record(
            "settings.changed",
            event.place,
            event.user.id,
            f"{kind} {scope_id}",
            before=before,
            after=changed,
        )
        shown = {
            # Translators: a setting's value once cleared back to the default.
            name: _("(default)") if value is None else value
            for name, value in changed.items()
        }
        await self._tell(
            event,
            _("Saved this channel's defaults: {changes}.", changes=_changes(shown))
            if channel
            else _("Saved this workspace's defaults: {changes}.", changes=_changes(shown)),
        )

    @staticmethod
    def _confirmation(mine: Mapping[str, Any], prompt_changed: bool, prompt: str | None) -> str:
        said: list[str] = []
        if mine:
            said.append(_("Saved your defaults: {changes}.", changes=_changes(mine)))
        if prompt_changed:
            if prompt is None:
                said.append(_("This channel's system prompt is back to the default."))
            else:
                said.append(
                    _("Saved this channel's system prompt: “{prompt}”.", prompt=_preview(prompt))
                )
        return sentences(*said) or _("Nothing changed: those are already your settings.")


def _left(used: int, allowed: int, spent: Spent, tokens: bool) -> str:
    """``used`` of ``allowed`` (0: no limit), what is left, and when it refills when none is."""
    if not allowed:
        return _("{used} used (no limit).", used=format_number(used))
    left = max(0, allowed - used)
    if left:
        return _(
            "{used} of {allowed} used, {left} left.",
            used=format_number(used),
            allowed=format_number(allowed),
            left=format_number(left),
        )
    return _(
        "{used} of {allowed} used, {left} left, more at {time}.",
        used=format_number(used),
        allowed=format_number(allowed),
        left=format_number(left),
        time=refill_time(spent.refills_at(allowed, tokens=tokens)),
    )


def _tier_line(name: str, *, daily: bool, admin: bool) -> str:
    """``/usage``'s first line with tiers: the user's tier and when it refills."""
    if admin:
        return (
            _(
                "Your tier: **{tier}** (you are a genbot admin: no limit applies to you); "
                "it refills at 00:00 UTC.",
                tier=name,
            )
            if daily
            else _(
                "Your tier: **{tier}** (you are a genbot admin: no limit applies to you); "
                "it refills hour by hour, a day after use.",
                tier=name,
            )
        )
    return (
        _("Your tier: **{tier}**; it refills at 00:00 UTC.", tier=name)
        if daily
        else _("Your tier: **{tier}**; it refills hour by hour, a day after use.", tier=name)
    )


def feedback_lines(counts: Sequence[FeedbackCount]) -> str:
    """Admins' view of the ratings of the workspace's chat answers: 👍/👎 and the share of 👍,
    per model."""
    if not counts:
        return _("Answer feedback in this workspace: none yet.")
    lines = [_("Answer feedback in this workspace (👍 / 👎, share of 👍):")]
    for count in counts:
        rated = count.good + count.bad
        share = format_percent(count.good / rated) if rated else "—"
        lines.append(f"• {count.model}: {count.good} / {count.bad}, {share}")
    return "\n".join(lines)


def _estimated(credits: int) -> str:
    """Which credits /usage shows are genbot's estimates (docs/provider.md#diffusion-prices)."""
    if not credits:
        return ""
    return _(
        "{credits} of the credits are estimates: the service does not say what diffusion "
        "costs, so genbot counts its configured prices.",
        credits=format_number(credits),
    )
