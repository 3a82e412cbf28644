"""The core: routes inbound events to features and is the one error boundary for users.

Features (image jobs, diffusion, chat, account commands) declare the command names and button
actions they own. ``Core.handle`` parses and validates command options against the catalogue
before any feature runs, so bad input never reaches a feature, let alone the provider. Every
problem a user caused or can act on ends as an ephemeral reply; anything else is logged with a
reference the user can quote.
"""

from __future__ import annotations

import logging
import secrets
from collections.abc import Callable, Mapping, Sequence
from typing import Protocol, runtime_checkable

from bot.api.chat import allowed_chat_models
from bot.api.errors import ApiError
from bot.forms import FormError
from bot.kernel import (
    COMMANDS_BY_NAME,
    ButtonPress,
    Command,
    CommandError,
    Event,
    HomeOpened,
    InboundEvent,
    ModalSubmit,
    OptionValue,
    SurfaceRegistry,
    UserError,
    UserMessage,
    parse_command_text,
    storage_failure_text,
    unexpected_error_text,
    validate_options,
)
from bot.refs import Referent, RefKind, RefRefused, Refs, nothing_named
from storage import StorageError

log = logging.getLogger(__name__)


def storage_cause(error: BaseException) -> StorageError | None:
    """The storage failure behind ``error`` (itself, or what it was raised from), if any: a
    platform write that failed because the platform's own storage did (the playground's)."""
    seen: BaseException | None = error
    for _ in range(8):
        if seen is None:
            return None
        if isinstance(seen, StorageError):
            return seen
        seen = seen.__cause__
    return None


class Feature(Protocol):
    """A part of genbot that owns some commands and button actions; ``actions`` says what
    each action's ref names (the core resolves and checks it, see :mod:`bot.refs`)."""

    commands: frozenset[str]

    @property
    def actions(self) -> Mapping[str, RefKind]:
        """What each of the feature's button and form actions names in its ref."""
        ...

    async def on_command(self, event: Command, options: Mapping[str, OptionValue]) -> None:
        """Act on a command whose options were parsed and validated."""
        ...

    async def on_button(self, event: ButtonPress, referent: Referent) -> None:
        """Act on a press of one of this feature's buttons; ``referent`` is what its ref
        names, which the presser may use."""
        ...

    async def on_modal(self, event: ModalSubmit, referent: Referent) -> None:
        """Act on a submitted form of one of this feature's actions (``referent``: as for
        :meth:`on_button`)."""
        ...


@runtime_checkable
class ChecksForms(Protocol):
    """A feature that can check its forms' values on their own, without I/O."""

    def check_modal(self, event: ModalSubmit) -> None:
        """Raise :class:`bot.forms.FormError` (or :class:`CommandError`) for a refused value."""
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


class Lifecycle(Protocol):
    """Something the core starts and stops with itself (the tracker, a webhook receiver)."""

    async def start(self) -> None: ...

    async def stop(self) -> None: ...


class Core:
    """Routes events to features; implements :class:`bot.kernel.events.EventHandler`. ``refs``
    resolves the refs of presses and submissions (required when an action's ref names
    something)."""

    def __init__(
        self,
        surfaces: SurfaceRegistry,
        features: Sequence[Feature],
        conversations: Conversations | None = None,
        services: Sequence[Lifecycle] = (),
        *,
        plan: str = "developer",
        home: Homes | None = None,
        refs: Refs | None = None,
        diffusion_models: Callable[[], Sequence[str]] = tuple,
    ) -> None:
        self.surfaces = surfaces
        self.refs = refs
        self.plan = plan
        self._home = home
        self._diffusion_models = diffusion_models
        self._conversations = conversations
        self._services = services
        self._by_command: dict[str, Feature] = {}
        self._by_action: dict[str, tuple[Feature, RefKind]] = {}
        for feature in features:
            for name in feature.commands:
                if name not in COMMANDS_BY_NAME:
                    raise ValueError(f"feature claims unknown command {name!r}")
                self._by_command[name] = feature
            for action, kind in feature.actions.items():
                if kind is not RefKind.NONE and refs is None:
                    raise ValueError(f"action {action!r} names a {kind}: the core needs refs")
                self._by_action[action] = (feature, kind)

    @property
    def actions(self) -> dict[str, RefKind]:
        """Every action the features own, with what its ref names (the action table)."""
        return {action: kind for action, (_, kind) in self._by_action.items()}

    def chat_models(self) -> tuple[str, ...]:
        """The chat models users are offered: those the workspace's ``[api] plan`` allows."""
        return tuple(allowed_chat_models(self.plan))

    def diffusion_models(self) -> tuple[str, ...]:
        """The diffusion checkpoint models users are offered: those genbot knows."""
        return tuple(self._diffusion_models())

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

    async def handle(self, event: InboundEvent) -> None:
        """Act on ``event``; user-facing problems become ephemeral replies, never exceptions."""
        try:
            await self._route(event)
        except (UserError, CommandError, RefRefused) as error:
            await self._tell(event, str(error))
        except ApiError as error:
            log.warning("provider call failed for %s: %s", type(event).__name__, error)
            await self._tell(event, error.user_message)
        except Exception as error:
            failure = storage_cause(error)
            if failure is not None:
                log.warning("storage failed handling %s: %s", type(event).__name__, error)
                await self._tell(event, storage_failure_text(failure))
                return
            reference = secrets.token_hex(4)
            log.exception("unexpected error handling %s (ref %s)", type(event).__name__, reference)
            await self._tell(event, unexpected_error_text(reference))

    async def _route(self, event: InboundEvent) -> None:
        if isinstance(event, Command):
            feature = self._by_command.get(event.name)
            if feature is None:
                raise UserError(f"genbot does not know the command /{event.name}.")
            await feature.on_command(event, self._options(event))
        elif isinstance(event, ButtonPress):
            feature, referent = await self._resolve(event)
            await feature.on_button(event, referent)
        elif isinstance(event, ModalSubmit):
            feature, referent = await self._resolve(event)
            await feature.on_modal(event, referent)
        elif isinstance(event, HomeOpened):
            if self._home is not None:
                await self._home.on_home(event)
        elif self._conversations is not None:
            await self._conversations.on_message(event)

    async def _resolve(self, event: ButtonPress | ModalSubmit) -> tuple[Feature, Referent]:
        """The feature owning ``event``'s action and what its ref names, once the presser
        may use it (the one ownership check: :mod:`bot.refs`)."""
        owner = self._by_action.get(event.action)
        if owner is None:
            raise UserError("This button is no longer supported.")
        feature, kind = owner
        if kind is RefKind.NONE:
            return feature, nothing_named(event)
        assert self.refs is not None
        return feature, await self.refs.resolve(event, kind)

    def _options(self, event: Command) -> dict[str, OptionValue]:
        spec = COMMANDS_BY_NAME[event.name]
        text_style = not event.options and bool(event.text.strip())
        raw: Mapping[str, OptionValue] = (
            parse_command_text(spec, event.text) if text_style else event.options
        )
        platform = event.place.platform
        files_later = (
            spec.files_by_form
            and platform in self.surfaces
            and self.surfaces.get(platform).limits.forms_take_files
        )
        return validate_options(
            spec,
            raw,
            attachments=event.attachments,
            text_style=text_style,
            files_later=files_later,
        )

    async def _tell(self, event: Event, text: str) -> None:
        if event.place.platform not in self.surfaces:
            log.error("no surface for platform %s to report: %s", event.place.platform, text)
            return
        try:
            await self.surfaces.get(event.place.platform).send_ephemeral(event, text)
        except Exception:
            log.exception("could not report an error to the user")
