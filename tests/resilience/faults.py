"""The fault scenario: one user's requests to a genbot whose provider (the simulator) fails one
request in ten — 500s, connection resets before or after the task was created, slow answers,
cut chat streams. Used by the fast test (``test_faults.py``) and the full benchmark
(``bench/resilience.py``).

Each request's outcome is checked as it is collected: a job request ends in its result, its
reported failure, or its refusal at creation (one clear message each); a chat request in the
model's answer, an interrupted answer marked as such, or one error. A job whose creation the
provider may have received without confirming it (a 5xx or a reset after sending) is adopted by
its webhook when the provider did create it, and otherwise reported as unconfirmed after the job
timeout. :func:`check_ledger` then proves no job was created or charged twice: every task the
provider created belongs to exactly one genbot job, or is an orphan of a lost answer that
genbot never adopted (a diffusion job, which has no webhook).

The fault dice are seeded and drawn per request in arrival order. Webhooks are on and the
tracker's backstop polling is pushed beyond the scenario's length, and the multi_fetch reads by
which genbot confirms each notification draw no dice (``fault_reads`` off: they come whenever a
notification does), so the only requests that draw are the user's own (creations, chat) in the
order the scenario makes them: the faults land on the same requests every run.
"""

from __future__ import annotations

import asyncio
import logging
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

from bot.features.chat.renderer import INTERRUPTED_NOTE
from bot.kernel import ButtonPress, Command, Event, InboundEvent, Place, User
from simulator.faults import CREATION_PATHS
from simulator.server import RunningSimulator
from storage import Job, JobMessage
from tests.resilience.support import GENERIC_FAILURE, PLACE, Genbot, genbot_stack, sim_config
from tests.storage.helpers import messages_for_job

FAULT_RATE = 0.1
USER = User("alice", "Alice")
JOB_TIMEOUT_SECONDS = 4.0
"""A job whose creation the provider never confirmed (a 5xx or a reset after sending) waits for
a webhook to adopt it, and fails as unconfirmed after this."""
WEBHOOK_ONLY = {
    "poll_interval_min": 0.02,
    "poll_interval_max": 2.0,
    "job_timeout_seconds": JOB_TIMEOUT_SECONDS,
}
"""Webhooks carry every result within a second, so the backstop poll (after two quiet seconds)
never runs for a job that was created: only the user's own requests and the reads confirming
notifications reach the provider."""
PRESSES = ("upscale1", "variation1", "reroll", "upscale2", "variation2", "upscale3", "variation3")
SETTLE_TIMEOUT = 30.0 + JOB_TIMEOUT_SECONDS

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class FaultSize:
    """How many requests of each kind; button presses on posted grids make up the rest."""

    imagines: int = 10
    diffusions: int = 4
    chats: int = 6
    requests: int = 30


@dataclass
class Request:
    """One thing the user did, and what genbot did about it."""

    label: str
    event: InboundEvent
    jobs: list[str] = field(default_factory=list)


@dataclass
class Session:
    """The user's requests to one genbot."""

    bot: Genbot
    requests: list[Request] = field(default_factory=list)

    async def send(self, label: str, event: InboundEvent) -> Request:
        before = {job.id for job in await self.bot.all_jobs()}
        await self.bot.core.handle(event)
        created = [job.id for job in await self.bot.all_jobs() if job.id not in before]
        request = Request(label, event, created)
        self.requests.append(request)
        return request

    def ephemerals(self, event: Event) -> list[str]:
        return [e.text for e in self.bot.platform.ephemerals if e.origin is event]


def command(name: str, text: str, place: Place = PLACE) -> Command:
    return Command(user=USER, place=place, name=name, text=text)


def chat_place(number: int) -> Place:
    return Place("fake", "w1", f"dm-{number}", is_dm=True)


