"""Database faults: several ``genbot run`` processes (the playground as platform, the simulator as
provider) on one PostgreSQL server of their own, commands flowing through every process while
the server is restarted, its backends terminated or stalled, and processes killed or joining.
Used by the fault suite (``test_database.py``).

:class:`ServerFaults` does to the server what an operator or an outage would: ``pg_ctl restart``
(fast or immediate), ``pg_terminate_backend`` of every genbot backend or only the ``LISTEN``
ones, ``SIGSTOP`` of every server process for a while. :func:`fault_scenario` submits commands
at a steady rate, applies the faults at their times, lets everything settle, and returns a
:class:`FaultOutcome` whose :meth:`~FaultOutcome.problems` lists every broken promise:

- every command a process accepted (``202``) is answered exactly once: one genbot message
  replies to it (the job's message, which becomes its result or its failure report, or one
  clear refusal), and it is final;
- at most one job per command, and at most one creation per command at the simulator, for
  every command sent (also one whose sender got no answer: it may have been kept);
- no job is left unfinished once the faults are over and ``settle_bound`` seconds passed;
- every process the scenario did not stop itself is still running (none restarted by hand).

A command the playground refused (its database unreachable) is not accepted: the answer must
then be a JSON error the page shows, which is checked as it comes.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import re
import signal
import subprocess
import time
from collections import Counter
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import aiohttp

from adapters.web.access import SESSION_COOKIE
from adapters.web.journal import restored
from simulator.faults import CREATION_PATHS
from simulator.server import RunningSimulator
from tests.postgres import PostgresCluster
from tests.resilience.cluster import SETTLED, cluster_env, query
from tests.resilience.process import GenbotProcess, load_page

PROMPT = "db fault command {number} a lighthouse"
BACK_AFTER = re.compile(r"the database is back after (\d+) s")
SQL_BODIES = "SELECT body FROM playground_messages"
CHANNELS = tuple(f"faults-{n}" for n in range(6))
"""Commands go to these in turn: each channel keeps its latest 500 messages, and every command
and its answer must stay to be counted."""
JOB_TIMEOUT_SECONDS = 60
"""Jobs whose creation was never confirmed end after this (they are counted as answered)."""
COMMAND_TIMEOUT = aiohttp.ClientTimeout(total=15)
PROCESS_TIMEOUT = 90.0
"""How long a process may take to start or to stop (SIGTERM: ``[runtime] drain_seconds``, 20 s,
and its teardown) on a machine the faults load."""
VIEW_SETTLE_SECONDS = 2.0
"""How long the processes get to show the last saves before their views are compared."""
DATABASE_UNREACHABLE = "genbot can't reach its database"
IN_PROGRESS = "⏳"
"""How a job's message starts while the job is on its way (never once it is settled)."""
STILL_SENT_SECONDS = 1.0
"""How long commands still reach a process after its SIGTERM."""


@dataclass
class ServerFaults:
    """What can happen to the PostgreSQL server ``cluster`` (see the module docstring)."""

    cluster: PostgresCluster

    @property
    def data(self) -> Path:
        return self.cluster.folder / "data"

    def _pg_ctl(self, *args: str) -> None:
        done = subprocess.run(
            [*self.cluster.run_as, str(self.cluster.bindir / "pg_ctl"), "-D", str(self.data),
             "-l", str(self.cluster.folder / "log"), "-w", "-t", "60", *args],
            capture_output=True, text=True, timeout=90,
        )  # fmt: skip
        assert done.returncode == 0, done.stderr or done.stdout

    async def restart(self, mode: str) -> None:
        """``pg_ctl restart -m mode`` (``fast``: clean; ``immediate``: crash recovery)."""
        await asyncio.to_thread(self._pg_ctl, "restart", "-m", mode)

    async def terminate(self, *, listen_only: bool = False) -> int:
        """``pg_terminate_backend`` of every client backend but this one (only those whose
        last statement was ``LISTEN`` with ``listen_only``); how many."""
        sql = (
            "SELECT count(pg_terminate_backend(pid)) AS n FROM pg_stat_activity"
            " WHERE backend_type = 'client backend' AND pid <> pg_backend_pid()"
            " AND datname LIKE 'genbot_%%'"
        )
        if listen_only:
            sql += " AND query ILIKE 'LISTEN %%'"
        rows = await asyncio.to_thread(query, self.cluster.url(), sql)
        return int(rows[0]["n"])

    def server_pids(self) -> list[int]:
        """The postmaster and every process it started."""
        postmaster = int((self.data / "postmaster.pid").read_text().split()[0])
        pids = [postmaster]
        for entry in Path("/proc").iterdir():
            if not entry.name.isdigit():
                continue
            with contextlib.suppress(OSError, IndexError, ValueError):
                stat = (entry / "stat").read_text()
                if int(stat.rsplit(")", 1)[1].split()[1]) == postmaster:
                    pids.append(int(entry.name))
        return pids

    async def stall(self, seconds: float) -> None:
        """Freeze every server process (``SIGSTOP``) for ``seconds``, then let it go on."""
        pids = self.server_pids()
        for pid in pids:
            os.kill(pid, signal.SIGSTOP)
        try:
            await asyncio.sleep(seconds)
        finally:
            for pid in pids:
                with contextlib.suppress(ProcessLookupError):
                    os.kill(pid, signal.SIGCONT)


