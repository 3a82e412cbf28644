"""The pool of provider keys (``[[api.keys]]``, or ``[api] key`` as a pool of one).

Each key is one provider account: its task ids are that account's, so a job keeps the key that
made it (or made its parent) for every later call about it. The pool knows each key's secret,
its limits and its state in this process:

* ``in``: chosen for new jobs (by weight, among the keys with room: see :meth:`KeyPool.order`);
* ``out``: the provider refused it (401 or 403: ``refused``; a creation refused for
  insufficient credit: ``no_credit``) less than ``[api] key_out_seconds`` ago. New jobs go to
  other keys; calls about its own jobs (fetches, follow-ups) still use it, and any creation it
  makes again brings it back in. Once the time is over it is tried again with a new job (a job
  refused for the key itself is moved to another key, so the try costs users nothing).

Nothing here logs or returns a secret: log lines, metrics and :meth:`KeyPool.states` name keys.
"""

from __future__ import annotations

import logging
import random
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

from bot.api.errors import (
    N_,
    ApiError,
    AuthenticationError,
    ModelNotAllowed,
    PermissionDenied,
    RefusalKind,
    TaskCreationRefused,
)
from bot.api.http import AuthStyle, CallSafety, HttpResult, HttpTransport
from bot.api.metrics import KEY_FAILURES, KEY_STATE, KEY_TASKS, KEY_USAGE, label
from bot.api.settings import KeySettings

log = logging.getLogger("bot.api.keys")

KeyState = Literal["in", "refused", "no_credit"]
"""``in``: usable for new jobs; ``refused``: the provider answered 401/403 to it; ``no_credit``:
its account ran out of credit."""
KEY_STATES: tuple[KeyState, ...] = ("in", "refused", "no_credit")


class NoKey(ApiError):
    """No provider key is configured, or the named one is not (any more)."""

    user_message = N_("genbot has no usable API key for the service. An admin needs to check it.")


@dataclass(frozen=True)
class KeyChoice:
    """A key new work may go to, in the order to try: its ``name`` and caps (0: none)."""

    name: str
    max_concurrent: int
    daily_tasks: int


@dataclass(frozen=True)
class KeyStatus:
    """One key's state in this process, as the admin page and ``genbot doctor`` show it:
    ``out_until`` is when an ``out`` key is tried again (Unix time; None while ``in``)."""

    name: str
    state: KeyState
    weight: float
    max_concurrent: int
    daily_tasks: int
    modes: tuple[str, ...]
    out_until: float | None
    failures: int


def key_failure(error: BaseException) -> KeyState | None:
    """What ``error`` says of the key that was sent: ``refused`` (401, or 403: the key is
    valid but its account may not act), ``no_credit`` (a creation refused for insufficient
    credit), None when it says nothing about the key. A 403 about one chat model is the
    model's, not the key's."""
    if isinstance(error, ModelNotAllowed):
        return None
    if isinstance(error, AuthenticationError | PermissionDenied):
        return "refused"
    if isinstance(error, TaskCreationRefused) and error.kind is RefusalKind.INSUFFICIENT_CREDIT:
        return "no_credit"
    return None


