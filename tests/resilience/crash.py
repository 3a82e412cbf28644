"""The crash scenario: ``genbot run`` (web playground) killed with ``kill -9`` at seeded random
moments while image jobs are in flight, restarted on the same database each time, then left to
finish. Used by the fast test (``test_crash.py``) and the full benchmark (``bench/resilience.py``).

How "posted exactly once" is counted: for every process the browser subscribes to the event
stream as soon as the playground answers and then reads the history (:class:`Playground`), so it
sees every message that process showed from its start until it died, and the history earlier
processes left in the playground's file. Result messages (an image with buttons whose custom ids
carry the job id) are collected by message id over all processes and counted per job.

Kills cycle through three moments: a few milliseconds after a batch of commands (jobs still
being created), a random time after a batch of commands (jobs in flight at the provider), and
right after the first result of the batch (deliveries under way). Only the jobs of a batch
killed "creating" may end without a result: refused as never sent, or — when the create call may
have reached the provider and no webhook adopted the job after the restart — reported as never
confirmed once the job timeout passes. The processes that are killed never time a job out; the
last one does, ``FINAL_JOB_GRACE_SECONDS`` after it starts (its job timeout is the scenario's
age at its start plus that grace): a job in flight at the provider is posted by then however
long the restarts took on a loaded machine (a fixed 15 s timeout failed such jobs as "did not
finish" under load), and a job nobody can confirm is given up. A command the playground
accepted (``202``) is in its history file before that answer, so one whose job the killed
process had not stored yet is handled by the next process: every accepted command has a job
(:attr:`CrashReport.unrecorded` must stay empty).
"""

from __future__ import annotations

import asyncio
import functools
import random
import time
from collections import Counter
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from genbot.demo import free_port
from simulator.server import RunningSimulator, serve
from tests.resilience.process import GenbotProcess, Message, Playground, job_of, read_database
from tests.resilience.support import API_KEY, sim_config

RESTARTED_BEFORE_SUBMIT = "genbot restarted before this job was submitted"
SETTLED = frozenset({"posted", "failed_posted", "create_failed"})
KILL_STYLES = ("creating", "in flight", "delivering")
RESTARTS_JOB_TIMEOUT_SECONDS = 600
"""The job timeout of the processes that are killed: longer than any scenario, so none is timed
out while the processes restart."""
FINAL_JOB_GRACE_SECONDS = 30
"""How long after the last process starts the jobs a kill left unconfirmed (sent or not) are
given up; a job the provider finished is posted within a few seconds of that start."""
WEBHOOK_RETRIES = 8
"""The simulator retries webhooks for about 250 × its time scale seconds: across a restart."""


def genbot_env(sim: RunningSimulator, db_path: Path, webhook_port: int) -> dict[str, str]:
    """``genbot run`` settings: the web playground only, the simulator as provider, webhooks
    on a fixed loopback port (the same across restarts), fast backstop polling."""
    return {
        "GENBOT_WEB__ENABLED": "true",
        "GENBOT_API__BASE_URL": sim.base_url,
        "GENBOT_API__KEY": API_KEY,
        "GENBOT_API__READ_TIMEOUT": "10",
        "GENBOT_STORAGE__PATH": str(db_path),
        "GENBOT_WEBHOOK__PUBLIC_URL": f"http://127.0.0.1:{webhook_port}",
        "GENBOT_WEBHOOK__PORT": str(webhook_port),
        "GENBOT_WEBHOOK__ALLOW_INSECURE_LOOPBACK": "true",
        "GENBOT_LIMITS__MAX_CONCURRENT_JOBS_PER_USER": "1000",
        "GENBOT_LIMITS__DAILY_CREDIT_BUDGET_PER_USER": "1000000",
        "GENBOT_LIMITS__POLL_INTERVAL_MIN": "0.05",
        "GENBOT_LIMITS__POLL_INTERVAL_MAX": "0.5",
        "GENBOT_LIMITS__JOB_TIMEOUT_SECONDS": str(RESTARTS_JOB_TIMEOUT_SECONDS),
    }


def is_result(message: Message) -> bool:
    return bool(message["kind"] == "bot" and message["images"] and message["buttons"])


