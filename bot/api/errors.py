"""Errors of the provider API client.

Everything the client raises on purpose derives from :class:`ApiError`. Each error has a
``user_message``: a short English sentence that may be shown to end users as is (it never contains
a key, a header or a raw response body beyond the provider's own short message). It is also a
catalog text (bot/kernel/i18n.py): ``user_template`` and ``user_values`` say it in the user's
language (:func:`bot.kernel.provider_text`) — the template, when the sentence has values, else
``user_message`` itself.
"""

from __future__ import annotations

from collections.abc import Mapping
from enum import StrEnum
from types import MappingProxyType
from typing import Any, Literal


def N_(message: str, /) -> str:
    """Mark ``message`` for the catalog (extracted like bot/kernel/i18n.py's ``N_``, which
    bot/api may not import): whoever shows it translates it."""
    return message


class ApiError(Exception):
    """Base of every error raised by :mod:`bot.api`."""

    user_message: str = N_("The image and chat service failed.")
    user_template: str | None = None
    """``user_message`` with ``{name}`` fields, when it has values (:attr:`user_values`)."""
    user_values: Mapping[str, object] = MappingProxyType({})

    def __init__(self, message: str = "") -> None:
        super().__init__(message or self.user_message)

    def _tell(self, template: str, **values: object) -> None:
        """Set the user's sentence: ``template`` (a catalog text) filled with ``values``."""
        self.user_template = template
        self.user_values = MappingProxyType(values)
        self.user_message = template.format(**values) if values else template


class InvalidRequest(ApiError):
    """A request broke one of the provider's documented rules; nothing was sent.

    ``field`` names the offending field (``"width"``, ``"messages[2].content"``), ``allowed``
    describes the accepted values, and ``message`` filled with ``values`` (also
    ``user_message`` and ``str(error)``) is a short sentence for users, e.g. ``"width must be at
    most 1024 (got 2048)"``: a catalog text where users can cause it (a value they gave), said in
    their language by :func:`bot.kernel.provider_text`.
    """

    def __init__(self, field: str, allowed: str, message: str, /, **values: object) -> None:
        self._tell(message, **values)
        super().__init__(self.user_message)
        self.field = field
        self.allowed = allowed
        self.message = self.user_message


class AuthenticationError(ApiError):
    """The provider answered 401: the API key is missing or wrong. ``provider_message`` is its
    own explanation, when it sent one."""

    user_message = N_("The service rejected genbot's API key. An admin needs to check it.")

    def __init__(self, provider_message: str = "") -> None:
        self.provider_message = provider_message
        super().__init__(
            f"provider answered HTTP 401{f': {provider_message}' if provider_message else ''}"
        )


class ContextTooLong(ApiError):
    """The provider refused a chat request as longer than the model's context (a 400 naming
    tokens or the context). ``excess``: by how many tokens, when its message says."""

    def __init__(self, model: str, provider_message: str = "", excess: int | None = None) -> None:
        self.model = model
        self.provider_message = provider_message
        self.excess = excess
        self._tell(
            N_(
                "The conversation is too long for {model}, even after genbot left out its older "
                "turns. Start a new conversation, or shorten your message."
            ),
            model=model,
        )
        super().__init__(f"context length refused for {model}: {provider_message}")


class BadRequest(ApiError):
    """The provider answered 400. ``provider_message`` is its own explanation when it sent one;
    ``body`` is the parsed JSON body (``None`` when it was not JSON)."""

    def __init__(self, provider_message: str = "", body: Any = None) -> None:
        self.provider_message = provider_message
        self.body = body
        if provider_message:
            self._tell(N_("The service refused the request: {reason}"), reason=provider_message)
        else:
            self._tell(N_("The service refused the request as malformed."))
        super().__init__(self.user_message)


class PermissionDenied(ApiError):
    """The provider answered 403: the key is valid but may not do this (e.g. its plan)."""

    def __init__(self, provider_message: str = "") -> None:
        self.provider_message = provider_message
        if provider_message:
            self._tell(N_("The service does not allow this: {reason}"), reason=provider_message)
        else:
            self._tell(N_("The service does not allow this for genbot's account."))
        super().__init__(self.user_message)


SETTINGS_COMMAND = "`/settings`"
"""The ``{settings}`` of a provider error's sentence as the catalogue names the command; the
kernel's ``provider_text`` names it as the reader's platform does."""


