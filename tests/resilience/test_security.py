"""Security (issue 8, item 8): forged webhook calls change nothing; no key, token or webhook
secret reaches a log line; model output pings nobody on Discord, Slack or the playground.

Every test here captures every logger at DEBUG and fails if any configured secret (all of them
distinctive strings, see :data:`tests.resilience.support.SECRETS`) shows up in a record.
"""

from __future__ import annotations

import json
import logging
from collections.abc import AsyncIterator, Iterator
from contextlib import AsyncExitStack, asynccontextmanager
from pathlib import Path
from typing import Any, TypeVar

import aiohttp
import pytest
from pydantic import SecretStr

from adapters.discord import DiscordAdapter
from adapters.discord.settings import DiscordSettings
from adapters.slack import SlackAdapter
from adapters.slack.settings import SlackSettings
from bot.api import ProviderClient
from bot.features.chat.renderer import MARKER
from bot.kernel import Command, LimitsSettings, User
from genbot.compose import build_core
from simulator.server import RunningSimulator, serve
from simulator.task_model import fetch_record
from storage import IN_FLIGHT_STATUSES, Job, SqliteStore
from tests.fakes.discord import FakeDiscord
from tests.fakes.slack import FakeSlack
from tests.resilience.process import Playground
from tests.resilience.support import (
    DISCORD_TOKEN,
    FAST_RETRY,
    PLACE,
    SECRETS,
    SLACK_APP_TOKEN,
    SLACK_BOT_TOKEN,
    SLACK_SIGNING_SECRET,
    Genbot,
    error_records,
    genbot_settings,
    genbot_stack,
    leaked_secrets,
    record_lines,
    running_genbot,
    sim_config,
)
from tests.storage.helpers import messages_for_job

T = TypeVar("T")
CLOCK_START = 1_700_000_000.0
WEBHOOK_ONLY = {"poll_interval_min": 0.02, "poll_interval_max": 60.0}
USER = User("alice", "Alice")
WAIT = 15.0
HTTP_TIMEOUT = aiohttp.ClientTimeout(total=10)
EVIL_IMAGE = "http://127.0.0.1:9/evil.png"
webhook_secrets: list[str] = []
"""Per-job webhook secrets a test met; they must not be logged either."""


@pytest.fixture(autouse=True)
def no_secret_in_any_log_line(caplog: pytest.LogCaptureFixture) -> Iterator[None]:
    caplog.set_level(logging.DEBUG)
    webhook_secrets.clear()
    yield
    lines = record_lines([*caplog.get_records("setup"), *caplog.get_records("call")])
    assert lines, "nothing was logged: the capture is not working"
    assert leaked_secrets(lines, [*SECRETS, *webhook_secrets]) == []


# Forged webhooks ------------------------------------------------------------------------------


async def snapshot(bot: Genbot) -> dict[str, Any]:
    """Everything a forged webhook could change: job rows, message links, what users see."""
    jobs = await bot.all_jobs()
    return {
        "jobs": jobs,
        "links": {job.id: await messages_for_job(bot.store, job.id) for job in jobs},
        "messages": {
            message_id: (posted.text, posted.message.images, posted.message.buttons)
            for message_id, posted in bot.platform.messages.items()
        },
        "edits": sum(len(posted.history) for posted in bot.platform.messages.values()),
        "ephemerals": len(bot.platform.ephemerals),
    }


async def imagine(bot: Genbot, prompt: str) -> Job:
    before = {job.id for job in await bot.all_jobs()}
    await bot.core.handle(Command(user=USER, place=PLACE, name="imagine", text=prompt))
    [job] = [job for job in await bot.all_jobs() if job.id not in before]
    assert job.status == "submitted" and job.webhook_secret, job
    webhook_secrets.append(await secret_of(bot, job))
    return job


async def secret_of(bot: Genbot, job: Job) -> str:
    """``job``'s webhook secret, opened (what the provider sends back)."""
    return await bot.jobs.starter.webhook_secrets.of(job) or ""


def task_record(sim: RunningSimulator, job: Job, **changes: Any) -> bytes:
    record = fetch_record(sim.state.tasks[job.provider_id or ""], sim.state.now())
    record.update(changes)
    return json.dumps(record).encode()


