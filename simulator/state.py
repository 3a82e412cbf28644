"""Shared state of one simulator instance: configuration, accounts, request log and fault dice.

Every route module (chat, tasks, diffusion) reads ``app[STATE]``. Tests and benchmarks read the
same object (or ``GET /_sim/stats``) to prove what the provider saw and charged.
"""

from __future__ import annotations

import asyncio
import random
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass, field
from typing import Any, Literal

from aiohttp import web

from simulator.clock import SimClock
from simulator.dialects import Dialect as Dialect
from simulator.dialects import DialectRules, rules_for
from simulator.images import StoredImage
from simulator.task_model import ImageTask, account_id
from simulator.task_rules import Mode

Plan = Literal["free", "developer"]
FaultKind = Literal["error_500", "reset", "slow", "cut_stream"]
FaultPhase = Literal["before_create", "after_create"]


@dataclass(frozen=True)
class SimulatorConfig:
    """Options of ``genbot sim`` (see its ``--help``).

    ``clock_start`` (tests): when set, simulated time starts at this Unix time and moves only when
    advanced (``SimulatorState.advance`` or ``POST /_sim/advance``), making timestamps exact.
    ``webhook_retries`` is how many times a failed webhook delivery is retried.
    ``fault_reads`` False: fetch and multi_fetch never fail and draw no fault dice (a scenario
    whose faults must land on the same creations every run, however its reads interleave).
    ``plain_images`` serves one flat picture per size instead of drawing each image: for
    benchmarks, where a real provider's CDN would hand out stored files from other machines
    while drawing here takes the CPU genbot is measured on.
    ``dialect`` ``spec`` knows only what the API documentation states, where ``default`` fills
    its gaps, and ``variant`` takes the other road wherever the documentation allows two (see
    ``simulator/README.md``, "Dialects"). ``chat_rpm`` > 0 answers chat requests
    beyond that many per minute (× ``time_scale``) and key with 429 and ``Retry-After``.
    ``context_tokens`` > 0 refuses chat prompts longer than that many tokens with 400
    (``context_length_exceeded``), whatever the model. ``fast_hours`` (``None``: unlimited) is
    each account's fast time, in simulated hours: fast and turbo tasks use it up, and once it
    is gone they run as relax (mode rule 3). ``suspended_api_key`` is a key the provider knows
    but lets create nothing: its image task and diffusion creations answer 403. ``accounts``
    are more Developer-plan keys, each its own account with the credits given (a pool of
    keys: a task id is known only to the account that made it, when read with a key).
    """

    api_key: str = "sim-key"
    free_api_key: str | None = None
    credits: int = 10000
    time_scale: float = 1.0
    insecure_webhooks: bool = False
    fault_rate: float = 0.0
    fault_reads: bool = True
    seed: int = 0
    slow_seconds: float = 3.0
    clock_start: float | None = None
    webhook_retries: int = 3
    webhook_timeout: float = 10.0
    plain_images: bool = False
    dialect: Dialect = "default"
    chat_rpm: int = 0
    context_tokens: int = 0
    fast_hours: float | None = None
    suspended_api_key: str | None = None
    accounts: tuple[tuple[str, int], ...] = ()

    @property
    def rules(self) -> DialectRules:
        """The choices of this simulator's dialect."""
        return rules_for(self.dialect)


@dataclass
class Account:
    """One API key's plan and credits: ``balance`` is spendable, ``frozen`` is held for running
    tasks, ``charged`` is what finished work has cost so far."""

    key: str
    plan: Plan
    balance: int
    frozen: int = 0
    charged: int = 0
    chat_times: list[float] = field(default_factory=list)
    fast_seconds_left: float | None = None
    suspended: bool = False
    revoked: bool = False
    """The key was revoked: it answers 401 everywhere (its tasks stay the account's)."""

    def run_mode(self, mode: Mode, seconds: float) -> Mode:
        """The mode a task asking for ``mode`` runs in, using ``seconds`` of fast time for a
        fast or turbo one while any is left (mode rule 3: none left → relax)."""
        if mode == "relax" or self.fast_seconds_left is None:
            return mode
        if self.fast_seconds_left <= 0:
            return "relax"
        self.fast_seconds_left -= seconds
        return mode

    @property
    def setting(self) -> Mode:
        """The account's own mode setting (mode rule 3): ``fast``, switched to ``relax`` once
        its fast hours are used up. It is what a task record's ``meta.process_mode`` says."""
        if self.fast_seconds_left is not None and self.fast_seconds_left <= 0:
            return "relax"
        return "fast"

    def freeze(self, amount: int) -> bool:
        """Hold ``amount`` for a new task; ``False`` (nothing held) when the balance is short."""
        if amount > self.balance:
            return False
        self.balance -= amount
        self.frozen += amount
        return True

    def charge(self, amount: int) -> None:
        """Turn ``amount`` of held credits into spent credits."""
        self.frozen -= amount
        self.charged += amount

    def release(self, amount: int) -> None:
        """Give ``amount`` of held credits back."""
        self.frozen -= amount
        self.balance += amount

    def spend(self, amount: int) -> bool:
        """Charge ``amount`` at once (diffusion); ``False`` when the balance is short."""
        if not self.freeze(amount):
            return False
        self.charge(amount)
        return True


