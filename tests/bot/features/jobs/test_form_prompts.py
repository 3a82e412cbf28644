"""A prompt typed in a form (Remix, Custom Zoom, a describe pick, Use as reference) is read as
``/imagine``'s is: saved options and the suffix, ``{…}`` choices, references and parameters,
moderation — the real core against the simulator over HTTP."""

from __future__ import annotations

from pathlib import Path

from storage import ModerationRule, SavedOption
from tests.bot.features.jobs.support import bodies, press, run_command
from tests.bot.features.jobs.test_region_preview import PreviewingPlatform
from tests.bot.harness import Genbot, harness
from tests.bot.test_router import moderated
from tests.fakes.platform import Actor, PostedMessage

NEON = "--style raw --s 250"


async def remix_form_of(bot: Genbot, alice: Actor) -> tuple[str, PostedMessage]:
    """Alice's grid of "a red fox" (Remix on, ``--neon`` saved, her suffix "at dusk"), and the
    provider's id of its task."""
    await bot.store.settings.set_scope_settings("user", "fake", "alice", remix=True)
    await bot.store.preferences.set_option("fake", "alice", SavedOption("neon", NEON))
    await bot.store.preferences.set_option("fake", "alice", SavedOption("+suffix", "at dusk"))
    job, grid = await run_command(bot, alice, "imagine", prompt="a red fox")
    return job.provider_id or "", grid


async def test_a_remix_prompt_is_read_as_an_imagine_prompt(tmp_path: Path) -> None:
    async with harness(tmp_path) as bot:
        alice = bot.actor()
        origin, grid = await remix_form_of(bot, alice)
        refused = {
            "a {blue, green} fox": "A form starts one job, and these {…} choices make 2 "
            "prompts: keep one choice, or run `/imagine` to start one job per choice.",
            "a fox --repeat 2": "A form starts one job, so its prompt takes no --repeat: run "
            "`/imagine` to start several.",
            "a fox --nope": "--nope is not one of your saved options (yours are --neon; see "
            "`/prefer option list`) nor a parameter genbot knows. Save it with `/prefer option "
            "set nope` <options>, or quote it if it is part of the prompt.",
            "a fox --iw 2": "--iw weighs image prompts, and this prompt has none.",
            "a fox --ar {16:9, 1:1}": "--ar cannot vary with {…} choices: the jobs of one "
            "command share one aspect ratio. Give one ratio (like --ar 16:9) outside the "
            "braces, and run the command again for another.",
        }
        for typed, why in refused.items():
            await alice.press(grid, "V1")
            _, modal = bot.platform.modals[-1]
            await alice.submit(modal, prompt=typed)
            _, again = bot.platform.modals[-1]
            assert again.error_of("prompt") == why, typed
        assert bodies(bot.sim, "/gen/v2/variation") == []

        await alice.press(grid, "V1")
        _, modal = bot.platform.modals[-1]
        await alice.submit(modal, prompt="a {blue, blue} fox --neon --repeat 1")
        varied = await bot.latest_job()
        await bot.result(varied.id)
        assert bodies(bot.sim, "/gen/v2/variation") == [
            {"origin_task_id": origin, "index": "1", "prompt": f"a blue fox {NEON}"}
        ], "the saved option put in, the one distinct choice read, --repeat 1 taken out, no suffix"
        assert varied.prompt == f"a blue fox {NEON}"


async def test_a_saved_option_put_in_a_form_is_screened(tmp_path: Path) -> None:
    async with harness(tmp_path, screen=moderated) as bot:
        alice = bot.actor()
        _, grid = await remix_form_of(bot, alice)
        await bot.store.preferences.set_option("fake", "alice", SavedOption("dark", "gory night"))
        await bot.store.moderation.add_rule("fake", "w1", ModerationRule("gore", "gory"), "root")
        await alice.press(grid, "🔄")
        _, modal = bot.platform.modals[-1]
        await alice.submit(modal, prompt="a red fox --dark")

        assert bodies(bot.sim, "/gen/v2/reroll") == [], "refused as the text put in, typed"
        [refusal] = bot.platform.ephemerals_for("alice")
        assert "**gore**" in refusal


async def test_what_braces_expand_into_is_screened_on_imagine_and_on_a_form(
    tmp_path: Path,
) -> None:
    async with harness(tmp_path, screen=moderated) as bot:
        alice = bot.actor()
        _, grid = await remix_form_of(bot, alice)
        rule = ModerationRule("gore", r"\bbloodbath\b", pattern=True)
        await bot.store.moderation.add_rule("fake", "w1", rule, "root")
        await alice.press(grid, "V1")
        _, modal = bot.platform.modals[-1]
        await alice.submit(modal, prompt="a {blood}bath scene")
        await bot.actor("bob").command("imagine", prompt="a blood{bath} scene")

        assert bodies(bot.sim, "/gen/v2/variation") == [], "the form's prompt is sent expanded"
        assert len(bodies(bot.sim, "/gen/v2/imagine")) == 1, "only the grid; one job, no preview"
        [refused_form] = bot.platform.ephemerals_for("alice")
        [refused_command] = bot.platform.ephemerals_for("bob")
        assert "**gore**" in refused_form
        assert "**gore**" in refused_command


