"""What a button's or form's ``ref`` names, resolved for the person who pressed or submitted it.

Every feature declares, for each action it owns, what kind of thing the action's ref names
(:class:`RefKind`); the core resolves the ref through :class:`Refs` before any feature runs
and hands the feature the :data:`Referent`, so the ownership check is made in this one place
and a new action cannot skip it. A ref resolves only within the presser's platform and
workspace, and only for the place or the user the thing belongs to:

- a **job** (and a Vary (Region) **preview** of one, whose ref adds the draft's digest; a press
  whose ref names no job means the job of the pressed message, in the presser's channel): for its
  requester (in its workspace, or in their DM with genbot: Discord's DMs span servers and
  results fall back to them), for an admin of the workspace (a job made in a DM: only in that
  DM), and for anyone pressing in the job's own channel when that channel is open
  (``open_channel_ids``);
- a **page** of the archive (``Older ▶``): its ref is the last job of the page before (a
  job, as above) and the search after :data:`PREVIEW_SEPARATOR`; what it finds is scoped to
  the presser by the archive itself;
- a job to **show** (``/show <job id>``, :meth:`Refs.job_to_show`): as a job, except that only
  its requester and admins may show it, open channel or not: anyone else is told there is no
  such job, or in the job's own channel (where its result is in view already) that only its
  requester may show it (:data:`NOT_YOURS_TO_SHOW`);
- a job a **link** names (the playground gallery's images and forms, :meth:`Refs.job_to_see`):
  as a job;
- a job the **admin page** names (its queue's Cancel, :meth:`Refs.job_in_workspace`): as a job,
  from its workspace and none of its channels — so a job made in a DM is out of an admin's reach
  there, as everywhere but that DM;
- a **conversation** (``Use llm-4-vision-preview``), an **alternative** answer (``Use N``) and
  a **turn** (an answer's ⏹ Stop, 🔁, 👍 and 👎; the turn must be one of the conversation's):
  only from a message linked to that conversation, in its channel (and thread), in its
  workspace — so a conversation id, a small number, is of no use to anyone who cannot see the
  conversation already (which of those who see it may act on an answer — ⏹, 🔁, ``Use N``, the
  vision switch: the user answered and admins — is then the chat's one check,
  ``bot.features.chat.controls.check_asked_by``);
- a **scope** (the settings form): ``me`` for anyone, ``channel`` or ``workspace`` for admins (the
  scope's id always comes from where the presser is, never from the ref);
- a **user** (an admin's ``/forget-me <user>`` confirmation): admins only; the ref is the
  user's id on the presser's platform;
- a **batch** (a preview's Run and Cancel): the jobs one command would start, stored until the
  preview is settled; only for the user who ran the command, on its platform and in its
  workspace;
- **nothing**: the ref must be empty.

Refusals never say whether the thing exists elsewhere: anyone but its requester pressing outside a
job's own channel (another channel, someone else's DM — on Discord every DM is in one
workspace) is told there is no such job (:data:`NO_JOB`); only in the job's channel, where its
message is in view, are they told that it is not theirs (:data:`NOT_YOURS`,
:data:`NOT_YOURS_TO_SHOW`).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from enum import StrEnum
from typing import Final, assert_never

from bot.kernel import N_, ButtonPress, Command, Event, ModalSubmit, OptionValue, Place, User, _
from storage import (
    Batch,
    ChatMessage,
    Conversation,
    ConversationStore,
    Job,
    JobReader,
    MessageLinks,
    Preferences,
)

PREVIEW_SEPARATOR = "~"
"""Between the job's id and the draft's digest in a preview's ref."""
SHARED_SCOPES = ("channel", "workspace")
NO_JOB = N_("genbot has no record of this image any more.")
NOT_YOURS = N_(
    "Only the person who started this job can use its buttons here "
    "(this channel is not open to everyone)."
)
NOT_YOURS_TO_SHOW = N_("Only the person who started this job can show it again.")
NO_CONVERSATION = N_("This conversation no longer exists.")
NO_BATCH = N_("genbot has no record of these jobs any more: run the command again.")
NOT_A_SCOPE = N_("This settings button is no longer supported.")
ADMINS_ONLY = N_("Only genbot admins can change the defaults of a channel or a workspace.")
UNKNOWN_REF = N_("This button is no longer supported.")
STORED_MESSAGE: Final = "stored_message"
"""Where :meth:`Refs.resubmitted` hands the screen a conversation's stored message (checked as
a chat message is: not given back, it stays where it was written)."""
ADMINS_ONLY_USERS = N_("Only genbot admins can act on another user's data.")
REFUSALS = frozenset(
    {
        NO_JOB,
        NOT_YOURS,
        NOT_YOURS_TO_SHOW,
        NO_CONVERSATION,
        NO_BATCH,
        NOT_A_SCOPE,
        ADMINS_ONLY,
        UNKNOWN_REF,
        ADMINS_ONLY_USERS,
    }
)
"""Every answer :class:`Refs` gives, in English (tests tell its refusals from a feature's by
them); :class:`RefRefused` says it in the language spoken."""


