"""genbot's App Home end to end: the tab published on ``app_home_opened`` with the user's
defaults, usage and last images (thumbnails of the files Slack holds), and its buttons: the
settings form, and a result posted again with buttons that work — also after a restart."""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from bot.features.home import HOME_INTERVAL_SECONDS, RECENT_JOBS
from bot.kernel import CommandError, command, decode_custom_id, parse_aspect_ratio, speaking
from bot.refs import NO_JOB
from simulator.server import RunningSimulator, serve
from simulator.state import SimulatorConfig
from tests.adapters.slack.end_to_end import (
    JOB_TIME_SCALE,
    WAIT,
    SlackGenbot,
    bot_message_with_button,
    created,
    slack_genbot,
)
from tests.fakes.slack import FakeSlack
from tests.language import german, said

pytestmark = pytest.mark.usefixtures("errors_fail_the_test")

STORM = 200


@pytest.fixture
async def sim() -> AsyncIterator[RunningSimulator]:
    async with serve(SimulatorConfig(time_scale=JOB_TIME_SCALE)) as running:
        yield running


def texts_of(view: dict[str, Any]) -> str:
    return "\n".join(
        b["text"]["text"] for b in view["blocks"] if b.get("type") in ("section", "header")
    )


def buttons_of(view: dict[str, Any]) -> dict[str, str]:
    """Button label → action id, over sections' accessories and actions blocks."""
    found = {}
    for block in view["blocks"]:
        for element in [block.get("accessory"), *(block.get("elements") or [])]:
            if isinstance(element, dict) and element.get("type") == "button":
                found[element["text"]["text"]] = element["action_id"]
    return found


def reposts_of(view: dict[str, Any]) -> list[str]:
    """The action id of every "Post again" button, in order."""
    return [
        element["action_id"]
        for block in view["blocks"]
        for element in [block.get("accessory"), *(block.get("elements") or [])]
        if isinstance(element, dict)
        and element.get("type") == "button"
        and element["text"]["text"] == "Post again"
    ]


def thumbnails_of(view: dict[str, Any]) -> list[str]:
    return [
        b["accessory"]["slack_file"]["id"]
        for b in view["blocks"]
        if isinstance(b.get("accessory"), dict) and b["accessory"].get("type") == "image"
    ]


async def settled_grid(fake: FakeSlack, bot: SlackGenbot, channel: str) -> None:
    """Wait for the grid in ``channel`` and for its job to be recorded as posted (the Home lists
    posted jobs; the message shows a moment before the job's row says so)."""
    grid = await fake.wait_for(bot_message_with_button(fake, channel, "U1"), WAIT)
    decoded = decode_custom_id(grid.button("U1")["action_id"])
    assert decoded is not None
    await bot.settled(decoded[1])


async def open_home(fake: FakeSlack, bot: SlackGenbot, published: int) -> dict[str, Any]:
    await fake.post_event(bot.url, fake.event_callback(fake.app_home_opened_event("U1", "D1")))
    await fake.wait_for(lambda: len(fake.calls_to("views.publish")) > published or None, WAIT)
    home = fake.home_of("U1")
    assert home is not None
    return home


async def test_the_home_shows_defaults_usage_and_images_and_posts_a_result_again(
    sim: RunningSimulator, tmp_path: Path
) -> None:
    db_path = tmp_path / "genbot.db"
    async with FakeSlack() as fake:
        async with slack_genbot(fake, sim, db_path) as bot:
            await fake.post_command(bot.url, fake.slash_command("/imagine", "a heron at dusk"))
            grid = await fake.wait_for(bot_message_with_button(fake, "C1", "U1"), WAIT)
            decoded = decode_custom_id(grid.button("U1")["action_id"])
            assert decoded is not None
            await bot.settled(decoded[1])

            home = await open_home(fake, bot, 0)
            settings = await fake.post_interactive(
                bot.url, fake.home_action("U1", buttons_of(home)["Change my defaults"])
            )
            form = await fake.wait_for(lambda: fake.views, WAIT)

        (uploaded, _) = fake.uploads[0]
        shown = texts_of(home)
        assert "Chat model" in shown and "genbot's default" in shown
        assert "image credits" in shown and "heron at dusk" in shown
        assert thumbnails_of(home) == [uploaded]
        assert settings.status == 200 and form[0].callback_id.startswith("gb:settings")

        async with slack_genbot(fake, sim, db_path) as restarted:
            home = await open_home(fake, restarted, 1)
            assert thumbnails_of(home) == [uploaded], "found again from the result's metadata"
            await fake.post_interactive(
                restarted.url, fake.home_action("U1", buttons_of(home)["Post again"])
            )
            copy = await fake.wait_for(bot_message_with_button(fake, "D1", "U1"), WAIT)
            await fake.post_interactive(
                restarted.url, fake.block_actions(copy, copy.button("U2")["action_id"])
            )
            (upscale,) = await fake.wait_for(lambda: created(sim, "/gen/v2/upscale"), WAIT)

    images = [b for b in copy.blocks if b.get("type") == "image"]
    assert [i["slack_file"]["id"] for i in images] == [uploaded], "the same file, not re-uploaded"
    assert len(fake.uploads) == 1
    assert "heron at dusk" in copy.text
    assert str(upscale.body["index"]) == "2"
    assert fake.ephemerals == []


