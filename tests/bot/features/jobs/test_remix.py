"""Remix: with it on, 🔄, V1–V4, vary, pan and zoom open a form to change the prompt first."""

from __future__ import annotations

from pathlib import Path

from storage import ModerationRule
from tests.bot.features.jobs.support import bodies, press, run_command
from tests.bot.harness import harness
from tests.bot.test_router import moderated


async def test_remix_forms_change_the_prompt_of_follow_ups(tmp_path: Path) -> None:
    async with harness(tmp_path) as bot:
        await bot.store.settings.set_scope_settings("user", "fake", "alice", remix=True)
        alice = bot.actor()
        grid_job, grid = await run_command(bot, alice, "imagine", prompt="a red fox")
        actions = {b.label: b.action for b in grid.buttons}
        assert actions["V1"] == "remix_variation1" and actions["🔄"] == "remix_reroll"
        assert actions["U1"] == "upscale1" and actions["🌱 Seed"] == "seed"

        await alice.press(grid, "V1")
        _, modal = bot.platform.modals[-1]
        assert (modal.action, modal.ref) == ("remix_variation1", grid_job.id)
        assert [(f.id, f.default) for f in modal.fields] == [("prompt", "a red fox")]
        assert bodies(bot.sim, "/gen/v2/variation") == []
        await alice.submit(modal, prompt="a blue fox")
        varied_job = await bot.latest_job()
        varied = await bot.result(varied_job.id)
        assert bodies(bot.sim, "/gen/v2/variation") == [
            {"origin_task_id": grid_job.provider_id, "index": "1", "prompt": "a blue fox"}
        ]
        assert varied_job.prompt == "a blue fox" and "a blue fox" in varied.text
        assert grid.button("V1").style == "primary"

        up_job, upscale = await press(bot, alice, grid, "U2")
        follow_ups = {b.label: b.action for b in upscale.buttons}
        assert follow_ups["⬅️"] == "remix_pan_left"
        assert follow_ups["Zoom Out 2x"] == "remix_outpaint_2"
        assert follow_ups["Vary (Strong)"] == "remix_high_variation"
        assert follow_ups["Custom Zoom"] == "outpaint_custom"
        assert follow_ups["Upscale (Subtle)"] == "upscale_subtle"
        await alice.press(upscale, "⬅️")
        _, pan_form = bot.platform.modals[-1]
        await alice.submit(pan_form, prompt="a red fox")
        await bot.result((await bot.latest_job()).id)
        assert bodies(bot.sim, "/gen/v2/pan") == [
            {"origin_task_id": up_job.provider_id, "direction": "left"}
        ]


async def test_without_remix_the_buttons_start_at_once(tmp_path: Path) -> None:
    async with harness(tmp_path) as bot:
        alice = bot.actor()
        _, grid = await run_command(bot, alice, "imagine", prompt="a red fox")
        assert {b.action for b in grid.buttons} >= {"variation1", "reroll"}
        await press(bot, alice, grid, "🔄")
        assert bot.platform.modals == []


async def test_an_empty_remix_prompt_is_refused_without_a_provider_call(tmp_path: Path) -> None:
    async with harness(tmp_path) as bot:
        await bot.store.settings.set_scope_settings("user", "fake", "alice", remix=True)
        alice = bot.actor()
        _, grid = await run_command(bot, alice, "imagine", prompt="a red fox")
        await alice.press(grid, "🔄")
        _, modal = bot.platform.modals[-1]
        await alice.submit(modal, prompt="  ")
        _, again = bot.platform.modals[-1]
        assert again.action == "remix_reroll" and again is not modal
        assert again.error_of("prompt") == "Remix needs a prompt: write what to draw."
        assert bodies(bot.sim, "/gen/v2/reroll") == []


async def test_remix_is_the_pressers_setting_when_they_press(tmp_path: Path) -> None:
    async with harness(tmp_path) as bot:
        alice = bot.actor()
        grid_job, grid = await run_command(bot, alice, "imagine", prompt="a red fox")
        assert grid.button("V3").action == "variation3", "drawn before Remix was on"
        await bot.store.settings.set_scope_settings("user", "fake", "alice", remix=True)
        await alice.press(grid, "V3")
        _, modal = bot.platform.modals[-1]
        assert (modal.action, modal.ref) == ("remix_variation3", grid_job.id)
        await alice.press(grid, "🔄")
        assert bot.platform.modals[-1][1].action == "remix_reroll"
        assert bodies(bot.sim, "/gen/v2/variation") == bodies(bot.sim, "/gen/v2/reroll") == []

        _, remixed = await run_command(bot, alice, "imagine", prompt="a blue fox")
        assert remixed.button("V1").action == "remix_variation1", "drawn while Remix is on"
        await bot.store.settings.set_scope_settings("user", "fake", "alice", remix=False)
        job, _ = await press(bot, alice, remixed, "V1")
        assert job.type == "variation" and len(bot.platform.modals) == 2, "no form: Remix is off"


