"""Transport behaviour: failover, proxy routing, retry rules, errors, session and secrets."""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator
from dataclasses import dataclass, field

import pytest
from aiohttp import web

from bot.api import (
    ChatMessage,
    ChatRequest,
    ConnectionFailed,
    ImagineRequest,
    ProviderClient,
    RetryPolicy,
    ServerError,
    UnexpectedStatus,
)
from simulator.server import RunningSimulator, serve
from tests.bot.api.support import FAST_RETRY, KEY, dead_url, settings_for, sim_config

RECORD = {"task_id": "t1", "status": "finished", "task_result": {}, "meta": {}}


def ask(text: str) -> ChatRequest:
    return ChatRequest(model="llm-3.5-turbo", messages=[ChatMessage(role="user", content=text)])


async def test_failover_from_a_dead_base_url(sim: RunningSimulator) -> None:
    settings = settings_for(dead_url(), backup_urls=[dead_url(), sim.base_url])
    async with ProviderClient(settings, retry=FAST_RETRY) as api:
        created = await api.tasks.imagine(ImagineRequest(prompt="a fox"))
        assert (await api.tasks.fetch(created.task_id)).task_id == created.task_id
        assert (await api.chat.complete(ask("echo: over"))).text == "over"
        async with api.chat.stream(ask("echo: streamed")) as stream:
            async for _ in stream:
                pass
        assert stream.text == "streamed"
        assert api.transport.addresses()[0] == sim.base_url
    assert len(sim.state.requests_to("/gen/v2/imagine")) == 1


async def test_all_addresses_dead_is_connection_failed_not_sent() -> None:
    settings = settings_for(dead_url(), backup_urls=[dead_url()])
    async with ProviderClient(settings, retry=FAST_RETRY) as api:
        with pytest.raises(ConnectionFailed) as caught:
            await api.tasks.imagine(ImagineRequest(prompt="a fox"))
    assert caught.value.request_sent is False


async def test_proxy_is_used_for_non_streamed_chat_only(sim: RunningSimulator) -> None:
    async with serve(sim_config(seed=8)) as proxy:
        settings = settings_for(sim.base_url, proxy_url=proxy.base_url)
        async with ProviderClient(settings, retry=FAST_RETRY) as api:
            assert (await api.chat.complete(ask("echo: via proxy"))).text == "via proxy"
            async with api.chat.stream(ask("echo: direct")) as stream:
                async for _ in stream:
                    pass
            await api.tasks.imagine(ImagineRequest(prompt="a fox"))
        assert [r.body["stream"] for r in proxy.state.requests_to("/v1/chat")][:1] == [False]
        assert all(r.body["stream"] is False for r in proxy.state.requests_to("/v1/chat"))
        assert all(r.body["stream"] is True for r in sim.state.requests_to("/v1/chat"))
        assert sim.state.requests_to("/v1/chat") and proxy.state.requests_to("/v1/chat")
        assert proxy.state.requests_to("/gen/") == []
        assert len(sim.state.requests_to("/gen/v2/imagine")) == 1


async def test_dead_proxy_falls_back_to_the_base_url(sim: RunningSimulator) -> None:
    settings = settings_for(sim.base_url, proxy_url=dead_url())
    async with ProviderClient(settings, retry=FAST_RETRY) as api:
        assert (await api.chat.complete(ask("echo: fine"))).text == "fine"


@dataclass
class Scripted:
    """A loopback provider whose answers tests script: each path pops its next behaviour."""

    url: str = ""
    plan: dict[str, list[str]] = field(default_factory=dict)
    hits: dict[str, int] = field(default_factory=dict)

    async def handle(self, request: web.Request) -> web.StreamResponse:
        path = request.path
        self.hits[path] = self.hits.get(path, 0) + 1
        await request.read()
        steps = self.plan.get(path, [])
        step = steps.pop(0) if steps else "ok"
        if step == "500":
            return web.json_response({"error": {"message": "boom"}}, status=500)
        if step == "409":
            return web.json_response({"message": "slow down"}, status=409)
        if step == "418":
            return web.Response(status=418)
        if step == "reset":
            assert request.transport is not None
            request.transport.close()
            return web.Response()
        if path == "/gen/v2/fetch":
            return web.json_response(RECORD)
        return web.json_response({"task_id": "t1", "status": "success", "message": ""})


@pytest.fixture
async def scripted() -> AsyncIterator[Scripted]:
    provider = Scripted()
    app = web.Application()
    app.router.add_post("/{tail:.*}", provider.handle)
    runner = web.AppRunner(app, shutdown_timeout=0.1)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    provider.url = f"http://127.0.0.1:{runner.addresses[0][1]}"
    try:
        yield provider
    finally:
        await runner.cleanup()


async def test_reads_retry_5xx_and_resets(scripted: Scripted) -> None:
    scripted.plan["/gen/v2/fetch"] = ["500", "reset", "500"]
    async with ProviderClient(settings_for(scripted.url), retry=FAST_RETRY) as api:
        assert (await api.tasks.fetch("t1")).is_finished
    assert scripted.hits["/gen/v2/fetch"] == 4


async def test_read_retries_are_bounded(scripted: Scripted) -> None:
    scripted.plan["/gen/v2/fetch"] = ["500"] * 20
    policy = RetryPolicy(max_attempts=3, base_delay=0.001, max_delay=0.002)
    async with ProviderClient(settings_for(scripted.url), retry=policy) as api:
        with pytest.raises(ServerError) as caught:
            await api.tasks.fetch("t1")
    assert caught.value.status == 500 and caught.value.provider_message == "boom"
    assert scripted.hits["/gen/v2/fetch"] == 3


