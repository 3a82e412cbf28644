"""End to end, images: ``/imagine`` → grid → buttons (also after a restart), idempotent and
guarded presses, input refused before the provider, and reference images served by another
process — through the real discord.py, the fake
Discord, the real core on a tmp SQLite database and the simulator over HTTP."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import AbstractAsyncContextManager
from pathlib import Path

import pytest

from adapters.discord.translator import NAME_CONTEXT
from bot.kernel import CommandError, command, parse_aspect_ratio, pgettext, speaking
from simulator.server import RunningSimulator, serve
from simulator.state import Dialect, RecordedRequest, SimulatorConfig
from tests.adapters.discord.harness import Harness
from tests.adapters.discord.real_core import (
    QUICK_BUCKET,
    QUICK_WINDOW,
    RealGenbot,
    creations,
    ephemeral_texts,
    newest,
    real_genbot,
    real_genbot_on,
    with_image,
)
from tests.bot.features.jobs.support import png
from tests.bot.harness import running_genbot
from tests.fakes.discord import FakeChannel, FakeDiscord, FakeMessage
from tests.language import german, said
from tests.postgres import PostgresCluster

GRID_LABELS = {"U1", "U2", "U3", "U4", "🔄", "V1", "V2", "V3", "V4"}
DEFERRED_UPDATE = 6

pytestmark = pytest.mark.parametrize("fake", [QUICK_BUCKET], indirect=True)


@pytest.fixture
async def sim(request: pytest.FixtureRequest) -> AsyncIterator[RunningSimulator]:
    dialect: Dialect = getattr(request, "param", "default")
    async with serve(SimulatorConfig(time_scale=0.003, seed=11, dialect=dialect)) as running:
        yield running


def genbot_in(
    harness: Harness, sim: RunningSimulator, tmp_path: Path
) -> AbstractAsyncContextManager[RealGenbot]:
    """A genbot on ``tmp_path``'s database, its write window set to the fake's."""
    return real_genbot(harness, sim, tmp_path / "genbot.db", edit_window_seconds=QUICK_WINDOW)


async def result_with(fake: FakeDiscord, channel: FakeChannel, label: str) -> FakeMessage:
    """The newest image the bot posted in ``channel`` that has a ``label`` button."""

    def found() -> FakeMessage | None:
        return newest(
            fake.bot_messages(channel.id),
            lambda m: with_image(m) and any(b.get("label") == label for b in m.buttons),
        )

    return await fake.wait_for(found, 10.0, f"an image with a {label!r} button")


async def imagine(fake: FakeDiscord, prompt: str) -> FakeMessage:
    """Alice runs ``/imagine prompt`` in #general; its grid, once posted."""
    general = fake.channel("general")
    interaction = await fake.slash(fake.user("alice"), general, "imagine", {"prompt": prompt})
    assert await fake.answered(interaction) == 5
    return await result_with(fake, general, "U1")


