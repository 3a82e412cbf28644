"""The check of every prompt and chat message before any provider call.

:meth:`Moderation.screen` is the router's screen (:class:`bot.router.Screen`): it sees a
command's options once parsed and validated, and a form's values, before the feature that owns
them acts — so it comes after anything that rewrites a prompt at parsing (issue 27's ``/prefer``
options are put in by the router before it), and it checks each prompt a prompt's ``{…}``
choices expand into instead of the prompt typed, where it is expanded before it is sent
(``/imagine``'s and its forms'; ``/chat`` and ``/diffusion`` send theirs as typed, and a press
its stored prompt as it is): what it checks is what the provider gets.
:meth:`Moderation.check_message` is the chat engine's check of a message it is about to
answer, :meth:`Moderation.check_document` of a document's text read into it (what the model
would see of it: its name and the pages or lines that fit), and :meth:`Moderation.screened` its
answer's;
:meth:`Moderation.describe_result` the tracker's check of a finished describe job's prompts;
:meth:`Moderation.refused_prompt` the chat tools' check of a prompt the model wrote.

A banned user is refused every command but ``/settings``, ``/usage``, ``/help`` and admin
commands, every form but the settings form, every press that starts work (the router screens
only those: :class:`bot.refs.Work`) and every chat message. A text matching a rule surely
(:mod:`bot.features.moderation.rules`) is refused and counted as an offence, which bans its
author for the configured minutes; an unsure match goes to the model check when it is on
(:class:`Judge`) and passes otherwise. Admins are refused like anyone (so they can try their
rules) but earn no offence.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from typing import Any, Final, Protocol

from bot.api import TextDeltas
from bot.features.audit.trail import GENBOT, AuditTrail
from bot.features.moderation.answers import WithheldFromMatch, withheld_answers
from bot.features.moderation.results import withhold_prompts
from bot.features.moderation.rules import Match, RuleSet
from bot.features.moderation.wording import (
    CHECK_FAILED_TEXT,
    banned_text,
    refusal_text,
)
from bot.kernel import (
    ButtonPress,
    Command,
    ModalSubmit,
    ModerationSettings,
    OptionValue,
    Place,
    User,
    UserError,
    UserMessage,
    _,
    expands_prompt,
    metrics,
    sent_prompts,
)
from bot.refs import STORED_MESSAGE
from storage import Job, ModerationRule, ModerationStore, Offence

log = logging.getLogger(__name__)

PROMPT_FIELDS: Final = frozenset(
    {"prompt", "negative_prompt", "system", "system_prompt", "options"}
)
"""The command options and form fields that carry text for the provider."""
QUOTED: Final = 300
"""How much of a refused text the audit log keeps."""
UNBANNED_COMMANDS: Final = frozenset({"settings", "usage", "help"})
"""Commands a banned user may still use (admin commands too), and the settings form (whose
action is ``settings``); their prompt fields (a channel's system prompt) are still checked."""


class Judge(Protocol):
    """The model check: whether a text breaks the rules (None: no answer in time)."""

    async def __call__(self, text: str, category: str) -> bool | None: ...


def global_rules(settings: ModerationSettings) -> list[ModerationRule]:
    """The ``[moderation]`` section's words and patterns as rules."""
    words = settings.words.items()
    patterns = settings.patterns.items()
    return [ModerationRule(c, w) for c, listed in words for w in listed] + [
        ModerationRule(c, p, pattern=True) for c, listed in patterns for p in listed
    ]


class Moderation:
    """Checks prompts and chat messages against the global and the workspace's rules, counts
    offences and enforces bans (see the module docstring)."""

    def __init__(
        self,
        settings: ModerationSettings,
        store: ModerationStore,
        judge: Judge | None = None,
        *,
        audit: AuditTrail,
    ) -> None:
        self.settings = settings
        self.store = store
        self.audit = audit
        self.judge = judge if settings.model_check else None
        self._global = tuple(global_rules(settings))
        self._compiled: dict[tuple[ModerationRule, ...], RuleSet] = {}

    async def screen(
        self, event: Command | ModalSubmit | ButtonPress, values: Mapping[str, OptionValue]
    ) -> None:
        """Refuse (:class:`UserError`) a command, form or press that starts work of a banned
        user, or whose prompt fields (a press: the stored prompt it sends again) break a
        rule, each as it is sent: a prompt that is expanded (:func:`bot.kernel.expands_prompt`:
        ``/imagine``'s, a Remix form's…) as the prompts its ``{…}`` choices make
        (:func:`bot.kernel.sent_prompts`), any other as it is; a press's stored chat message
        (:data:`bot.refs.STORED_MESSAGE`, 🔁) is refused as :meth:`check_message` refuses it
        typed."""
        name = event.name if isinstance(event, Command) else event.action
        if isinstance(event, Command) and name.startswith("admin."):
            return
        if name not in UNBANNED_COMMANDS:
            await self._refuse_banned(event.user, event.place)
        texts: list[str] = []
        for field, value in values.items():
            if field not in PROMPT_FIELDS or not isinstance(value, str) or not value.strip():
                continue
            typed = value.strip()
            expanded = field == "prompt" and expands_prompt(event)
            texts += sent_prompts(typed) if expanded else (typed,)
        if texts:
            await self._check(event.user, event.place, "\n".join(texts), echo=True)
        message = values.get(STORED_MESSAGE)
        if isinstance(message, str) and message.strip():
            await self._check(event.user, event.place, message, echo=False)

    async def check_message(self, event: UserMessage, text: str) -> None:
        """Refuse (:class:`UserError`) a chat message of a banned user, or one breaking a rule
        (the message stays where the user wrote it)."""
        await self._refuse_banned(event.user, event.place)
        await self._check(event.user, event.place, text, echo=False)

    async def check_document(self, user: User, place: Place, name: str, text: str) -> None:
        """Refuse (:class:`UserError`, naming the document ``name``) a document whose ``text``
        — as the model would read it — breaks a rule, with an offence as for a message."""
        await self._check(user, place, text, echo=False, document=name)

    async def screened(self, place: Place, deltas: TextDeltas) -> TextDeltas:
        """A chat answer's ``deltas`` as they may be shown in ``place``: unchanged where no rule
        is in force, else withheld from a match on (:mod:`bot.features.moderation.answers`)."""
        rules = await self.rules(place.platform, place.workspace_id)
        return WithheldFromMatch(rules, deltas) if rules else deltas

    async def kept_answers(self, place: Place, texts: Sequence[str]) -> tuple[tuple[str, ...], str]:
        """A chat message's other answers (``n`` > 1) that may be offered in ``place``, and the
        notice for those withheld ("" when none was; :mod:`bot.features.moderation.answers`)."""
        rules = await self.rules(place.platform, place.workspace_id)
        return withheld_answers(rules, texts) if rules else (tuple(texts), "")

    async def refused_prompt(self, place: Place, prompt: str) -> str | None:
        """The category of the rule a prompt the chat model wrote (its ``generate_image``
        tool) surely breaks in ``place``, or None; no offence is counted (the model wrote it)."""
        match = (await self.rules(place.platform, place.workspace_id)).match(prompt)
        if match is None or not match.sure:
            return None
        metrics.MODERATION.labels(place.platform, "refused").inc()
        refused = {"category": match.category, "text": _quoted(prompt), "by": "chat model"}
        await self.audit.record("moderation.refused", place, GENBOT, "", after=refused)
        return match.category

    async def describe_result(self, job: Job, result: Mapping[str, Any]) -> dict[str, Any]:
        """A finished describe ``job``'s ``result`` with the prompts that match a rule of its
        workspace withheld (:mod:`bot.features.moderation.results`)."""
        rules = await self.rules(job.platform, job.workspace_id)
        return withhold_prompts(rules, result) if rules else dict(result)

    async def rules(self, platform: str, workspace_id: str) -> RuleSet:
        """The rules in force in a workspace: the global ones and its own."""
        own = await self.store.rules(platform, workspace_id)
        key = (*self._global, *own)
        compiled = self._compiled.get(key)
        if compiled is None:
            if len(self._compiled) > 256:
                self._compiled.clear()
            compiled = self._compiled[key] = RuleSet(key)
        return compiled

    async def _refuse_banned(self, user: User, place: Place) -> None:
        ban = await self.store.running_ban(place.platform, user.id)
        if ban is not None:
            metrics.MODERATION.labels(place.platform, "banned").inc()
            refused = {"banned_until": ban.until}
            await self.audit.record("moderation.refused", place, user.id, user.id, after=refused)
            raise UserError(banned_text(ban))

    async def _check(
        self, user: User, place: Place, text: str, *, echo: bool, document: str = ""
    ) -> None:
        match = (await self.rules(place.platform, place.workspace_id)).match(text)
        if match is None or not await self._confirmed(match, text, place):
            return
        offence = None
        if not user.is_admin:
            offence = await self.store.record_offence(
                place.platform, user.id, self.settings.ban_minutes
            )
        metrics.MODERATION.labels(place.platform, "refused").inc()
        await self._record(user, place, match.category, text, offence)
        log.info(
            "moderation refused a text of %s/%s (category %s, offence %s today)",
            place.platform,
            user.id,
            match.category,
            offence.count if offence else "none: admin",
        )
        raise UserError(
            refusal_text(
                match.category, offence, self.store.clock(), text if echo else "", document
            )
        )

    async def _record(
        self, user: User, place: Place, category: str, text: str, offence: Offence | None
    ) -> None:
        """The refusal, and the ban it earned when it did (a longer one running is kept)."""
        refused = {
            "category": category,
            "text": _quoted(text),
            "offence": offence.count if offence is not None else None,
        }
        await self.audit.record("moderation.refused", place, user.id, user.id, after=refused)
        if offence is not None and offence.banned_until > self.store.clock():
            banned = {"banned_until": offence.banned_until, "offence": offence.count}
            await self.audit.record("moderation.banned", place, GENBOT, user.id, after=banned)

    async def _confirmed(self, match: Match, text: str, place: Place) -> bool:
        """Whether ``match`` refuses ``text``: a sure one does; an unsure one when the model
        check says so (or cannot answer and fails closed: then :data:`CHECK_FAILED_TEXT`)."""
        if match.sure:
            return True
        if self.judge is None:
            return False
        verdict = await self.judge(text, match.category)
        metrics.MODERATION.labels(place.platform, f"model_{verdict}".lower()).inc()
        if verdict is None:
            if self.settings.model_check_fails == "open":
                return False
            raise UserError(_(CHECK_FAILED_TEXT))
        return verdict


def _quoted(text: str) -> str:
    """A refused text as the audit log keeps it (its start, for an admin to judge an appeal)."""
    return text if len(text) <= QUOTED else text[: QUOTED - 1] + "…"
