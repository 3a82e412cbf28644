"""The router: every event from every adapter, each in a supervised task, to the feature that
owns it — and the one error boundary for users.

**Intake.** Each adapter gets an :class:`Intake` (:meth:`Router.intake`, the kernel's
:class:`bot.kernel.events.EventSink`) and submits what it translated there. Every event runs in a
task of its own (so a platform's acknowledgement deadline never waits for genbot), within the
adapter's deadline, one at a time per conversation when the event carries a serial key, inside
the adapter's ``around`` (acknowledge, show "working", settle). Intake stops in two steps:
:meth:`Router.stop_intake` makes every later event get :data:`RESTARTING_TEXT` instead of being
handled (a plain message only when it was addressed to genbot: a DM or a mention, so busy
threads are not spammed); :meth:`Router.drain` then lets what is running finish within a deadline
and cancels what is left (a cancelled event resumes, if it stored anything, at the next start).

**Routing.** Features (image jobs, diffusion, chat, account commands, the home) declare the
command names and button actions they own. :meth:`Router.handle` parses and validates command
options against the catalogue before any feature runs, so bad input never reaches a feature, let
alone the provider, and resolves a button's or form's ref within the presser's workspace and
owner (the one ownership check, :mod:`bot.refs`) before the feature sees it. A command's
options and a form's values then pass the router's :class:`Screen` (moderation), if it has one,
and so does a press that starts work (its feature's :attr:`Feature.work`): a paid one with no
values (a banned user is refused), one that sends its job's stored prompt again with that prompt
(checked as if typed) — unless the press opens a form to edit it first (Remix,
:class:`OpensForms`): then what the form sends is checked as it is submitted.

**The boundary.** :meth:`Router.handle` turns every failure into one answer to the user
(ephemeral where the platform allows it): a :class:`UserError`, :class:`CommandError` or refused
ref is the user's message; a provider refusal its own sentence; a deadline that passed
:data:`TOO_SLOW_TEXT`; a database that failed the storage text; anything else is logged with a
reference the user can quote (:func:`unexpected_error_text`). Adapters never tell users what
went wrong: they keep only their platform-level last resort (acknowledging in time).

**The language.** Each event is handled speaking its user's language, with its place's language
for what everyone there reads (:mod:`bot.kernel.i18n` decides; :func:`bot.kernel.i18n.speaking`),
and names genbot's commands as its place's platform does (:mod:`bot.kernel.command_names`).
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import logging
import secrets
from collections.abc import AsyncIterator, Awaitable, Callable, Hashable, Mapping, Sequence
from typing import Any, Protocol, TypeVar, runtime_checkable

from bot.api.chat import allowed_chat_models
from bot.api.errors import ApiError
from bot.kernel import (
    COMMANDS_BY_NAME,
    RESTARTING_TEXT,
    TOO_SLOW_TEXT,
    Around,
    ButtonPress,
    Command,
    CommandError,
    Event,
    FormError,
    HomeOpened,
    InboundEvent,
    ModalSubmit,
    OptionValue,
    Place,
    Spoken,
    Stored,
    User,
    UserError,
    UserMessage,
    _,
    decide,
    metrics,
    name_the_saved,
    parse_command_text,
    provider_text,
    refuse_permuted_aspect,
    speaking,
    storage_failure_text,
    unexpected_error_text,
    validate_options,
)
from bot.outbox import Notice, Outbox, WritePolicy
from bot.refs import (
    Referent,
    RefKind,
    RefRefused,
    Refs,
    Work,
    nothing_named,
)
from storage import StorageError

log = logging.getLogger(__name__)

ReferentT = TypeVar("ReferentT", contravariant=True)

STORED_PROMPT_KINDS = frozenset({RefKind.JOB, RefKind.PREVIEW, RefKind.TURN})
"""What the ref of an action that resubmits names: a job, whose stored prompt is screened, or
an answer, whose user message is (:meth:`bot.refs.Refs.resubmitted`)."""
CANCEL_GRACE_SECONDS = 5.0
"""How long cancelled events may take to unwind at the end of a drain."""
LANGUAGE_READ_SECONDS = 5.0
"""The longest wait for the languages chosen with ``/settings language``."""


def storage_cause(error: BaseException) -> StorageError | None:
    """The storage failure behind ``error`` (itself, or what it was raised from), if any: a
    platform write that failed because the platform's own storage did (the playground's)."""
    seen: BaseException | None = error
    for __ in range(8):
        if seen is None:
            return None
        if isinstance(seen, StorageError):
            return seen
        seen = seen.__cause__
    return None


class Feature(Protocol[ReferentT]):
    """A part of genbot that owns some commands and button actions; ``actions`` says what
    each action's ref names (the router resolves and checks it, see :mod:`bot.refs`), ``work``
    what a press of each starts (the router screens it, see :class:`bot.refs.Work`), and
    ``ReferentT`` is what its handlers are given for those kinds (``JobReferent`` for actions
    of kind ``job``, a union for a feature whose actions name several kinds)."""

    commands: frozenset[str]

    @property
    def actions(self) -> Mapping[str, RefKind]:
        """What each of the feature's button and form actions names in its ref."""
        ...

    @property
    def work(self) -> Mapping[str, Work]:
        """What a press of each of the feature's actions starts (every action says)."""
        ...

    async def on_command(self, event: Command, options: Mapping[str, OptionValue]) -> None:
        """Act on a command whose options were parsed and validated."""
        ...

    async def on_button(self, event: ButtonPress, referent: ReferentT) -> None:
        """Act on a press of one of this feature's buttons; ``referent`` is what its ref
        names, which the presser may use."""
        ...

    async def on_modal(self, event: ModalSubmit, referent: ReferentT) -> None:
        """Act on a submitted form of one of this feature's actions (``referent``: as for
        :meth:`on_button`)."""
        ...


