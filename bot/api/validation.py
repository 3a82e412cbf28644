"""Shared pieces of request validation: the request base model and small rule helpers.

Every request model derives from :class:`RequestModel`. Building one with values the provider
would refuse raises :class:`~bot.api.errors.InvalidRequest` (never pydantic's
``ValidationError``), so callers handle exactly one error type and can show its sentence.
"""

from __future__ import annotations

import math
import re
from collections.abc import Collection
from typing import Annotated, Any
from urllib.parse import urlsplit

from pydantic import AfterValidator, BaseModel, ConfigDict, ValidationError, ValidationInfo
from pydantic_core import ErrorDetails

from bot.api.errors import N_, InvalidRequest

DEFAULT_UPSTREAM_CDN_HOSTS: tuple[str, ...] = ("cdn.discordapp.com", "media.discordapp.net")
"""The default of ``[api] upstream_cdn_hosts``: the documentation says links on "the upstream
chat-platform CDN" are not accepted by describe and blend without naming it; Discord's two hosts
are taken (docs/provider.md#upstream-cdn)."""

LOOPBACK_HOSTS: frozenset[str] = frozenset({"127.0.0.1", "localhost", "::1"})
_TASK_ID = re.compile(r"^\S{1,128}$")


def shown(value: Any) -> str:
    """A value as it appears in an error sentence: short, strings quoted."""
    text = repr(value) if isinstance(value, str) else str(value)
    return text if len(text) <= 60 else text[:57] + "..."


def _location(details: ErrorDetails) -> str:
    parts: list[str] = []
    for part in details["loc"]:
        if isinstance(part, int):
            parts.append(f"[{part}]")
        else:
            parts.append(("." if parts else "") + part)
    return "".join(parts) or "request"


def invalid_from_validation_error(error: ValidationError) -> InvalidRequest:
    """Turn pydantic's first complaint into an :class:`InvalidRequest` with a readable sentence."""
    details = error.errors(include_url=False)[0]
    field = _location(details)
    kind = details["type"]
    context = details.get("ctx") or {}
    got = details.get("input")
    if kind == "missing":
        return InvalidRequest(field, "a value", N_("{field} is required"), field=field)
    if kind == "extra_forbidden":
        return InvalidRequest(
            field, "no such field", N_("{field} is not a field of this request"), field=field
        )
    if kind == "literal_error":
        expected = str(context.get("expected", "")).replace("'", "")
        return InvalidRequest(
            field,
            expected,
            N_("{field} must be one of {expected} (got {got})"),
            field=field,
            expected=expected,
            got=shown(got),
        )
    if kind.startswith("string"):
        return InvalidRequest(
            field, "text", N_("{field} must be text (got {got})"), field=field, got=shown(got)
        )
    if kind.startswith(("int", "float")):
        return InvalidRequest(
            field,
            "a number",
            N_("{field} must be a number (got {got})"),
            field=field,
            got=shown(got),
        )
    if kind.startswith("bool"):
        return InvalidRequest(
            field, "true or false", N_("{field} must be true or false"), field=field
        )
    if kind.startswith("list"):
        return InvalidRequest(field, "a list", N_("{field} must be a list"), field=field)
    return InvalidRequest(
        field,
        "a valid value",
        N_("{field} is invalid: {reason}"),
        field=field,
        reason=details["msg"],
    )


class RequestModel(BaseModel):
    """Base of request bodies: unknown fields are refused, every violation is InvalidRequest."""

    model_config = ConfigDict(extra="forbid", validate_assignment=True)

    def __init__(self, **data: Any) -> None:
        try:
            super().__init__(**data)
        except ValidationError as error:
            raise invalid_from_validation_error(error) from None

    # Nested models are then validated by pydantic-core directly (as for ``RootModel``), so a
    # complaint deep inside keeps its full location (``messages[2].role``).
    __init__.__pydantic_base_init__ = True  # type: ignore[attr-defined]

    def __setattr__(self, name: str, value: Any) -> None:
        try:
            super().__setattr__(name, value)
        except ValidationError as error:
            raise invalid_from_validation_error(error) from None

    def to_body(self) -> dict[str, Any]:
        """The JSON body sent to the provider: unset optional fields are left out."""
        return self.model_dump(mode="json", exclude_none=True, by_alias=True)