class ModelNotAllowed(PermissionDenied):
    """The provider refused a chat model for this account (403, or a 401 that is about the plan,
    see :mod:`bot.api.chat_errors`): its plan or permissions do not include ``model``."""

    def __init__(self, model: str, plan: str, provider_message: str = "", status: int = 403):
        self.model = model
        self.plan = plan
        self.provider_message = provider_message
        self.status = status
        self._tell(
            N_(
                "The service refused {model} for genbot's account: its plan or permissions do "
                "not include that model (genbot's [api] plan says {plan}; llm-4 models need the "
                "Developer plan or above). Pick another model with {settings}, or ask an admin "
                "to check the account's plan."
            ),
            model=model,
            plan=repr(plan),
            settings=SETTINGS_COMMAND,
        )
        detail = f": {provider_message}" if provider_message else ""
        ApiError.__init__(self, f"model {model} refused (HTTP {status}){detail}")


class ServerError(ApiError):
    """The provider answered with a 5xx status (after any retries that were allowed)."""

    user_message = N_("The service is having trouble right now. Please try again later.")

    def __init__(self, status: int, provider_message: str = "") -> None:
        self.status = status
        self.provider_message = provider_message
        detail = f": {provider_message}" if provider_message else ""
        super().__init__(f"provider answered HTTP {status}{detail}")


class UnexpectedStatus(ApiError):
    """The provider answered with a status its documentation does not list (it lists 200, 400,
    401 and 500; genbot also reads 403, 429 and the other 5xx): 404, 409, 418… The user is told
    that status and that it is undocumented, with the provider's own words when it sent some
    (docs/provider.md#undocumented-status)."""

    def __init__(self, status: int, provider_message: str = "") -> None:
        self.status = status
        self.provider_message = provider_message
        if provider_message:
            self._tell(
                N_("The service answered HTTP {status}, which its API does not document: {reason}"),
                status=status,
                reason=provider_message,
            )
        else:
            self._tell(
                N_("The service answered HTTP {status}, which its API does not document."),
                status=status,
            )
        detail = f": {provider_message}" if provider_message else ""
        ApiError.__init__(
            self, f"provider answered HTTP {status}, a status its API does not document{detail}"
        )


class ProviderRateLimited(ApiError):
    """The provider answered 429 (or genbot's own pacing of ``[api]`` would wait) longer than
    genbot waits. ``retry_after``: seconds until it is worth trying again, when known."""

    def __init__(self, retry_after: float | None = None, detail: str = "") -> None:
        self.retry_after = retry_after
        if retry_after is None:
            self._tell(N_("The provider is rate-limiting genbot; try again in a minute."))
        else:
            amount, unit = rounded_wait(retry_after)
            self._tell(_RATE_LIMITED[unit], amount=amount)
        when = (
            f"try again in {about(retry_after)}"
            if retry_after is not None
            else "try again in a minute"
        )
        super().__init__(f"rate limited{f' ({detail})' if detail else ''}, {when}")


_RATE_LIMITED: dict[str, str] = {
    "s": N_("The provider is rate-limiting genbot; try again in about {amount} s."),
    "min": N_("The provider is rate-limiting genbot; try again in about {amount} min."),
    "h": N_("The provider is rate-limiting genbot; try again in about {amount} h."),
}


def about(seconds: float) -> str:
    """A wait in words: ``about 40 s``, ``about 3 min``, ``about 2 h``."""
    amount, unit = rounded_wait(seconds)
    return f"about {amount} {unit}"


def rounded_wait(seconds: float) -> tuple[int, Literal["s", "min", "h"]]:
    """A wait as :func:`about` says it: seconds up to 90, minutes up to 90, then hours."""
    if seconds < 90:
        return max(1, round(seconds)), "s"
    if seconds < 90 * 60:
        return round(seconds / 60), "min"
    return round(seconds / 3600), "h"


class InvalidResponse(ApiError):
    """The provider answered 200 with a body that is not what its documentation describes."""

    user_message = N_("The service sent an answer genbot could not read.")


class RefusalKind(StrEnum):
    """Why a family B creation call was refused (``status: failed`` in CreateTaskResponse)."""

    BODY_PARSING_FAILED = "body_parsing_failed"
    ORIGIN_NOT_FOUND = "origin_not_found"
    SAME_INDEX_EXISTS = "same_index_exists"
    INSUFFICIENT_CREDIT = "insufficient_credit"
    OTHER = "other"