class KeyPool:
    """The configured keys and their state (see the module docstring). How long a key stays
    out is measured on ``monotonic`` (it lives only in this process, so a wall clock stepped
    back or forward neither lengthens nor shortens it); ``clock`` (wall time) only says when
    that is, in :attr:`KeyStatus.out_until`."""

    def __init__(
        self,
        keys: Sequence[KeySettings],
        *,
        out_seconds: float = 900.0,
        clock: Callable[[], float] = time.time,
        monotonic: Callable[[], float] = time.monotonic,
        rng: random.Random | None = None,
    ) -> None:
        self._keys = {entry.name: entry for entry in keys}
        self._out_seconds = out_seconds
        self._clock = clock
        self._monotonic = monotonic
        self._rng = rng or random.Random()
        self._out: dict[str, tuple[KeyState, float]] = {}
        """Key name → (why it is out, when it is tried again on the monotonic clock)."""
        self._failures: dict[str, int] = dict.fromkeys(self._keys, 0)
        self.accepted: set[str] = set()
        """Keys the provider has answered 2xx to in this process (a later 401 to a chat
        request with one of them is about the plan, not the key)."""
        for name in self._keys:
            self._show(name)

    @property
    def names(self) -> list[str]:
        """The keys' names, in configuration order."""
        return list(self._keys)

    @property
    def first(self) -> str:
        """The first key's name: what a job stored before the pool existed used."""
        if not self._keys:
            raise NoKey("no provider key is configured: set [api] key or [[api.keys]]")
        return next(iter(self._keys))

    def secret(self, name: str) -> str:
        """The key ``name`` holds ("" or an unknown name: the first key, the one a job stored
        before the pool existed was made with). :class:`NoKey` when there is none."""
        entry = self._keys.get(name or self.first)
        if entry is None:
            raise NoKey(
                f"provider key {name!r} is no longer configured: its jobs cannot be read; "
                "put it back in [[api.keys]]"
            )
        return entry.key.get_secret_value()

    def state(self, name: str) -> KeyState:
        """``name``'s state now (an ``out`` key whose time is over is ``in`` again)."""
        out = self._out.get(name)
        if out is None:
            return "in"
        if self._monotonic() >= out[1]:
            del self._out[name]
            log.info("provider key %s is tried again for new jobs", name)
            self._show(name)
            return "in"
        return out[0]

    def order(self, mode: str | None = None, *, include_out: bool = False) -> list[KeyChoice]:
        """The keys new work may go to, in the order to try them: the keys that are ``in``
        (``include_out``: every key) and allow ``mode`` (an image task's process mode; None:
        any), drawn one after the other by weight (a key of weight 2 comes first twice as often
        as one of weight 1). Storage takes the first with room (its caps, counted over every
        process)."""
        left = [
            entry
            for entry in self._keys.values()
            if (include_out or self.state(entry.name) == "in")
            and (mode is None or not entry.modes or mode in entry.modes)
        ]
        ordered: list[KeyChoice] = []
        while left:
            pick = self._rng.uniform(0, sum(entry.weight for entry in left))
            for position, entry in enumerate(left):
                pick -= entry.weight
                if pick <= 0 or position == len(left) - 1:
                    ordered.append(KeyChoice(entry.name, entry.max_concurrent, entry.daily_tasks))
                    del left[position]
                    break
        return ordered

    def for_chat(self) -> str:
        """The key a chat request goes to: drawn by weight among the keys that are ``in``
        (chat has no task ids to keep to one account), else the first key."""
        ordered = self.order()
        return ordered[0].name if ordered else self.first

    def observe(self, name: str, error: BaseException | None, *, created: bool = False) -> None:
        """What the provider answered to a call made with ``name``: ``error`` None for a 2xx
        (``created``: it accepted new work, which brings an ``out`` key back in), else the
        error it raised (a refusal of the key takes the key out)."""
        if not self._keys:
            return
        name = name or self.first
        if error is None:
            self.accepted.add(name)
            if created:
                KEY_TASKS.labels(label(name)).inc()
                if name in self._out:
                    del self._out[name]
                    log.warning("provider key %s accepted new work again: back in", name)
                    self._show(name)
            return
        failure = key_failure(error)
        if failure is None:
            return
        self._failures[name] = self._failures.get(name, 0) + 1
        KEY_FAILURES.labels(label(name), failure).inc()
        was = self._out.get(name)
        self._out[name] = (failure, self._monotonic() + self._out_seconds)
        if was is None or was[0] != failure:
            log.warning(
                "provider key %s taken out for %.0f s: %s",
                name,
                self._out_seconds,
                "the provider refused it (401/403)"
                if failure == "refused"
                else "its account has insufficient credit",
            )
        self._show(name)

    async def post(
        self,
        transport: HttpTransport,
        path: str,
        body: Mapping[str, Any],
        *,
        safety: CallSafety,
        key: str,
        auth: AuthStyle = AuthStyle.API_KEY,
    ) -> HttpResult:
        """POST with the key ``key`` names ("": the first) and report the answer
        (:meth:`observe`; a 2xx is not yet a creation: its body may still refuse it)."""
        try:
            result = await transport.post(
                path, body, auth=auth, safety=safety, key=self.secret(key)
            )
        except ApiError as error:
            self.observe(key, error)
            raise
        self.observe(key, None)
        return result

    def show_usage(self, name: str, *, active: int, tasks: int, credits: int) -> None:
        """Set ``name``'s usage gauges (as storage counts them over every process)."""
        for measure, value in (
            ("active", active),
            ("tasks_today", tasks),
            ("credits_today", credits),
        ):
            KEY_USAGE.labels(label(name), measure).set(value)

    def states(self) -> list[KeyStatus]:
        """Every key's state now, in configuration order (names only: never a secret)."""
        result = []
        for name, entry in self._keys.items():
            state = self.state(name)
            out = self._out.get(name)
            result.append(
                KeyStatus(
                    name,
                    state,
                    entry.weight,
                    entry.max_concurrent,
                    entry.daily_tasks,
                    tuple(entry.modes),
                    self._clock() + (out[1] - self._monotonic()) if out is not None else None,
                    self._failures.get(name, 0),
                )
            )
        return result

    def _show(self, name: str) -> None:
        now = self._out[name][0] if name in self._out else "in"
        for state in KEY_STATES:
            KEY_STATE.labels(label(name), state).set(1 if state == now else 0)