async def job_outcome(session: Session, request: Request) -> str:
    """How a job request ended: its result, its reported failure, or its refusal."""
    bot = session.bot
    answers = session.ephemerals(request.event)
    if not request.jobs:
        assert len(answers) == 1, f"{request.label}: no job and {answers}"
        return f"refused: {answers[0]}"
    assert len(request.jobs) == 1 and answers == [], (request.label, request.jobs, answers)
    [job] = await bot.settle(request.jobs, SETTLE_TIMEOUT)
    links = await messages_for_job(bot.store, job.id)
    kinds = Counter(link.kind for link in links)
    if job.status in ("posted", "failed_posted"):
        assert job.result_message_id == job.progress_message_id, "one message per job"
    if job.status == "posted":
        assert kinds == Counter({"result": 1}), (request.label, links)
        result = bot.platform.messages[job.result_message_id or ""]
        assert result.message.images, f"{request.label}: result without its image"
        return "result"
    if job.status == "failed_posted":
        assert kinds == Counter({"other": 1}), (request.label, links)
        report = bot.platform.messages[job.result_message_id or ""]
        assert job.error and job.error in report.text, (request.label, report.text)
        return f"failed: {job.error}"
    assert job.status == "create_failed" and job.error, (request.label, job)
    assert kinds == Counter({"progress": 1}), (request.label, links)
    progress = bot.platform.messages[job.progress_message_id or ""]
    assert progress.text.endswith(f"could not start: {job.error}"), (request.label, progress.text)
    return f"not started: {job.error}"


def chat_outcome(session: Session, request: Request, said: str) -> str:
    """How a chat request ended: the model's complete answer, or one clear error."""
    answers = session.ephemerals(request.event)
    place = request.event.place
    replies = [m for m in session.bot.platform.in_place(place) if m.message.from_model]
    if answers:
        assert len(answers) == 1 and replies == [], (request.label, answers, replies)
        return f"error: {answers[0]}"
    assert len(replies) == 1, (request.label, [r.text for r in replies])
    text = replies[0].text
    if text == said:
        return "answer"
    assert text.endswith(INTERRUPTED_NOTE), (request.label, text)
    return "interrupted"


def webhook_job_id(body: object) -> str | None:
    endpoint = body.get("webhook_endpoint") if isinstance(body, dict) else None
    return str(endpoint).rsplit("/", 1)[1] if endpoint else None


def creation_owner(body: object, diffusion_jobs: dict[str, str]) -> str | None:
    """The genbot job a creation request was made for (its webhook address, else its prompt)."""
    owner = webhook_job_id(body)
    if owner is None and isinstance(body, dict):
        owner = diffusion_jobs.get(str(body.get("prompt")))
    return owner


async def everything_ended(sim: RunningSimulator) -> None:
    """Wait until every task the simulator created (orphans included) finished or failed."""
    for _ in range(300):
        sim.state.settle()
        now = sim.state.now()
        if all(task.status_at(now) in ("finished", "failed") for task in sim.state.tasks.values()):
            return
        await asyncio.sleep(0.02)
    raise TimeoutError("simulated tasks never ended")


def check_ledger(sim: RunningSimulator, jobs: list[Job], genbot_credits: int) -> dict[str, int]:
    """No job created or charged twice; every simulator charge is a genbot job's or an orphan
    of a creation whose answer the fault swallowed. Returns counts for the failure message."""
    by_provider = {job.provider_id: job for job in jobs if job.provider_id}
    by_id = {job.id: job for job in jobs}
    diffusion_jobs = {job.prompt: job.id for job in jobs if job.family == "diffusion"}
    creations = [r for r in sim.state.requests if r.path in CREATION_PATHS and r.method == "POST"]
    owners = Counter(creation_owner(r.body, diffusion_jobs) for r in creations)
    assert None not in owners, "a creation request genbot cannot account for"
    assert max(owners.values()) == 1, f"created twice: {owners.most_common(3)}"
    created = Counter(r.created_id for r in creations if r.created_id)
    assert all(count == 1 for count in created.values())
    orphans: set[str] = set()
    for request in creations:
        if request.created_id is None or request.created_id in by_provider:
            continue
        owner = by_id[creation_owner(request.body, diffusion_jobs) or ""]
        assert request.fault_phase == "after_create", (request.path, request.fault)
        assert owner.provider_id is None and owner.status != "posted", owner
        orphans.add(request.created_id)
    assert set(by_provider) <= set(created), "a job whose creation the simulator never saw"

    def price(created_id: str) -> int:
        task = sim.state.tasks.get(created_id)
        if task is not None:
            return task.price if task.status_at(sim.state.now()) == "finished" else 0
        return sim.state.config.rules.price(sim.state.diffusion_jobs[int(created_id)].kind)

    charged = sim.state.accounts[sim.state.config.api_key].charged
    known = sum(price(provider_id) for provider_id in by_provider)
    lost = sum(price(created_id) for created_id in orphans)
    assert genbot_credits == known, (genbot_credits, known)
    assert charged == known + lost, (charged, known, lost)
    return {"creations": len(creations), "orphans": len(orphans), "charged": charged}


