"""``genbot run`` as a real subprocess with the web playground, and a browser-like client of it.

:class:`GenbotProcess` starts ``python -m genbot run -v`` with settings from the environment
(``GENBOT_*``), its output going to files the tests scan afterwards; ``kill()`` is ``kill -9``.
:class:`Playground` is one browser session (the session a page load gave it, which it can hand
to the next one: the same user across restarts) that sends commands and presses, and watches a
channel: it subscribes to the event stream first, then reads the history, so every message the
process shows from its start until it dies is seen once (:attr:`Playground.messages`, by id).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import re
import resource
import signal
import sqlite3
import sys
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

import aiohttp

from adapters.web.access import SESSION_COOKIE
from genbot.demo import free_port
from tests.genbot.process import CHILD_WAIT

T = TypeVar("T")
STARTUP_TIMEOUT = CHILD_WAIT
STOP_TIMEOUT = CHILD_WAIT
HTTP_TIMEOUT = aiohttp.ClientTimeout(total=10)
Message = dict[str, Any]
PORT_ATTEMPTS = 3
RUNNING = "genbot running:"
"""What ``genbot run`` prints once everything it runs has started (the webhook receiver last)."""
TAKEN = re.compile(r"cannot listen on 127\.0\.0\.1:(\d+) \(Address already in use\)")


class PortTaken(Exception):
    """A port picked for a process was taken before the process could listen on it."""

    def __init__(self, port: int) -> None:
        super().__init__(f"port {port} was taken before genbot could listen on it")
        self.port = port


@dataclass
class GenbotProcess:
    """One ``genbot run`` process (see the module docstring)."""

    env: Mapping[str, str]
    workdir: Path
    name: str
    process: asyncio.subprocess.Process | None = None
    port: int = 0
    open_files: int | None = None
    """The child's open-file limit (soft and hard), when given."""
    args: tuple[str, ...] = ("-v",)
    """Options of ``genbot run``."""
    startup_timeout: float = STARTUP_TIMEOUT
    stop_timeout: float = STOP_TIMEOUT

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    @property
    def webhook_port(self) -> int:
        return int(self.env.get("GENBOT_WEBHOOK__PORT", 0))

    @property
    def ops_port(self) -> int:
        return int(self.env.get("GENBOT_OPS__PORT", 0))

    @property
    def output_files(self) -> list[Path]:
        return [self.workdir / f"{self.name}.stdout", self.workdir / f"{self.name}.stderr"]

    async def start(self) -> None:
        """Start on a free port and wait (bounded) until it says it runs and its playground
        answers. A port something else took first is picked again: the playground's, or one
        the settings name (webhook receiver, ops listener; :attr:`env` then names the new
        one); a taken port no port setting in :attr:`env` names fails at once (another start
        would find it taken again). A port is free when picked, not reserved: another test's
        process may pick and bind it too."""
        port = free_port()
        for attempt in range(1, PORT_ATTEMPTS + 1):
            try:
                await self._start_on(port)
                return
            except PortTaken as taken:
                if attempt == PORT_ATTEMPTS:
                    raise AssertionError(f"{self.name}: {taken}:\n{self.output()}") from None
                if taken.port == port:
                    port = free_port()
                elif names_port(self.env, taken.port):
                    self.env = repicked(self.env, taken.port, free_port())
                else:
                    raise AssertionError(
                        f"{self.name}: {taken}, and no port setting in its environment names "
                        f"it:\n{self.output()}"
                    ) from None

    async def _start_on(self, port: int) -> None:
        self.port = port
        env = {key: value for key, value in os.environ.items() if not key.startswith("GENBOT_")}
        env.update(self.env)
        env["GENBOT_WEB__PORT"] = str(self.port)
        stdout, stderr = (path.open("wb") for path in self.output_files)
        with stdout, stderr:
            self.process = await asyncio.create_subprocess_exec(
                sys.executable,
                "-m",
                "genbot",
                "run",
                *self.args,
                cwd=self.workdir,
                env=env,
                stdout=stdout,
                stderr=stderr,
                preexec_fn=self._limit_open_files if self.open_files else None,
            )
        try:
            await self._until_running(self.process)
        except TimeoutError:
            raise AssertionError(
                f"{self.name} did not start within {self.startup_timeout:.0f} s:\n{self.output()}"
            ) from None

    async def _until_running(self, process: asyncio.subprocess.Process) -> None:
        listening = f"web playground at {self.url}"
        async with asyncio.timeout(self.startup_timeout), aiohttp.ClientSession() as session:
            while True:
                if process.returncode is not None:
                    taken = TAKEN.search(self._written())
                    if taken is not None:
                        raise PortTaken(int(taken[1]))
                    raise AssertionError(f"{self.name} exited early:\n{self.output()}")
                with contextlib.suppress(aiohttp.ClientError):
                    async with session.get(f"{self.url}/static/app.js") as response:
                        if response.status == 200 and self._said(listening) and self._said(RUNNING):
                            return
                await asyncio.sleep(0.05)

    def _limit_open_files(self) -> None:
        assert self.open_files is not None
        resource.setrlimit(resource.RLIMIT_NOFILE, (self.open_files, self.open_files))

    async def kill(self) -> None:
        """``kill -9`` and reap it."""
        if self.process is not None and self.process.returncode is None:
            self.process.kill()
            async with asyncio.timeout(self.stop_timeout):
                await self.process.wait()

    async def terminate(self) -> int:
        """SIGTERM (a clean stop) and its exit status; falls back to ``kill -9``."""
        assert self.process is not None
        self.process.send_signal(signal.SIGTERM)
        try:
            async with asyncio.timeout(self.stop_timeout):
                return await self.process.wait()
        except TimeoutError:
            await self.kill()
            raise AssertionError(f"{self.name} ignored SIGTERM") from None

    def _said(self, text: str) -> bool:
        """Whether the process wrote ``text`` (anywhere in its output so far)."""
        return text in self._written()

    def _written(self) -> str:
        return "\n".join(path.read_text(errors="replace") for path in self.output_files)

    def output(self) -> str:
        return "\n".join(path.read_text(errors="replace")[-4000:] for path in self.output_files)


