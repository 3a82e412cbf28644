"""What a user is told when genbot refuses or fails: the refusal types and the fixed texts.

A :class:`UserError`, :class:`CommandError` or :class:`FormError` carries the sentence to show as
its ``str``; the texts below answer what is not the user's doing (genbot stopping, too slow, its
database, a bug).
:class:`StorageError` (any failure of genbot's database) is here for the layers that catch it
without using storage themselves (adapters).
"""

from __future__ import annotations

from bot.api.errors import ApiError
from bot.kernel.command_names import named
from bot.kernel.i18n import N_, _
from storage import StorageError as StorageError

RESTARTING_TEXT = N_("genbot is restarting; try again in a moment.")
"""The answer to what arrives while genbot stops (it takes nothing new then)."""
TOO_SLOW_TEXT = N_("genbot took too long to answer this request and gave up on it.")
"""The answer when handling an event outlived its adapter's deadline."""


DATABASE_UNREACHABLE_TEXT = N_("genbot can't reach its database; try again in a moment.")
"""The answer when genbot's storage failed while handling a request (nothing was half-done:
what was stored is resumed, what was not is refused by this answer)."""
DATABASE_FULL_TEXT = N_(
    "genbot can't save anything right now (its database is full or read-only); "
    "an operator has been alerted by its readiness check. Try again later."
)


def storage_failure_text(error: StorageError) -> str:
    """What to tell a user whose request failed on ``error``: the database is out of reach,
    or it takes no writes (disk full, read-only file)."""
    text = str(error).lower()
    if any(word in text for word in ("full", "readonly", "read-only", "read only")):
        return _(DATABASE_FULL_TEXT)
    return _(DATABASE_UNREACHABLE_TEXT)


def unexpected_error_text(reference: str) -> str:
    """The answer when handling an event failed on genbot's side; ``reference`` is logged."""
    return _(
        "Something went wrong on genbot's side (ref {reference}); it was logged.",
        reference=reference,
    )


class UserError(Exception):
    """A refusal to show the user as is (caps, permissions, missing job…)."""


class CommandError(ValueError):
    """Bad user input for a command, button or form; ``str(error)`` is the sentence to show."""


class FormError(CommandError):
    """A refused form value: ``field`` is the id of the field whose value is wrong (the form
    comes back with the sentence beside that field)."""

    def __init__(self, field: str, message: str) -> None:
        super().__init__(message)
        self.field = field


def provider_text(error: ApiError) -> str:
    """What the provider's ``error`` means for the user, in the language spoken (its
    :attr:`~bot.api.errors.ApiError.user_message`), a ``{settings}`` in it naming the command
    as the event's platform does (:mod:`bot.kernel.command_names`)."""
    if error.user_template is not None:
        values = dict(error.user_values)
        if "settings" in values:
            values["settings"] = named("settings")
        return _(error.user_template, **values)
    return _(error.user_message)
