"""The red team's listener attacks on a real ``genbot run`` child process (playground, webhook
receiver, ops listener and, given a fake Slack, the Slack HTTP listener), measured from
outside: the child's resident memory (``/proc``), what was answered and refused, and the
warning lines it wrote. ``tests/resilience/test_hostile.py`` runs them small;
``bench/hostile.py`` at the red team's sizes.

- :func:`upload_flood`: many browsers upload images at once, far beyond ``[web]
  upload_cache_mb``;
- :func:`webhook_flood`: concurrent wrong-secret webhook POSTs with large bodies;
- :func:`slow_connections`: connections that send half a request head and wait, then one
  normal request to each listener, under a low open-file limit;
- :func:`slack_slow_bodies`: signed-looking Slack requests whose bodies trickle in;
- :func:`event_stream_flood`: one playground user opening event streams by the hundred;
- :func:`chat_flood`: one Slack user sending long ``/chat`` commands all at once;
- :func:`blends_over_budget`: a Slack user over their budget sending ``/blend`` with large
  shared images again and again.
"""

from __future__ import annotations

import asyncio
import contextlib
import io
import re
import resource
import sqlite3
import time
from collections import Counter
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

import aiohttp

from adapters.web.access import SESSION_COOKIE
from simulator.server import RunningSimulator, serve
from tests.genbot.process import CHILD_WAIT
from tests.resilience.hostile_files import noise_png
from tests.resilience.process import HTTP_TIMEOUT, GenbotProcess, load_page
from tests.resilience.support import API_KEY, sim_config

if TYPE_CHECKING:
    from tests.fakes.slack import FakeSlack

MB = 1024 * 1024
WARNING_LINE = re.compile(r"\b(WARNING|ERROR|CRITICAL)\b")
ACCEPT_FAILURE_LINE = re.compile(r"accepting connections refused: out of resources")
ANSWER_TIMEOUT = 9.0
"""Under the shortest header timeout of the listeners (the ops listener's 10 s), so a slow
connection closed by it does not make room for a normal request in time; as long as that allows,
so a loaded machine does not fail the check."""
CONNECT_TIMEOUT = 3.0
SLACK_STARTUP_TIMEOUT = CHILD_WAIT


@dataclass
class Outcome:
    """What one attack did to the child."""

    attempts: int = 0
    answers: Counter[int] = field(default_factory=Counter)
    """HTTP status → how many (0: no answer, the connection was closed)."""
    rss_before_mb: float = 0.0
    rss_after_mb: float = 0.0
    peak_mb: float = 0.0
    warning_lines: int = 0
    accept_failures: int = 0
    """Log lines saying accepting a connection failed for want of open files."""
    seconds: float = 0.0
    checks: dict[str, bool] = field(default_factory=dict)
    """Normal requests made during the attack → whether they were answered."""

    @property
    def growth_mb(self) -> float:
        return self.rss_after_mb - self.rss_before_mb

    @property
    def peak_growth_mb(self) -> float:
        return self.peak_mb - self.rss_before_mb


def memory_mb(pid: int) -> tuple[float, float]:
    """Resident and peak resident memory of process ``pid``, in MiB."""
    fields = dict(
        line.split(":", 1) for line in Path(f"/proc/{pid}/status").read_text().splitlines()
    )
    return int(fields["VmRSS"].split()[0]) / 1024, int(fields["VmHWM"].split()[0]) / 1024


def warning_lines(process: GenbotProcess, pattern: re.Pattern[str] = WARNING_LINE) -> int:
    """Lines at WARNING or above (or matching ``pattern``) the child wrote to standard error."""
    text = process.output_files[1].read_text(errors="replace")
    return sum(bool(pattern.search(line)) for line in text.splitlines())


@contextlib.asynccontextmanager
async def genbot_child(
    workdir: Path,
    env: dict[str, str],
    open_files: int | None = None,
    sim: RunningSimulator | None = None,
) -> AsyncIterator[GenbotProcess]:
    """``genbot run`` with the playground and the webhook receiver on loopback, against
    ``sim`` (else a simulator of its own); ``open_files`` caps its open-file limit (soft and
    hard)."""
    async with contextlib.AsyncExitStack() as stack:
        if sim is None:
            sim = await stack.enter_async_context(serve(sim_config()))
        hook_port, ops_port = _free_port(), _free_port()
        settings = {
            "GENBOT_OPS__ENABLED": "true",
            "GENBOT_OPS__PORT": str(ops_port),
            "GENBOT_WEB__ENABLED": "true",
            "GENBOT_API__BASE_URL": sim.base_url,
            "GENBOT_API__KEY": API_KEY,
            "GENBOT_STORAGE__PATH": str(workdir / "genbot.db"),
            "GENBOT_WEBHOOK__PUBLIC_URL": f"http://127.0.0.1:{hook_port}",
            "GENBOT_WEBHOOK__PORT": str(hook_port),
            "GENBOT_WEBHOOK__ALLOW_INSECURE_LOOPBACK": "true",
            **env,
        }
        process = GenbotProcess(settings, workdir, "hostile", open_files=open_files)
        try:
            await process.start()
            yield process
        finally:
            await process.terminate()