_REFUSAL_SENTENCES: dict[RefusalKind, str] = {
    RefusalKind.BODY_PARSING_FAILED: N_("The service could not read the request."),
    RefusalKind.ORIGIN_NOT_FOUND: N_("The original image task no longer exists."),
    RefusalKind.SAME_INDEX_EXISTS: N_("That button was already used on this image."),
    RefusalKind.INSUFFICIENT_CREDIT: N_("The workspace has run out of credits."),
    RefusalKind.OTHER: N_("The service refused to create the task."),
}


def refusal_kind(provider_message: str) -> RefusalKind:
    """Classify a creation failure message (docs/provider.md, "Image tasks") into a
    :class:`RefusalKind`."""
    text = " ".join(provider_message.lower().replace("_", " ").split())
    if "parsing" in text or "parse" in text:
        return RefusalKind.BODY_PARSING_FAILED
    if "does not exist" in text or "not exist" in text or "not found" in text:
        return RefusalKind.ORIGIN_NOT_FOUND
    if "same index" in text or "already created" in text:
        return RefusalKind.SAME_INDEX_EXISTS
    if "insufficient" in text or "credit" in text:
        return RefusalKind.INSUFFICIENT_CREDIT
    return RefusalKind.OTHER


class TaskCreationRefused(ApiError):
    """A family B creation call answered ``status: failed``; no task was created. A refusal
    the documentation does not name (:attr:`RefusalKind.OTHER`) tells the user the provider's
    own reason (``provider_message``, made safe by the caller:
    :func:`bot.api.statuses.shown_reason`)."""

    def __init__(self, provider_message: str, kind: RefusalKind | None = None) -> None:
        self.kind = kind if kind is not None else refusal_kind(provider_message)
        self.provider_message = provider_message
        if self.kind is RefusalKind.OTHER and provider_message.strip():
            self._tell(
                N_("The service refused to create the task: {reason}"), reason=provider_message
            )
        else:
            self.user_message = _REFUSAL_SENTENCES[self.kind]
        super().__init__(f"task creation refused ({self.kind.value}): {provider_message}")


class ApiTimeout(ApiError):
    """The provider did not answer (or a wait did not finish) in time."""

    user_message = N_("The service took too long to answer. Please try again.")


class ConnectionFailed(ApiError):
    """No connection to the provider could be used (refused, reset, DNS, TLS...).

    ``request_sent`` tells whether the request may have reached the provider.
    """

    user_message = N_("genbot could not reach the service. Please try again later.")

    def __init__(self, message: str, *, request_sent: bool) -> None:
        super().__init__(message)
        self.request_sent = request_sent


class StreamInterrupted(ApiError):
    """A chat stream ended before ``data: [DONE]`` (cut, stalled, or a broken chunk).

    ``partial_text`` is the text of choice 0 received so far; ``partial_texts`` has every
    choice's text by index; ``reason`` says what happened.
    """

    user_message = N_("The answer was cut off before it finished.")

    def __init__(
        self, reason: str, partial_text: str = "", partial_texts: dict[int, str] | None = None
    ) -> None:
        super().__init__(f"chat stream interrupted: {reason}")
        self.reason = reason
        self.partial_text = partial_text
        self.partial_texts = dict(partial_texts or {})


class FunctionArgumentsError(ApiError):
    """A function call's ``arguments`` are not a JSON object (the model produced invalid JSON)."""

    user_message = N_("The model produced invalid arguments for a tool call.")

    def __init__(self, function_name: str, arguments: str, reason: str) -> None:
        preview = arguments if len(arguments) <= 200 else arguments[:200] + "…"
        super().__init__(
            f"arguments of function call {function_name!r} are not a JSON object ({reason}): "
            f"{preview!r}"
        )
        self.function_name = function_name
        self.arguments = arguments


class DiffusionFailed(ApiError):
    """A diffusion call or fetch reported an error status instead of images."""

    def __init__(self, status: str, provider_message: str = "") -> None:
        self.status = status
        self.provider_message = provider_message
        if provider_message:
            self._tell(N_("Image generation failed: {reason}"), reason=provider_message)
        else:
            self._tell(N_("Image generation failed."))
        super().__init__(f"diffusion status {status!r}: {provider_message}")