def fault_coverage(sim: RunningSimulator) -> Counter[str]:
    kinds: Counter[str] = Counter()
    for request in sim.state.requests:
        if request.fault is None:
            continue
        where = "create" if request.path in CREATION_PATHS else request.path.rsplit("/", 1)[-1]
        kinds[f"{request.fault}:{request.fault_phase or where}"] += 1
    return kinds


@dataclass
class FaultReport:
    """Every request's outcome, the faults that struck, the ledger's counts and the jobs."""

    outcomes: dict[str, str]
    coverage: Counter[str]
    ledger: dict[str, int]
    jobs: list[Job]

    def summary(self) -> str:
        kinds = Counter(outcome.split(":")[0] for outcome in self.outcomes.values())
        return f"outcomes {dict(kinds)}, faults {dict(self.coverage)}, ledger {self.ledger}"


async def collect(session: Session, size: FaultSize) -> dict[str, str]:
    """Send the scenario's requests and check each one's outcome (see the module docstring)."""
    bot = session.bot
    outcomes: dict[str, str] = {}
    prompts = [f"a lighthouse number {n} at dusk" for n in range(size.imagines - 1)]
    jobs_first: list[Request] = []
    for prompt in [*prompts, "a fail case"]:
        jobs_first.append(await session.send(f"imagine {prompt}", command("imagine", prompt)))
    for number in range(size.diffusions):
        event = command("diffusion.txt2img", f"a red fox number {number} --width 512")
        jobs_first.append(await session.send(f"txt2img {number}", event))
    for number in range(size.chats):
        said = f"fault chat {number} says hello"
        event = command("chat", f"echo: {said}", chat_place(number))
        request = await session.send(f"chat {number}", event)
        outcomes[request.label] = chat_outcome(session, request, said)
    for request in jobs_first:
        outcomes[request.label] = await job_outcome(session, request)

    grids = [
        job
        for request in jobs_first[: size.imagines]
        for job in await bot.settle(request.jobs)
        if job.status == "posted"
    ]
    presses = [(grid, action) for action in PRESSES for grid in grids]
    pressed: list[Request] = []
    for grid, action in presses[: size.requests - len(session.requests)]:
        press = ButtonPress(
            user=USER,
            place=PLACE,
            message_id=grid.result_message_id or "",
            action=action,
            ref=grid.id,
        )
        pressed.append(await session.send(f"{action} on {grid.prompt}", press))
    for request in pressed:
        outcomes[request.label] = await job_outcome(session, request)
    assert len(outcomes) == len(session.requests) == size.requests, "not enough grids to press"
    generic = [text for text in outcomes.values() if GENERIC_FAILURE in text.lower()]
    assert generic == [], generic
    return outcomes


async def check_links(bot: Genbot, jobs: list[Job]) -> None:
    """Every message posted for jobs is linked to its job: nothing was posted twice."""
    linked: set[str] = set()
    for job in jobs:
        links: list[JobMessage] = await messages_for_job(bot.store, job.id)
        linked |= {link.message_id for link in links}
    job_posts = {m for m, p in bot.platform.messages.items() if not p.ref.place.is_dm}
    assert job_posts == linked, "a job message posted twice or not linked to its job"


async def fault_scenario(workdir: Path, *, seed: int, size: FaultSize) -> FaultReport:
    """Run the scenario against a fresh simulator and genbot in ``workdir``; raises
    ``AssertionError`` on the first broken promise."""
    config = sim_config(fault_rate=FAULT_RATE, fault_reads=False, seed=seed)
    async with genbot_stack(workdir, config=config, webhooks=True, limits=WEBHOOK_ONLY) as bot:
        outcomes = await collect(Session(bot), size)
        jobs = await bot.all_jobs()
        await check_links(bot, jobs)
        await everything_ended(bot.sim)
        credits = (await bot.store.ledger.usage_for_user("fake", USER.id)).credits
        ledger = check_ledger(bot.sim, jobs, credits)
        return FaultReport(outcomes, fault_coverage(bot.sim), ledger, jobs)