@dataclass
class Fleet:
    """The genbot processes of a scenario and the browser session they share."""

    env: dict[str, str]
    workdir: Path
    processes: list[GenbotProcess] = field(default_factory=list)
    stopped: list[GenbotProcess] = field(default_factory=list)
    """Processes the scenario stopped itself (killed or terminated)."""
    cookie: str = ""
    _names: int = 0

    async def add(self) -> GenbotProcess:
        """Start one more process and wait until its playground answers."""
        process = GenbotProcess(
            self.env,
            self.workdir,
            f"node{self._names}",
            startup_timeout=PROCESS_TIMEOUT,
            stop_timeout=PROCESS_TIMEOUT,
        )
        self._names += 1
        await process.start()
        self.processes.append(process)
        if not self.cookie:
            self.cookie = await load_page(process.url)
        return process

    def live(self) -> list[GenbotProcess]:
        return [p for p in self.processes if p not in self.stopped]

    async def kill(self, process: GenbotProcess) -> None:
        self.stopped.append(process)
        await process.kill()

    async def terminate(self, process: GenbotProcess, *, still_sent: float = 0.0) -> None:
        """SIGTERM ``process``; commands still go to it for ``still_sent`` seconds (a load
        balancer notices a stopping process at its next check)."""
        stopping = asyncio.create_task(process.terminate())
        await asyncio.sleep(still_sent)
        self.stopped.append(process)
        await stopping

    async def close(self) -> None:
        for process in self.processes:
            await process.kill()

    def outages(self) -> list[float]:
        """Every outage the processes logged the end of, in seconds."""
        return [
            float(found)
            for process in self.processes
            for found in BACK_AFTER.findall(
                "\n".join(path.read_text(errors="replace") for path in process.output_files)
            )
        ]

    def unexpected_exits(self) -> list[str]:
        """Processes that ended without the scenario stopping them."""
        return [
            f"{p.name} exited with {p.process.returncode}:\n{p.output()}"
            for p in self.live()
            if p.process is not None and p.process.returncode is not None
        ]


@dataclass
class Sent:
    """One command sent to a process, and what it answered."""

    number: int
    process: str
    status: int | None
    body: Any
    at: float

    @property
    def accepted(self) -> bool:
        return self.status == 202

    @property
    def prompt(self) -> str:
        return PROMPT.format(number=self.number)


async def send_command(url: str, cookie: str, number: int, process: str) -> Sent:
    """POST ``/imagine`` number ``number`` to the playground at ``url``."""
    headers = {"Cookie": f"{SESSION_COOKIE}={cookie}"}
    channel = CHANNELS[number % len(CHANNELS)]
    body = {"text": "/imagine " + PROMPT.format(number=number), "channel": channel}
    at = time.monotonic()
    try:
        async with (
            aiohttp.ClientSession(timeout=COMMAND_TIMEOUT, headers=headers) as session,
            session.post(f"{url}/api/command", json=body) as response,
        ):
            try:
                answer: Any = await response.json()
            except (aiohttp.ContentTypeError, ValueError):
                answer = {"not json": await response.text()}
            return Sent(number, process, response.status, answer, at)
    except (aiohttp.ClientError, TimeoutError, ConnectionError) as error:
        return Sent(number, process, None, repr(error), at)


Fault = Callable[["Scenario"], Awaitable[object]]


@dataclass
class Scenario:
    """A running scenario: the server, the fleet and what was sent."""

    server: ServerFaults
    fleet: Fleet
    url: str
    sim: RunningSimulator
    sent: list[Sent] = field(default_factory=list)