class RefKind(StrEnum):
    """What an action's ref names."""

    NONE = "none"
    JOB = "job"
    PREVIEW = "preview"
    PAGE = "page"
    CONVERSATION = "conversation"
    ALTERNATIVE = "alternative"
    TURN = "turn"
    SCOPE = "scope"
    USER = "user"
    BATCH = "batch"


class Work(StrEnum):
    """What a press of an action starts, as its feature declares it for the router's screen
    (moderation): ``free`` presses (view, page, cancel, feedback, settings, a repost) are
    anyone's who may use the ref; a ``paid`` press (a provider job or a model answer, or the
    form that leads only to one) is refused to a banned user; a ``resubmit`` press is paid and
    sends a stored text again — its job's prompt (🔄, variations, zooms, pans) or the message
    an answer answered (🔁) — so that text is also checked against the rules in force, as if
    typed (:meth:`Refs.resubmitted`), unless the press opens a form to edit it first (Remix:
    :class:`bot.router.OpensForms`), whose submission is checked."""

    FREE = "free"
    PAID = "paid"
    RESUBMIT = "resubmit"


class RefRefused(Exception):
    """The presser may not use what the ref names (or it names nothing known); the text is
    the answer to show them: ``refusal`` (one of :data:`REFUSALS`) in the language spoken."""

    def __init__(self, refusal: str) -> None:
        super().__init__(_(refusal))


@dataclass(frozen=True)
class JobReferent:
    """What an action of kind ``job`` names: a job the presser may use."""

    job: Job


@dataclass(frozen=True)
class PageReferent:
    """What an action of kind ``page`` names: the archive's page after ``job`` (the last one
    shown), of the search its ref carries in ``query``."""

    job: Job
    query: str


@dataclass(frozen=True)
class PreviewReferent:
    """What an action of kind ``preview`` names: a Vary (Region) preview of ``job``, the
    draft's ``digest``."""

    job: Job
    digest: str


@dataclass(frozen=True)
class ConversationReferent:
    """What an action of kind ``conversation`` names: a conversation the message belongs to."""

    conversation: Conversation


@dataclass(frozen=True)
class AlternativeReferent:
    """What an action of kind ``alternative`` names: an alternative answer in
    ``conversation``, the ``turns`` its ref lists."""

    conversation: Conversation
    turns: str


@dataclass(frozen=True)
class TurnReferent:
    """What an action of kind ``turn`` names: one stored ``turn`` of ``conversation`` (an
    answer, for its controls)."""

    conversation: Conversation
    turn: ChatMessage


@dataclass(frozen=True)
class ScopeReferent:
    """What an action of kind ``scope`` names: ``me``, ``channel`` or ``workspace``."""

    scope: str


@dataclass(frozen=True)
class UserReferent:
    """What an action of kind ``user`` names: a user of the presser's platform."""

    user_id: str


@dataclass(frozen=True)
class BatchReferent:
    """What an action of kind ``batch`` names: a batch of jobs its presser asked for."""

    batch: Batch


@dataclass(frozen=True)
class NoReferent:
    """What an action of kind ``none`` names: nothing."""


Referent = (
    JobReferent
    | PreviewReferent
    | PageReferent
    | ConversationReferent
    | AlternativeReferent
    | TurnReferent
    | ScopeReferent
    | UserReferent
    | BatchReferent
    | NoReferent
)
"""What a press's or submission's ref named, once :class:`Refs` allowed its use: one type per
:class:`RefKind`, so a feature's handler takes the type of the kinds its actions declare."""