@dataclass
class RecordedRequest:
    """One request as the simulator received it (auth headers are not kept).

    ``fault`` is the injected fault, if any. For a 500 or reset on a creation endpoint,
    ``fault_phase`` tells whether it struck before anything was created or after the task was
    created (and credits frozen) with the response then lost. ``created_id`` is the task id or
    diffusion job id the request created, ``status`` the HTTP status sent (``None`` on a reset).
    ``account`` is the id of the account whose key the request carried (a key the simulator
    was given, revoked or not; :func:`simulator.task_model.account_id`, never the key), else
    ``None``.
    """

    method: str
    path: str
    body: Any
    at: float
    fault: FaultKind | None = None
    fault_phase: FaultPhase | None = None
    status: int | None = None
    created_id: str | None = None
    account: str | None = None


@dataclass
class DiffusionJob:
    """One diffusion job: when its output is ready and until when it is kept."""

    job_id: int
    kind: str
    account_key: str
    created_at: float
    ready_at: float
    expires_at: float
    output: tuple[str, ...]
    generation_time: float


@dataclass(frozen=True)
class WebhookAttempt:
    """One delivery attempt: the receiver's HTTP status, or the connection error."""

    task_id: str
    url: str
    attempt: int
    status: int | None
    error: str | None
    at: float

    @property
    def delivered(self) -> bool:
        return self.status is not None and 200 <= self.status < 300