@dataclass
class FaultOutcome:
    """What a scenario left (see the module docstring)."""

    sent: list[Sent]
    jobs: list[dict[str, Any]]
    answers: dict[str, list[dict[str, Any]]]
    """Per accepted command's message id: genbot's messages replying to it."""
    creations: Counter[str]
    """Creation requests the simulator received, per prompt."""
    unsettled: list[dict[str, Any]]
    stale: list[str]
    """Messages a live process shows otherwise than saved (an older copy over a newer one)."""
    exits: list[str]
    settle_seconds: float
    """From the end of the faults until every job was settled."""
    outages: list[float] = field(default_factory=list)
    """How long each process found the database out of reach ("the database is back after")."""

    def problems(self) -> list[str]:
        """Every broken promise, one line each (empty when all held)."""
        found: list[str] = [*self.exits, *self.stale]
        for sent in self.sent:
            if sent.status not in (202, None) and not _clear_refusal(sent):
                found.append(f"command {sent.number}: {sent.status} {sent.body!r}")
        per_prompt = Counter(str(job["prompt"]) for job in self.jobs)
        for sent in self.sent:
            if per_prompt[sent.prompt] > 1:
                found.append(f"command {sent.number}: {per_prompt[sent.prompt]} jobs")
            if self.creations[sent.prompt] > 1:
                found.append(f"command {sent.number}: created {self.creations[sent.prompt]} times")
        for sent in (sent for sent in self.sent if sent.accepted):
            replies = self.answers.get(str(sent.body["event_id"]), [])
            if len(replies) != 1:
                texts = [(r["id"], r["text"][:60]) for r in replies]
                found.append(f"command {sent.number}: {len(replies)} answers {texts}")
            elif replies[0]["text"].startswith(IN_PROGRESS):
                found.append(f"command {sent.number}: its answer stayed {replies[0]['text']!r}")
        found += [
            f"job {job['id']} ({job['prompt'][:30]}) still {job['status']}"
            for job in self.unsettled
        ]
        return found

    def summary(self) -> str:
        statuses = Counter(str(job["status"]) for job in self.jobs)
        answered = Counter(sent.status for sent in self.sent)
        longest = f", longest outage seen {max(self.outages):.0f} s" if self.outages else ""
        return (
            f"sent {len(self.sent)} ({dict(answered)}), jobs {dict(statuses)}, "
            f"settled {self.settle_seconds:.1f} s after the faults{longest}"
        )


def _clear_refusal(sent: Sent) -> bool:
    return (
        sent.status == 503
        and isinstance(sent.body, dict)
        and DATABASE_UNREACHABLE in str(sent.body.get("error", ""))
    )


async def _send_steadily(scenario: Scenario, count: int, rate: float) -> None:
    """Send ``count`` commands at ``rate`` per second through the live processes in turn."""
    started = time.monotonic()
    pending: set[asyncio.Task[Sent]] = set()
    for number in range(count):
        await asyncio.sleep(max(started + number / rate - time.monotonic(), 0.0))
        live = [p for p in scenario.fleet.live() if p.port]
        process = live[number % len(live)]
        task = asyncio.create_task(
            send_command(process.url, scenario.fleet.cookie, number, process.name)
        )
        pending.add(task)
        task.add_done_callback(lambda done: scenario.sent.append(done.result()))
        task.add_done_callback(pending.discard)
    await asyncio.gather(*pending)


async def _apply_faults(scenario: Scenario, faults: Sequence[tuple[float, Fault]]) -> None:
    started = time.monotonic()
    for at, fault in faults:
        await asyncio.sleep(max(started + at - time.monotonic(), 0.0))
        await fault(scenario)


def _answers(url: str) -> dict[str, list[dict[str, Any]]]:
    """genbot's messages answering each command: those replying to it, and its job's (a job
    settled by its owner after the command's handler ended shows its outcome there)."""
    rows = query(url, "SELECT body FROM playground_messages")
    commanded = {
        str(row["id"]): str(row["command_key"]).removeprefix("web:")
        for row in query(url, "SELECT id, command_key FROM jobs WHERE command_key IS NOT NULL")
    }
    replies: dict[str, dict[str, dict[str, Any]]] = {}
    for row in rows:
        message = restored(row["body"], False)
        if message.kind == "user" or message.deleted:
            continue
        job = (message.key or "").split(".", 1)[0]
        for command in {message.reply_to, commanded.get(job)} - {None}:
            replies.setdefault(str(command), {})[message.id] = message.to_json()
    return {command: list(found.values()) for command, found in replies.items()}