@runtime_checkable
class ChecksForms(Protocol):
    """A feature that can check its forms' values on their own, without I/O."""

    def check_modal(self, event: ModalSubmit) -> None:
        """Raise :class:`~bot.kernel.FormError` (or :class:`CommandError`) for a refused
        value."""
        ...


@runtime_checkable
class OpensForms(Protocol):
    """A feature some of whose resubmitting presses open a form instead, depending on the
    presser (Remix: :class:`bot.features.jobs.images.ImageJobs`): such a press sends nothing
    yet, so it is screened as a paid one, and the form's values as they are submitted."""

    async def opens_form(self, event: ButtonPress, referent: Any) -> bool:
        """Whether ``event`` opens a form rather than sending its stored text again."""
        ...


class Conversations(Protocol):
    """The part of genbot that answers plain messages."""

    async def on_message(self, event: UserMessage) -> None:
        """Answer ``event`` if it belongs to a conversation genbot takes part in."""
        ...


class Homes(Protocol):
    """The part of genbot that draws a user's home (Slack's App Home)."""

    async def on_home(self, event: HomeOpened) -> None:
        """Show ``event.user`` their home."""
        ...


class Screen(Protocol):
    """What checks a command's options (parsed and validated), a form's values and a press
    that starts work (with the stored text it sends again, if any: a job's ``prompt``, or a
    conversation's message under :data:`bot.refs.STORED_MESSAGE`) before the feature owning
    them acts (moderation); it refuses with :class:`UserError`."""

    async def screen(
        self, event: Command | ModalSubmit | ButtonPress, values: Mapping[str, OptionValue]
    ) -> None:
        """Return when ``event`` may go on; raise :class:`UserError` to refuse it."""
        ...


class Expands(Protocol):
    """What puts a user's saved options and suffix into a command's prompt before it is
    parsed (:mod:`bot.features.prefer.expansion`), for commands that
    :attr:`~bot.kernel.CommandSpec.expands`."""

    async def expand(self, event: Command) -> tuple[Command, tuple[tuple[str, str], ...]]:
        """``event`` expanded, and the saved options put in (name, text); raise
        :class:`CommandError` for an unknown ``--name``."""
        ...

    async def names(self, platform: str, user_id: str, channel_id: str) -> tuple[str, ...]:
        """The names of a user's saved options that apply in ``channel_id``."""
        ...


