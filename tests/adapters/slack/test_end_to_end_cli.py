"""``genbot run`` with Slack settings from the environment, against the fake Slack and the
simulator, in both transports: a real subprocess, stopped with SIGTERM."""

from __future__ import annotations

import asyncio
import os
import signal
import sys
from collections.abc import AsyncIterator, Mapping
from contextlib import asynccontextmanager, suppress
from functools import partial
from pathlib import Path

import pytest

from genbot.demo import free_port
from simulator.server import RunningSimulator, serve
from simulator.state import SimulatorConfig
from tests.adapters.slack.end_to_end import (
    FIRST,
    JOB_TIME_SCALE,
    LIMITS,
    SECOND,
    answer_in,
    ask,
    bot_message_with_button,
    budgeted_fake,
    created,
    two_workspaces,
)
from tests.fakes.slack import FakeSlack
from tests.genbot.process import CHILD_WAIT

STARTUP_WAIT = CHILD_WAIT
RESULT_WAIT = 15.0
STOP_WAIT = CHILD_WAIT


@pytest.fixture
async def fake() -> AsyncIterator[FakeSlack]:
    async with budgeted_fake() as slack:
        yield slack


@pytest.fixture
async def sim() -> AsyncIterator[RunningSimulator]:
    async with serve(SimulatorConfig(time_scale=JOB_TIME_SCALE)) as running:
        yield running


class GenbotProcess:
    """``python -m genbot run`` in a subprocess, its stdout and stderr collected as they come."""

    def __init__(self, process: asyncio.subprocess.Process) -> None:
        self.process = process
        self.lines: list[str] = []
        self._changed = asyncio.Event()
        assert process.stdout is not None and process.stderr is not None
        self._readers = [
            asyncio.create_task(self._collect(process.stdout)),
            asyncio.create_task(self._collect(process.stderr)),
        ]

    @property
    def output(self) -> str:
        return "\n".join(self.lines)

    def has_line(self, text: str) -> bool:
        return any(text in line for line in self.lines)

    async def _collect(self, stream: asyncio.StreamReader) -> None:
        async for line in stream:
            self.lines.append(line.decode(errors="replace").rstrip())
            self._changed.set()
        self._changed.set()

    async def wait_for_line(self, text: str, timeout: float = STARTUP_WAIT) -> None:
        """Wait until a line contains ``text`` (gives up early when the process exited)."""
        with suppress(TimeoutError):
            async with asyncio.timeout(timeout):
                while not self.has_line(text) and not all(r.done() for r in self._readers):
                    self._changed.clear()
                    await self._changed.wait()
        assert self.has_line(text), f"no {text!r} in the output of genbot run:\n{self.output}"

    async def stop(self) -> int:
        """SIGTERM, then the exit code once it exited and its output is read."""
        if self.process.returncode is None:
            self.process.send_signal(signal.SIGTERM)
        try:
            async with asyncio.timeout(STOP_WAIT):
                code = await self.process.wait()
                await asyncio.gather(*self._readers)
        except TimeoutError:
            self.process.kill()
            await self.process.wait()
            raise AssertionError(f"genbot did not stop on SIGTERM:\n{self.output}") from None
        return code


