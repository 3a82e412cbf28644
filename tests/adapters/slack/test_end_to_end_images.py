"""End to end on Slack with the real core: ``/imagine``, its buttons, a restart, bad options,
shared images as references (served by another process).

Signed slash commands and ``block_actions`` go through the real slack-bolt app; the real core
runs the jobs against the simulator over HTTP and posts through the Slack surface.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from bot.kernel import decode_custom_id
from simulator.server import RunningSimulator, serve
from simulator.state import Dialect, SimulatorConfig
from storage import ALL_STATUSES
from tests.adapters.slack.end_to_end import (
    JOB_TIME_SCALE,
    WAIT,
    bot_message_with_button,
    budgeted_fake,
    created,
    slack_genbot,
)
from tests.bot.features.jobs.support import png
from tests.bot.harness import running_genbot
from tests.fakes.slack import FakeSlack
from tests.postgres import PostgresCluster
from tests.resilience.hostile_files import bomb_png, noise_png, truncated_png

pytestmark = pytest.mark.usefixtures("errors_fail_the_test")

PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"


@pytest.fixture
async def fake() -> AsyncIterator[FakeSlack]:
    async with budgeted_fake() as slack:
        yield slack


@pytest.fixture
async def sim(request: pytest.FixtureRequest) -> AsyncIterator[RunningSimulator]:
    dialect: Dialect = getattr(request, "param", "default")
    async with serve(SimulatorConfig(time_scale=JOB_TIME_SCALE, dialect=dialect)) as running:
        yield running


def job_of(button: dict[str, Any]) -> str:
    decoded = decode_custom_id(button["action_id"])
    assert decoded is not None
    return decoded[1]


def methods_after(fake: FakeSlack, start: int) -> list[str]:
    return [c.method for c in fake.calls[start:] if c.method not in ("auth.test", "users.info")]


@pytest.mark.parametrize("sim", ["default", "spec", "variant"], indirect=True)
async def test_imagine_upscale_and_a_follow_up_after_a_restart(
    fake: FakeSlack, sim: RunningSimulator, tmp_path: Path
) -> None:
    db_path = tmp_path / "genbot.db"
    async with slack_genbot(fake, sim, db_path) as bot:
        start = len(fake.calls)
        command = await fake.post_command(
            bot.url, fake.slash_command("/imagine", "a fox --ar 16:9")
        )
        grid = await fake.wait_for(bot_message_with_button(fake, "C1", "U1"), WAIT)

        assert command.status == 200
        (imagine,) = created(sim, "/gen/v2/imagine")
        assert "a fox" in imagine.body["prompt"]
        assert "16:9" in (imagine.body.get("aspect_ratio") or imagine.body["prompt"])
        await fake.wait_for(lambda: len(fake.bot_messages("C1")) == 1 or None, WAIT)
        assert fake.bot_messages("C1") == [grid], "one message: the progress message is deleted"
        calls = [c for c in methods_after(fake, start) if c != "files.info"]
        progress_post = calls.index("chat.postMessage")
        upload = calls.index("files.getUploadURLExternal")
        assert progress_post < upload
        assert calls[upload : upload + 4] == [
            "files.getUploadURLExternal",
            "files.completeUploadExternal",
            "chat.postMessage",
            "chat.delete",
        ]
        progress_call = next(c for c in fake.calls[start:] if c.method == "chat.postMessage")
        assert "a fox" in str(progress_call.args.get("text"))
        (uploaded,) = fake.uploads
        assert uploaded[1].startswith(PNG_SIGNATURE)
        assert grid.image_files == [uploaded[0]] and grid.files == []
        assert fake.files[uploaded[0]].channel is None, "uploaded without a file-share message"
        assert [b["text"]["text"] for b in grid.buttons][:5] == ["U1", "U2", "U3", "U4", "🔄"]
        assert all(len(action_id) <= 255 for action_id in grid.action_ids)

        press = await fake.post_interactive(
            bot.url, fake.block_actions(grid, grid.button("U1")["action_id"])
        )
        upscaled = await fake.wait_for(bot_message_with_button(fake, "C1", "Vary (Strong)"), WAIT)

        assert press.status == 200
        (upscale,) = created(sim, "/gen/v2/upscale")
        assert (upscale.body["origin_task_id"], str(upscale.body["index"])) == (
            imagine.created_id,
            "1",
        )
        assert len(fake.uploads) == 2
        marked = await fake.wait_for(
            lambda: grid.button("U1").get("style") == "primary" and grid, WAIT
        )
        assert marked.image_files == [uploaded[0]], "marking U1 keeps the grid's image"
        # No wait for the delivery to be recorded: a clean stop lets it finish, so the restarted
        # process must not post the upscale again (the upload count below proves it).

    async with slack_genbot(fake, sim, db_path) as restarted:
        vary = upscaled.button("Vary (Strong)")["action_id"]
        press = await fake.post_interactive(restarted.url, fake.block_actions(upscaled, vary))
        varied = await fake.wait_for(lambda: created(sim, "/gen/v2/variation"), WAIT)
        newest_grid = bot_message_with_button(fake, "C1", "U1")
        new_grid = await fake.wait_for(lambda: newest_grid() is not grid and newest_grid(), WAIT)

        assert press.status == 200
        assert (varied[0].body["origin_task_id"], varied[0].body["index"]) == (
            upscale.created_id,
            "high_variation",
        )
        assert new_grid.ts != grid.ts
        assert len(fake.uploads) == 3

    assert len(created(sim, "/gen/v2/")) == 3
    assert fake.ratelimited == []
    assert fake.ephemerals == []


async def test_imagine_with_a_bad_aspect_ratio_is_refused_before_the_provider(
    fake: FakeSlack, sim: RunningSimulator, tmp_path: Path
) -> None:
    async with slack_genbot(fake, sim, tmp_path / "genbot.db") as bot:
        command = await fake.post_command(bot.url, fake.slash_command("/imagine", "--ar 99"))
        (refusal,) = await fake.wait_for(lambda: fake.ephemerals, WAIT)

    assert command.status == 200
    assert (refusal.user, refusal.channel) == ("U1", "C1")
    assert "--ar" in refusal.text
    assert "W:H" in refusal.text or "16:9" in refusal.text, refusal.text
    assert sim.state.requests == []
    assert fake.bot_messages() == []


async def test_hostile_shared_images_are_refused_by_name_before_the_provider(
    fake: FakeSlack, sim: RunningSimulator, tmp_path: Path
) -> None:
    fake.user_says("", files=[("bomb.png", bomb_png())])
    async with slack_genbot(fake, sim, tmp_path / "genbot.db", rehosting=True) as bot:
        await fake.post_command(bot.url, fake.slash_command("/describe", ""))
        (bomb,) = await fake.wait_for(lambda: fake.ephemerals, WAIT)

        fake.user_says("", channel="C2", files=[("fine.png", noise_png(16, 16))])
        fake.user_says("", channel="C2", files=[("cut.png", truncated_png())])
        await fake.post_command(bot.url, fake.slash_command("/blend", "", channel="C2"))
        _, cut = await fake.wait_for(lambda: fake.ephemerals[1:] and fake.ephemerals, WAIT)
        jobs = await bot.store.tracking.list_unfinished_jobs(ALL_STATUSES)

    assert "bomb.png" in bomb.text and "too many pixels" in bomb.text, bomb.text
    assert "cut.png" in cut.text and "truncated or damaged" in cut.text, cut.text
    assert [authorized for _, authorized in fake.downloads] == [True, True, True]
    assert sim.state.requests == []
    assert jobs == [] and fake.bot_messages() == []


async def test_every_cap_is_checked_before_a_shared_image_is_downloaded(
    fake: FakeSlack, sim: RunningSimulator, tmp_path: Path
) -> None:
    """A user over their daily budget gets the budget's answer and nothing is downloaded or
    re-hosted; a user sending more blends at once than their cap of jobs has only as many
    downloaded (before: every blend downloaded and re-hosted its images, then was refused)."""
    image = noise_png(16, 16)
    async with slack_genbot(fake, sim, tmp_path / "genbot.db", rehosting=True) as bot:
        fake.user_says("", channel="C2", files=[("a.png", image), ("b.png", image)])
        await bot.store.ledger.add_usage("slack", "U1", credits=10_000, kind="credits")
        for _ in range(3):
            await fake.post_command(bot.url, fake.slash_command("/blend", "", channel="C2"))
        await fake.wait_for(lambda: fake.ephemerals[2:], WAIT)
        over_budget = [e.text for e in fake.ephemerals]
        downloads_over_budget = len(fake.downloads)
        hosted_over_budget = await bot.store.db.fetch_all("SELECT name FROM hosted_media")

        cap = bot.settings.limits.max_concurrent_jobs_per_user
        fake.users["U3"] = "carol"
        fake.user_says("", user="U3", channel="C3", files=[("a.png", image), ("b.png", image)])
        blends = [fake.slash_command("/blend", "", user="U3", channel="C3") for _ in range(6)]
        await asyncio.gather(*(fake.post_command(bot.url, blend) for blend in blends))
        await fake.wait_for(lambda: len(fake.ephemerals) >= 3 + len(blends) - cap or None, WAIT)
        capped = [e.text for e in fake.ephemerals[3:]]
        await fake.wait_for(lambda: len(fake.bot_messages("C3")) >= cap or None, WAIT)
        jobs = await bot.store.tracking.list_unfinished_jobs(ALL_STATUSES)

    assert len(over_budget) == 3 and all("daily budget" in text for text in over_budget)
    assert downloads_over_budget == 0 and hosted_over_budget == []
    assert len(capped) == len(blends) - cap and all("the cap is" in text for text in capped)
    assert len(jobs) == cap and len(fake.downloads) == 2 * cap


async def test_shared_images_named_in_the_prompt_are_fetched_from_the_other_process(
    fake: FakeSlack, sim: RunningSimulator, tmp_path: Path, postgres: PostgresCluster
) -> None:
    url = postgres.create_schema()
    async with (
        running_genbot(sim, tmp_path / "b.db", storage_url=url, webhooks=True) as other,
        slack_genbot(fake, sim, tmp_path / "a.db", rehosting=True, storage_url=url) as bot,
    ):
        assert bot.jobs.media_host is not None and other.jobs.media_host is not None
        bot.jobs.media_host.base_url = other.settings.webhook.public_url
        fox, style = png(40, 30, "blue"), png(30, 40, "green")
        fake.user_says("", channel="C2", files=[("fox.png", fox)])
        fake.user_says("", channel="C2", files=[("style.png", style)])
        command = fake.slash_command("/imagine", "a fox --sref #2 --sw 300", channel="C2")
        assert (await fake.post_command(bot.url, command)).status == 200
        await fake.wait_for(bot_message_with_button(fake, "C2", "U1"), WAIT * 3)

        (request,) = created(sim, "/gen/v2/imagine")
        words = str(request.body["prompt"]).split()
        assert words[1:4] == ["a", "fox", "--sref"] and words[5:] == ["--sw", "300"]
        hosted = (words[0], words[4])
        served_by_the_other = other.settings.webhook.public_url + "/media/"
        assert all(link.startswith(served_by_the_other) for link in hosted)
        fetched = [(await other.jobs.media.fetch(link)).data for link in hosted]
        assert fetched == [fox, style], "#1 is the image prompt, #2 the style"
        names = tuple(other.jobs.media_host.name_of(link) or "" for link in hosted)
        assert await other.store.media.fetches(names) == dict.fromkeys(names, 2)
        assert [authorized for _, authorized in fake.downloads] == [True, True]


async def test_bad_references_are_refused_privately_without_a_provider_call(
    fake: FakeSlack, sim: RunningSimulator, tmp_path: Path
) -> None:
    async with slack_genbot(fake, sim, tmp_path / "genbot.db", rehosting=True) as bot:
        fake.user_says("", channel="C2", files=[("fox.png", png())])
        fake.user_says("", channel="C2", files=[("notes.txt", b"hello")])
        commands = [
            fake.slash_command("/imagine", text, channel="C2")
            for text in ("a fox --iw 7 #1", "a fox --sref #3", "a fox --cref #2")
        ]
        for command in commands:
            await fake.post_command(bot.url, command)
        await fake.wait_for(lambda: fake.ephemerals[2:], WAIT)
        answers = [[post.body["text"] for post in fake.responses_to(c)] for c in commands]
        assert len(fake.ephemerals) == 3 and all(len(texts) == 1 for texts in answers)
        [weight], [missing], [text_file] = answers
    assert weight == "--iw must be from 0 to 3 (got 7)."
    assert missing.startswith("#3 names image 3 sent with the command, but only 1 came with it")
    assert "#2 names image 2" in text_file, "a text file is no image: only fox.png counts"
    assert created(sim, "/gen/v2/imagine") == []