async def test_a_home_with_no_images_says_how_to_make_one(
    sim: RunningSimulator, tmp_path: Path
) -> None:
    async with FakeSlack() as fake, slack_genbot(fake, sim, tmp_path / "g.db") as bot:
        home = await open_home(fake, bot, 0)
        await fake.post_event(
            bot.url, fake.event_callback(fake.app_home_opened_event("U1", "D1", tab="messages"))
        )

    assert "/imagine" in texts_of(home)
    assert set(buttons_of(home)) == {"Change my defaults"}
    assert len(fake.calls_to("views.publish")) == 1, "the Messages tab publishes nothing"


async def test_changing_my_defaults_from_the_home_shows_them_there(
    sim: RunningSimulator, tmp_path: Path
) -> None:
    async with FakeSlack() as fake, slack_genbot(fake, sim, tmp_path / "g.db") as bot:
        home = await open_home(fake, bot, 0)
        await fake.post_interactive(
            bot.url, fake.home_action("U1", buttons_of(home)["Change my defaults"])
        )
        (form,) = await fake.wait_for(lambda: fake.views, WAIT)
        await fake.post_interactive(bot.url, fake.view_submission(form, {"model": "llm-4"}))
        await fake.wait_for(lambda: len(fake.calls_to("views.publish")) > 1 or None, WAIT)
        redrawn = fake.home_of("U1")

    assert redrawn is not None and "llm-4" in texts_of(redrawn)
    assert "llm-4" not in texts_of(home)


async def test_the_home_lists_only_the_last_ten_images(
    sim: RunningSimulator, tmp_path: Path
) -> None:
    prompts = [f"heron {chr(ord('a') + n) * 3}" for n in range(RECENT_JOBS + 1)]
    async with FakeSlack() as fake, slack_genbot(fake, sim, tmp_path / "g.db") as bot:
        for n, prompt in enumerate(prompts):
            command = fake.slash_command("/imagine", prompt, channel=f"C{n}")
            await fake.post_command(bot.url, command)
            await settled_grid(fake, bot, f"C{n}")
        home = await open_home(fake, bot, 0)

    shown = texts_of(home)
    assert len(reposts_of(home)) == RECENT_JOBS
    assert all(prompt in shown for prompt in prompts[1:])
    assert prompts[0] not in shown, "the oldest image is left out"


async def test_someone_elses_image_is_not_posted_again_from_the_home(
    sim: RunningSimulator, tmp_path: Path
) -> None:
    async with FakeSlack() as fake, slack_genbot(fake, sim, tmp_path / "g.db") as bot:
        await fake.post_command(bot.url, fake.slash_command("/imagine", "a heron at dusk"))
        await settled_grid(fake, bot, "C1")
        home = await open_home(fake, bot, 0)
        (repost,) = reposts_of(home)
        fake.users["U3"] = "carol"
        pressed = fake.home_action("U1", repost)
        pressed["user"] = {**pressed["user"], "id": "U3", "username": "carol"}
        await fake.post_interactive(bot.url, pressed)
        refusal = await fake.wait_for(lambda: fake.ephemerals, WAIT)

    assert refusal[0].user == "U3" and refusal[0].text == NO_JOB
    assert fake.bot_messages("D1") == [], "nothing posted again"


async def test_a_storm_of_home_opens_is_drawn_a_few_times_and_a_rate_limit_is_no_error(
    sim: RunningSimulator, tmp_path: Path
) -> None:
    """200 ``app_home_opened`` of one user (as fast as they arrive) make a few
    ``views.publish`` calls, not 200; a publish Slack rate-limits is drawn again after the wait
    it names and logged without an error (the autouse fixture fails on any ERROR)."""
    async with FakeSlack() as fake, slack_genbot(fake, sim, tmp_path / "g.db") as bot:
        opened = time.monotonic()
        for _ in range(STORM):
            event = fake.event_callback(fake.app_home_opened_event("U1", "D1"))
            assert (await fake.post_event(bot.url, event)).status == 200
        lasted = time.monotonic() - opened
        await settled(fake)
        storm = len(fake.calls_to("views.publish"))

        fake.fail_next("views.publish", "ratelimited", status=429)
        await fake.post_event(bot.url, fake.event_callback(fake.app_home_opened_event("U1", "D1")))
        await fake.wait_for(lambda: len(fake.calls_to("views.publish")) >= storm + 2, WAIT)
        answers = [call.status for call in fake.calls_to("views.publish")[storm:]]

    assert 1 <= storm <= lasted / HOME_INTERVAL_SECONDS + 2, (storm, lasted)
    assert answers == [429, 200]
    assert fake.home_of("U1") is not None


