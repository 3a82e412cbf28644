"""Start-up refusals as one-line :class:`AdapterStartError`, and the gateway dying later."""

from __future__ import annotations

import asyncio

import pytest
from pydantic import SecretStr

from adapters import AdapterStartError
from adapters.discord import DiscordAdapter
from bot.kernel import LimitsSettings, UserMessage
from tests.adapters.discord.harness import Harness, RecordingCore
from tests.fakes.discord import FakeDiscord
from tests.fakes.router import FakeRouter


def adapter_for(harness: Harness, **overrides: object) -> DiscordAdapter:
    return DiscordAdapter(
        harness.settings(**overrides), LimitsSettings(), guild_ready_timeout=0.05, start_timeout=5.0
    )


async def refusal(adapter: DiscordAdapter, core: RecordingCore) -> str:
    with pytest.raises(AdapterStartError) as refused:
        await adapter.start(FakeRouter(core, [adapter.surface]))
    await adapter.stop()
    return str(refused.value)


async def test_a_wrong_token_is_a_one_line_start_error(
    fake: FakeDiscord, core: RecordingCore
) -> None:
    adapter = adapter_for(Harness(fake, []), token=SecretStr("not-the-token"))
    assert await refusal(adapter, core) == "Discord refused the token (401): check [discord] token"
    assert fake.requests_to("GET", "/users/@me")[0].status == 401


@pytest.mark.parametrize("fake", [{"message_content_intent": False}], indirect=True)
async def test_a_disallowed_message_content_intent_says_where_to_enable_it(
    fake: FakeDiscord, core: RecordingCore
) -> None:
    message = await refusal(adapter_for(Harness(fake, [])), core)
    assert "4014" in message and "enable the Message Content intent" in message
    assert "Developer Portal" in message


@pytest.mark.parametrize("fake", [{"identify_close_code": 4004}], indirect=True)
async def test_a_token_the_gateway_refuses_is_a_start_error(
    fake: FakeDiscord, core: RecordingCore
) -> None:
    message = await refusal(adapter_for(Harness(fake, [])), core)
    assert message.startswith("Discord's gateway refused the token (4004")
    assert "[discord] token" in message


async def test_a_guild_genbot_is_not_in_is_named(fake: FakeDiscord, core: RecordingCore) -> None:
    message = await refusal(adapter_for(Harness(fake, []), guild_ids=[fake.guild_id + 1]), core)
    assert f"guild {fake.guild_id + 1}" in message and "403" in message
    assert "[discord] guild_ids" in message


async def test_an_unreachable_discord_is_a_start_error(core: RecordingCore) -> None:
    async with FakeDiscord() as gone:
        settings = Harness(gone, []).settings()
    adapter = DiscordAdapter(settings, LimitsSettings(), start_timeout=5.0)
    message = await refusal(adapter, core)
    assert message.startswith(f"cannot reach Discord at {settings.api_base}")


class FatalReports:
    """What ``on_fatal`` was told, as text; ``next()`` waits (bounded) for the first report."""

    def __init__(self) -> None:
        self.reports: list[str] = []
        self._reported = asyncio.Event()

    def __call__(self, error: BaseException) -> None:
        self.reports.append(str(error))
        self._reported.set()

    async def first(self) -> str:
        async with asyncio.timeout(5.0):
            await self._reported.wait()
        return self.reports[0]


async def started(harness: Harness, core: RecordingCore) -> tuple[DiscordAdapter, FatalReports]:
    fatal = FatalReports()
    adapter = DiscordAdapter(
        harness.settings(),
        LimitsSettings(),
        report_error=lambda where, error: harness.errors.append((where, error)),
        guild_ready_timeout=0.05,
        start_timeout=5.0,
    )
    await adapter.start(FakeRouter(core, [adapter.surface]), fatal)
    harness.adapters.append(adapter)
    return adapter, fatal


async def test_a_gateway_that_refuses_the_token_later_is_fatal(
    harness: Harness, core: RecordingCore
) -> None:
    _, fatal = await started(harness, core)
    await harness.fake.close_gateway(4004)
    assert (await fatal.first()).startswith("Discord's gateway refused the token (4004")
    assert len(fatal.reports) == 1


async def test_a_connection_closed_behind_the_adapters_back_is_fatal(
    harness: Harness, core: RecordingCore
) -> None:
    adapter, fatal = await started(harness, core)
    await adapter.client.close()
    assert await fatal.first() == "the Discord gateway connection closed"


async def test_a_resumable_drop_is_survived_and_stopping_is_not_fatal(
    harness: Harness, core: RecordingCore
) -> None:
    adapter, fatal = await started(harness, core)
    fake = harness.fake
    await fake.close_gateway(4000)
    await fake.wait_for(
        lambda: fake.resumes and any(s.identified and not s.closed for s in fake.sessions),
        what="a RESUME",
    )
    alice = fake.user("alice")
    await fake.user_message(alice, fake.dm_channel(alice), "still listening?")
    assert (await core.next_event(UserMessage)).text == "still listening?"
    await harness.stop(adapter)
    await asyncio.sleep(0)
    assert fatal.reports == []
