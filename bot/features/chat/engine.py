"""The chat engine: genbot's answers to plain messages and the ``/chat`` command.

It is both the core's *conversations* object (``on_message``) and a feature owning ``chat`` and
the ``chat_vision`` button. Where a message belongs is decided in :mod:`bot.features.chat.scoping`,
what a request carries in :mod:`bot.features.chat.requests`, how it is answered in
:mod:`bot.features.chat.answer`. Every refusal (a plan that lacks the model, a message too long for
it) happens before anything is stored, posted or sent to the provider — only a DM's conversation
exists beforehand; a mention or ``/chat`` in a channel opens its thread only once the message is
known to fit. Text files and PDFs attached to a message or ``/chat`` are read into the user's
turn within the model's context (:mod:`bot.features.chat.documents`). genbot's own messages (the
question ``/chat`` posts, notes) are written through the outbox (:class:`bot.outbox.Outbox`,
``RAISE``): bounded, honouring retry-after, a clear sentence when the platform keeps refusing.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import weakref
from collections.abc import AsyncIterator, Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any, ClassVar, Protocol

from bot.api import ProviderClient
from bot.api.chat import plan_allows
from bot.features.chat.alternatives import PICK_ACTION, Pick, pick_alternative
from bot.features.chat.answer import Answerer, AnswerStorage, ScreensAnswers
from bot.features.chat.branching import BRANCH_ACTION, branch_note, fork_of, switch_branch
from bot.features.chat.caps import ChatCaps
from bot.features.chat.controls import REGENERATE_ACTION, check_answer_for, check_asked_by
from bot.features.chat.documents import (
    DocumentLimits,
    DocumentReader,
    Read,
    note,
    refuse_unreadable,
    unreadable,
    with_documents,
)
from bot.features.chat.history import (
    History,
    counted,
    load_history,
    system_tokens,
    user_message,
)
from bot.features.chat.image_links import HostImage, ImageLinks
from bot.features.chat.regenerate import replace_answer, replaceable
from bot.features.chat.renderer import RenderResult
from bot.features.chat.requests import (
    VISION_MODEL,
    ChatDefaults,
    ChatOverrides,
    ChatParams,
    check_plan,
    fit,
    history_tokens,
    image_parts,
    resolve_params,
    shareable_images,
)
from bot.features.chat.scoping import (
    Target,
    dm_target,
    existing_target,
    open_thread,
    thread_target,
    thread_title,
)
from bot.features.chat.stops import StopRequests
from bot.features.chat.tokens import REPLY_PRIMING_TOKENS, count_message
from bot.features.chat.tools import ImageTools
from bot.kernel import (
    N_,
    Attachment,
    Button,
    ButtonPress,
    Command,
    Event,
    MessageRef,
    ModalSubmit,
    OptionValue,
    OutMessage,
    Place,
    User,
    UserError,
    UserMessage,
    _,
    check_text,
    is_document,
    is_image,
    metrics,
    ngettext,
)
from bot.outbox import Edit, Outbox, Post, WritePolicy
from bot.refs import AlternativeReferent, ConversationReferent, RefKind, TurnReferent, Work
from storage import (
    UNSET,
    AnswerFeedback,
    ChatMessage,
    Conversation,
    ConversationBranches,
    ConversationLocks,
    ConversationStore,
    SettingsReader,
    StorageError,
    UsageLedger,
)

log = logging.getLogger(__name__)

VISION_ACTION = "chat_vision"
# Translators: a button switching a conversation to the model {model} (one that sees images).
VISION_LABEL_TEXT = N_("Use {model}")
EDIT_CONFLICT = N_(
    "That message is no longer part of the conversation (another version of it was chosen"
    " meanwhile); this edit was not answered."
)
VISION_LABEL = VISION_LABEL_TEXT.format(model=VISION_MODEL)
"""The button's label in English (the source language)."""
ChatReferent = ConversationReferent | AlternativeReferent | TurnReferent
"""What the chat engine's buttons name: a conversation (``Use …``), an alternative answer, an
answer to regenerate (🔁)."""


