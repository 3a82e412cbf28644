"""Commands typed as text are routed once, by the core: Slack's slash commands and the
playground's input name the same command (or give the same refusal) for the same text."""

from __future__ import annotations

import pytest

from adapters.slack.inbound import SlashRoute, route_command
from adapters.web.translate import BadInput, parse_slash

TEXTS = [
    "/imagine a fox in the snow --ar 16:9",
    "/diffusion txt2img a red fox --steps 21",
    "/diffusion CONTROLNET a fox --controlnet canny",
    "/diffusion paint a fox",
    "/diffusion",
    "/chat hello\nthere",
]


def on_slack(text: str) -> tuple[str, str] | str:
    slash, _, rest = text.partition(" ")
    route = route_command(slash, rest)
    return (route.name, route.text) if isinstance(route, SlashRoute) else route


def on_the_playground(text: str) -> tuple[str, str] | str:
    try:
        spec, rest = parse_slash(text)
    except BadInput as error:
        return str(error)
    return spec.name, rest


@pytest.mark.parametrize("text", TEXTS)
def test_slack_and_the_playground_route_a_text_the_same_way(text: str) -> None:
    assert on_slack(text) == on_the_playground(text)


def test_the_routes_name_the_command_and_keep_its_text() -> None:
    assert on_slack(TEXTS[1]) == ("diffusion.txt2img", "a red fox --steps 21")
    assert on_the_playground(TEXTS[5]) == ("chat", "hello\nthere")
    assert "use one of: txt2img, img2img, upscale, controlnet" in str(on_slack(TEXTS[3]))