@pytest.mark.parametrize("sim", ["default", "spec", "variant"], indirect=True)
async def test_imagine_upscale_restart_and_zoom_out_on_the_old_message(
    harness: Harness, sim: RunningSimulator, tmp_path: Path
) -> None:
    fake = harness.fake
    alice, general = fake.user("alice"), fake.channel("general")
    async with genbot_in(harness, sim, tmp_path) as genbot:
        interaction = await fake.slash(alice, general, "imagine", {"prompt": "a red fox"})
        assert await fake.answered(interaction) == 5
        progress = await fake.wait_for(
            lambda: next(iter(fake.bot_messages(general.id)), None), what="a progress message"
        )
        assert not progress.attachments and "a red fox" in progress.text
        assert progress.components_v2 and progress.content == ""
        assert progress.pings.nobody and progress.button("❌ Cancel")
        grid = await result_with(fake, general, "U1")
        assert grid.id == progress.id, "the progress message became the grid"
        assert fake.bot_messages(general.id) == [grid]
        edits = fake.requests_to("PATCH", f"/channels/{general.id}/messages/{grid.id}")
        assert [name for r in edits for name, _, _ in r.files] == ["files[0]"]
        assert [a.content_type for a in grid.attachments] == ["image/png"]
        assert grid.text.startswith(alice.mention)
        assert grid.gallery == [f"attachment://{grid.attachments[0].filename}"]
        assert "❌ Cancel" not in {b.get("label") for b in grid.buttons}
        assert {b.get("label") for b in grid.buttons} >= GRID_LABELS
        assert all(len(custom_id) <= 100 for custom_id in grid.custom_ids)
        imagined = await genbot.posted("imagine")
        assert imagined.result_message_id == str(grid.id)

        press = await fake.press(alice, grid, "U2")
        assert await fake.answered(press) == DEFERRED_UPDATE
        upscale = await result_with(fake, general, "Zoom Out 2x")
        await fake.wait_for(lambda: grid.button("U2")["style"] == 1, what="U2 marked")
        assert grid.gallery == [f"attachment://{grid.attachments[0].filename}"]
        labels = {b.get("label") for b in upscale.buttons}
        assert {"Vary (Strong)", "Vary (Subtle)", "Zoom Out 1.5x", "Custom Zoom"} <= labels
        [upscale_request] = creations(sim, "upscale")
        assert upscale_request.body["origin_task_id"] == imagined.provider_id
        assert str(upscale_request.body["index"]) == "2"
        upscaled = await genbot.posted("upscale")
        assert upscaled.provider_id == upscale_request.created_id

    assert not harness.adapters, "the first genbot is stopped"
    assert fake.rate_limit_hits == 0
    # The new process cannot know the old one's writes in the current window: a 429 may
    # follow, and is waited out.
    async with genbot_in(harness, sim, tmp_path) as restarted:
        press = await fake.press(alice, upscale, "Zoom Out 2x")
        assert await fake.answered(press) == DEFERRED_UPDATE
        zoomed = await fake.wait_for(
            lambda: newest(
                fake.bot_messages(general.id), lambda m: with_image(m) and m.id > upscale.id
            ),
            10.0,
            "the zoomed-out image",
        )
        [outpaint_request] = creations(sim, "outpaint")
        assert outpaint_request.body["origin_task_id"] == upscaled.provider_id
        assert str(outpaint_request.body["zoom_ratio"]) == "2"
        assert {b.get("label") for b in zoomed.buttons} >= GRID_LABELS
        outpainted = await restarted.posted("outpaint")
        assert outpainted.parent_job_id == upscaled.id
        assert outpainted.result_message_id == str(zoomed.id)
    assert not fake.ephemerals_for(alice)


async def test_a_button_pressed_twice_makes_one_job_and_others_are_refused(
    harness: Harness, sim: RunningSimulator, tmp_path: Path
) -> None:
    fake = harness.fake
    alice, bob, general = fake.user("alice"), fake.user("bob"), fake.channel("general")
    async with genbot_in(harness, sim, tmp_path) as genbot:
        grid = await imagine(fake, "a blue heron")
        first = await fake.press(alice, grid, "U1")
        second = await fake.press(alice, grid, "U1")
        assert [await fake.answered(p) for p in (first, second)] == [DEFERRED_UPDATE] * 2
        upscale = await result_with(fake, general, "Zoom Out 2x")
        refusal = await fake.wait_for(
            lambda: ephemeral_texts(fake, alice), what="an answer to the second press"
        )
        assert len(creations(sim, "upscale")) == 1
        assert [j.action for j in await genbot.all_jobs() if j.type == "upscale"] == ["upscale1"]
        assert refusal[0].startswith("You already pressed this")
        assert upscale.text and not upscale.pings.users - {alice.id}

        intruder = await fake.press(bob, grid, "V3")
        assert await fake.answered(intruder) == DEFERRED_UPDATE
        [told] = await fake.wait_for(
            lambda: ephemeral_texts(fake, bob), what="an answer to bob's press"
        )
        assert "Only the person who started this job" in told
        assert await genbot.adapter.intake.drain(5) == 0, "bob's press is handled to its end"
        assert not creations(sim, "variation")
        assert len(fake.bot_messages(general.id)) == 2, "one message per job"
        await fake.wait_for(lambda: grid.button("U1")["style"] == 1, what="U1 marked")
        assert grid.button("V3")["style"] == 2
    assert fake.rate_limit_hits == 0


async def test_an_oversized_diffusion_width_is_refused_before_the_provider(
    harness: Harness, sim: RunningSimulator, tmp_path: Path
) -> None:
    fake = harness.fake
    alice = fake.user("alice")
    async with genbot_in(harness, sim, tmp_path) as genbot:
        interaction = await fake.slash(
            alice, fake.channel("general"), "diffusion txt2img", {"prompt": "a fox", "width": 2048}
        )
        assert await fake.answered(interaction) == 5
        [told] = await fake.wait_for(lambda: ephemeral_texts(fake, alice), what="the refusal")
        assert "width" in told and "1024" in told
        assert not sim.state.requests_to("/diff/")
        assert not await genbot.all_jobs()
        assert not fake.bot_messages(fake.channel("general").id)


