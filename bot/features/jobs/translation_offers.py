"""The buttons of a translation offer (``[prompts] translate = "ask"``): **Translate to English?**
runs the stored ``/imagine`` with its prompt translated, **Run as written** with it as the user
wrote it (:mod:`bot.features.jobs.prompt_translation` makes the offer).

An offer is stored (a :class:`storage.Batch` holding the command, with no jobs of its own) so
its buttons work after a restart and in any process; one press settles it
(:meth:`storage.Preferences.settle_batch`: the first press, in one process, wins, and none works
once it expired). The ref check (:mod:`bot.refs`, kind ``batch``) lets only the user who ran
the command press them, in its workspace. The command then runs as if just given — one job, or
the preview of several (:meth:`bot.features.jobs.batches.Batches.run`).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import ClassVar

from bot.features.jobs.batch_queue import attachments_of, requester
from bot.features.jobs.batches import Batches
from bot.features.jobs.prompt_translation import (
    AS_WRITTEN,
    OFFER,
    TRANSLATE,
    PromptTranslation,
)
from bot.kernel import ButtonPress, Command, ModalSubmit, OptionValue, UserError, _, metrics
from bot.outbox import Notice, Outbox, WritePolicy
from bot.refs import BatchReferent, RefKind, Work
from storage import Preferences


class TranslationOffers:
    """The offer's two buttons (see the module docstring)."""

    commands: frozenset[str] = frozenset()
    actions: ClassVar[Mapping[str, RefKind]] = {
        TRANSLATE: RefKind.BATCH,
        AS_WRITTEN: RefKind.BATCH,
    }
    work: ClassVar[Mapping[str, Work]] = {TRANSLATE: Work.PAID, AS_WRITTEN: Work.PAID}

    def __init__(
        self,
        translation: PromptTranslation,
        batches: Batches,
        store: Preferences,
        outbox: Outbox,
    ) -> None:
        self._translation = translation
        self._batches = batches
        self._store = store
        self._outbox = outbox

    async def on_command(self, event: Command, options: Mapping[str, OptionValue]) -> None:
        """It has no commands."""
        raise UserError(_("genbot has no such command."))

    async def on_button(self, event: ButtonPress, referent: BatchReferent) -> None:
        """Run the offered command, translated or as written (once)."""
        offer = referent.batch
        kept = offer.command.get(OFFER)
        if not isinstance(kept, dict):
            raise UserError(_("This button is no longer supported."))
        if not await self._store.settle_batch(offer.id, "run"):
            settled = await self._store.batch(offer.id)
            if settled is not None and settled.outcome is not None:
                raise UserError(_("You answered this offer already."))
            raise UserError(_("This offer expired: run the command again."))
        user, place = requester(offer)
        options = dict(kept["options"])
        command = Command(
            user=user,
            place=place,
            context=event.context,
            name="imagine",
            options=options,
            attachments=attachments_of(offer),
            key=offer.id,
        )
        if event.action == TRANSLATE:
            translation = await self._translation.translate(command, str(options["prompt"]))
            options = translation.into(options)
            await self._outbox.write(event.place, Notice(event, translation.note), WritePolicy.NOW)
        else:
            metrics.prompt_translation("as_written")
        await self._batches.run(command, options)

    async def on_modal(self, event: ModalSubmit, referent: BatchReferent) -> None:
        """It has no forms."""
        raise UserError(_("This form is no longer supported."))