class Languages(Protocol):
    """The languages users and admins chose with ``/settings language``
    (:class:`bot.kernel.i18n.LanguageChoices`)."""

    async def stored(self, event: Event) -> Stored:
        """The choices that apply to ``event``'s user and place."""
        ...


class Lifecycle(Protocol):
    """Something the router starts and stops with itself (the tracker, a webhook receiver)."""

    async def start(self) -> None: ...

    async def stop(self) -> None: ...


class Router:
    """Takes every adapter's events and routes each to the feature that owns it (see the module
    docstring); implements :class:`bot.kernel.events.EventRouter`. ``refs`` resolves the refs of
    presses and submissions (required when an action's ref names something); ``services`` are
    started and stopped with the router (the tracker, receivers)."""

    def __init__(
        self,
        outbox: Outbox,
        features: Sequence[Feature[Any]],
        conversations: Conversations | None = None,
        services: Sequence[Lifecycle] = (),
        *,
        plan: str = "developer",
        home: Homes | None = None,
        refs: Refs | None = None,
        diffusion_models: Callable[[], Sequence[str]] = tuple,
        screen: Screen | None = None,
        expansion: Expands | None = None,
        languages: Languages | None = None,
    ) -> None:
        self.outbox = outbox
        self.stopping = False
        """Whether the process is stopping (:meth:`stop_intake` was called): a handler cancelled
        then is cut short by the drain, not by its deadline."""
        self.screen = screen
        self.expansion = expansion
        self.languages = languages
        self.refs = refs
        self.plan = plan
        self._home = home
        self._diffusion_models = diffusion_models
        self._conversations = conversations
        self._services = services
        self._intakes: list[Intake] = []
        self._by_command: dict[str, Feature[Any]] = {}
        self._by_action: dict[str, tuple[Feature[Any], RefKind]] = {}
        self._work: dict[str, Work] = {}
        for feature in features:
            for name in feature.commands:
                if name not in COMMANDS_BY_NAME:
                    raise ValueError(f"feature claims unknown command {name!r}")
                self._by_command[name] = feature
            for action, kind in feature.actions.items():
                if kind is not RefKind.NONE and refs is None:
                    raise ValueError(f"action {action!r} names a {kind}: the router needs refs")
                work = feature.work.get(action)
                if work is None:
                    raise ValueError(f"action {action!r} does not say what a press starts")
                if work is Work.RESUBMIT and kind not in STORED_PROMPT_KINDS:
                    raise ValueError(f"action {action!r} resubmits, but names no stored text")
                self._by_action[action] = (feature, kind)
                self._work[action] = work

    @property
    def actions(self) -> dict[str, RefKind]:
        """Every action the features own, with what its ref names (the action table)."""
        return {action: kind for action, (__, kind) in self._by_action.items()}

    def chat_models(self) -> tuple[str, ...]:
        """The chat models users are offered: those the workspace's ``[api] plan`` allows."""
        return tuple(allowed_chat_models(self.plan))

    def diffusion_models(self) -> tuple[str, ...]:
        """The diffusion checkpoint models users are offered: those genbot knows."""
        return tuple(self._diffusion_models())

    async def private_language(self, user: User, place: Place, locale: str | None) -> str:
        """The language ``user`` is answered in privately in ``place`` (their choice, else
        ``locale``'s, …: :func:`bot.kernel.decide`; :class:`bot.kernel.ChosenLanguages`)."""
        return (await self._spoken(Event(user=user, place=place, locale=locale))).private

    async def saved_options(self, user: User, place: Place) -> tuple[str, ...]:
        """The names of ``user``'s saved options in ``place``, which pickers offer
        (:class:`bot.kernel.SavedOptionChoices`); none without an expansion."""
        if self.expansion is None:
            return ()
        return await self.expansion.names(place.platform, user.id, place.channel_id)

    async def start(self) -> None:
        """Start the services (tracker, receivers); unfinished jobs resume here."""
        for service in self._services:
            await service.start()

    async def stop(self) -> None:
        """Stop the services in reverse order; one failing to stop does not keep the others
        running (the failure is logged)."""
        for service in reversed(self._services):
            try:
                await service.stop()
            except Exception:
                log.exception("stopping %s failed", type(service).__name__)

    def form_errors(self, event: ModalSubmit) -> dict[str, str]:
        """What is wrong with a submitted form's own values, by field id (see
        :class:`bot.kernel.events.FormChecks`); a problem that is not about one field is left to
        :meth:`handle`."""
        owner = self._by_action.get(event.action)
        feature = owner[0] if owner is not None else None
        if not isinstance(feature, ChecksForms):
            return {}
        try:
            feature.check_modal(event)
        except FormError as error:
            return {error.field: str(error)}
        except CommandError:
            return {}
        return {}

    def intake(
        self,
        platform: str,
        *,
        deadline: float | None = None,
        around: Around | None = None,
    ) -> Intake:
        """A new intake for adapter ``platform`` (see :class:`Intake`)."""
        intake = Intake(self, platform, deadline=deadline, around=around or _nothing)
        self._intakes.append(intake)
        return intake

    def stop_intake(self) -> None:
        """Every intake answers what arrives from now on "restarting" (see :meth:`Intake.stop`);
        the router is :attr:`stopping` from then on."""
        self.stopping = True
        for intake in self._intakes:
            intake.stop()

    async def drain(self, timeout: float) -> int:
        """Let every intake's running events finish within ``timeout`` seconds, then cancel the
        rest; how many were cancelled."""
        cut = await asyncio.gather(*(intake.drain(timeout) for intake in self._intakes))
        return sum(cut)

    async def handle(self, event: InboundEvent, *, deadline: float | None = None) -> None:
        """Act on ``event`` within ``deadline`` seconds (``None``: unbounded), speaking its
        language (:mod:`bot.kernel.i18n`); every problem becomes an answer to the user, never an
        exception (the boundary of the module docstring). Cancelled (a drain cut it short), it
        answers nothing and lets the cancellation through."""
        spoken = await self._spoken(event)
        names = functools.cache(functools.partial(self.outbox.command_names, event.place))
        with speaking(spoken.private, public=spoken.public, names=names):
            await self._handle(event, deadline)

    async def _spoken(self, event: Event) -> Spoken:
        """The languages of ``event``: from what its platform says, and what users and admins
        chose (read within :data:`LANGUAGE_READ_SECONDS`; unread, the platform's word stands)."""
        if self.languages is None:
            return decide(event)
        try:
            async with asyncio.timeout(LANGUAGE_READ_SECONDS):
                return decide(event, await self.languages.stored(event))
        except Exception as error:
            log.warning(
                "%s: the chosen language could not be read: %s", event.place.platform, error
            )
            return decide(event)

    async def _handle(self, event: InboundEvent, deadline: float | None) -> None:
        timer = asyncio.timeout(deadline)
        outcome = "failed"
        try:
            async with timer:
                await self._route(event)
            outcome = "handled"
        except asyncio.CancelledError:
            outcome = "cancelled"
            raise
        except (UserError, CommandError, RefRefused) as error:
            outcome = "handled"
            await self._tell(event, str(error))
        except ApiError as error:
            outcome = "handled"
            log.warning("provider call failed for %s: %s", type(event).__name__, error)
            await self._tell(event, provider_text(error))
        except Exception as error:
            if isinstance(error, TimeoutError) and timer.expired():
                outcome = "timed_out"
                log.error(
                    "%s: handling %s took over %.0f s: given up",
                    event.place.platform,
                    type(event).__name__,
                    deadline or 0,
                )
                await self._tell(event, _(TOO_SLOW_TEXT))
                return
            failure = storage_cause(error)
            if failure is not None:
                log.warning("storage failed handling %s: %s", type(event).__name__, error)
                await self._tell(event, storage_failure_text(failure))
                return
            reference = secrets.token_hex(4)
            log.exception("unexpected error handling %s (ref %s)", type(event).__name__, reference)
            await self._tell(event, unexpected_error_text(reference))
        finally:
            metrics.EVENTS.labels(event.place.platform, type(event).__name__, outcome).inc()
            log.debug("%s: %s %s", event.place.platform, type(event).__name__, outcome)

    async def refuse(self, event: InboundEvent) -> None:
        """Answer ``event``, which arrived while genbot stops, "restarting" (a plain message
        only when it was addressed to genbot)."""
        metrics.EVENTS.labels(event.place.platform, type(event).__name__, "refused").inc()
        if answers_refusal(event):
            with speaking(decide(event).private):
                await self._tell(event, _(RESTARTING_TEXT))

    async def _route(self, event: InboundEvent) -> None:
        if isinstance(event, Command):
            feature = self._by_command.get(event.name)
            if feature is None:
                raise UserError(
                    _("genbot does not know the command /{command}.", command=event.name)
                )
            used: tuple[tuple[str, str], ...] = ()
            if self.expansion is not None and COMMANDS_BY_NAME[event.name].expands:
                event, used = await self.expansion.expand(event)
            try:
                options = self._options(event)
            except CommandError as error:
                raise name_the_saved(error, used) from None
            if self.screen is not None:
                await self.screen.screen(event, options)
            await feature.on_command(event, options)
        elif isinstance(event, ButtonPress):
            feature, referent = await self._resolve(event)
            await self._screen_press(event, feature, referent)
            await feature.on_button(event, referent)
        elif isinstance(event, ModalSubmit):
            feature, referent = await self._resolve(event)
            if self.screen is not None:
                await self.screen.screen(event, event.values)
            await feature.on_modal(event, referent)
        elif isinstance(event, HomeOpened):
            if self._home is not None:
                await self._home.on_home(event)
        elif self._conversations is not None:
            await self._conversations.on_message(event)

    async def _resolve(self, event: ButtonPress | ModalSubmit) -> tuple[Feature[Any], Referent]:
        """The feature owning ``event``'s action and what its ref names, once the presser
        may use it (the one ownership check: :mod:`bot.refs`)."""
        owner = self._by_action.get(event.action)
        if owner is None:
            raise UserError(_("This button is no longer supported."))
        feature, kind = owner
        if kind is RefKind.NONE:
            return feature, nothing_named(event)
        assert self.refs is not None
        return feature, await self.refs.resolve(event, kind)

    async def _screen_press(
        self, event: ButtonPress, feature: Feature[Any], referent: Referent
    ) -> None:
        """Screen a press that starts work (see :class:`bot.refs.Work`): a resubmitting one
        with the stored text it sends again, as typing it would be — unless it opens a form
        for that text instead (:class:`OpensForms`), whose submission is screened."""
        work = self._work[event.action]
        if self.screen is None or work is Work.FREE:
            return
        values: dict[str, OptionValue] = {}
        if work is Work.RESUBMIT and self.refs is not None:
            opens_form = isinstance(feature, OpensForms) and await feature.opens_form(
                event, referent
            )
            if not opens_form:
                values = await self.refs.resubmitted(referent)
        await self.screen.screen(event, values)

    def _options(self, event: Command) -> dict[str, OptionValue]:
        spec = COMMANDS_BY_NAME[event.name]
        text_style = not event.options and bool(event.text.strip())
        if spec.expands:
            prompt = event.options.get(spec.free_text or "prompt", "")
            refuse_permuted_aspect(event.text if text_style else str(prompt))
        raw: Mapping[str, OptionValue] = (
            parse_command_text(spec, event.text) if text_style else event.options
        )
        platform = event.place.platform
        files_later = (
            spec.files_by_form
            and platform in self.outbox
            and self.outbox.profile(platform).forms_take_files
        )
        return validate_options(
            spec,
            raw,
            attachments=event.attachments,
            text_style=text_style,
            files_later=files_later,
        )

    async def _tell(self, event: Event, text: str) -> None:
        if event.place.platform not in self.outbox:
            log.error("no surface for platform %s to report: %s", event.place.platform, text)
            return
        try:
            await self.outbox.write(event.place, Notice(event, text), WritePolicy.NOW)
        except Exception as error:
            log.warning("could not tell the user %r: %s", text, error)