def _text(options: Mapping[str, OptionValue], name: str) -> str | None:
    value = options.get(name)
    return str(value).strip() or None if value is not None else None


def _number(options: Mapping[str, OptionValue], name: str) -> float | None:
    value = options.get(name)
    return float(value) if isinstance(value, int | float) else None


def _clip(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"


def asked_text(user: User, prompt: str, limit: int) -> str:
    """The question ``/chat`` posts in a channel (genbot's own text; it mentions nobody)."""
    return _clip(_("**{user}** asked: {prompt}", user=user.name or user.id, prompt=prompt), limit)


@dataclass(frozen=True)
class ChatStorage:
    """What the chat engine uses: conversations and their locks, effective settings, the
    usage ledger."""

    conversations: ConversationStore
    conversation_locks: ConversationLocks
    settings: SettingsReader
    ledger: UsageLedger
    branches: ConversationBranches | None = None
    """Where edits branch conversations (None: edits are not answered)."""
    feedback: AnswerFeedback | None = None
    """The answers' ratings, kept on their buttons when they are drawn again (None: not
    shown)."""


class Moderates(ScreensAnswers, Protocol):
    """What checks a message chat is about to answer and the text of each document read into
    it, refusing with :class:`UserError`, and moderates the answer (moderation)."""

    async def check_message(self, event: UserMessage, text: str) -> None: ...

    async def check_document(self, user: User, place: Place, name: str, text: str) -> None: ...


class ChatEngine:
    """Conversations in DMs, threads and reply chains, and the ``/chat`` command.

    It writes through ``outbox`` (the process's one); ``tools`` (the image engine) enables
    function calling; ``image_host`` keeps images the provider must be
    given as links (the media host, when genbot has a public address); ``moderation`` checks
    each message before it is answered, and the answer as it streams.
    """

    commands = frozenset({"chat"})
    actions: ClassVar[Mapping[str, RefKind]] = {
        VISION_ACTION: RefKind.CONVERSATION,
        PICK_ACTION: RefKind.ALTERNATIVE,
        REGENERATE_ACTION: RefKind.TURN,
        BRANCH_ACTION: RefKind.TURN,
    }
    work: ClassVar[Mapping[str, Work]] = {
        VISION_ACTION: Work.PAID,
        PICK_ACTION: Work.FREE,
        REGENERATE_ACTION: Work.RESUBMIT,
        BRANCH_ACTION: Work.FREE,
    }

    def __init__(
        self,
        store: ChatStorage,
        api: ProviderClient,
        outbox: Outbox,
        *,
        tools: ImageTools | None = None,
        defaults: ChatDefaults | None = None,
        final_timeout: float = 60.0,
        image_host: HostImage | None = None,
        caps: ChatCaps | None = None,
        moderation: Moderates | None = None,
        stops: StopRequests | None = None,
        documents: DocumentLimits | None = None,
        stopping: Callable[[], bool] = lambda: False,
    ) -> None:
        """``stopping``: whether the process is stopping (its router draining); a user's turn
        whose answer a stop cuts short is left for the process that outlives it to settle
        (:mod:`bot.features.chat.interrupted`), one cut short otherwise (the handler's
        deadline) is marked done here."""
        self.store = store
        self._stopping = stopping
        self.moderation = moderation
        self.caps = caps or ChatCaps()
        self.api = api
        self.outbox = outbox
        self.plan = api.settings.plan
        self.defaults = defaults or ChatDefaults()
        self.documents = DocumentReader(outbox, documents)
        self.answerer = Answerer(
            AnswerStorage(store.conversations, store.ledger, store.feedback),
            api,
            outbox,
            self.defaults,
            tools,
            final_timeout=final_timeout,
            image_links=ImageLinks(image_host),
            moderation=moderation,
            stops=stops,
        )
        self._locks: weakref.WeakValueDictionary[int, asyncio.Lock] = weakref.WeakValueDictionary()

    # Conversations ------------------------------------------------------------------------

    async def on_message(self, event: UserMessage) -> None:
        """Answer ``event`` when it belongs to a conversation (see
        :mod:`bot.features.chat.scoping`)."""
        text = event.text.strip()
        if event.edited:
            await self._edited(event, text)
            return
        images = [a for a in event.attachments if is_image(a) and a.url]
        documents = [a for a in event.attachments if is_document(a) and not is_image(a)]
        if not text and not images and not documents and not unreadable(event.attachments):
            return
        target = await existing_target(self.store.conversations, event)
        if target is None and not event.mentions_bot:
            return
        refuse_unreadable(event.attachments)
        self.documents.check(documents)
        check_text(text, _("Your message"))
        if self.moderation is not None:
            await self.moderation.check_message(event, text)
        await self.caps.check_budget(event.place.platform, event.user)
        async with self.caps.answering(event.place.platform, event.user):
            await self._answer_message(event, target, text, images, documents)

    async def _answer_message(
        self,
        event: UserMessage,
        target: Target | None,
        said: str,
        images: list[Attachment],
        documents: list[Attachment],
    ) -> None:
        if target is None:
            params = await self._params(event.user, event.place, None)
            reads = await self._read(event.user, event.place, params, said, documents)
            text = with_documents(said, reads)
            self._check_fits_alone(params, text, images)
            if event.place.thread_id is not None:
                target = await thread_target(
                    self.store.conversations, event.user, event.place, event, create=True
                )
            else:
                root = MessageRef(event.place, event.message_id)
                # Translators: the title of a thread opened by a message with only an image.
                title = thread_title(
                    said or (documents[0].filename if documents else _("an image"))
                )
                target = await open_thread(
                    self.store.conversations, self.outbox, root, title, event.user, event
                )
            assert target is not None
        else:
            params = await self._params(event.user, target.place, target.conversation)
            reads = await self._read(event.user, event.place, params, said, documents)
            text = with_documents(said, reads)
        images = await shareable_images(self.outbox, event.place, images)
        await self._converse(
            target,
            event.user,
            params,
            text,
            images,
            (event.message_id,),
            event.place,
            note(reads, params.model, self.documents.limits.max_pages),
        )

    async def _edited(self, event: UserMessage, text: str) -> None:
        """The author edited a message that is a live turn of a conversation: the conversation
        branches there (:mod:`storage.queries.branches`) and the new text is answered. Other
        edits (a message genbot never took as a turn, an unchanged text, a turn of a branch set
        aside) change nothing. Only the text is read again (attachments are not). Edits of one
        message are handled in turn, each from the version the one before made, so the last
        text the message shows is what the conversation goes on from."""
        place = event.place
        found = await self.store.conversations.find_conversation_by_message(
            place.platform, place.channel_id, event.message_id
        )
        branches = self.store.branches
        if branches is None or found is None or not text:
            return
        turn = await self._edited_turn(found.id, event)
        if turn is None or turn.content == text:
            return
        if found.kind == "thread" and place.thread_id is None:
            place = place.in_thread(found.thread_key)
        check_text(text, _("Your message"))
        if self.moderation is not None:
            await self.moderation.check_message(event, text)
        await self.caps.check_budget(place.platform, event.user)
        async with self.caps.answering(place.platform, event.user):
            params = await self._params(event.user, place, found)
            self._check_fits_alone(params, text, [])
            async with self._turn(found.id):
                turn = await self._edited_turn(found.id, event)
                if turn is None:
                    raise UserError(_(EDIT_CONFLICT))
                if turn.content == text:
                    return
                message, _images = self._new_turn(params, text, [])
                new_turn = await branches.edit(
                    found.id,
                    turn.id,
                    text,
                    token_count=counted(message).tokens,
                    platform_message_ids=(event.message_id,),
                    channel_id=place.channel_id,
                    author=event.user.id,
                )
                metrics.CHAT_CONTROLS.labels(place.platform, "edit").inc()
                target = Target(found, place, event)
                async with self._awaiting_answer(new_turn):
                    await self._note_version(found.id, branches, new_turn, target)
                    history = await self._history(found.id, params)
                    await self.answerer.answer(target, event.user, params, history)

    async def _edited_turn(self, conversation_id: int, event: UserMessage) -> ChatMessage | None:
        """The live user turn ``event``'s message is now (an edit handled before this one
        linked it to its own turn), or None."""
        place = event.place
        conversations = self.store.conversations
        turn_id = await conversations.turn_of_message(
            place.platform, place.channel_id, event.message_id
        )
        turn = None if turn_id is None else await conversations.get_turn(conversation_id, turn_id)
        if turn is None or turn.role != "user" or turn.branch is not None:
            return None
        return turn

    async def _note_version(
        self, conversation_id: int, branches: ConversationBranches, turn: int, target: Target
    ) -> None:
        """Post the note ‹ n/m › for the edit whose new version is ``turn``, linked to it."""
        found = fork_of(await branches.forks(conversation_id), turn)
        if found is None:
            return
        posted = await self._post(target.place, branch_note(conversation_id, *found), target.origin)
        await self.store.conversations.link_conversation_messages(
            conversation_id, [posted.message_id], chat_message_id=turn,
            channel_id=target.place.channel_id,
        )  # fmt: skip

    # Feature ------------------------------------------------------------------------------

    async def on_command(self, event: Command, options: Mapping[str, OptionValue]) -> None:
        """``/chat prompt [model] [temperature] [max_tokens] [system]``."""
        await self.caps.check_budget(event.place.platform, event.user)
        async with self.caps.answering(event.place.platform, event.user):
            await self._chat_command(event, options)

    async def _chat_command(self, event: Command, options: Mapping[str, OptionValue]) -> None:
        prompt = _text(options, "prompt") or ""
        max_tokens = _number(options, "max_tokens")
        overrides = ChatOverrides(
            model=_text(options, "model"),
            system=_text(options, "system"),
            temperature=_number(options, "temperature"),
            max_tokens=int(max_tokens) if max_tokens is not None else None,
        )
        place, user = event.place, event.user
        files = list(event.attachments.values())
        refuse_unreadable(files)
        images = [a for a in files if is_image(a)]
        documents = [a for a in files if is_document(a) and not is_image(a)]
        self.documents.check(documents)
        target: Target | None = None
        if place.is_dm:
            target = await dm_target(self.store.conversations, user, place, event)
        elif place.thread_id is not None:
            target = await thread_target(self.store.conversations, user, place, event, create=False)
        conversation = target.conversation if target else None
        params = await self._params(user, place, conversation, overrides)
        reads = await self._read(user, place, params, prompt, documents)
        text = with_documents(prompt, reads)
        message_ids: tuple[str, ...] = ()
        if target is None:
            self._check_fits_alone(params, text, images)
        if target is None and place.thread_id is not None:
            target = await thread_target(self.store.conversations, user, place, event, create=True)
        if target is None:
            asked = OutMessage(
                asked_text(user, prompt, self.outbox.profile(place.platform).max_text)
            )
            question = await self._post(place, asked, event)
            target = await open_thread(
                self.store.conversations, self.outbox, question, thread_title(prompt), user, None
            )
            message_ids = (question.message_id,)
        if overrides.model is not None or overrides.system is not None:
            await self.store.conversations.update_conversation(
                target.conversation.id,
                model=overrides.model if overrides.model is not None else UNSET,
                system_prompt=overrides.system if overrides.system is not None else UNSET,
            )
            updated = await self.store.conversations.get_conversation(target.conversation.id)
            assert updated is not None
            target = replace(target, conversation=updated)
        images = await shareable_images(self.outbox, place, images)
        told = note(reads, params.model, self.documents.limits.max_pages)
        await self._converse(target, user, params, text, images, message_ids, place, told)

    async def on_button(self, event: ButtonPress, referent: ChatReferent) -> None:
        """``Use llm-4-vision-preview``: switch the conversation and answer its last message;
        ``Use N``: continue from alternative answer N (:mod:`bot.features.chat.alternatives`);
        🔁: answer the newest message again (:mod:`bot.features.chat.regenerate`). All three
        are for the user answered (and admins) only (:func:`check_asked_by`)."""
        conversation = referent.conversation
        if isinstance(referent, TurnReferent) and event.action == BRANCH_ACTION:
            await self._switch(event, conversation, referent.turn)
            return
        if isinstance(referent, TurnReferent):
            await self._regenerate(event, conversation, referent.turn)
            return
        if event.action == PICK_ACTION:
            await self._pick(event, conversation)
            return
        if event.action != VISION_ACTION:
            raise UserError(_("This button is no longer supported."))
        newest = await self.store.conversations.conversation_tail(conversation.id, max_tokens=0)
        asked = next((turn for turn in reversed(newest) if turn.role == "user"), None)
        check_asked_by(event, asked.author if asked is not None else None)
        check_plan(VISION_MODEL, self.plan)
        self.caps.check_model(event.place.platform, event.user, VISION_MODEL)
        await self.caps.check_budget(event.place.platform, event.user)
        async with self.caps.answering(event.place.platform, event.user):
            await self._see_images(event, conversation)

    async def _see_images(self, event: ButtonPress, conversation: Conversation) -> None:
        """Switch ``conversation`` to the vision model and answer its last message."""
        async with self._turn(conversation.id):
            newest = await self.store.conversations.conversation_tail(conversation.id, max_tokens=0)
            asked = next((turn for turn in newest if turn.role == "user"), None)
            if asked is None:
                raise UserError(_("There is no message in this conversation to answer."))
            if conversation.model == VISION_MODEL and newest[-1].role != "user":
                raise UserError(_("This conversation already uses {model}.", model=VISION_MODEL))
            async with self._awaiting_answer(asked.id):
                await self._switch_to_vision(event, conversation)

    async def _switch_to_vision(self, event: ButtonPress, conversation: Conversation) -> None:
        """Store ``conversation``'s model as the vision model, say so on the pressed message
        and answer the conversation's newest message."""
        await self.store.conversations.update_conversation(conversation.id, model=VISION_MODEL)
        switched = await self.store.conversations.get_conversation(conversation.id)
        assert switched is not None
        switched_note = OutMessage(_("Switched this conversation to {model}.", model=VISION_MODEL))
        shown_at = MessageRef(event.place, event.message_id)
        await self.outbox.write(event.place, Edit(shown_at, switched_note), WritePolicy.RAISE)
        params = await self._params(event.user, event.place, switched)
        history = await self._history(switched.id, params)
        target = Target(switched, event.place, event)
        await self.answerer.answer(target, event.user, params, history)

    async def _regenerate(
        self, event: ButtonPress, conversation: Conversation, turn: ChatMessage
    ) -> None:
        params = await self._params(event.user, event.place, conversation)
        await self.caps.check_budget(event.place.platform, event.user)
        async with (
            self.caps.answering(event.place.platform, event.user),
            self._turn(conversation.id),
        ):
            replacing = await replaceable(self.store.conversations, event, conversation, turn)
            async with self._awaiting_answer(replacing.asked.id):
                await replace_answer(self.store.conversations, self.outbox, event, replacing)
                metrics.CHAT_CONTROLS.labels(event.place.platform, "regenerate").inc()
                history = await self._history(conversation.id, params)
                target = Target(conversation, event.place, event)
                await self.answerer.answer(target, event.user, params, history)

    async def _switch(
        self, event: ButtonPress, conversation: Conversation, turn: ChatMessage
    ) -> None:
        if self.store.branches is None or turn.role != "user":
            raise UserError(_("This button is no longer supported."))
        async with self._turn(conversation.id):
            await switch_branch(self.store.branches, self.outbox, event, conversation, turn)

    async def _pick(self, event: ButtonPress, conversation: Conversation) -> None:
        pick = Pick.parse(event.ref)
        reply = await self.store.conversations.get_turn(conversation.id, pick.turn_id)
        if reply is not None:
            check_answer_for(event, reply)
        async with self._turn(conversation.id):
            await pick_alternative(
                self.store.conversations, self.outbox, event.place, event.message_id, pick
            )

    async def on_modal(self, event: ModalSubmit, referent: ChatReferent) -> None:
        """The chat engine opens no forms."""
        raise UserError(_("This form is no longer supported."))

    # Internals ----------------------------------------------------------------------------

    @contextlib.asynccontextmanager
    async def _turn(self, conversation_id: int) -> AsyncIterator[None]:
        """One turn of a conversation at a time: this process's turns in arrival order, then
        the conversation's lock across processes."""
        async with (
            self._lock(conversation_id),
            self.store.conversation_locks.conversation_lock(conversation_id),
        ):
            yield

    def turn_lock(self, conversation_id: int) -> asyncio.Lock:
        """The lock this process holds while it answers the conversation (held by whoever
        settles an answer of it left streaming, :mod:`bot.features.chat.interrupted`)."""
        return self._lock(conversation_id)

    def _lock(self, conversation_id: int) -> asyncio.Lock:
        lock = self._locks.get(conversation_id)
        if lock is None:
            lock = asyncio.Lock()
            self._locks[conversation_id] = lock
        return lock

    async def _params(
        self,
        user: User,
        place: Place,
        conversation: Conversation | None,
        overrides: ChatOverrides | None = None,
    ) -> ChatParams:
        params = await resolve_params(
            self.store.settings, self.defaults, user, place, conversation, overrides
        )
        check_plan(params.model, self.plan, params.model_source)
        self.caps.check_model(place.platform, user, params.model)
        return params

    def _new_turn(
        self, params: ChatParams, text: str, images: Sequence[Attachment]
    ) -> tuple[dict[str, Any], list[dict[str, Any]] | None]:
        """The user's turn as the model takes it (vision parts, or text for other models) and
        the vision parts to store."""
        parts = image_parts(text, images) if images else None
        return user_message(text, parts, params.model), parts

    def _check_fits_alone(
        self, params: ChatParams, text: str, images: Sequence[Attachment]
    ) -> None:
        """Refuse a message that cannot fit even as a new conversation's only turn (checked
        before a thread or conversation is made for it)."""
        turn, _images = self._new_turn(params, text, images)
        history = History(params.model)
        history.add(turn)
        fit(params, self.defaults, history.request_turns(), self.answerer.function_tokens())

    async def _read(
        self,
        user: User,
        place: Place,
        params: ChatParams,
        text: str,
        documents: Sequence[Attachment],
    ) -> list[Read]:
        """``documents`` read within the room the user's turn has in the model's context, each
        read's text (what the model would see) checked by moderation before anything is
        stored, posted or sent."""
        if not documents:
            return []
        room = (
            history_tokens(params, self.defaults)
            - system_tokens(params.system_prompt)
            - self.answerer.function_tokens()
            - count_message({"role": "user", "content": text})
            - REPLY_PRIMING_TOKENS
        )
        reads = await self.documents.read(place, documents, room)
        if self.moderation is not None:
            for read in reads:
                await self.moderation.check_document(user, place, read.name, read.text)
        return reads

    async def _history(self, conversation_id: int, params: ChatParams) -> History:
        max_tokens = history_tokens(params, self.defaults)
        return await load_history(
            self.store.conversations, conversation_id, params.model, max_tokens
        )

    async def _post(self, place: Place, message: OutMessage, origin: Event | None) -> MessageRef:
        return await self.outbox.write(place, Post(message, origin), WritePolicy.RAISE)

    async def _converse(
        self,
        target: Target,
        user: User,
        params: ChatParams,
        text: str,
        images: Sequence[Attachment],
        message_ids: Sequence[str],
        came_from: Place,
        told: str | None = None,
    ) -> RenderResult | None:
        """Store the user's turn (after checking it fits), say what of its documents was
        read when not all of it (``told``), and answer it."""
        conversation = target.conversation
        async with self._turn(conversation.id):
            turn, parts = self._new_turn(params, text, images)
            history = await self._history(conversation.id, params)
            added = history.add(turn)
            fit(params, self.defaults, history.request_turns(), self.answerer.function_tokens())
            turn_id = await self.store.conversations.append_message(
                conversation.id,
                "user",
                text,
                parts=parts,
                token_count=added.tokens,
                platform_message_ids=message_ids,
                channel_id=came_from.channel_id,
                author=user.id,
            )
            async with self._awaiting_answer(turn_id):
                if told is not None:
                    await self._tell(target, told)
                if images and not params.sees_images:
                    answered = await self._cannot_see(target, params, len(images), text)
                    if not answered:
                        return None
                return await self.answerer.answer(target, user, params, history)

    @contextlib.asynccontextmanager
    async def _awaiting_answer(self, turn_id: int) -> AsyncIterator[None]:
        """The user's turn ``turn_id`` waits for its answer while the block runs: it is stored
        ``streaming`` as the block begins and done when it ends, however it ends, unless the
        process is stopping (the router draining): then it is left for the process that
        outlives this one to note as not answered (:mod:`bot.features.chat.interrupted`).
        Every answer to a user's turn starts here, before anything of it is shown: a new
        message, an edit, the vision switch and 🔁."""
        try:
            await self.store.conversations.update_message(turn_id, state="streaming")
            yield
        finally:
            if not self._stopping():
                await asyncio.shield(self._done_with(turn_id))

    async def _done_with(self, turn_id: int) -> None:
        """The user's turn ``turn_id`` is no longer waiting for its answer (a failure to say
        so is logged: the turn is then settled as not answered once this process is gone)."""
        try:
            await self.store.conversations.update_message(turn_id, state=None)
        except StorageError as error:
            log.warning("could not store that turn %d was answered: %s", turn_id, error)

    async def _tell(self, target: Target, text: str) -> None:
        """Post genbot's ``text`` in the conversation (replies to it continue it)."""
        posted = await self._post(target.place, OutMessage(text), target.origin)
        await self.store.conversations.link_conversation_messages(
            target.conversation.id, [posted.message_id], channel_id=target.place.channel_id
        )

    async def _cannot_see(self, target: Target, params: ChatParams, count: int, text: str) -> bool:
        """Tell the user the model cannot see images; offer the vision model when the plan
        has it (then nothing is answered yet). Returns whether to answer the text now."""
        models = {"model": params.model, "vision": VISION_MODEL}
        if plan_allows(self.plan, VISION_MODEL):
            note = ngettext(
                "{model} cannot see images, so your image was not sent to it. Switch this "
                "conversation to {vision} to have the model look at it and answer again.",
                "{model} cannot see images, so your {n} images were not sent to it. Switch this "
                "conversation to {vision} to have the model look at them and answer again.",
                count,
                **models,
            )
            label = _(VISION_LABEL_TEXT, model=VISION_MODEL)
            button = Button(label, VISION_ACTION, str(target.conversation.id), "primary")
            message = OutMessage(note, buttons=((button,),))
            posted = await self._post(target.place, message, target.origin)
            await self.store.conversations.link_conversation_messages(
                target.conversation.id, [posted.message_id], channel_id=target.place.channel_id
            )
            return False
        if text:
            note = ngettext(
                "{model} cannot see images and {vision} needs the Developer plan, so your image "
                "was not sent; only your text is answered.",
                "{model} cannot see images and {vision} needs the Developer plan, so your {n} "
                "images were not sent; only your text is answered.",
                count,
                **models,
            )
        else:
            note = ngettext(
                "{model} cannot see images and {vision} needs the Developer plan, so your image "
                "was not sent; there is nothing else to answer.",
                "{model} cannot see images and {vision} needs the Developer plan, so your {n} "
                "images were not sent; there is nothing else to answer.",
                count,
                **models,
            )
        await self._post(target.place, OutMessage(note), target.origin)
        return bool(text)