async def test_custom_zoom_opens_a_form_for_the_requester_only(
    harness: Harness, sim: RunningSimulator, tmp_path: Path
) -> None:
    fake = harness.fake
    alice, bob, general = fake.user("alice"), fake.user("bob"), fake.channel("general")
    async with genbot_in(harness, sim, tmp_path) as genbot:
        grid = await imagine(fake, "a green frog")
        await fake.press(alice, grid, "U4")
        upscale = await result_with(fake, general, "Custom Zoom")
        upscaled = await genbot.posted("upscale")

        intruder = await fake.press(bob, upscale, "Custom Zoom")
        assert await fake.answered(intruder) == 4
        assert intruder.modal is None
        [told] = ephemeral_texts(fake, bob)
        assert "Only the person who started this job" in told

        opened = await fake.press(alice, upscale, "Custom Zoom")
        assert await fake.answered(opened) == 9
        assert opened.modal is not None and opened.modal["title"] == "Custom Zoom"
        submitted = await fake.submit_modal(opened, {"zoom": "1.8", "prompt": "a frog on a pond"})
        assert await fake.answered(submitted) == 5
        zoomed = await fake.wait_for(
            lambda: newest(
                fake.bot_messages(general.id), lambda m: with_image(m) and m.id > upscale.id
            ),
            10.0,
            "the zoomed-out image",
        )
        [request] = creations(sim, "outpaint")
        assert request.body["origin_task_id"] == upscaled.provider_id
        assert float(request.body["zoom_ratio"]) == 1.8
        assert request.body["prompt"] == "a frog on a pond"
        assert {b.get("label") for b in zoomed.buttons} >= GRID_LABELS
        assert not ephemeral_texts(fake, alice)
    assert fake.rate_limit_hits == 0


async def test_blend_and_describe_ask_for_their_images_in_a_form_with_file_uploads(
    harness: Harness, sim: RunningSimulator, tmp_path: Path
) -> None:
    fake = harness.fake
    alice, general = fake.user("alice"), fake.channel("general")
    async with genbot_in(harness, sim, tmp_path) as genbot:
        blend = await fake.slash(alice, general, "blend", {})
        assert await fake.answered(blend) == 5
        [note] = await fake.wait_for(lambda: fake.ephemerals_for(alice), what="the form offer")
        assert note.content == "Blend images: open the form."
        opened = await fake.press(alice, note, "📎 Open the form")
        assert await fake.answered(opened) == 9
        form = opened.modal
        assert form is not None
        upload = form["components"][0]["component"]
        assert (upload["type"], upload["max_values"]) == (19, 5)

        pictures = [(f"p{i}.png", png(), "image/png") for i in range(2)]
        submitted = await fake.submit_modal(
            opened, {"dimension": "portrait"}, files={"images": pictures}
        )
        assert await fake.answered(submitted) == 5
        await fake.wait_for(lambda: creations(sim, "blend"), what="the blend")
        blended = await genbot.posted("blend")
        [request] = creations(sim, "blend")
        assert len(request.body["image_urls"]) == 2 and request.body["dimension"] == "portrait"
        assert blended.status == "posted"

        describe = await fake.slash(alice, general, "describe", {})
        assert await fake.answered(describe) == 5
        offer = await fake.wait_for(
            lambda: next(
                (m for m in fake.ephemerals_for(alice) if m.content.startswith("Describe")), None
            ),
            what="the describe form's offer",
        )
        opened = await fake.press(alice, offer, "📎 Open the form")
        assert await fake.answered(opened) == 9
        empty = await fake.submit_modal(opened, {})
        assert await fake.answered(empty) == 5
        again = await fake.wait_for(
            lambda: next(
                (m for m in fake.ephemerals_for(alice) if m.content.startswith("⚠️")), None
            ),
            what="the refusal",
        )
        assert again.content == "⚠️ Upload an image, or give its https link."
        assert creations(sim, "describe") == []


def diffusion_requests(sim: RunningSimulator, endpoint: str) -> list[RecordedRequest]:
    return [r for r in sim.state.requests_to(f"/diff/{endpoint}") if r.method == "POST"]