def hosted_bytes(database: Path) -> int:
    """How many bytes of images genbot hosts for the provider in ``database``."""
    with contextlib.closing(sqlite3.connect(database)) as db:
        (total,) = db.execute("SELECT coalesce(sum(size), 0) FROM hosted_media").fetchone()
    return int(total)


def _free_port() -> int:
    from genbot.demo import free_port

    return free_port()


def _pid(process: GenbotProcess) -> int:
    assert process.process is not None
    return process.process.pid


async def upload_flood(
    workdir: Path, *, browsers: int, files: int, file_mb: float, cache_mb: int
) -> Outcome:
    """``browsers`` browsers each load the page, then upload ``files`` images of ``file_mb``
    at once (one request each), against ``[web] upload_cache_mb = cache_mb``."""
    side = int((0.9 * file_mb * MB / 3) ** 0.5)
    image = noise_png(side, side)
    outcome = Outcome(attempts=browsers)
    # the flood's browsers all come from 127.0.0.1: no allowance of new identities
    env = {"GENBOT_WEB__UPLOAD_CACHE_MB": str(cache_mb), "GENBOT_WEB__NEW_SESSIONS_PER_HOUR": "0"}
    async with genbot_child(workdir, env) as process:
        cookies = [await load_page(process.url) for _ in range(browsers)]
        outcome.rss_before_mb, _ = memory_mb(_pid(process))
        started = time.perf_counter()

        async def one(cookie: str) -> int:
            form = aiohttp.FormData()
            for number in range(files):
                form.add_field(
                    "file", io.BytesIO(image), filename=f"{number}.png", content_type="image/png"
                )
            headers = {"Cookie": f"genbot_session={cookie}"}
            async with (
                aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(total=120)) as session,
                session.post(f"{process.url}/api/upload", data=form, headers=headers) as answer,
            ):
                return answer.status

        statuses = await asyncio.gather(*(one(c) for c in cookies), return_exceptions=True)
        outcome.seconds = time.perf_counter() - started
        outcome.answers.update(s if isinstance(s, int) else 0 for s in statuses)
        outcome.rss_after_mb, outcome.peak_mb = memory_mb(_pid(process))
        outcome.checks["page after"] = await _answered(f"{process.url}/static/app.js")
    outcome.warning_lines = warning_lines(process)
    return outcome


async def webhook_flood(workdir: Path, *, requests: int, body_mb: float) -> Outcome:
    """``requests`` concurrent webhook POSTs with a wrong secret and ``body_mb`` of body."""
    body = b"{" + b" " * (int(body_mb * MB) - 2) + b"}"
    outcome = Outcome(attempts=requests)
    async with genbot_child(workdir, {}) as process:
        outcome.rss_before_mb, _ = memory_mb(_pid(process))
        started = time.perf_counter()
        port = process.webhook_port
        statuses = await asyncio.gather(
            *(_raw_post(port, f"/webhooks/tasks/job{n}", body) for n in range(requests))
        )
        outcome.seconds = time.perf_counter() - started
        outcome.answers.update(statuses)
        outcome.rss_after_mb, outcome.peak_mb = memory_mb(_pid(process))
        outcome.checks["receiver after"] = await _webhook_answered(port)
    outcome.warning_lines = warning_lines(process)
    return outcome