async def test_forged_webhook_calls_change_nothing(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    config = sim_config(clock_start=CLOCK_START, time_scale=1.0)
    async with (
        genbot_stack(tmp_path, config=config, webhooks=True, limits=WEBHOOK_ONLY) as bot,
        aiohttp.ClientSession(timeout=HTTP_TIMEOUT) as session,
    ):
        done = await imagine(bot, "a fox that already finished")
        bot.sim.advance(600)
        [done] = await bot.settle([done.id], WAIT)
        assert done.status == "posted"
        await bot.sim.webhooks_idle()
        running = await imagine(bot, "a fox still in flight")
        assert bot.receiver is not None
        hooks = f"{bot.settings.webhook.public_url}{bot.receiver.path}"
        evil_finish = task_record(
            bot.sim, running, status="finished", task_result={"image_url": EVIL_IMAGE}
        )
        replay = task_record(bot.sim, done)
        forged_failure = task_record(bot.sim, done, status="failed")
        done_secret, running_secret = await secret_of(bot, done), await secret_of(bot, running)
        forgeries = [
            ("no secret", running.id, None, evil_finish, 401),
            ("wrong secret", running.id, "not-the-secret", evil_finish, 401),
            ("the stored (sealed) secret", running.id, running.webhook_secret, evil_finish, 401),
            ("another job's secret", running.id, done_secret, evil_finish, 401),
            ("unknown job", "NoSuchJob000", running_secret, evil_finish, 401),
            ("not a job id", "x" * 40, running_secret, evil_finish, 401),
            ("replay after finish", done.id, done_secret, replay, 200),
            ("failure after finish", done.id, done_secret, forged_failure, 200),
        ]
        before = await snapshot(bot)
        reads = bot.sim.state.requests_to("/gen/v2/multi_fetch")
        assert [r.body["task_ids"] for r in reads] == [[done.provider_id]], "done was confirmed"

        answers = {}
        for name, job_id, secret, body, _ in forgeries:
            headers = {"Content-Type": "application/json"}
            if secret is not None:
                headers["x-webhook-secret"] = secret
            async with session.post(f"{hooks}/{job_id}", data=body, headers=headers) as response:
                answers[name] = response.status

        assert answers == {name: status for name, _, _, _, status in forgeries}
        assert await snapshot(bot) == before, "a forged webhook changed a job or a message"
        assert bot.sim.state.requests_to("/gen/v2/multi_fetch") == reads

        # With the right secret, a record claiming the task finished is not posted on its
        # word: genbot reads the task (one multi_fetch), and the task is still running.
        headers = {"Content-Type": "application/json", "x-webhook-secret": running_secret}
        hook = f"{hooks}/{running.id}"
        async with session.post(hook, data=evil_finish, headers=headers) as response:
            assert response.status == 200
        await bot.jobs.tracker.wait_idle()
        [claimed] = [job for job in await bot.all_jobs() if job.id == running.id]
        assert claimed.status in IN_FLIGHT_STATUSES and claimed.result_urls == []
        assert [r.body["task_ids"] for r in bot.sim.state.requests_to("/gen/v2/multi_fetch")] == [
            [done.provider_id],
            [running.provider_id],
        ]

        # With the right secret, a body that is not this task's record is only a signal:
        # genbot reads its own task at once, and nothing the body claims is used.
        headers = {"Content-Type": "application/json", "x-webhook-secret": running_secret}
        async with session.post(hook, data=replay, headers=headers) as response:
            assert response.status == 200
        await bot.jobs.tracker.wait_idle()
        [signalled] = [job for job in await bot.all_jobs() if job.id == running.id]
        assert signalled.status in IN_FLIGHT_STATUSES and signalled.result_urls == []
        assert len(bot.sim.state.requests_to("/gen/v2/multi_fetch")) == 3

        bot.sim.advance(600)
        [running] = await bot.settle([running.id], WAIT)
        assert running.status == "posted" and EVIL_IMAGE not in running.result_urls
        result = bot.platform.messages[running.result_message_id or ""]
        task = bot.sim.state.tasks[running.provider_id or ""]
        assert result.message.images, "the genuine result was posted"
        assert task.image_url("images").endswith(f"{task.image_id}.png")
        results = [m for m in bot.platform.messages.values() if m.message.images]
        assert len(results) == 2, "each job's result is posted once"
    assert error_records(caplog) == []


# Pings ----------------------------------------------------------------------------------------


@asynccontextmanager
async def core_on(sim: RunningSimulator, db_path: Path, adapter_factory: Any) -> AsyncIterator[Any]:
    """The real core on ``db_path`` with one real adapter (made by ``adapter_factory(limits)``),
    started the way ``genbot run`` starts them; yields the adapter."""
    settings = genbot_settings(sim, db_path)
    async with AsyncExitStack() as stack:
        store = await SqliteStore.open(db_path)
        stack.push_async_callback(store.close)
        provider = ProviderClient(settings.api, retry=FAST_RETRY)
        stack.push_async_callback(provider.aclose)
        adapter = adapter_factory(settings.limits)
        core, _ = build_core(settings, store, provider, [adapter.surface])
        await adapter.start(core)
        stack.push_async_callback(adapter.stop)
        await core.start()
        stack.push_async_callback(core.stop)
        yield adapter


async def test_model_output_pings_nobody_on_discord(tmp_path: Path) -> None:
    errors: list[tuple[str, BaseException]] = []
    async with FakeDiscord(token=DISCORD_TOKEN) as fake, serve(sim_config()) as sim:
        alice, bob, general = fake.user("alice"), fake.user("bob"), fake.channel("general")
        moderators = fake.role("moderators")
        settings = DiscordSettings(
            token=SecretStr(DISCORD_TOKEN),
            api_base=fake.api_base,
            gateway_url=fake.gateway_url,
            guild_ids=[fake.guild_id],
        )

        def discord(limits: LimitsSettings) -> DiscordAdapter:
            return DiscordAdapter(
                settings,
                limits,
                report_error=lambda where, error: errors.append((where, error)),
                guild_ready_timeout=0.05,
                start_timeout=10.0,
            )

        said = f"hi @everyone @here {moderators.mention} and {bob.mention}"
        async with core_on(sim, tmp_path / "genbot.db", discord):
            await fake.slash(alice, general, "chat", {"prompt": f"echo: {said}"})
            question = await fake.wait_for(
                lambda: next((m for m in fake.bot_messages(general.id) if m.thread_id), None),
                WAIT,
                "the question with its thread",
            )
            thread = fake.channels[question.thread_id or 0]
            answer = await fake.wait_for(
                lambda: next(
                    (
                        m
                        for m in fake.bot_messages(thread.id)
                        if m.content and MARKER not in m.content
                    ),
                    None,
                ),
                WAIT,
                "the model's answer",
            )
            await fake.slash(alice, general, "imagine", {"prompt": f"a fox {said}"})
            grid = await fake.wait_for(
                lambda: next((m for m in fake.bot_messages(general.id) if m.attachments), None),
                WAIT,
                "the grid",
            )

        assert errors == []
        assert answer.content == said
        assert answer.pings.nobody, f"the model's text pinged {answer.pings}"
        assert question.pings.nobody, question.pings
        assert grid.pings.users <= {alice.id}, "nobody but the requester is mentioned"
        assert not grid.pings.everyone and not grid.pings.roles, grid.pings


@pytest.mark.parametrize("socket_mode", [False, True], ids=["http", "socket-mode"])
async def test_model_output_pings_nobody_on_slack(tmp_path: Path, socket_mode: bool) -> None:
    fake_slack = FakeSlack(
        bot_token=SLACK_BOT_TOKEN, app_token=SLACK_APP_TOKEN, signing_secret=SLACK_SIGNING_SECRET
    )
    async with fake_slack as fake, serve(sim_config()) as sim:
        settings = SlackSettings(
            bot_token=SecretStr(SLACK_BOT_TOKEN),
            app_token=SecretStr(SLACK_APP_TOKEN if socket_mode else ""),
            signing_secret=SecretStr(SLACK_SIGNING_SECRET),
            api_url=fake.api_url,
            http_port=0,
        )

        def slack(limits: LimitsSettings) -> SlackAdapter:
            return SlackAdapter(settings, limits)

        said = "hi <!everyone> <!here> <!channel> @here @channel <!subteam^S1|devs> <@U2>"
        async with core_on(sim, tmp_path / "genbot.db", slack) as adapter:
            mention = fake.user_says(f"<@{fake.bot_user_id}> echo: {said}")
            envelope = fake.event_callback(fake.app_mention_event(mention))
            if socket_mode:
                await fake.wait_for(lambda: fake.socket_connected, WAIT)
                await fake.socket_push("events_api", envelope)
            else:
                delivery = await fake.post_event(adapter.events_url, envelope)
                assert delivery.status == 200
            answer = await fake.wait_for(
                lambda: next(
                    (
                        m
                        for m in fake.thread("C1", mention.ts)
                        if m.user == fake.bot_user_id and m.shown and MARKER not in m.shown
                    ),
                    None,
                ),
                WAIT,
            )

        assert "hi" in answer.shown and "everyone" in answer.shown
        assert answer.pings() == set(), f"the model's text pinged {answer.pings()}"


async def test_model_output_pings_nobody_in_the_playground(tmp_path: Path) -> None:
    said = "hi @everyone @here <@&1234> <@5678> <!channel>"
    async with (
        serve(sim_config()) as sim,
        running_genbot(sim, tmp_path / "genbot.db", with_web=True) as bot,
    ):
        assert bot.web is not None
        async with Playground(bot.web.url) as browser:
            await browser.command(f"/chat echo: {said}")
            answer = await browser.until(
                lambda: next(
                    (
                        m
                        for m in browser.messages.values()
                        if m["from_model"] and m["text"] and MARKER not in m["text"]
                    ),
                    None,
                ),
                WAIT,
                "the model's answer",
            )
            assert browser.session is not None
            async with browser.session.get(
                f"{bot.web.url}/api/history", params={"channel": "general"}
            ) as response:
                page = await response.json()

    assert answer["text"] == said
    [served] = [m for m in page["messages"] if m["id"] == answer["id"]]
    assert served["from_model"] is True and served["text"] == said
    assert served["mention"] is None, "model output highlights (pings) nobody"
    assert all(m["mention"] in (None, page["me"]["id"]) for m in page["messages"])