async def test_a_stored_prompt_with_braces_runs_from_its_form_as_it_is(tmp_path: Path) -> None:
    async with harness(tmp_path) as bot:
        alice = bot.actor()
        await bot.store.settings.set_scope_settings("user", "fake", "alice", remix=True)
        stored = "a sign reading {OPEN, CLOSED} and {OPEN}, a \\ slash"
        typed = "a sign reading \\{OPEN, CLOSED\\} and \\{OPEN\\}, a \\\\ slash"
        job, grid = await run_command(bot, alice, "imagine", prompt=typed)
        assert job.prompt == stored
        for button, edit in (("V1", ""), ("V2", " at night")):
            await alice.press(grid, button)
            _, modal = bot.platform.modals[-1]
            [field] = [field for field in modal.fields if field.id == "prompt"]
            await alice.submit(modal, prompt=field.default + edit)
            varied = await bot.latest_job()
            await bot.result(varied.id)
            assert varied.prompt == stored + edit
        assert [body.get("prompt") for body in bodies(bot.sim, "/gen/v2/variation")] == [
            None,
            stored + " at night",
        ], "unchanged: the parent's prompt (none sent); edited: sent with its braces"


async def test_a_describe_pick_and_a_custom_zoom_put_the_saved_options_in(tmp_path: Path) -> None:
    async with harness(tmp_path) as bot:
        alice = bot.actor()
        __, grid = await remix_form_of(bot, alice)
        up_job, upscale = await press(bot, alice, grid, "U1")
        await alice.press(upscale, "Custom Zoom")
        _, zoom = bot.platform.modals[-1]
        await alice.submit(zoom, zoom="1.5", prompt="a wider fox --neon")
        await bot.result((await bot.latest_job()).id)
        assert bodies(bot.sim, "/gen/v2/outpaint") == [
            {
                "origin_task_id": up_job.provider_id,
                "zoom_ratio": "1.5",
                "prompt": f"a wider fox {NEON}",
            }
        ]

        _, described = await run_command(
            bot, alice, "describe", url="https://files.example.com/cat.png"
        )
        await alice.press(described, "1")
        _, pick = bot.platform.modals[-1]
        await alice.submit(pick, prompt="a {grey} cat --neon")
        await bot.result((await bot.latest_job()).id)
        last = bodies(bot.sim, "/gen/v2/imagine")[-1]
        assert last["prompt"] == f"a grey cat {NEON} at dusk", "a new prompt: the suffix too"


async def test_a_previewed_vary_region_runs_with_the_saved_options_put_in(tmp_path: Path) -> None:
    platform = PreviewingPlatform()
    async with harness(tmp_path, platform=platform) as bot:
        alice = bot.actor()
        __, grid = await remix_form_of(bot, alice)
        up_job, upscale = await press(bot, alice, grid, "U1")
        await alice.press(upscale, "Vary (Region)")
        _, modal = platform.modals[-1]
        await alice.submit(modal, area="left half", prompt="a blue hat --neon")
        [(origin, preview)] = platform.private
        as_message = PostedMessage(upscale.ref, preview, origin)

        await alice.press(as_message, "✏️ Edit")
        _, again = platform.modals[-1]
        defaults = {f.id: f.default for f in again.fields}
        assert defaults["prompt"] == "a blue hat --neon", "as typed, to edit"
        await alice.press(as_message, "▶️ Run")
        await bot.result((await bot.latest_job()).id)
        (sent,) = bodies(bot.sim, "/gen/v2/inpaint")
        assert sent["origin_task_id"] == up_job.provider_id
        assert sent["prompt"] == f"a blue hat {NEON}"


async def test_a_saved_option_screen_reads_the_form_prompt_as_it_is_sent(tmp_path: Path) -> None:
    async with harness(tmp_path, screen=moderated) as bot:
        alice = bot.actor()
        origin, grid = await remix_form_of(bot, alice)
        rule = ModerationRule("gore", r"\bbloodbath\b", pattern=True)
        await bot.store.moderation.add_rule("fake", "w1", rule, "root")
        await alice.press(grid, "V1")
        _, modal = bot.platform.modals[-1]
        await alice.submit(modal, prompt="a \\{blood\\}bath sign --neon")
        varied = await bot.latest_job()
        await bot.result(varied.id)

        assert bot.platform.ephemerals_for("alice") == []
        assert bodies(bot.sim, "/gen/v2/variation") == [
            {"origin_task_id": origin, "index": "1", "prompt": f"a {{blood}}bath sign {NEON}"}
        ], "sent with its braces, and screened so: not as the choice they would be typed"