@dataclass(frozen=True)
class RefStorage:
    """What resolving refs reads: jobs, the message → job map, conversations and their
    message links, batches."""

    jobs: JobReader
    message_links: MessageLinks
    conversations: ConversationStore
    batches: Preferences


Pressed = ButtonPress | ModalSubmit


def nothing_named(event: Pressed) -> NoReferent:
    """The referent of an action whose ref names nothing: its ref must be empty."""
    if event.ref:
        raise RefRefused(UNKNOWN_REF)
    return NoReferent()


class Refs:
    """Resolves refs (see the module docstring). ``open_channels``: per platform, the channels
    whose job buttons anyone may press."""

    def __init__(
        self, store: RefStorage, open_channels: Mapping[str, frozenset[str]] | None = None
    ) -> None:
        self._store = store
        self._open: dict[str, frozenset[str]] = dict(open_channels or {})

    async def resolve(self, event: Pressed, kind: RefKind) -> Referent:
        """What ``event.ref`` names, for ``event``'s user where they are; :class:`RefRefused`
        when it names nothing they may use."""
        ref = event.ref
        if kind is RefKind.NONE:
            return nothing_named(event)
        if kind is RefKind.JOB:
            return JobReferent(await self._job(event, ref))
        if kind is RefKind.PREVIEW:
            job_id, _, digest = ref.partition(PREVIEW_SEPARATOR)
            if not job_id or not digest:
                raise RefRefused(UNKNOWN_REF)
            return PreviewReferent(await self._job(event, job_id), digest)
        if kind is RefKind.PAGE:
            job_id, _, query = ref.partition(PREVIEW_SEPARATOR)
            if not job_id:
                raise RefRefused(UNKNOWN_REF)
            return PageReferent(await self._job(event, job_id), query)
        if kind is RefKind.CONVERSATION:
            return ConversationReferent(await self._conversation(event, ref))
        if kind is RefKind.ALTERNATIVE:
            conversation_id, _, turns = ref.partition(".")
            conversation = await self._conversation(event, conversation_id)
            return AlternativeReferent(conversation, turns)
        if kind is RefKind.TURN:
            return await self._turn(event, ref)
        if kind is RefKind.SCOPE:
            return ScopeReferent(self._scope(event, ref))
        if kind is RefKind.USER:
            return UserReferent(self._user(event, ref))
        if kind is RefKind.BATCH:
            return BatchReferent(await self._batch(event, ref))
        assert_never(kind)

    async def resubmitted(self, referent: Referent) -> dict[str, OptionValue]:
        """What a press of a ``resubmit`` action (:class:`Work`) on ``referent`` sends again, as
        the router's screen reads it: a job's stored prompt (``prompt``, as a command's), or
        for an answer (a turn) the user message it answers, when it is the newest answer, the
        one 🔁 asks again (:data:`STORED_MESSAGE`); nothing for anything else."""
        if isinstance(referent, JobReferent | PreviewReferent):
            return {"prompt": referent.job.prompt}
        if not isinstance(referent, TurnReferent):
            return {}
        conversation_id = referent.conversation.id
        newest = await self._store.conversations.conversation_tail(conversation_id, max_tokens=0)
        if not newest or newest[0].role != "user":
            return {}
        if referent.turn.id not in {turn.id for turn in newest[1:]}:
            return {}
        return {STORED_MESSAGE: newest[0].content or ""}

    async def job_to_show(self, event: Command, job_id: str) -> Job:
        """The job ``/show`` names, for ``event``'s user where they are (see the module
        docstring); :class:`RefRefused` when they may not show it."""
        return await self._job(event, job_id, showing=True)

    async def job_to_see(self, event: Event, job_id: str) -> Job:
        """The job a link names (the playground gallery's images and its "Use as init" form),
        for ``event``'s user where they are: as a job ref (see the module docstring);
        :class:`RefRefused` when they may not see it."""
        return await self._job(event, job_id)

    async def job_in_workspace(self, user: User, place: Place, job_id: str) -> Job:
        """The job the admin page names (its queue's Cancel), for ``user`` acting in ``place``:
        the job's workspace, in none of its channels (``channel_id`` empty). As a job ref (see
        the module docstring): a job made in a DM is refused to anyone but its requester;
        :class:`RefRefused` when they may not act on it."""
        return await self._job_for(user, place, job_id)

    async def _job(self, event: Event, job_id: str, *, showing: bool = False) -> Job:
        pressed = event.message_id if isinstance(event, ButtonPress) else None
        return await self._job_for(event.user, event.place, job_id, pressed, showing=showing)

    async def _job_for(
        self,
        user: User,
        place: Place,
        job_id: str,
        pressed: str | None = None,
        *,
        showing: bool = False,
    ) -> Job:
        """The job ``job_id`` names (else the job of the ``pressed`` message, in ``place``'s
        channel) if ``user`` in ``place`` may use it, or with ``showing`` show it (see the
        module docstring)."""
        job = await self._store.jobs.get_job(job_id) if job_id else None
        if job is None and pressed:
            job = await self._store.message_links.job_for_message(
                place.platform, place.channel_id, pressed
            )
        if job is None or not self._in_reach(user, place, job):
            raise RefRefused(NO_JOB)
        if user.id == job.requester_id:
            return job
        if place.channel_id != job.channel_id:
            if user.is_admin and not job.is_dm:
                return job
            raise RefRefused(NO_JOB)
        if user.is_admin:
            return job
        if showing:
            raise RefRefused(NOT_YOURS_TO_SHOW)
        if place.channel_id in self._open.get(place.platform, ()):
            return job
        raise RefRefused(NOT_YOURS)

    @staticmethod
    def _in_reach(user: User, place: Place, job: Job) -> bool:
        """Whether ``job`` is on ``place``'s platform and in its workspace (its requester
        also reaches it from their DM with genbot)."""
        if job.platform != place.platform:
            return False
        if job.workspace_id == place.workspace_id:
            return True
        return place.is_dm and user.id == job.requester_id

    async def _conversation(self, event: Pressed, ref: str) -> Conversation:
        place = event.place
        if not ref.isdigit() or not isinstance(event, ButtonPress) or not event.message_id:
            raise RefRefused(NO_CONVERSATION)
        linked = await self._store.conversations.find_conversation_by_message(
            place.platform, place.channel_id, event.message_id
        )
        if (
            linked is None
            or linked.id != int(ref)
            or linked.platform != place.platform
            or linked.workspace_id != place.workspace_id
            or linked.channel_id != place.channel_id
            or (linked.kind == "thread" and place.thread_id != linked.thread_key)
        ):
            raise RefRefused(NO_CONVERSATION)
        return linked

    async def _turn(self, event: Pressed, ref: str) -> TurnReferent:
        """A turn of the conversation the pressed message belongs to: the one the ref names,
        or with no ref the one the pressed message shows (a platform's own control on it)."""
        conversations = self._store.conversations
        conversation_id, _, turn_id = ref.partition(".")
        if not ref and isinstance(event, ButtonPress) and event.message_id:
            place = event.place
            linked = await conversations.find_conversation_by_message(
                place.platform, place.channel_id, event.message_id
            )
            shown = await conversations.turn_of_message(
                place.platform, place.channel_id, event.message_id
            )
            conversation_id, turn_id = str(linked.id if linked else ""), str(shown or "")
        conversation = await self._conversation(event, conversation_id)
        turn = None
        if turn_id.isdigit():
            turn = await conversations.get_turn(conversation.id, int(turn_id))
        if turn is None:
            raise RefRefused(NO_CONVERSATION)
        return TurnReferent(conversation, turn)

    async def _batch(self, event: Pressed, ref: str) -> Batch:
        place = event.place
        batch = await self._store.batches.batch(ref) if ref else None
        if (
            batch is None
            or batch.platform != place.platform
            or batch.workspace_id != place.workspace_id
            or batch.requester_id != event.user.id
        ):
            raise RefRefused(NO_BATCH)
        return batch

    @staticmethod
    def _user(event: Pressed, ref: str) -> str:
        if not ref:
            raise RefRefused(UNKNOWN_REF)
        if not event.user.is_admin:
            raise RefRefused(ADMINS_ONLY_USERS)
        return ref

    @staticmethod
    def _scope(event: Pressed, ref: str) -> str:
        scope = ref or "me"
        if scope != "me" and scope not in SHARED_SCOPES:
            raise RefRefused(NOT_A_SCOPE)
        if scope in SHARED_SCOPES and not event.user.is_admin:
            raise RefRefused(ADMINS_ONLY)
        return scope