async def slow_connections(
    workdir: Path, *, connections: int, open_files: int, slack: FakeSlack | None = None
) -> Outcome:
    """``connections`` connections that send half a request head and wait (to the playground,
    or shared with the Slack HTTP listener when genbot runs on the ``slack`` fake); meanwhile
    one normal request to each listener (playground, webhook receiver, ops, Slack)."""
    _raise_own_open_file_limit(connections + 256)
    outcome = Outcome(attempts=connections)
    slack_port = _free_port()
    env = {} if slack is None else _slack_http(slack, slack_port)
    async with genbot_child(workdir, env, open_files=open_files) as process:
        slack_events = f"http://127.0.0.1:{slack_port}/slack/events"
        if slack is not None:
            await _until_slack_answers(slack, slack_events)
        outcome.rss_before_mb, _ = memory_mb(_pid(process))
        started = time.perf_counter()
        writers: list[asyncio.StreamWriter] = []
        try:
            flooded = [process.port] + ([] if slack is None else [slack_port])
            opened = await asyncio.gather(
                *(_half_request(flooded[n % len(flooded)]) for n in range(connections))
            )
            writers = [writer for writer in opened if writer is not None]
            outcome.checks["playground"] = await _answered(f"{process.url}/static/app.js")
            outcome.checks["webhook receiver"] = await _webhook_answered(process.webhook_port)
            ops = f"http://127.0.0.1:{process.ops_port}/healthz"
            outcome.checks["ops listener"] = await _answered(ops)
            if slack is not None:
                outcome.checks["slack listener"] = await _slack_answered(slack, slack_events)
            outcome.seconds = time.perf_counter() - started
            outcome.rss_after_mb, outcome.peak_mb = memory_mb(_pid(process))
        finally:
            for writer in writers:
                writer.close()
        outcome.answers[0] = len(writers)
    outcome.warning_lines = warning_lines(process)
    outcome.accept_failures = warning_lines(process, ACCEPT_FAILURE_LINE)
    return outcome


def _slack_http(slack: FakeSlack, port: int) -> dict[str, str]:
    """Settings of a genbot on ``slack`` in HTTP mode, listening on ``port``."""
    return {
        "GENBOT_SLACK__BOT_TOKEN": slack.bot_token,
        "GENBOT_SLACK__SIGNING_SECRET": slack.signing_secret,
        "GENBOT_SLACK__API_URL": slack.api_url,
        "GENBOT_SLACK__HTTP_HOST": "127.0.0.1",
        "GENBOT_SLACK__HTTP_PORT": str(port),
    }


async def _slack_answered(slack: FakeSlack, url: str) -> bool:
    """Whether a signed ``url_verification`` request is answered with its challenge."""
    challenge = {"type": "url_verification", "token": "unused", "challenge": "still-here"}
    try:
        async with asyncio.timeout(ANSWER_TIMEOUT):
            delivery = await slack.post_event(url, challenge)
    except (aiohttp.ClientError, TimeoutError, OSError):
        return False
    return delivery.status == 200 and "still-here" in delivery.text


async def _until_slack_answers(slack: FakeSlack, url: str) -> None:
    """Wait (bounded) until the child's Slack listener is up."""
    async with asyncio.timeout(SLACK_STARTUP_TIMEOUT):
        while True:
            if await _slack_answered(slack, url):
                return
            await asyncio.sleep(0.05)


async def _half_request(port: int) -> asyncio.StreamWriter | None:
    """A connection that sent half a request head (None when it could not connect in time)."""
    try:
        async with asyncio.timeout(CONNECT_TIMEOUT):
            _, writer = await asyncio.open_connection("127.0.0.1", port)
    except (OSError, TimeoutError):
        return None
    writer.write(b"GET /static/app.js HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Slow: ")
    return writer


async def _answered(url: str) -> bool:
    try:
        async with (
            asyncio.timeout(ANSWER_TIMEOUT),
            aiohttp.ClientSession(timeout=HTTP_TIMEOUT) as session,
            session.get(url) as response,
        ):
            return response.status == 200
    except (aiohttp.ClientError, TimeoutError, OSError):
        return False


async def _webhook_answered(port: int) -> bool:
    try:
        async with asyncio.timeout(ANSWER_TIMEOUT):
            return await _raw_post(port, "/webhooks/tasks/nosuchjob", b"{}") == 401
    except TimeoutError:
        return False


async def _raw_post(port: int, path: str, body: bytes) -> int:
    """POST ``body`` with a wrong secret; the status answered (0: none)."""
    try:
        reader, writer = await asyncio.open_connection("127.0.0.1", port)
    except OSError:
        return 0
    try:
        writer.write(
            f"POST {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nx-webhook-secret: wrong\r\n"
            f"Content-Type: application/json\r\nContent-Length: {len(body)}\r\n\r\n".encode()
        )
        with contextlib.suppress(OSError):
            writer.write(body)
            await writer.drain()
        head = await reader.readuntil(b"\r\n")
        return int(head.split(b" ", 2)[1])
    except (OSError, asyncio.IncompleteReadError, ValueError, IndexError):
        return 0
    finally:
        writer.close()