async def test_remix_opens_its_form_for_a_prompt_a_rule_refuses_and_screens_what_is_sent(
    tmp_path: Path,
) -> None:
    async with harness(tmp_path, screen=moderated) as bot:
        await bot.store.settings.set_scope_settings("user", "fake", "alice", remix=True)
        alice = bot.actor("alice")
        fox, grid = await run_command(bot, alice, "imagine", prompt="a gory fox")
        await bot.store.moderation.add_rule("fake", "w1", ModerationRule("gore", "gory"), "root")
        assert grid.button("🔄").action == "remix_reroll"

        await alice.press(grid, "🔄")
        _, modal = bot.platform.modals[-1]
        assert (modal.action, modal.ref) == ("remix_reroll", fox.id), "the form, to edit it"
        assert bot.platform.ephemerals_for("alice") == []
        assert await bot.store.moderation.banned_until("fake", "alice") is None
        await alice.submit(modal, prompt="a calm fox")
        rerolled = await bot.latest_job()
        await bot.result(rerolled.id)
        assert [body.get("prompt") for body in bodies(bot.sim, "/gen/v2/reroll")] == ["a calm fox"]

        await alice.press(grid, "🔄")
        _, again = bot.platform.modals[-1]
        await alice.submit(again, prompt="a gory fox")
        assert len(bodies(bot.sim, "/gen/v2/reroll")) == 1, "the prompt sent is screened"
        [refused] = bot.platform.ephemerals_for("alice")
        assert "**gore**" in refused


async def test_a_remix_button_pressed_with_remix_off_screens_the_stored_prompt(
    tmp_path: Path,
) -> None:
    async with harness(tmp_path, screen=moderated) as bot:
        await bot.store.settings.set_scope_settings("user", "fake", "alice", remix=True)
        alice = bot.actor("alice")
        _, grid = await run_command(bot, alice, "imagine", prompt="a gory fox")
        await bot.store.moderation.add_rule("fake", "w1", ModerationRule("gore", "gory"), "root")
        await bot.store.settings.set_scope_settings("user", "fake", "alice", remix=False)
        await alice.press(grid, "🔄")
        assert bot.platform.modals == [] and bodies(bot.sim, "/gen/v2/reroll") == []
        [refused] = bot.platform.ephemerals_for("alice")
        assert "**gore**" in refused and "a gory fox" in refused


async def test_a_banned_user_gets_no_remix_form(tmp_path: Path) -> None:
    async with harness(tmp_path, screen=moderated) as bot:
        await bot.store.settings.set_scope_settings("user", "fake", "alice", remix=True)
        alice = bot.actor("alice")
        _, grid = await run_command(bot, alice, "imagine", prompt="a red fox")
        await bot.store.moderation.ban("fake", "alice", 30)
        await alice.press(grid, "🔄")
        assert bot.platform.modals == []
        [refused] = bot.platform.ephemerals_for("alice")
        assert refused.startswith("genbot takes no prompts from you until")


async def test_a_remixed_prompt_the_provider_refuses_leaves_the_button_to_remix_again(
    tmp_path: Path,
) -> None:
    async with harness(tmp_path) as bot:
        await bot.store.settings.set_scope_settings("user", "fake", "alice", remix=True)
        alice = bot.actor("alice")
        _, grid = await run_command(bot, alice, "imagine", prompt="a red fox")
        await alice.press(grid, "🔄")
        _, modal = bot.platform.modals[-1]
        await alice.submit(modal, prompt="a red fox --ar 5:1")
        refused = await bot.settled((await bot.latest_job()).id)
        assert refused.status == "create_failed"
        [told] = bot.platform.ephemerals_for("alice")
        assert "between 1:4 and 4:1" in told
        assert not grid.button("🔄").disabled, "the prompt's refusal, not the button's"

        await alice.press(grid, "🔄")
        _, again = bot.platform.modals[-1]
        assert again.action == "remix_reroll" and again is not modal
        await alice.submit(again, prompt="a red fox --ar 4:1")
        rerolled = await bot.latest_job()
        await bot.result(rerolled.id)
        assert [body["prompt"] for body in bodies(bot.sim, "/gen/v2/reroll")] == [
            "a red fox --ar 5:1",
            "a red fox --ar 4:1",
        ]