async def _stale_views(fleet: Fleet, url: str) -> list[str]:
    """Messages a live process shows differently from the database's latest save."""
    saved = {
        message.id: message.text
        for message in (restored(row["body"], False) for row in query(url, SQL_BODIES))
    }
    stale = []
    headers = {"Cookie": f"{SESSION_COOKIE}={fleet.cookie}"}
    async with aiohttp.ClientSession(timeout=COMMAND_TIMEOUT, headers=headers) as session:
        for process, channel in ((p, c) for p in fleet.live() for c in CHANNELS):
            async with session.get(
                f"{process.url}/api/history", params={"channel": channel}
            ) as response:
                shown = (await response.json())["messages"]
            stale += [
                f"{process.name} shows {m['id']} as {m['text'][:40]!r}, saved as "
                f"{saved[m['id']][:40]!r}"
                for m in shown
                if m["id"] in saved and m["text"] != saved[m["id"]]
            ]
    return stale


def _creations(sim: RunningSimulator) -> Counter[str]:
    return Counter(
        str(request.body.get("prompt", ""))
        for request in sim.state.requests
        if request.path in CREATION_PATHS
        and request.method == "POST"
        and isinstance(request.body, dict)
    )


async def fault_scenario(
    sim: RunningSimulator,
    postgres: PostgresCluster,
    workdir: Path,
    faults: Sequence[tuple[float, Fault]],
    *,
    processes: int = 3,
    commands: int = 60,
    rate: float = 5.0,
    lease_seconds: float = 5.0,
    settle_bound: float = 90.0,
) -> FaultOutcome:
    """Run ``processes`` genbot processes on a new database of ``postgres``, send ``commands``
    at ``rate`` per second while ``faults`` (seconds after the first command, a fault) happen,
    then wait up to ``settle_bound`` seconds for every job and command to settle."""
    url = postgres.create_database()
    env = cluster_env(sim, url, lease_seconds) | {
        "GENBOT_LIMITS__JOB_TIMEOUT_SECONDS": str(JOB_TIMEOUT_SECONDS),
    }
    fleet = Fleet(env, workdir)
    scenario = Scenario(ServerFaults(postgres), fleet, url, sim)
    try:
        await asyncio.gather(*(fleet.add() for _ in range(processes)))
        await asyncio.gather(
            _send_steadily(scenario, commands, rate), _apply_faults(scenario, faults)
        )
        faults_over = time.monotonic()
        unsettled = await _settle(scenario, settle_bound)
        settle_seconds = time.monotonic() - faults_over
        await asyncio.sleep(VIEW_SETTLE_SECONDS)
        return FaultOutcome(
            sorted(scenario.sent, key=lambda sent: sent.number),
            query(url, "SELECT id, status, prompt, owner, error FROM jobs"),
            _answers(url),
            _creations(sim),
            unsettled,
            await _stale_views(fleet, url),
            fleet.unexpected_exits(),
            settle_seconds,
            fleet.outages(),
        )
    finally:
        await fleet.close()


async def _settle(scenario: Scenario, bound: float) -> list[dict[str, Any]]:
    """Wait (at most ``bound`` s) until every job is settled and no command is pending; the
    jobs still unsettled then."""
    deadline = time.monotonic() + bound
    unsettled: list[dict[str, Any]] = []
    while time.monotonic() < deadline:
        with contextlib.suppress(Exception):
            jobs = query(scenario.url, "SELECT id, status, prompt FROM jobs")
            unsettled = [job for job in jobs if job["status"] not in SETTLED]
            pending = query(
                scenario.url, "SELECT count(*) AS n FROM playground_messages WHERE pending"
            )
            if not unsettled and pending[0]["n"] == 0:
                return []
        await asyncio.sleep(0.5)
    return unsettled


# The faults ---------------------------------------------------------------------------------


def restart(mode: str) -> Fault:
    async def fault(scenario: Scenario) -> None:
        await scenario.server.restart(mode)

    return fault


def terminate_backends(*, listen_only: bool = False) -> Fault:
    async def fault(scenario: Scenario) -> None:
        await scenario.server.terminate(listen_only=listen_only)

    return fault


def stall(seconds: float) -> Fault:
    async def fault(scenario: Scenario) -> None:
        await scenario.server.stall(seconds)

    return fault


async def kill_one(scenario: Scenario) -> None:
    """``kill -9`` the oldest live process."""
    await scenario.fleet.kill(scenario.fleet.live()[0])


async def join_one(scenario: Scenario) -> None:
    """Stop the oldest live process (SIGTERM; commands still reach it for a second) and start
    a fresh one."""
    await scenario.fleet.terminate(scenario.fleet.live()[0], still_sent=STILL_SENT_SECONDS)
    await scenario.fleet.add()