def _raise_own_open_file_limit(needed: int) -> None:
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft < needed:
        resource.setrlimit(resource.RLIMIT_NOFILE, (min(hard, max(needed, soft)), hard))


SLOW_BODY_BYTES = 900_000
TRICKLE_SECONDS = 2.0
ATTACKER = "127.0.0.2"
"""The attacker's source address (loopback too): Slack's requests come from elsewhere."""
ATTACK_WAIT = 30.0


async def slack_slow_bodies(workdir: Path, *, connections: int, slack: FakeSlack) -> Outcome:
    """``connections`` POSTs to the Slack HTTP listener from one address, each with a fresh
    timestamp and a signature of the right shape (so the headers pass) declaring a 900 kB body,
    then trickling a byte every 2 s; meanwhile a signed request from Slack's address."""
    _raise_own_open_file_limit(connections + 256)
    outcome = Outcome(attempts=connections)
    slack_port = _free_port()
    async with genbot_child(workdir, _slack_http(slack, slack_port)) as process:
        events = f"http://127.0.0.1:{slack_port}/slack/events"
        await _until_slack_answers(slack, events)
        outcome.rss_before_mb, _ = memory_mb(_pid(process))
        started = time.perf_counter()
        attack = asyncio.gather(*(_trickled_body(slack_port) for _ in range(connections)))
        await asyncio.sleep(TRICKLE_SECONDS)
        outcome.checks["signed request during"] = await _slack_answered(slack, events)
        statuses = await attack
        outcome.seconds = time.perf_counter() - started
        outcome.answers.update(statuses)
        outcome.rss_after_mb, outcome.peak_mb = memory_mb(_pid(process))
        outcome.checks["signed request after"] = await _slack_answered(slack, events)
    outcome.warning_lines = warning_lines(process)
    return outcome


async def _trickled_body(port: int) -> int:
    """One slow-body request; the status answered (0: closed without an answer)."""
    try:
        reader, writer = await asyncio.open_connection("127.0.0.1", port, local_addr=(ATTACKER, 0))
    except OSError:
        return 0
    head = (
        f"POST /slack/events HTTP/1.1\r\nHost: 127.0.0.1\r\n"
        f"X-Slack-Request-Timestamp: {int(time.time())}\r\nX-Slack-Signature: v0={'0' * 64}\r\n"
        f"Content-Type: application/json\r\nContent-Length: {SLOW_BODY_BYTES}\r\n\r\n"
    )
    answer = asyncio.ensure_future(reader.readuntil(b"\r\n"))
    try:
        writer.write(head.encode())
        async with asyncio.timeout(ATTACK_WAIT):
            while not (await asyncio.wait([answer], timeout=TRICKLE_SECONDS))[0]:
                with contextlib.suppress(OSError):
                    writer.write(b" ")
                    await writer.drain()
        return int((await answer).split(b" ", 2)[1])
    except (OSError, TimeoutError, asyncio.IncompleteReadError, ValueError, IndexError):
        return 0
    finally:
        answer.cancel()
        writer.close()


async def event_stream_flood(workdir: Path, *, streams: int) -> Outcome:
    """One playground user (one session) opens ``streams`` event streams at once and keeps
    them; meanwhile another user loads the page and opens theirs."""
    _raise_own_open_file_limit(streams + 256)
    outcome = Outcome(attempts=streams)
    async with genbot_child(workdir, {}) as process:
        cookie = await load_page(process.url)
        outcome.rss_before_mb, _ = memory_mb(_pid(process))
        started = time.perf_counter()
        opened = await asyncio.gather(*(_open_stream(process.port, cookie) for _ in range(streams)))
        outcome.answers.update(status for status, _ in opened)
        outcome.checks["another user's page"] = await _answered(f"{process.url}/")
        status, writer = await _open_stream(process.port, await load_page(process.url))
        outcome.checks["another user's stream"] = status == 200
        outcome.seconds = time.perf_counter() - started
        outcome.rss_after_mb, outcome.peak_mb = memory_mb(_pid(process))
        for _, held in [*opened, (status, writer)]:
            if held is not None:
                held.close()
    outcome.warning_lines = warning_lines(process)
    return outcome


async def _open_stream(port: int, cookie: str) -> tuple[int, asyncio.StreamWriter | None]:
    """An event stream of #general with ``cookie``: the status, and the connection (held)."""
    try:
        async with asyncio.timeout(ANSWER_TIMEOUT):
            reader, writer = await asyncio.open_connection(
                "127.0.0.1", port, local_addr=(ATTACKER, 0)
            )
            writer.write(
                f"GET /api/events?channel=general HTTP/1.1\r\nHost: 127.0.0.1\r\n"
                f"Cookie: {SESSION_COOKIE}={cookie}\r\n\r\n".encode()
            )
            head = await reader.readuntil(b"\r\n")
    except (OSError, TimeoutError, asyncio.IncompleteReadError):
        return 0, None
    return int(head.split(b" ", 2)[1]), writer