@asynccontextmanager
async def genbot_run(
    settings: Mapping[str, str], cwd: Path, *options: str
) -> AsyncIterator[GenbotProcess]:
    """``genbot run`` (with ``options``) with ``settings`` as its only ``GENBOT_*``
    environment; killed if the test leaves it running."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("GENBOT_")}
    env |= {"PYTHONUNBUFFERED": "1", **settings}
    process = await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "genbot",
        "run",
        *options,
        cwd=cwd,
        env=env,
        stdin=asyncio.subprocess.DEVNULL,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )
    genbot = GenbotProcess(process)
    try:
        yield genbot
    finally:
        if process.returncode is None:
            process.kill()
            await process.wait()


def environment(fake: FakeSlack, sim: RunningSimulator, db_path: Path) -> dict[str, str]:
    limits = {f"GENBOT_LIMITS__{key.upper()}": str(value) for key, value in LIMITS.items()}
    return {
        "GENBOT_SLACK__BOT_TOKEN": fake.bot_token,
        "GENBOT_SLACK__API_URL": fake.api_url,
        "GENBOT_API__BASE_URL": sim.base_url,
        "GENBOT_API__KEY": "sim-key",
        "GENBOT_STORAGE__PATH": str(db_path),
        **limits,
    }


def database_bytes(folder: Path) -> bytes:
    """The SQLite database in ``folder`` as bytes, with its journal files."""
    return b"".join(path.read_bytes() for path in sorted(folder.glob("genbot.db*")))


def assert_clean(output: str, fake: FakeSlack) -> None:
    """No secret, no error and no traceback in the output of ``genbot run``."""
    for secret in (fake.bot_token, fake.app_token, fake.signing_secret, "sim-key"):
        assert secret not in output
    assert " ERROR " not in output and "Traceback" not in output, output


async def test_genbot_run_in_http_mode_answers_a_signed_imagine(
    fake: FakeSlack, sim: RunningSimulator, tmp_path: Path
) -> None:
    port = free_port()
    settings = environment(fake, sim, tmp_path / "genbot.db") | {
        "GENBOT_SLACK__SIGNING_SECRET": fake.signing_secret,
        "GENBOT_SLACK__HTTP_PORT": str(port),
    }
    async with genbot_run(settings, tmp_path) as genbot:
        await genbot.wait_for_line("genbot running: slack")
        url = f"http://127.0.0.1:{port}/slack/events"

        refused = await fake.post_command(
            url, fake.slash_command("/imagine", "a fox"), secret="forged"
        )
        accepted = await fake.post_command(url, fake.slash_command("/imagine", "a fox"))
        grid = await fake.wait_for(bot_message_with_button(fake, "C1", "U1"), RESULT_WAIT)

        code = await genbot.stop()

    assert (refused.status, accepted.status) == (401, 200)
    assert len(created(sim, "/gen/v2/imagine")) == 1
    (upload,) = fake.uploads
    assert grid.image_files == [upload[0]]
    assert "a fox" in grid.sections
    assert fake.ratelimited == []
    assert code == 0, genbot.output
    assert "genbot stopped" in genbot.output
    assert_clean(genbot.output, fake)


async def test_genbot_run_in_socket_mode_answers_an_envelope(
    fake: FakeSlack, sim: RunningSimulator, tmp_path: Path
) -> None:
    settings = environment(fake, sim, tmp_path / "genbot.db") | {
        "GENBOT_SLACK__APP_TOKEN": fake.app_token,
    }
    async with genbot_run(settings, tmp_path) as genbot:
        await genbot.wait_for_line("genbot running: slack")
        await fake.wait_for(lambda: fake.socket_connected, STARTUP_WAIT)
        message = fake.user_says("echo: hello from the socket", channel="D1")

        envelope_id = await fake.socket_push(
            "events_api", fake.event_callback(fake.message_event(message))
        )
        answer = await fake.wait_for(
            lambda: [m for m in fake.bot_messages("D1") if m.markdown == "hello from the socket"],
            RESULT_WAIT,
        )

        code = await genbot.stop()

    assert {"envelope_id": envelope_id} in fake.socket_acks
    assert len(answer) == 1
    assert fake.calls_to("apps.connections.open")[0].token == fake.app_token
    assert code == 0, genbot.output
    assert "genbot stopped" in genbot.output
    assert_clean(genbot.output, fake)


async def test_genbot_run_verbose_keeps_the_tokens_it_learns_out_of_its_logs_and_database(
    sim: RunningSimulator, tmp_path: Path
) -> None:
    """With ``-v`` slack_sdk logs every request and answer of the OAuth flow and of each token
    rotation: the codes, bot tokens and refresh tokens genbot learns while running are never
    in its output, nor the client secret; and the database file, read as bytes, holds none
    of the tokens it stored."""
    port = free_port()
    async with two_workspaces(token_rotation=True, token_lifetime_seconds=3600) as slack:
        settings = {
            "GENBOT_SLACK__CLIENT_ID": slack.client_id,
            "GENBOT_SLACK__CLIENT_SECRET": slack.client_secret,
            "GENBOT_SLACK__SIGNING_SECRET": slack.signing_secret,
            "GENBOT_SLACK__API_URL": slack.api_url,
            "GENBOT_SLACK__HTTP_PORT": str(port),
            "GENBOT_API__BASE_URL": sim.base_url,
            "GENBOT_API__KEY": "sim-key",
            "GENBOT_STORAGE__PATH": str(tmp_path / "genbot.db"),
        }
        base = f"http://127.0.0.1:{port}/slack"
        slack.redirect_url = f"{base}/oauth_redirect"
        async with genbot_run(settings, tmp_path, "-v") as genbot:
            await genbot.wait_for_line("genbot running: slack")
            installs = [
                await slack.install(f"{base}/install", team, user="U3") for team in (FIRST, SECOND)
            ]
            for team, channel in ((FIRST, "C1"), (SECOND, "C2")):
                await ask(slack, f"{base}/events", team, channel, f"hello {team}")
                answered = partial(answer_in, slack, channel, f"hello {team}")
                await slack.wait_for(answered, RESULT_WAIT)
            code = await genbot.stop()

    refreshes = [c for c in slack.calls_to("oauth.v2.access") if "refresh_token" in c.args]
    assert [i.status for i in installs] == [200, 200]
    assert len(refreshes) >= 2, "each workspace's token was rotated"
    assert code == 0, genbot.output
    assert genbot.has_line("oauth.v2.access"), "slack_sdk's debug lines are in the output"
    assert len(slack.issued_secrets) >= 8
    leaked = {s for s in slack.issued_secrets | {slack.client_secret} if s in genbot.output}
    assert leaked == set(), genbot.output
    files = database_bytes(tmp_path)
    assert {s for s in slack.issued_secrets if s.encode() in files} == set()
    assert b"sealed:v1:" in files