async def test_read_5xx_fails_over_to_backup(scripted: Scripted, sim: RunningSimulator) -> None:
    async with ProviderClient(settings_for(sim.base_url), retry=FAST_RETRY) as direct:
        created = await direct.tasks.imagine(ImagineRequest(prompt="a fox"))
    scripted.plan["/gen/v2/fetch"] = ["500"] * 20
    settings = settings_for(scripted.url, backup_urls=[sim.base_url])
    async with ProviderClient(settings, retry=FAST_RETRY) as api:
        assert (await api.tasks.fetch(created.task_id)).task_id == created.task_id
    assert scripted.hits["/gen/v2/fetch"] == 1
    assert len(sim.state.requests_to("/gen/v2/fetch")) == 1


async def test_creation_5xx_is_not_failed_over(scripted: Scripted, sim: RunningSimulator) -> None:
    scripted.plan["/gen/v2/imagine"] = ["500"]
    settings = settings_for(scripted.url, backup_urls=[sim.base_url])
    async with ProviderClient(settings, retry=FAST_RETRY) as api:
        with pytest.raises(ServerError):
            await api.tasks.imagine(ImagineRequest(prompt="a fox"))
    assert scripted.hits["/gen/v2/imagine"] == 1
    assert sim.state.requests_to("/gen/v2/imagine") == []


@pytest.mark.parametrize("failure", ["500", "reset"])
async def test_creation_is_never_repeated_once_sent(scripted: Scripted, failure: str) -> None:
    scripted.plan["/gen/v2/imagine"] = [failure]
    scripted.plan["/v1/chat/completions"] = [failure]
    async with ProviderClient(settings_for(scripted.url), retry=FAST_RETRY) as api:
        with pytest.raises((ServerError, ConnectionFailed)) as caught:
            await api.tasks.imagine(ImagineRequest(prompt="a fox"))
        if isinstance(caught.value, ConnectionFailed):
            assert caught.value.request_sent is True
        with pytest.raises((ServerError, ConnectionFailed)):
            await api.chat.complete(ask("hi"))
    assert scripted.hits == {"/gen/v2/imagine": 1, "/v1/chat/completions": 1}


async def test_unexpected_status_is_not_retried(scripted: Scripted) -> None:
    scripted.plan["/gen/v2/fetch"] = ["409"]
    async with ProviderClient(settings_for(scripted.url), retry=FAST_RETRY) as api:
        with pytest.raises(UnexpectedStatus) as caught:
            await api.tasks.fetch("t1")
    assert caught.value.status == 409 and caught.value.provider_message == "slow down"
    assert scripted.hits["/gen/v2/fetch"] == 1


async def test_an_undocumented_status_is_named_to_the_user_and_in_the_log(
    scripted: Scripted, caplog: pytest.LogCaptureFixture
) -> None:
    # The documentation lists 200, 400, 401 and 500: any status genbot does not otherwise read
    # is told as what it is, never as a generic failure, and logged with its number.
    scripted.plan["/gen/v2/imagine"] = ["418"]
    scripted.plan["/v1/chat/completions"] = ["409"]
    caplog.set_level(logging.WARNING)
    async with ProviderClient(settings_for(scripted.url), retry=FAST_RETRY) as api:
        with pytest.raises(UnexpectedStatus) as bare:
            await api.tasks.imagine(ImagineRequest(prompt="a fox"))
        with pytest.raises(UnexpectedStatus) as worded:
            async with api.chat.stream(ask("hi")) as stream:
                async for _ in stream:
                    pass
    assert bare.value.user_message == (
        "The service answered HTTP 418, which its API does not document."
    )
    assert worded.value.user_message == (
        "The service answered HTTP 409, which its API does not document: slow down"
    )
    warned = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    assert any("/gen/v2/imagine" in line and "HTTP 418" in line for line in warned), warned
    assert any("/v1/chat/completions" in line and "HTTP 409" in line for line in warned), warned


async def test_keys_never_reach_logs_or_errors(
    sim: RunningSimulator, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG)
    settings = settings_for(dead_url(), backup_urls=[sim.base_url])
    errors: list[str] = []
    async with ProviderClient(settings, retry=FAST_RETRY) as api:
        await api.tasks.imagine(ImagineRequest(prompt="a fox"))
        async with ProviderClient(settings_for(sim.base_url, key="wrong-key-123")) as bad:
            try:
                await bad.chat.complete(ask("hi"))
            except Exception as error:
                errors.append(f"{error!r} {error} {getattr(error, 'user_message', '')}")
    assert errors and caplog.records
    text = "\n".join(record.getMessage() for record in caplog.records) + "\n".join(errors)
    assert KEY not in text and "wrong-key-123" not in text
    assert KEY not in repr(settings)


async def test_session_is_lazy_shared_and_closed(sim: RunningSimulator) -> None:
    api = ProviderClient(settings_for(sim.base_url), retry=FAST_RETRY)
    assert api.transport._session is None
    async with api:
        await api.chat.complete(ask("echo: a"))
        session = api.transport.session()
        await api.tasks.imagine(ImagineRequest(prompt="a fox"))
        assert api.transport.session() is session
    assert session.closed