async def test_img2img_and_controlnet_ask_for_their_images_in_a_form_that_keeps_the_options(
    harness: Harness, sim: RunningSimulator, tmp_path: Path
) -> None:
    fake = harness.fake
    alice, general = fake.user("alice"), fake.channel("general")
    picture = [("fox.png", png(), "image/png")]
    async with genbot_in(harness, sim, tmp_path) as genbot:
        command = await fake.slash(
            alice, general, "diffusion img2img", {"prompt": "a fox", "strength": 0.6, "seed": 7}
        )
        assert await fake.answered(command) == 5
        [note] = await fake.wait_for(lambda: fake.ephemerals_for(alice), what="the form offer")
        assert note.content == "Image to image: open the form."
        opened = await fake.press(alice, note, "📎 Open the form")
        assert await fake.answered(opened) == 9
        assert opened.modal is not None
        upload, prompt, flags = (c["component"] for c in opened.modal["components"])
        assert (upload["type"], upload["custom_id"], upload["required"]) == (19, "init_image", True)
        assert (prompt["value"], flags["value"]) == ("a fox", "--strength 0.6 --seed 7")

        submitted = await fake.submit_modal(
            opened,
            {"prompt": "a fox in winter", "options": "--strength 0.4 --seed 7"},
            files={"init_image": picture},
        )
        assert await fake.answered(submitted) == 5
        [request] = await fake.wait_for(
            lambda: diffusion_requests(sim, "img2img"), what="the img2img request"
        )
        assert request.body["prompt"] == "a fox in winter"
        assert (request.body["strength"], request.body["seed"]) == (0.4, 7)
        assert str(request.body["init_image"]).endswith("/fox.png")
        assert (await genbot.posted("img2img")).status == "posted"

        command = await fake.slash(
            alice, general, "diffusion controlnet", {"prompt": "a fox", "controlnet_model": "canny"}
        )
        offer = await fake.wait_for(
            lambda: newest(
                fake.ephemerals_for(alice), lambda m: m.content.startswith("ControlNet")
            ),
            what="the controlnet form's offer",
        )
        opened = await fake.press(alice, offer, "📎 Open the form")
        assert await fake.answered(opened) == 9
        assert opened.modal is not None
        ids = [c["component"]["custom_id"] for c in opened.modal["components"]]
        assert ids == ["init_image", "control_image", "mask_image", "prompt", "options"]
        files = {"init_image": picture, "control_image": [("edges.png", png(), "image/png")]}
        refused = await fake.submit_modal(opened, {}, files=files)
        assert await fake.answered(refused) == 5
        warning = await fake.wait_for(
            lambda: newest(fake.ephemerals_for(alice), lambda m: m.content.startswith("⚠️")),
            what="the refusal",
        )
        assert "--model" in warning.content and not diffusion_requests(sim, "controlnet")

        reopened = await fake.press(alice, warning, "✏️ Edit and resubmit")
        assert await fake.answered(reopened) == 9
        assert reopened.modal is not None
        shown = {c["component"]["custom_id"]: c["component"] for c in reopened.modal["components"]}
        assert shown["options"]["value"] == "--controlnet canny"
        resubmitted = await fake.submit_modal(
            reopened, {"options": "--controlnet canny --model sd15"}, files=files
        )
        assert await fake.answered(resubmitted) == 5
        [request] = await fake.wait_for(
            lambda: diffusion_requests(sim, "controlnet"), what="the controlnet request"
        )
        assert (request.body["model_id"], request.body["controlnet_model"]) == ("sd15", "canny")
        assert str(request.body["control_image"]).endswith("/edges.png")
        assert "mask_image" not in request.body


async def test_an_image_prompt_and_a_style_reference_are_fetched_from_the_other_process(
    harness: Harness, sim: RunningSimulator, tmp_path: Path, postgres: PostgresCluster
) -> None:
    fake = harness.fake
    alice, general = fake.user("alice"), fake.channel("general")
    url = postgres.create_schema()
    async with (
        running_genbot(sim, tmp_path / "b.db", storage_url=url, webhooks=True) as other,
        real_genbot_on(
            harness, sim, tmp_path / "a.db", url, webhooks=True, edit_window_seconds=QUICK_WINDOW
        ) as genbot,
    ):
        assert genbot.jobs.media_host is not None and other.jobs.media_host is not None
        genbot.jobs.media_host.base_url = other.settings.webhook.public_url
        interaction = await fake.slash(
            alice,
            general,
            "imagine",
            {"prompt": "a fox --sw 300"},
            attachments={
                "image1": ("fox.png", png(40, 30, "blue"), "image/png"),
                "style1": ("style.png", png(30, 40, "green"), "image/png"),
            },
        )
        assert await fake.answered(interaction) == 5
        await fake.wait_for(
            lambda: [r for r in creations(sim, "imagine") if r.created_id], what="the imagine"
        )
        imagined = await genbot.posted("imagine", timeout=30)
        grid = await fake.wait_for(
            lambda: next((m for m in fake.bot_messages(general.id) if with_image(m)), None)
        )

        [request] = [r for r in creations(sim, "imagine") if r.created_id]
        words = str(request.body["prompt"]).split()
        assert words[1:4] == ["a", "fox", "--sref"] and words[5:] == ["--sw", "300"]
        hosted = (words[0], words[4])
        served_by_the_other = other.settings.webhook.public_url + "/media/"
        assert all(link.startswith(served_by_the_other) for link in hosted)
        names = tuple(other.jobs.media_host.name_of(link) or "" for link in hosted)
        assert await other.store.media.fetches(names) == dict.fromkeys(names, 1)
        assert imagined.prompt == request.body["prompt"]
        assert "ignored" not in grid.text