class Intake:
    """One adapter's way into the router (:meth:`Router.intake`; the kernel's
    :class:`bot.kernel.events.EventSink`): what it submits runs in a task of its own, and stops
    being taken when the adapter or genbot stops.

    ``deadline`` bounds each event's handling (``None``: unbounded). ``around`` is the
    adapter's default for :meth:`submit`. Events with the same ``serial_key`` run one at a time,
    in arrival order.
    """

    def __init__(
        self,
        router: Router,
        platform: str,
        *,
        deadline: float | None,
        around: Around,
    ) -> None:
        self.router = router
        self.platform = platform
        self.deadline = deadline
        self.around = around
        self._accepting = True
        self._tasks: set[asyncio.Task[None]] = set()
        self._locks: dict[Hashable, asyncio.Lock] = {}
        self._waiting: dict[Hashable, int] = {}

    @property
    def accepting(self) -> bool:
        """Whether new events are handled (``False`` once :meth:`stop` was called)."""
        return self._accepting

    @property
    def running(self) -> int:
        """How many events are being handled or answered."""
        return sum(not task.done() for task in self._tasks)

    def submit(
        self,
        event: InboundEvent | Awaitable[InboundEvent | None],
        *,
        around: Around | None = None,
    ) -> bool:
        """Handle ``event`` in the background (an awaitable is first awaited for the event; it
        may give ``None`` when there is nothing to handle). Returns ``False`` when intake is
        stopped: the event is answered with the "restarting" text instead."""
        accepted = self._accepting
        task = asyncio.create_task(
            self._run(event, around or self.around, accepted),
            name=f"genbot-{self.platform}-event",
        )
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)
        return accepted

    def stop(self) -> None:
        """Answer every event submitted from now on with the "restarting" text."""
        if self._accepting:
            self._accepting = False
            log.info("%s: taking no new events (%d running)", self.platform, self.running)

    async def drain(self, timeout: float) -> int:
        """Wait up to ``timeout`` seconds for the running events (and any submitted meanwhile),
        then cancel the rest; returns how many were cancelled."""
        loop = asyncio.get_running_loop()
        deadline = loop.time() + timeout
        while pending := {task for task in self._tasks if not task.done()}:
            left = deadline - loop.time()
            if left <= 0:
                break
            await asyncio.wait(pending, timeout=left)
        late = {task for task in self._tasks if not task.done()}
        if late:
            log.warning(
                "%s: %d event(s) still running after %.0f s: cancelled",
                self.platform,
                len(late),
                timeout,
            )
            await self.cancel()
        return len(late)

    async def cancel(self) -> None:
        """Cancel every running event (bounded wait for them to unwind)."""
        tasks = [task for task in self._tasks if not task.done()]
        for task in tasks:
            task.cancel()
        if tasks:
            await asyncio.wait(tasks, timeout=CANCEL_GRACE_SECONDS)

    async def _run(
        self, event: InboundEvent | Awaitable[InboundEvent | None], around: Around, accepted: bool
    ) -> None:
        built = await self._built(event)
        if built is None:
            return
        if not accepted:
            async with around(built):
                await self.router.refuse(built)
            return
        metrics.LOG_PLATFORM.set(self.platform)
        metrics.LOG_USER_ID.set(built.user.id)
        async with self._serialised(built.serial_key), around(built):
            await self.router.handle(built, deadline=self.deadline)

    async def _built(
        self, event: InboundEvent | Awaitable[InboundEvent | None]
    ) -> InboundEvent | None:
        if not isinstance(event, Awaitable):
            return event
        try:
            return await event
        except Exception:
            log.exception("%s: reading an event failed", self.platform)
            return None

    @contextlib.asynccontextmanager
    async def _serialised(self, key: Hashable | None) -> AsyncIterator[None]:
        if key is None:
            yield
            return
        lock = self._locks.setdefault(key, asyncio.Lock())
        self._waiting[key] = self._waiting.get(key, 0) + 1
        try:
            async with lock:
                yield
        finally:
            self._waiting[key] -= 1
            if not self._waiting[key]:
                del self._waiting[key], self._locks[key]


def answers_refusal(event: InboundEvent) -> bool:
    """Whether ``event`` gets the "restarting" answer while genbot stops: interactions always,
    a plain message only when addressed to genbot."""
    if isinstance(event, UserMessage):
        return event.mentions_bot or event.place.is_dm
    return True


@contextlib.asynccontextmanager
async def _nothing(event: InboundEvent) -> AsyncIterator[None]:
    yield
