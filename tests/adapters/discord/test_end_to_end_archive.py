"""End to end, the archive on Discord: ``/jobs`` finds a job by a word of its prompt (privately,
with its thumbnail), ``/show`` posts it again in another channel with working buttons (U1 on the
copy starts the right upscale), ℹ️ shows an upscale's parent chain ("Image info" in a message's
menu: the copy's job; users and channels as Discord's mentions, ``<@id>``, ``<#id>``), bad or
foreign ids are refused privately (someone else's job too, in its own channel), and ``/jobs
export`` sends a zip by DM (a private answer says so) whose manifest matches the job (``export`` as
the text's first word works as the option does) — through the real discord.py, the fake Discord,
the real core and the simulator over HTTP."""

from __future__ import annotations

import io
import json
import zipfile
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from simulator.server import RunningSimulator, serve
from simulator.state import SimulatorConfig
from tests.adapters.discord.harness import Harness
from tests.adapters.discord.real_core import (
    QUICK_BUCKET,
    QUICK_WINDOW,
    ephemeral_texts,
    newest,
    real_genbot,
    told,
    with_image,
)
from tests.fakes.discord import FakeChannel, FakeDiscord, FakeMessage
from tests.language import german

pytestmark = pytest.mark.parametrize("fake", [QUICK_BUCKET], indirect=True)


@pytest.fixture
async def sim() -> AsyncIterator[RunningSimulator]:
    async with serve(SimulatorConfig(time_scale=0.003, seed=11)) as running:
        yield running


async def image_with(fake: FakeDiscord, channel: FakeChannel, label: str) -> FakeMessage:
    def found() -> FakeMessage | None:
        return newest(
            fake.bot_messages(channel.id),
            lambda m: with_image(m) and any(b.get("label") == label for b in m.buttons),
        )

    return await fake.wait_for(found, 10.0, f"an image with a {label!r} button in {channel}")


async def test_search_show_u1_on_the_copy_and_info_with_the_parent_chain(
    harness: Harness, sim: RunningSimulator, tmp_path: Path
) -> None:
    fake = harness.fake
    alice, bob = fake.user("alice"), fake.user("bob")
    general, random = fake.channel("general"), fake.channel("random")
    db = tmp_path / "genbot.db"
    async with real_genbot(harness, sim, db, edit_window_seconds=QUICK_WINDOW) as genbot:
        await fake.slash(alice, general, "imagine", {"prompt": "a lighthouse at dusk"})
        grid_message = await image_with(fake, general, "U1")
        grid = await genbot.posted("imagine")

        await fake.slash(alice, general, "jobs", {"text": "Lighthouse"})
        page = await told(fake, alice, 1)
        assert grid.id in page.content and "lighthouse at dusk" in page.content
        assert f" · <#{general.id}> · `{grid.id}`" in page.content, "Discord's channel mention"
        assert [b["label"] for b in page.buttons] == ["Show 1"]
        assert len(page.attachments) == 1, "a thumbnail of the grid"
        await fake.slash(alice, general, "jobs", {"text": "windmill"})
        assert "No finished job matches" in (await told(fake, alice, 2)).content
        await fake.slash(bob, general, "jobs", {"text": "lighthouse"})
        assert "No finished job matches" in (await told(fake, bob, 1)).content, "not hers"

        await fake.slash(alice, random, "show", {"job_id": grid.id})
        copy = await image_with(fake, random, "U1")
        assert copy.id != grid_message.id
        await fake.press(alice, copy, "U1")
        upscale_message = await image_with(fake, random, "Vary (Strong)")
        upscale = await genbot.posted("upscale")
        assert (upscale.parent_job_id, upscale.action, upscale.channel_id) == (
            grid.id,
            "upscale1",
            str(random.id),
        )

        await fake.press(alice, upscale_message, "ℹ️")
        info = (await told(fake, alice, 3)).content
        assert f"job `{upscale.id}`" in info
        assert f"Made from Upscaled #1 of `{grid.id}`" in info.replace("**", "")
        assert "a lighthouse at dusk" in info, "the grid's prompt"
        assert "```\na lighthouse at dusk\n```" in info, "the prompt to copy"
        assert f"Asked by <@{alice.id}> on " in info and info.endswith(f" in <#{random.id}>")

        await fake.message_menu(alice, copy, "Image info")
        on_the_copy = (await told(fake, alice, 4)).content
        assert f"job `{grid.id}`" in on_the_copy and "Made from" not in on_the_copy

        await fake.slash(bob, random, "show", {"job_id": grid.id})
        await fake.slash(bob, general, "show", {"job_id": "nope"})
        await fake.slash(bob, general, "show", {"job_id": grid.id})
        refusals = await fake.wait_for(
            lambda: (
                ephemeral_texts(fake, bob)[1:4] if len(ephemeral_texts(fake, bob)) > 3 else None
            ),
            what="three refusals",
        )
        assert "no record" in refusals[0]
        assert "`nope` is not a job id" in refusals[1]
        assert refusals[2] == "Only the person who started this job can show it again.", (
            "in the grid's own channel, where it is in view, only its requester shows it"
        )
        assert len([m for m in fake.bot_messages(random.id) if with_image(m)]) == 2
        assert len([m for m in fake.bot_messages(general.id) if with_image(m)]) == 1