class Crashes:
    """Successive genbot processes on one database, and what each one's playground showed."""

    def __init__(self, sim: RunningSimulator, workdir: Path) -> None:
        self.sim = sim
        self.workdir = workdir
        self.db_path = workdir / "genbot.db"
        self.env = genbot_env(sim, self.db_path, free_port())
        self.processes: list[GenbotProcess] = []
        self.shown: list[dict[str, Message]] = []
        self.at_kills: list[dict[str, str]] = []
        self.session_cookie = ""

    @asynccontextmanager
    async def run(self) -> AsyncIterator[tuple[GenbotProcess, Playground]]:
        """A new process on the database and a browser on it; the process is killed with
        ``kill -9`` on exit unless it already stopped. A restart that found the webhook port
        of the runs before taken fails (with what it wrote): the simulator retries their
        webhooks to that port, and a port still held after a kill is itself a failure."""
        process = GenbotProcess(self.env, self.workdir, f"run{len(self.processes) + 1}")
        self.processes.append(process)
        try:
            await process.start()
            before, now = self.env["GENBOT_WEBHOOK__PORT"], process.env["GENBOT_WEBHOOK__PORT"]
            if len(self.processes) > 1 and now != before:
                raise AssertionError(
                    f"{process.name} found webhook port {before} of the runs before taken and "
                    f"moved to {now}:\n{process.output()}"
                )
            self.env = dict(process.env)
            async with Playground(process.url, session_cookie=self.session_cookie) as browser:
                self.session_cookie = browser.session_cookie
                try:
                    yield process, browser
                finally:
                    alive = process.process is not None and process.process.returncode is None
                    await process.kill()
                    await browser.drain()
                    self.shown.append(dict(browser.messages))
                    if alive:
                        self.at_kills.append(
                            {str(job["id"]): str(job["status"]) for job in self.jobs()}
                        )
        finally:
            await process.kill()

    def result_posts(self) -> Counter[str]:
        """Result messages shown per job, over every process so far."""
        return Counter(self.result_messages().values())

    def result_messages(self) -> dict[str, str]:
        """Every result message shown: message id → job id."""
        return {
            message_id: job_of(message)
            for shown in self.shown
            for message_id, message in shown.items()
            if is_result(message)
        }

    def jobs(self) -> list[dict[str, Any]]:
        return [dict(row) for row in read_database(self.db_path, "SELECT * FROM jobs")]

    def links(self, kind: str) -> Counter[str]:
        """Message links of ``kind`` (``result``, or ``other`` for failure reports) per job."""
        query = "SELECT job_id FROM job_messages WHERE kind = ?"
        return Counter(str(row["job_id"]) for row in read_database(self.db_path, query, (kind,)))

    def output(self) -> list[str]:
        """Every line the processes wrote (stdout and stderr)."""
        return [
            line
            for process in self.processes
            for path in process.output_files
            for line in path.read_text(errors="replace").splitlines()
        ]


PROMPT = "crash test {number} a lighthouse at dusk"


async def submit(browser: Playground, count: int, first: int) -> None:
    for number in range(first, first + count):
        await browser.command("/imagine " + PROMPT.format(number=number))


def first_result_of(browser: Playground, prompts: list[str]) -> bool:
    """Whether the browser shows the result of one of the jobs with ``prompts``."""
    return any(
        any(f"{prompt}" in message["text"] for prompt in prompts)
        for message in browser.results().values()
    )


def prompt_number(job: dict[str, Any]) -> int:
    return int(str(job["prompt"]).split()[2])


async def wait_settled(crashes: Crashes, timeout: float) -> list[dict[str, Any]]:
    async with asyncio.timeout(timeout):
        while True:
            jobs = crashes.jobs()
            if jobs and all(job["status"] in SETTLED for job in jobs):
                return jobs
            await asyncio.sleep(0.1)