CHAT_TIME_SCALE = 0.1
"""Answers of 3000 words stream for some seconds, so they are still being written when the
flood's later commands arrive."""


async def chat_flood(workdir: Path, *, commands: int, words: int, slack: FakeSlack) -> Outcome:
    """One Slack user sends ``commands`` signed ``/chat words: N`` at once (each in a channel
    of its own). Answered: chat requests the provider received; refused: the refusals shown."""
    outcome = Outcome(attempts=commands)
    slack_port = _free_port()
    async with serve(sim_config(time_scale=CHAT_TIME_SCALE)) as sim:
        env = _slack_http(slack, slack_port)
        async with genbot_child(workdir, env, sim=sim) as process:
            events = f"http://127.0.0.1:{slack_port}/slack/events"
            await _until_slack_answers(slack, events)
            outcome.rss_before_mb, _ = memory_mb(_pid(process))
            started = time.perf_counter()
            chats = [
                slack.slash_command("/chat", f"words: {words}", channel=f"C{n}")
                for n in range(commands)
            ]
            acks = await asyncio.gather(*(slack.post_command(events, chat) for chat in chats))
            with contextlib.suppress(TimeoutError):
                await slack.wait_for(lambda: len(slack.ephemerals) >= commands - 3 or None, 15.0)
            accepted = commands - len(slack.ephemerals)
            with contextlib.suppress(TimeoutError):
                await slack.wait_for(
                    lambda: _answers_written(slack) >= accepted or None, ATTACK_WAIT
                )
            outcome.seconds = time.perf_counter() - started
            outcome.answers[200] = len(sim.state.requests_to("/v1/chat/completions"))
            outcome.answers[429] = len(slack.ephemerals)
            outcome.rss_after_mb, outcome.peak_mb = memory_mb(_pid(process))
            outcome.checks["every command acknowledged"] = all(a.status == 200 for a in acks)
            outcome.checks["signed request after"] = await _slack_answered(slack, events)
    outcome.warning_lines = warning_lines(process)
    return outcome


def _answers_written(slack: FakeSlack) -> int:
    return sum(bool(m.markdown) and not m.streaming for m in slack.bot_messages())


async def blends_over_budget(
    workdir: Path, *, blends: int, images: int, image_mb: float, slack: FakeSlack
) -> Outcome:
    """A Slack user whose daily budget is spent shares ``images`` images of ``image_mb`` and
    sends ``blends`` signed ``/blend`` at once. Refused: the budget refusals shown; the checks:
    nothing downloaded, nothing re-hosted."""
    from storage import SqliteStore

    side = int((0.9 * image_mb * MB / 3) ** 0.5)
    files = [(f"{n}.png", noise_png(side, side, seed=n)) for n in range(images)]
    outcome = Outcome(attempts=blends)
    async with await SqliteStore.open(workdir / "genbot.db") as store:
        await store.ledger.add_usage("slack", "U1", credits=1_000_000, kind="credits")
    slack_port = _free_port()
    async with genbot_child(workdir, _slack_http(slack, slack_port)) as process:
        events = f"http://127.0.0.1:{slack_port}/slack/events"
        await _until_slack_answers(slack, events)
        slack.user_says("", channel="C2", files=files)
        outcome.rss_before_mb, _ = memory_mb(_pid(process))
        started = time.perf_counter()
        commands = [slack.slash_command("/blend", "", channel="C2") for _ in range(blends)]
        acks = await asyncio.gather(*(slack.post_command(events, c) for c in commands))
        with contextlib.suppress(TimeoutError):
            await slack.wait_for(lambda: len(slack.ephemerals) >= blends or None, 15.0)
        outcome.seconds = time.perf_counter() - started
        outcome.answers[200] = sum(a.status == 200 for a in acks) - len(slack.ephemerals)
        outcome.answers[402] = len(slack.ephemerals)
        outcome.rss_after_mb, outcome.peak_mb = memory_mb(_pid(process))
        hosted = hosted_bytes(workdir / "genbot.db")
        outcome.checks[f"downloads {len(slack.downloads)}"] = not slack.downloads
        outcome.checks[f"re-hosted {hosted // MB} MB"] = hosted == 0
    outcome.warning_lines = warning_lines(process)
    return outcome
