"""What each platform's surface can do beyond the :class:`bot.kernel.surface.Surface` every one has
is declared as protocols, and stays visible through the core's metering wrapper."""

from __future__ import annotations

from pydantic import SecretStr
from slack_sdk.web.async_client import AsyncWebClient

from adapters.discord.adapter import DiscordAdapter
from adapters.discord.settings import DiscordSettings
from adapters.slack.settings import SlackSettings
from adapters.slack.surface import SlackSurface
from adapters.web.adapter import WebAdapter
from adapters.web.settings import WebSettings
from bot.kernel import (
    DeletesMessages,
    FindsKeyedPosts,
    LimitsSettings,
    LinksMessages,
    NamesCommands,
    PublishesHome,
    Reposts,
    SendsPrivately,
    ShowsActivity,
    StreamsNatively,
    Surface,
)

CAPABILITIES: dict[str, type] = {
    "keyed posts": FindsKeyedPosts,
    "delete": DeletesMessages,
    "link": LinksMessages,
    "native streams": StreamsNatively,
    "status line": ShowsActivity,
    "own command names": NamesCommands,
    "home tab": PublishesHome,
    "repost": Reposts,
    "private messages": SendsPrivately,
}


def capabilities(surface: Surface) -> set[str]:
    return {name for name, protocol in CAPABILITIES.items() if isinstance(surface, protocol)}


def test_each_platform_declares_what_it_can_do_and_metering_keeps_it_visible() -> None:
    discord = DiscordAdapter(DiscordSettings(token=SecretStr("x")), LimitsSettings()).surface
    slack = SlackSurface(
        AsyncWebClient(token="x"),
        profile=SlackSettings().platform_profile(),
        bot_token="x",
        api_url="http://127.0.0.1:9/",
    )
    web = WebAdapter(WebSettings()).surface
    expected: dict[str, tuple[Surface, set[str]]] = {
        "discord": (discord, {"delete", "link", "private messages", "own command names"}),
        "slack": (slack, set(CAPABILITIES)),
        "web": (web, {"keyed posts", "delete", "link", "private messages"}),
    }
    for platform, (surface, can) in expected.items():
        assert capabilities(surface) == can, platform