def names_port(env: Mapping[str, str], port: int) -> bool:
    """Whether a port setting of ``env`` names ``port``."""
    return any(key.endswith("__PORT") and value == str(port) for key, value in env.items())


def repicked(env: Mapping[str, str], taken: int, fresh: int) -> dict[str, str]:
    """``env`` with every port setting, and every loopback URL, naming ``taken`` naming
    ``fresh`` instead."""
    url = re.compile(rf"127\.0\.0\.1:{taken}\b")
    return {
        key: str(fresh)
        if key.endswith("__PORT") and value == str(taken)
        else url.sub(f"127.0.0.1:{fresh}", value)
        for key, value in env.items()
    }


async def load_page(url: str, session_cookie: str = "") -> str:
    """Load the playground's page as a browser does, with ``session_cookie`` if any; the
    session cookie the browser holds afterwards."""
    headers = {"Cookie": f"{SESSION_COOKIE}={session_cookie}"} if session_cookie else {}
    async with (
        aiohttp.ClientSession(timeout=HTTP_TIMEOUT) as session,
        session.get(f"{url}/", headers=headers) as page,
    ):
        assert page.status == 200, await page.text()
        given = page.cookies.get(SESSION_COOKIE)
        return given.value if given is not None else session_cookie


@dataclass
class Playground:
    """A browser session on one genbot process, watching ``channel``."""

    url: str
    channel: str = "general"
    session_cookie: str = ""
    """The session a page load gave this browser; give it to the next :class:`Playground` to
    be the same user on a restarted process."""
    messages: dict[str, Message] = field(default_factory=dict)
    session: aiohttp.ClientSession | None = None
    _watcher: asyncio.Task[None] | None = None
    _changed: asyncio.Event = field(default_factory=asyncio.Event)

    async def __aenter__(self) -> Playground:
        self.session_cookie = await load_page(self.url, self.session_cookie)
        self.session = aiohttp.ClientSession(
            timeout=HTTP_TIMEOUT, headers={"Cookie": f"{SESSION_COOKIE}={self.session_cookie}"}
        )
        subscribed = asyncio.Event()
        self._watcher = asyncio.create_task(self._watch(subscribed))
        async with asyncio.timeout(10):
            await subscribed.wait()
        async with self.session.get(
            f"{self.url}/api/history", params={"channel": self.channel}
        ) as response:
            for message in (await response.json())["messages"]:
                self.messages.setdefault(message["id"], message)
        self._changed.set()
        return self

    async def drain(self, timeout: float = 5.0) -> None:
        """Read the event stream to its end (the process stopped): every event it delivered
        is in :attr:`messages` afterwards."""
        if self._watcher is not None:
            with contextlib.suppress(TimeoutError):
                async with asyncio.timeout(timeout):
                    await asyncio.shield(self._watcher)

    async def __aexit__(self, *exc: object) -> None:
        if self._watcher is not None:
            self._watcher.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._watcher
        if self.session is not None:
            await self.session.close()

    async def _watch(self, subscribed: asyncio.Event) -> None:
        assert self.session is not None
        no_timeout = aiohttp.ClientTimeout(total=None, sock_read=None)
        with contextlib.suppress(aiohttp.ClientError, ConnectionError):
            async with self.session.get(
                f"{self.url}/api/events", params={"channel": self.channel}, timeout=no_timeout
            ) as response:
                async for raw in response.content:
                    line = raw.decode().strip()
                    if not line.startswith("data: "):
                        continue
                    payload = json.loads(line.removeprefix("data: "))
                    if payload.get("type") == "hello":
                        subscribed.set()
                    elif payload.get("type") in ("post", "edit"):
                        message = payload["message"]
                        self.messages[message["id"]] = message
                        self._changed.set()

    async def until(self, condition: Callable[[], T | None], timeout: float, what: str) -> T:
        """Wait (bounded) until ``condition()`` is truthy; return it."""
        try:
            async with asyncio.timeout(timeout):
                while not (value := condition()):
                    self._changed.clear()
                    await self._changed.wait()
                return value
        except TimeoutError:
            raise TimeoutError(f"gave up waiting for {what}") from None

    async def command(self, text: str, channel: str | None = None) -> str:
        """Send a slash command (in this browser's channel unless ``channel`` is given); the
        id of the message showing it."""
        assert self.session is not None
        body = {"text": text, "channel": channel or self.channel}
        async with self.session.post(f"{self.url}/api/command", json=body) as response:
            answer = await response.json()
            assert response.status == 202, answer
            return str(answer["event_id"])

    async def press(self, message_id: str, custom_id: str) -> tuple[int, dict[str, Any]]:
        """Press a button; the HTTP status and JSON answer."""
        assert self.session is not None
        body = {"message_id": message_id, "custom_id": custom_id}
        async with self.session.post(f"{self.url}/api/button", json=body) as response:
            return response.status, await response.json()

    def results(self) -> dict[str, Message]:
        """The result messages seen, by message id: genbot posts with an image and buttons."""
        return {
            message_id: message
            for message_id, message in self.messages.items()
            if message["kind"] == "bot" and message["images"] and message["buttons"]
        }


def job_of(message: Message) -> str:
    """The job a result message belongs to: the ref in its buttons' custom ids."""
    refs = {
        str(button["custom_id"]).split(":", 2)[2] for row in message["buttons"] for button in row
    }
    assert len(refs) == 1, refs
    return refs.pop()


def custom_id(message: Message, label: str) -> str:
    return next(
        str(b["custom_id"]) for row in message["buttons"] for b in row if b["label"] == label
    )


def read_database(path: Path, query: str, args: tuple[Any, ...] = ()) -> list[sqlite3.Row]:
    """Rows of ``query`` on genbot's database, read-only."""
    with contextlib.closing(sqlite3.connect(f"file:{path}?mode=ro", uri=True)) as db:
        db.row_factory = sqlite3.Row
        return list(db.execute(query, args))