async def settled(fake: FakeSlack) -> None:
    """Wait until no ``views.publish`` came for twice the home's interval."""
    count = -1
    while count != len(fake.calls_to("views.publish")):
        count = len(fake.calls_to("views.publish"))
        await asyncio.sleep(2 * HOME_INTERVAL_SECONDS)


async def test_in_german_help_settings_a_grid_its_buttons_a_refusal_and_the_home(
    sim: RunningSimulator, tmp_path: Path
) -> None:
    """A user whose Slack speaks German: /genbot help, /genbot settings, the grid and its buttons,
    a refusal and their Home speak German (Slack's commands keep their English names)."""
    async with FakeSlack() as fake:
        fake.locales["U1"] = "de-DE"

        def told(text: str) -> bool:
            return any(text in shown.text for shown in fake.ephemerals)

        async with slack_genbot(fake, sim, tmp_path / "g.db") as bot:
            await fake.post_command(bot.url, fake.slash_command("/genbot", "help"))
            described = german(command("imagine").description)
            await fake.wait_for(lambda: told(described) or None, WAIT)

            await fake.post_command(bot.url, fake.slash_command("/genbot", "settings --ar 16:9"))
            ratio = german("aspect ratio")
            change = said("de", "{setting} → {value}", setting=ratio, value="16:9")
            saved = german("Saved your defaults: {changes}.", changes=change)
            await fake.wait_for(lambda: told(saved) or None, WAIT)

            await fake.post_command(bot.url, fake.slash_command("/imagine", "a heron at dusk"))
            grid = await fake.wait_for(bot_message_with_button(fake, "C1", "U1"), WAIT)
            assert german("Imagined") in grid.text
            await fake.post_interactive(
                bot.url, fake.block_actions(grid, grid.button("U1")["action_id"])
            )
            strong = german("Vary (Strong)")
            await fake.wait_for(bot_message_with_button(fake, "C1", strong), WAIT)

            with speaking("de"), pytest.raises(CommandError) as refused:
                parse_aspect_ratio("99", "--ar")
            await fake.post_command(bot.url, fake.slash_command("/imagine", "a fox --ar 99"))
            await fake.wait_for(lambda: told(str(refused.value)) or None, WAIT)

            home = await open_home(fake, bot, 0)

    shown = texts_of(home)
    assert german("Chat model") in shown and german("genbot's default") in shown
    assert german("Change my defaults") in buttons_of(home)


async def test_the_home_shows_the_language_and_its_form_changes_it(
    sim: RunningSimulator, tmp_path: Path
) -> None:
    """A German Slack user's Home says genbot speaks German on its own (and writes their
    temperature with a decimal comma); the settings form it opens has the language, and choosing
    Japanese there redraws the Home in Japanese, as theirs."""
    async with FakeSlack() as fake, slack_genbot(fake, sim, tmp_path / "g.db") as bot:
        fake.locales["U1"] = "de-DE"
        await fake.post_command(bot.url, fake.slash_command("/genbot", "settings --temp 0.7"))
        await fake.wait_for(lambda: fake.ephemerals or None, WAIT)
        home = await open_home(fake, bot, 0)
        change = buttons_of(home)[german("Change my defaults")]
        await fake.post_interactive(bot.url, fake.home_action("U1", change))
        (form,) = await fake.wait_for(lambda: fake.views, WAIT)
        await fake.post_interactive(bot.url, fake.view_submission(form, {"language": "ja"}))
        await fake.wait_for(lambda: len(fake.calls_to("views.publish")) > 1 or None, WAIT)
        redrawn = fake.home_of("U1")

    shown = texts_of(home)
    assert home_line("de", "Language", "Deutsch", "automatic") in shown
    assert home_line("de", "Temperature", "0,7", "yours") in shown, "a decimal comma"
    option = command("settings").option("language")
    assert option is not None
    language = next(b for b in form.view["blocks"] if b.get("block_id") == "language")
    assert language["label"]["text"] == german(option.description)[:45]
    assert redrawn is not None
    assert home_line("ja", "Language", "日本語", "yours") in texts_of(redrawn)


def home_line(tag: str, setting: str, value: str, source: str) -> str:
    """A setting on the Home as genbot writes it in language ``tag``."""
    return said(
        tag,
        "• {setting}: `{value}` _({source})_",
        setting=said(tag, setting),
        value=value,
        source=said(tag, source),
    )