@dataclass
class CrashReport:
    """What a crash scenario did and what it left."""

    jobs: list[dict[str, Any]]
    submitted: int
    posts: Counter[str]
    links: Counter[str]
    reports: Counter[str]
    result_messages: dict[str, str]
    final_view: dict[str, Message]
    creations: Counter[str]
    at_kills: list[dict[str, str]]
    output: list[str]
    clean_exit: int
    seconds: float
    problems: list[str] = field(default_factory=list)

    @property
    def posted(self) -> list[dict[str, Any]]:
        return [job for job in self.jobs if job["status"] == "posted"]

    def ended_unsent(self, job: dict[str, Any]) -> bool:
        """Whether ``job``, not posted, was being created (or unconfirmed) when a process was
        killed and ended the way such a job must: refused as never sent, or reported once as
        never confirmed by the provider — and never shown as a result."""
        job_id = str(job["id"])
        creating = any(at.get(job_id) in ("creating", "unknown") for at in self.at_kills)
        if not creating or self.posts[job_id]:
            return False
        if job["status"] == "create_failed":
            return job["provider_id"] is None and RESTARTED_BEFORE_SUBMIT in str(job["error"])
        return job["status"] == "failed_posted" and self.reports[job_id] == 1

    def restarted(self, job: dict[str, Any]) -> bool:
        """Whether ``job`` was dropped as never sent (its command was handled again, or its
        user told to run it again)."""
        return bool(job["status"] == "create_failed")

    @property
    def unconfirmed(self) -> list[dict[str, Any]]:
        """Jobs reported as never confirmed by the provider (killed while creating them)."""
        return [job for job in self.jobs if job["status"] == "failed_posted"]

    def statuses_at_kills(self) -> list[Counter[str]]:
        """How many jobs were in each status when each process was killed."""
        return [Counter(at.values()) for at in self.at_kills]

    @property
    def resumed(self) -> int:
        """Commands a process accepted and the next one handled."""
        return sum("accepted before a restart" in line for line in self.output)

    @property
    def told_to_retry(self) -> set[int]:
        """Commands whose every job was dropped unsent: the user was told to run them again."""
        live = {prompt_number(job) for job in self.jobs if not self.restarted(job)}
        return {prompt_number(job) for job in self.jobs} - live

    @property
    def unrecorded(self) -> set[int]:
        """Commands the playground accepted but no process stored a job for."""
        return set(range(self.submitted)) - {prompt_number(job) for job in self.jobs}

    def check(self) -> list[str]:
        """Every broken promise, as sentences (empty when every result was posted once)."""
        problems: list[str] = []
        if self.unrecorded:
            problems.append(f"accepted commands without a job: {sorted(self.unrecorded)}")
        handled = Counter(prompt_number(job) for job in self.jobs if not self.restarted(job))
        twice = sorted(number for number, count in handled.items() if count > 1)
        if twice:
            problems.append(f"commands that started more than one live job: {twice}")
        for job in self.jobs:
            job_id = str(job["id"])
            shown = self.posts[job_id]
            if job["status"] == "posted":
                if shown != 1:
                    problems.append(f"job {job_id}: result shown {shown} times")
                if self.links[job_id] != 1:
                    problems.append(f"job {job_id}: {self.links[job_id]} result links")
                if self.result_messages.get(str(job["result_message_id"])) != job_id:
                    problems.append(f"job {job_id}: the recorded result message was never shown")
            elif not self.ended_unsent(job):
                problems.append(f"job {job_id}: ended {job['status']} ({job['error']})")
        waiting = [m["id"] for m in self.final_view.values() if m["text"].startswith("⏳")]
        if waiting:
            problems.append(f"progress messages still waiting at the end: {waiting}")
        created_twice = [job_id for job_id, count in self.creations.items() if count > 1]
        if created_twice:
            problems.append(f"created twice at the provider: {created_twice}")
        missing = {str(job["id"]) for job in self.posted} - set(self.creations)
        if missing:
            problems.append(f"posted without a creation request: {sorted(missing)}")
        if self.clean_exit != 0:
            problems.append(f"the last process exited with {self.clean_exit} on SIGTERM")
        return problems


async def crash_scenario(
    workdir: Path,
    *,
    jobs: int,
    kills: int,
    seed: int,
    time_scale: float,
    finish_timeout: float = FINAL_JOB_GRACE_SECONDS + 60.0,
) -> CrashReport:
    """Submit ``jobs`` image jobs over ``kills`` processes killed with ``kill -9``, then let a
    last process finish them; see the module docstring."""
    rng = random.Random(seed)
    started = time.perf_counter()
    batches = [jobs // kills + (1 if index < jobs % kills else 0) for index in range(kills)]
    config = sim_config(time_scale=time_scale, webhook_retries=WEBHOOK_RETRIES)
    async with serve(config) as sim:
        crashes = Crashes(sim, workdir)
        first = 0
        for index, batch in enumerate(batches):
            style = KILL_STYLES[index % len(KILL_STYLES)]
            async with crashes.run() as (_, browser):
                await submit(browser, batch, first)
                first += batch
                if style == "in flight":
                    await asyncio.sleep(rng.uniform(0.3, 1.5))
                elif style == "delivering":
                    batch_prompts = [PROMPT.format(number=n) for n in range(first - batch, first)]
                    await browser.until(
                        functools.partial(first_result_of, browser, batch_prompts),
                        30.0,
                        "a first result of the batch",
                    )
                    await asyncio.sleep(rng.uniform(0.0, 0.1))
                else:
                    await asyncio.sleep(rng.uniform(0.0, 0.03))

        age = time.perf_counter() - started
        timeout = age + FINAL_JOB_GRACE_SECONDS
        crashes.env["GENBOT_LIMITS__JOB_TIMEOUT_SECONDS"] = f"{timeout:.0f}"
        async with crashes.run() as (process, browser):
            final = await wait_settled(crashes, finish_timeout)
            earlier = crashes.result_posts()
            unseen = {str(job["id"]) for job in final if job["status"] == "posted"} - set(earlier)
            await browser.until(
                lambda: unseen <= {job_of(m) for m in browser.results().values()},
                15.0,
                "the last results on the page",
            )
            clean_exit = await process.terminate()

        creations = Counter(
            str(request.body["webhook_endpoint"]).rsplit("/", 1)[1]
            for request in sim.state.requests_to("/gen/v2/imagine")
            if isinstance(request.body, dict)
        )
        return CrashReport(
            jobs=final,
            submitted=first,
            posts=crashes.result_posts(),
            links=crashes.links("result"),
            reports=crashes.links("other"),
            result_messages=crashes.result_messages(),
            final_view=crashes.shown[-1],
            creations=creations,
            at_kills=crashes.at_kills,
            output=crashes.output(),
            clean_exit=clean_exit,
            seconds=time.perf_counter() - started,
        )