@dataclass
class SimulatorState:
    """Everything one simulator instance knows."""

    config: SimulatorConfig
    accounts: dict[str, Account] = field(default_factory=dict)
    requests: list[RecordedRequest] = field(default_factory=list)
    creations: dict[str, int] = field(default_factory=dict)
    rng: random.Random = field(default_factory=random.Random)
    fault_rng: random.Random = field(default_factory=random.Random)
    task_rng: random.Random = field(default_factory=random.Random)
    clock: SimClock = field(default_factory=SimClock)
    tasks: dict[str, ImageTask] = field(default_factory=dict)
    task_children: dict[tuple[str, str, str], str] = field(default_factory=dict)
    diffusion_jobs: dict[int, DiffusionJob] = field(default_factory=dict)
    images: dict[str, StoredImage] = field(default_factory=dict)
    webhook_attempts: list[WebhookAttempt] = field(default_factory=list)
    settle_hooks: list[Callable[[], None]] = field(default_factory=list)
    stream_bytes: list[int] = field(default_factory=list)
    """Per chat stream, in the order they began: the bytes of its body the client took (written
    before its connection closed)."""
    holds: dict[str, asyncio.Event] = field(default_factory=dict)
    """Paths whose requests wait, logged but unanswered, until their event is set (see
    :meth:`hold`)."""

    @classmethod
    def create(cls, config: SimulatorConfig) -> SimulatorState:
        state = cls(config=config, clock=SimClock(config.clock_start))
        state.rng.seed(config.seed)
        state.fault_rng.seed(config.seed + 1)
        state.task_rng.seed(config.seed + 2)
        fast = None if config.fast_hours is None else config.fast_hours * 3600
        keys: list[tuple[str | None, Plan]] = [
            (config.api_key, "developer"),
            (config.free_api_key, "free"),
            (config.suspended_api_key, "developer"),
        ]
        for key, plan in keys:
            if key:
                state.accounts[key] = Account(key, plan, config.credits, fast_seconds_left=fast)
        if config.suspended_api_key:
            state.accounts[config.suspended_api_key].suspended = True
        for key, credits in config.accounts:
            state.accounts[key] = Account(key, "developer", credits, fast_seconds_left=fast)
        return state

    def account_for(self, key: str | None) -> Account | None:
        """The account of an API key, or ``None`` for a missing, unknown or revoked key."""
        account = self.accounts.get(key) if key else None
        return None if account is None or account.revoked else account

    def account_named(self, request: web.Request) -> str | None:
        """The id of the account whose key ``request`` carries (``X-API-KEY`` or bearer),
        revoked or not; ``None`` for a missing or unknown key."""
        key = api_key_header(request) or bearer_key(request)
        return account_id(key) if key in self.accounts else None

    def readable(self, owner_key: str, reader: str | None) -> bool:
        """Whether a read sent with key ``reader`` sees a task or generation of the account of
        ``owner_key``: its own only (a read without a key sees every one: the documentation
        does not say whether reads need a key)."""
        return reader is None or reader == owner_key

    def roll_fault(self, allowed: tuple[FaultKind, ...]) -> FaultKind | None:
        """With probability ``fault_rate``, one of ``allowed`` (seeded, so runs repeat).

        Inside a request the fault middleware has already drawn the request's one fault: the
        answer is that fault when it is in ``allowed`` (``cut_stream`` for a streamed chat),
        else ``None``, so a handler never rolls a second time.
        """
        scope = _SCOPE.get()
        if scope is not None and scope.state is self:
            return scope.fault if scope.fault in allowed else None
        return self.draw_fault(allowed)

    def draw_fault(self, allowed: tuple[FaultKind, ...]) -> FaultKind | None:
        """Roll the fault dice (the middleware calls this once per request)."""
        if self.config.fault_rate <= 0 or not allowed:
            return None
        if self.fault_rng.random() >= self.config.fault_rate:
            return None
        return self.fault_rng.choice(allowed)

    def roll_fault_phase(self) -> FaultPhase:
        """Whether a creation fault strikes before or after the task is created (seeded)."""
        return "before_create" if self.fault_rng.random() < 0.5 else "after_create"

    @contextmanager
    def request_scope(self, entry: RecordedRequest) -> Iterator[None]:
        """Run a handler with ``entry`` as its request's log entry (see :meth:`record`)."""
        token = _SCOPE.set(_RequestScope(self, entry))
        try:
            yield
        finally:
            _SCOPE.reset(token)

    def record(
        self, method: str, path: str, body: Any, fault: FaultKind | None = None
    ) -> RecordedRequest:
        """Log a request. The middleware logs every request; a handler calling this for its own
        request gets that same entry back (updated with ``fault``), not a second one."""
        scope = _SCOPE.get()
        if scope is not None and scope.state is self and scope.entry.path == path:
            if fault is not None:
                scope.entry.fault = fault
            return scope.entry
        entry = RecordedRequest(method, path, body, self.clock.now(), fault)
        self.requests.append(entry)
        return entry

    def hold(self, path: str) -> asyncio.Event:
        """Make the requests to ``path`` wait (logged, not yet handled) until the event returned
        is set (tests: an answer that comes late on purpose); set it to let them through."""
        return self.holds.setdefault(path, asyncio.Event())

    def lose_task(self, task_id: str) -> None:
        """Forget a task, as a provider that lost it (tests): fetch answers 400 for it,
        multi_fetch ``null``; it is never charged (its credits are released) nor notified."""
        self.tasks.pop(task_id).lost = True
        self.settle()

    def requests_to(self, path_prefix: str) -> list[RecordedRequest]:
        """Requests whose path starts with ``path_prefix`` (e.g. ``/gen/v2/imagine``)."""
        return [r for r in self.requests if r.path.startswith(path_prefix)]

    def count_creation(self, kind: str) -> None:
        self.creations[kind] = self.creations.get(kind, 0) + 1

    def new_uuid(self) -> str:
        """A UUID4-formatted id drawn from the seeded task generator."""
        return str(uuid.UUID(int=self.task_rng.getrandbits(128), version=4))

    def now(self) -> float:
        """Simulated time, Unix seconds."""
        return self.clock.now()

    def advance(self, seconds: float) -> None:
        """Move simulated time forward and settle what finished meanwhile (charges, webhooks)."""
        self.clock.advance(seconds)
        self.settle()

    def settle(self) -> None:
        """Run the settle hooks: finished tasks are charged and their webhooks sent."""
        for hook in self.settle_hooks:
            hook()


@dataclass(frozen=True)
class _RequestScope:
    state: SimulatorState
    entry: RecordedRequest

    @property
    def fault(self) -> FaultKind | None:
        return self.entry.fault


_SCOPE: ContextVar[_RequestScope | None] = ContextVar("genbot_simulator_request", default=None)

STATE: web.AppKey[SimulatorState] = web.AppKey("genbot_simulator_state", SimulatorState)
REQUEST_RECORD: web.RequestKey[RecordedRequest] = web.RequestKey(
    "genbot_simulator_record", RecordedRequest
)


def request_record(request: web.Request) -> RecordedRequest | None:
    """The log entry of ``request`` (set by the fault middleware)."""
    return request.get(REQUEST_RECORD)


def bearer_key(request: web.Request) -> str | None:
    """The key of an ``Authorization: Bearer <key>`` header."""
    header = request.headers.get("Authorization", "")
    scheme, _, key = header.partition(" ")
    return key.strip() if scheme.lower() == "bearer" and key.strip() else None


def api_key_header(request: web.Request) -> str | None:
    """The key of an ``X-API-KEY`` header."""
    return request.headers.get("X-API-KEY") or None
