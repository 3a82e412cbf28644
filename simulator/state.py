"""Shared state of one simulator instance: configuration, accounts, request log and fault dice.

Every route module (chat, tasks, diffusion) reads ``app[STATE]``. Tests and benchmarks read the
same object (or ``GET /_sim/stats``) to prove what the provider saw and charged.
"""

from __future__ import annotations

import random
import time
from dataclasses import dataclass, field
from typing import Any, Literal

from aiohttp import web

Plan = Literal["free", "developer"]
FaultKind = Literal["error_500", "reset", "slow", "cut_stream"]


@dataclass(frozen=True)
class SimulatorConfig:
    """Options of ``genbot sim`` (see its ``--help``)."""

    api_key: str = "sim-key"
    free_api_key: str | None = None
    credits: int = 10000
    time_scale: float = 1.0
    insecure_webhooks: bool = False
    fault_rate: float = 0.0
    seed: int = 0
    slow_seconds: float = 3.0


@dataclass
class Account:
    """One API key's plan and credit balance."""

    key: str
    plan: Plan
    balance: int
    frozen: int = 0
    charged: int = 0


@dataclass(frozen=True)
class RecordedRequest:
    """One request as the simulator received it (auth headers are not kept)."""

    method: str
    path: str
    body: Any
    at: float
    fault: FaultKind | None = None


@dataclass
class SimulatorState:
    """Everything one simulator instance knows."""

    config: SimulatorConfig
    accounts: dict[str, Account] = field(default_factory=dict)
    requests: list[RecordedRequest] = field(default_factory=list)
    creations: dict[str, int] = field(default_factory=dict)
    rng: random.Random = field(default_factory=random.Random)
    fault_rng: random.Random = field(default_factory=random.Random)

    @classmethod
    def create(cls, config: SimulatorConfig) -> SimulatorState:
        state = cls(config=config)
        state.rng.seed(config.seed)
        state.fault_rng.seed(config.seed + 1)
        state.accounts[config.api_key] = Account(config.api_key, "developer", config.credits)
        if config.free_api_key:
            state.accounts[config.free_api_key] = Account(
                config.free_api_key, "free", config.credits
            )
        return state

    def account_for(self, key: str | None) -> Account | None:
        """The account of an API key, or ``None`` for a missing or unknown key."""
        if not key:
            return None
        return self.accounts.get(key)

    def roll_fault(self, allowed: tuple[FaultKind, ...]) -> FaultKind | None:
        """With probability ``fault_rate``, one of ``allowed`` (seeded, so runs repeat)."""
        if self.config.fault_rate <= 0 or not allowed:
            return None
        if self.fault_rng.random() >= self.config.fault_rate:
            return None
        return self.fault_rng.choice(allowed)

    def record(self, method: str, path: str, body: Any, fault: FaultKind | None = None) -> None:
        self.requests.append(RecordedRequest(method, path, body, time.time(), fault))

    def requests_to(self, path_prefix: str) -> list[RecordedRequest]:
        """Requests whose path starts with ``path_prefix`` (e.g. ``/gen/v2/imagine``)."""
        return [r for r in self.requests if r.path.startswith(path_prefix)]

    def count_creation(self, kind: str) -> None:
        self.creations[kind] = self.creations.get(kind, 0) + 1


STATE: web.AppKey[SimulatorState] = web.AppKey("genbot_simulator_state", SimulatorState)


def bearer_key(request: web.Request) -> str | None:
    """The key of an ``Authorization: Bearer <key>`` header."""
    header = request.headers.get("Authorization", "")
    scheme, _, key = header.partition(" ")
    return key.strip() if scheme.lower() == "bearer" and key.strip() else None


def api_key_header(request: web.Request) -> str | None:
    """The key of an ``X-API-KEY`` header."""
    return request.headers.get("X-API-KEY") or None