def check_range(
    field: str, value: float | None, low: float, high: float, *, low_open: bool = False
) -> float | None:
    """``value`` when within ``[low, high]`` (``(low, high]`` when ``low_open``), else refuse."""
    if value is None:
        return None
    if isinstance(value, bool) or not math.isfinite(value):
        raise InvalidRequest(
            field, f"{low:g} to {high:g}", N_("{field} must be a finite number"), field=field
        )
    below = value <= low if low_open else value < low
    if not below and value <= high:
        return value
    bounds = {"field": field, "low": f"{low:g}", "high": f"{high:g}", "got": f"{value:g}"}
    if low_open:
        raise InvalidRequest(
            field,
            f"greater than {low:g} and at most {high:g}",
            N_("{field} must be greater than {low} and at most {high} (got {got})"),
            **bounds,
        )
    raise InvalidRequest(
        field,
        f"between {low:g} and {high:g}",
        N_("{field} must be between {low} and {high} (got {got})"),
        **bounds,
    )


def check_at_least(field: str, value: int | None, low: int) -> int | None:
    """``value`` when at least ``low``, else refuse."""
    if value is not None and value < low:
        raise InvalidRequest(
            field,
            f"at least {low}",
            N_("{field} must be at least {low} (got {got})"),
            field=field,
            low=low,
            got=value,
        )
    return value


def check_non_empty(field: str, value: str) -> str:
    """``value`` when it has visible characters, else refuse."""
    if not value.strip():
        raise InvalidRequest(field, "non-empty text", N_("{field} must not be empty"), field=field)
    return value


def check_http_url(field: str, value: str, *, cdn_hosts: Collection[str] = ()) -> str:
    """``value`` when it is an absolute http(s) URL, not on (or under) one of ``cdn_hosts``."""
    parts = urlsplit(value.strip())
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise InvalidRequest(
            field,
            "an http(s) link",
            N_("{field} must be an http or https link (got {got})"),
            field=field,
            got=shown(value),
        )
    host = parts.hostname.lower()
    if any(host == cdn or host.endswith("." + cdn) for cdn in cdn_hosts):
        raise InvalidRequest(
            field,
            "a link not on " + ", ".join(cdn_hosts),
            N_("{field} must not be a {host} link; upload the image somewhere else first"),
            field=field,
            host=host,
        )
    return value.strip()


def check_webhook_address(field: str, value: str, *, allow_insecure: bool = False) -> str:
    """Apply the documented webhook rule: ``https://domain`` on port 443 only.

    With ``allow_insecure`` a loopback address (127.0.0.1, localhost, ::1) may use http and any
    port; that is for tests and local demos only.
    """
    parts = urlsplit(value)
    try:
        port = parts.port
    except ValueError:
        port = -1
    host = (parts.hostname or "").lower()
    if allow_insecure and host in LOOPBACK_HOSTS and parts.scheme in ("http", "https"):
        return value
    if parts.scheme != "https" or not host or port not in (None, 443) or parts.username:
        raise InvalidRequest(
            field,
            "an https://domain address on port 443",
            f"{field} must be an https://domain address on port 443 (got {shown(value)})",
        )
    return value


def check_task_id(field: str, value: str) -> str:
    """``value`` when it looks like a provider task id (1 to 128 characters, no spaces)."""
    if not _TASK_ID.match(value):
        raise InvalidRequest(field, "a task id", f"{field} must be a task id (got {shown(value)})")
    return value


def int_as_text(value: Any) -> Any:
    """An integer given where the provider takes text (``index=1``) as that text; anything
    else unchanged (the field's own type then judges it)."""
    return str(value) if isinstance(value, int) and not isinstance(value, bool) else value


def _task_id(value: str, info: ValidationInfo) -> str:
    return check_task_id(info.field_name or "task_id", value)


def _secret_with_endpoint(value: str | None, info: ValidationInfo) -> str | None:
    if value and not info.data.get("webhook_endpoint"):
        raise InvalidRequest(
            "webhook_secret",
            "only with webhook_endpoint",
            "webhook_secret needs a webhook_endpoint",
        )
    return value


TaskId = Annotated[str, AfterValidator(_task_id)]
"""A field naming a provider task (:func:`check_task_id`, under the field's name)."""

WebhookSecret = Annotated[str | None, AfterValidator(_secret_with_endpoint)]
"""A webhook secret: given only with a ``webhook_endpoint`` (declared before it)."""


def format_number(value: float) -> str:
    """A number as the provider's string fields expect it: ``2``, ``1.5``, ``1024``."""
    return f"{value:g}" if not float(value).is_integer() else str(int(value))