async def test_the_export_is_a_private_zip_whose_manifest_matches(
    harness: Harness, sim: RunningSimulator, tmp_path: Path
) -> None:
    fake = harness.fake
    alice, general = fake.user("alice"), fake.channel("general")
    db = tmp_path / "genbot.db"
    async with real_genbot(harness, sim, db, edit_window_seconds=QUICK_WINDOW) as genbot:
        await fake.slash(alice, general, "imagine", {"prompt": "a lighthouse at dusk"})
        await image_with(fake, general, "U1")
        grid = await genbot.posted("imagine")

        await fake.slash(alice, general, "jobs", {"text": "export lighthouse"})
        assert "to your direct messages" in (await told(fake, alice, 1)).content
        [answer] = fake.bot_messages(fake.dm_channel(alice).id)
        [file] = answer.attachments
        assert file.filename.endswith(".zip") and "1 job, 1 image" in answer.content
        with zipfile.ZipFile(io.BytesIO(file.data)) as archive:
            manifest = json.loads(archive.read("manifest.json"))
            [entry] = manifest["jobs"]
            assert (entry["id"], entry["prompt"]) == (grid.id, "a lighthouse at dusk")
            assert archive.read(entry["files"][0])[:4] == b"\x89PNG"
            assert sorted(archive.namelist()) == sorted(["manifest.json", *entry["files"]])

        await fake.slash(alice, general, "jobs", {"text": "windmill", "export": True})
        assert "nothing to export" in (await told(fake, alice, 2)).content


async def test_a_german_search_lists_its_filters_under_its_heading(
    harness: Harness, sim: RunningSimulator, tmp_path: Path
) -> None:
    """The heading of a German /jobs page is a whole sentence, and each filter a phrase of its
    own under it (none glued into the heading)."""
    fake = harness.fake
    alice, general = fake.user("alice"), fake.channel("general")
    alice.locale = "de"
    db = tmp_path / "genbot.db"
    async with real_genbot(harness, sim, db, edit_window_seconds=QUICK_WINDOW) as genbot:
        await fake.slash(alice, general, "imagine", {"prompt": "a lighthouse at dusk"})
        await image_with(fake, general, "U1")
        await genbot.posted("imagine")
        options = {"text": "lighthouse", "type": "imagine", "channel": "here", "date": "today"}
        await fake.slash(alice, general, "jobs", options)
        page = await told(fake, alice, 1)

    filters = [
        german("Words: “{words}”", words="lighthouse"),
        german("Type: {type}", type="imagine"),
        german("Channel: {channel}", channel=f"<#{general.id}>"),
        german("Date: {date}", date="today"),
    ]
    heading, searched = page.content.split("\n")[:2]
    assert heading == german("**Your jobs** — newest first")
    assert searched == german("Search: {filters}", filters=" · ".join(filters))