async def test_in_german_commands_help_settings_a_grid_its_buttons_and_a_refusal(
    harness: Harness, sim: RunningSimulator, tmp_path: Path
) -> None:
    """A German server (its primary language) and a German Discord client: the commands are
    registered with their German names, and /help, /settings, the grid, its buttons, the upscale's
    buttons and a refusal speak German."""
    fake = harness.fake
    fake.guild_locale = "de"
    alice, general = fake.user("alice"), fake.channel("general")
    alice.locale = "de"

    def told(text: str) -> bool:
        return any(text in shown for shown in ephemeral_texts(fake, alice))

    async with genbot_in(harness, sim, tmp_path):
        synced = {c["name"]: c for c in fake.guild_commands[fake.guild_id]}
        with speaking("de"):
            named = {name: pgettext(NAME_CONTEXT, name) for name in synced if name.islower()}
        german_names = {name: local for name, local in named.items() if local != name}
        assert german_names, "the catalog gives some command a German name"
        for name, local in german_names.items():
            assert synced[name]["name_localizations"]["de"] == local
        help_described = german(command("help").description)
        assert synced["help"]["description_localizations"]["de"] == help_described

        await fake.slash(alice, general, "help", {})
        described = german(command("imagine").description)
        await fake.wait_for(lambda: told(described), what="/help in German")

        await fake.slash(alice, general, "settings", {"aspect_ratio": "16:9"})
        change = said("de", "{setting} → {value}", setting=german("aspect ratio"), value="16:9")
        saved = german("Saved your defaults: {changes}.", changes=change)
        await fake.wait_for(lambda: told(saved), what="/settings in German")

        grid = await imagine(fake, "a red fox")
        assert german("Imagined") in grid.text
        await fake.press(alice, grid, "U1")
        upscale = await result_with(fake, general, german("Vary (Strong)"))
        assert german("Upscaled") in upscale.text

        with speaking("de"), pytest.raises(CommandError) as refused:
            parse_aspect_ratio("99")
        await fake.slash(alice, general, "imagine", {"prompt": "a fox", "aspect_ratio": "99"})
        await fake.wait_for(lambda: told(str(refused.value)), what="the refusal in German")
        assert not told("must look like")


async def test_a_follow_up_the_service_refuses_is_told_to_its_presser_alone(
    harness: Harness, sim: RunningSimulator, tmp_path: Path
) -> None:
    """qa: the service refusing a follow-up in its answer's body (V2 on a grid whose task it
    no longer has) is answered privately to the presser: no card saying so is left in the
    channel, and the grid stays where it was."""
    fake = harness.fake
    alice, general = fake.user("alice"), fake.channel("general")
    async with genbot_in(harness, sim, tmp_path) as genbot:
        grid = await imagine(fake, "a red fox")
        imagined = await genbot.posted("imagine")
        assert imagined.provider_id is not None
        del sim.state.tasks[imagined.provider_id]
        press = await fake.press(alice, grid, "V2")
        assert await fake.answered(press) == DEFERRED_UPDATE
        [told] = await fake.wait_for(
            lambda: ephemeral_texts(fake, alice) or None, what="the refusal, privately"
        )
        assert told.startswith("The service refused V2 on this image")
        [refused] = [job for job in await genbot.all_jobs() if job.type == "variation"]
        assert (refused.status, refused.progress_message_id) == ("create_failed", None)
        assert [m.id for m in fake.bot_messages(general.id)] == [grid.id]
        assert grid.gallery and {"U1", "V1"} <= {b.get("label") for b in grid.buttons}
