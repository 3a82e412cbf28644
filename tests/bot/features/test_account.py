"""``/settings`` (options, form, text style), ``/usage`` and ``/help``."""

from __future__ import annotations

from collections.abc import AsyncIterator
from dataclasses import replace
from pathlib import Path

import pytest

from bot.api.chat import allowed_chat_models
from bot.features.account import feedback_lines
from bot.features.chat import DEFAULT_SYSTEM_PROMPT
from bot.features.chat.tokens import count_functions, count_messages, count_text
from bot.kernel import (
    Command,
    CommandNames,
    ModalSubmit,
    Place,
    Plan,
    User,
    UserError,
    parse_command_text,
    resolve_command,
    speaking,
)
from storage import FeedbackCount
from tests.bot.features.chat.support import ALICE, BOB, CHANNEL, DM, ROOMY, ChatWorld, chat_world
from tests.fakes.platform import FakePlatform
from tests.language import german, said
from tests.resilience.support import genbot_stack

ROOT = User("root", "Root", is_admin=True)
OTHER_CHANNEL = Place("fake", "w1", "c2")


class SlackSpelling(FakePlatform):
    """A platform whose commands are spelled like Slack's ``/genbot settings``."""

    def command_names(self, place: Place) -> CommandNames:
        return CommandNames(
            spellings={
                "settings": "genbot settings",
                "usage": "genbot usage",
                "help": "genbot help",
            }
        )


async def settings_with_scope(
    world: ChatWorld, user: User, place: Place, **options: str | float
) -> str:
    """``/settings`` with the ``scope`` option the catalogue does not offer yet, handed to the
    account feature as the core would; returns what the user is told."""
    event = Command(user=user, place=place, name="settings", options=options)
    try:
        await world.account.on_command(event, options)
    except UserError as error:
        return str(error)
    told = world.platform.ephemerals_for(user.id)
    return told[-1] if told else ""


@pytest.fixture
async def world(tmp_path: Path) -> AsyncIterator[ChatWorld]:
    async with chat_world(tmp_path) as started:
        yield started


async def test_settings_options_are_stored_and_confirmed(world: ChatWorld) -> None:
    alice = world.actor(ALICE, CHANNEL)
    await alice.command(
        "settings", model="llm-3.5-turbo-16k", temperature=0.3, aspect_ratio="16 : 9"
    )
    await alice.command("settings", system_prompt="Be brief.", process_mode="fast")
    await alice.command("settings", model="llm-3.5-turbo-16k")
    assert world.platform.ephemerals_for("alice") == [
        "Saved your defaults: model → llm-3.5-turbo-16k, aspect ratio → 16:9, temperature → 0.3.",
        "Saved your defaults: image speed → fast. Saved this channel's system prompt: “Be brief.”.",
        "Nothing changed: those are already your settings.",
    ]
    mine = await world.store.settings.get_scope_settings("user", "fake", "alice")
    assert mine is not None
    assert (mine.model, mine.temperature, mine.aspect_ratio, mine.process_mode) == (
        "llm-3.5-turbo-16k",
        0.3,
        "16:9",
        "fast",
    )
    channel = await world.store.settings.get_scope_settings("channel", "fake", CHANNEL.channel_id)
    assert channel is not None and channel.system_prompt == "Be brief."
    await world.actor(BOB, CHANNEL).command("settings", system_prompt="-")
    assert world.platform.ephemerals_for("bob") == [
        "This channel's system prompt is back to the default."
    ]
    channel = await world.store.settings.get_scope_settings("channel", "fake", CHANNEL.channel_id)
    assert channel is not None and channel.system_prompt is None


async def test_a_german_users_decimal_is_confirmed_with_a_decimal_comma(world: ChatWorld) -> None:
    alice = replace(world.actor(ALICE, CHANNEL), locale="de")
    await alice.command("settings", temperature=0.7)
    change = said("de", "{setting} → {value}", setting=german("temperature"), value="0,7")
    assert world.platform.ephemerals_for("alice") == [
        german("Saved your defaults: {changes}.", changes=change)
    ]


async def test_settings_form_round_trip(world: ChatWorld) -> None:
    alice = world.actor(ALICE, CHANNEL)
    await alice.command("settings", temperature=1.5, system_prompt="Speak like a sailor.")
    await alice.command("settings")
    ((origin, modal),) = world.platform.modals
    assert isinstance(origin, Command) and modal.action == "settings"
    defaults = {field.id: field.default for field in modal.fields}
    assert defaults == {
        "model": "",
        "temperature": "1.5",
        "process_mode": "",
        "aspect_ratio": "",
        "remix": "",
    }
    kinds = {field.id: (field.kind, [c.value for c in field.choices]) for field in modal.fields}
    assert kinds["remix"] == ("select", ["on", "off"])
    assert kinds["process_mode"] == ("select", ["relax", "mixed", "fast", "turbo"])
    await alice.submit(modal, **{**defaults, "model": "LLM-4", "temperature": "0.2", "remix": "on"})
    mine = await world.store.settings.get_scope_settings("user", "fake", "alice")
    assert mine is not None and (mine.model, mine.temperature, mine.remix) == ("llm-4", 0.2, True)
    assert world.platform.ephemerals_for("alice")[-1] == (
        "Saved your defaults: model → llm-4, temperature → 0.2, remix → on."
    )
    await alice.command("settings")
    _, reopened = world.platform.modals[-1]
    assert {f.id: f.default for f in reopened.fields}["remix"] == "on"
    await alice.submit(modal, temperature="7", model="llm-3.5-turbo")
    _, again = world.platform.modals[-1]
    assert again.error_of("temperature") == "temperature must be at most 2 (got 7)."
    kept = {field.id: field.default for field in again.fields}
    assert (kept["temperature"], kept["model"]) == ("7", "llm-3.5-turbo")
    mine = await world.store.settings.get_scope_settings("user", "fake", "alice")
    assert mine is not None and (mine.model, mine.temperature) == ("llm-4", 0.2)


async def test_text_style_settings(world: ChatWorld) -> None:
    alice = world.actor()
    await alice.command("settings", "")
    assert len(world.platform.modals) == 1
    await alice.command("settings", "--temp 0.5 --mode relax")
    assert world.platform.ephemerals_for("alice") == [
        "Saved your defaults: image speed → relax, temperature → 0.5."
    ]


async def test_free_plan_cannot_choose_llm_4(tmp_path: Path) -> None:
    async with chat_world(tmp_path, plan="free") as world:
        await world.actor().command("settings", model="llm-4-vision-preview")
        (refusal,) = world.platform.ephemerals_for("alice")
        assert "needs the Developer plan" in refusal and "llm-3.5-turbo-16k" in refusal
        assert await world.store.settings.get_scope_settings("user", "fake", "alice") is None


async def test_usage_counts_the_chat_tokens_of_today(world: ChatWorld) -> None:
    alice = world.actor()
    await alice.command("usage")
    await alice.say("echo: count these tokens please")
    await alice.say("echo: and these")
    await alice.command("usage")
    before, after = world.platform.ephemerals_for("alice")
    assert before == (
        "Your usage today (UTC): 0 chat tokens (0 prompt + 0 completion) and 0 image credits."
    )
    prompt = completion = 0
    for body in world.chat_bodies():
        prompt += count_messages(body["messages"]) + count_functions(body.get("functions") or [])
        completion += count_text(await world.replay(body))
    assert prompt > 0 and completion > 0
    assert after == (
        f"Your usage today (UTC): {prompt + completion:,} chat tokens ({prompt:,} prompt + "
        f"{completion:,} completion) and 0 image credits."
    )
    await world.actor(BOB, DM).command("usage")
    assert "0 chat tokens" in world.platform.ephemerals_for("bob")[0]


async def test_help_lists_every_command_within_the_length_limit(world: ChatWorld) -> None:
    await world.actor().command("help")
    pieces = world.platform.ephemerals_for("alice")
    assert len(pieces) >= 2
    assert all(len(piece) <= world.platform.profile.max_text for piece in pieces)
    text = "".join(pieces)
    for name in ("/chat", "/imagine", "/describe", "/blend", "/diffusion txt2img", "/settings"):
        assert f"**{name}**" in text
    assert "**Chat**" in text and "`/settings` model (your default)" in text


async def test_help_about_one_group_lists_the_diffusion_models_genbot_knows(
    world: ChatWorld,
) -> None:
    alice = world.actor()
    await alice.command("help", "diffusion")
    before = "".join(world.platform.ephemerals_for("alice"))
    assert "**/diffusion txt2img**" in before and "**/imagine**" not in before
    assert "`model_id` `--model`: Checkpoint model id; none known yet" in before
    await alice.command("diffusion.txt2img", prompt="a fox")
    await world.genbot.settled((await world.genbot.latest_job()).id)
    await alice.command("help", "diffusion")
    after = "".join(world.platform.ephemerals_for("alice"))[len(before) :]
    assert "`model_id` `--model`: Checkpoint model id; known: `sim-diffusion-1`" in after
    await alice.command("help", "paint")
    assert world.platform.ephemerals_for("alice")[-1].startswith("There is no command /paint;")


async def test_usage_includes_the_credits_of_image_jobs(world: ChatWorld) -> None:
    alice = world.actor()
    await alice.command("imagine", prompt="a fox in the snow")
    await world.genbot.settled((await world.genbot.latest_job()).id)
    totals = await world.store.ledger.usage_for_user("fake", "alice")
    assert totals.credits > 0
    await alice.command("usage")
    assert world.platform.ephemerals_for("alice")[-1].endswith(
        f"and {totals.credits:,} image credits."
    )


async def test_usage_says_which_credits_are_estimates(tmp_path: Path) -> None:
    # Diffusion's price is genbot's configured estimate (docs/provider.md#diffusion-prices).
    limits = {"diffusion_credits": {"txt2img": 3}}
    async with chat_world(tmp_path, limits=limits) as world:
        alice = world.actor()
        await alice.command("diffusion.txt2img", prompt="a fox in the snow")
        await alice.command("imagine", prompt="a fox in the snow")
        await world.genbot.settled((await world.genbot.latest_job()).id)
        await alice.command("usage")
        assert world.platform.ephemerals_for("alice")[-1].endswith(
            "and 7 image credits. 3 of the credits are estimates: the service does not say what "
            "diffusion costs, so genbot counts its configured prices."
        )


async def test_usage_shows_a_budget_only_when_there_is_one(tmp_path: Path) -> None:
    for budget, ending in ((0, "0 image credits."), (500, "of your daily budget of 500.")):
        (tmp_path / str(budget)).mkdir()
        async with chat_world(tmp_path / str(budget), daily_credit_budget=budget) as world:
            await world.actor().command("usage")
            (told,) = world.platform.ephemerals_for("alice")
            assert told.endswith(ending), told


async def test_help_and_refusals_name_commands_as_the_platform_spells_them(
    tmp_path: Path,
) -> None:
    async with chat_world(tmp_path, platform=SlackSpelling(profile=ROOMY), plan="free") as world:
        await world.actor().command("help")
        text = "".join(world.platform.ephemerals_for("alice"))
        assert "**/genbot settings**" in text and "**/genbot usage**" in text
        assert "**/settings**" not in text and "**/imagine**" in text
        assert "e.g. `/genbot settings --model llm-4 --ar 16:9`" in text
        assert "`/genbot settings` model (your default)" in text
        await world.store.settings.set_scope_settings("user", "fake", "bob", model="llm-4")
        await world.actor(BOB, DM).say("echo: hi")
        (refusal,) = world.platform.ephemerals_for("bob")
        assert "`/genbot settings` model" in refusal


async def test_admins_set_channel_and_workspace_defaults(world: ChatWorld) -> None:
    told = await settings_with_scope(
        world,
        ROOT,
        CHANNEL,
        scope="channel",
        model="llm-3.5-turbo-16k",
        temperature=0.7,
        system_prompt="Answer like a harbour master.",
    )
    assert told == (
        "Saved this channel's defaults: model → llm-3.5-turbo-16k, system prompt → Answer like "
        "a harbour master., temperature → 0.7."
    )
    told = await settings_with_scope(
        world, ROOT, CHANNEL, scope="workspace", model="llm-3.5-turbo-1106"
    )
    assert told == "Saved this workspace's defaults: model → llm-3.5-turbo-1106."
    await world.actor(BOB, CHANNEL).say("echo: in the channel", mention=True)
    await world.actor(BOB, OTHER_CHANNEL).say("echo: next door", mention=True)
    await world.actor(BOB, DM).say("echo: in private")
    channel, other, private = world.chat_bodies()
    assert (channel["model"], channel["temperature"]) == ("llm-3.5-turbo-16k", 0.7)
    assert channel["messages"][0]["content"] == "Answer like a harbour master."
    assert (other["model"], other["messages"][0]["content"]) == (
        "llm-3.5-turbo-1106",
        DEFAULT_SYSTEM_PROMPT,
    )
    assert private["model"] == "llm-3.5-turbo-1106", "a DM is in the workspace too"
    await world.actor(BOB, CHANNEL).command("settings", model="llm-3.5-turbo")
    await world.actor(BOB, CHANNEL).say("echo: my own", mention=True)
    assert world.chat_bodies()[-1]["model"] == "llm-3.5-turbo", "the user's default wins"
    told = await settings_with_scope(world, ROOT, CHANNEL, scope="channel", system_prompt="-")
    assert told == "Saved this channel's defaults: system prompt → (default)."


async def test_only_admins_set_shared_defaults(world: ChatWorld) -> None:
    for scope in ("channel", "workspace"):
        told = await settings_with_scope(world, BOB, CHANNEL, scope=scope, model="llm-4")
        assert told.startswith(f"Only genbot admins can change this {scope}'s defaults")
    nowhere = Place("fake", "", "dm-root", is_dm=True)
    told = await settings_with_scope(world, ROOT, nowhere, scope="workspace", model="llm-4")
    assert told.startswith("There is no workspace here")
    told = await settings_with_scope(world, ROOT, CHANNEL, scope="team", model="llm-4")
    assert told == "scope must be one of me, channel, workspace (got 'team')."
    for kind, scope_id in (("channel", "c1"), ("workspace", "w1"), ("workspace", "")):
        assert await world.store.settings.get_scope_settings(kind, "fake", scope_id) is None  # type: ignore[arg-type]


async def test_the_hint_for_a_channel_only_setting_is_a_command_that_works(
    world: ChatWorld,
) -> None:
    told = await settings_with_scope(world, BOB, CHANNEL, stop="END")
    assert told == (
        "Only genbot admins set stop sequences, per channel: `/settings --scope channel --stop …`."
    )
    typed = told.split("`")[1].replace("…", "END")
    spec, rest = resolve_command(typed)
    told = await settings_with_scope(world, ROOT, CHANNEL, **parse_command_text(spec, rest))
    assert told == "Saved this channel's defaults: stop sequences → END."


async def test_the_form_of_a_shared_scope_round_trips(world: ChatWorld) -> None:
    await world.store.settings.set_scope_settings(
        "channel", "fake", "c1", model="llm-3.5-turbo-16k"
    )
    await world.store.settings.set_scope_settings("user", "fake", "root", temperature=1.5)
    await settings_with_scope(world, ROOT, CHANNEL, scope="channel")
    ((_, modal),) = world.platform.modals
    assert modal.ref == "channel"
    defaults = {field.id: field.default for field in modal.fields}
    assert (defaults["model"], defaults["temperature"]) == ("llm-3.5-turbo-16k", "")
    submitted = {**defaults, "temperature": "0.4", "aspect_ratio": "3:2"}
    for user in (BOB, ROOT):
        await world.core.handle(
            ModalSubmit(
                user=user, place=CHANNEL, action=modal.action, ref=modal.ref, values=submitted
            )
        )
    assert world.platform.ephemerals_for("bob")[-1].startswith("Only genbot admins")
    assert world.platform.ephemerals_for("root")[-1] == (
        "Saved this channel's defaults: aspect ratio → 3:2, temperature → 0.4."
    )
    channel = await world.store.settings.get_scope_settings("channel", "fake", "c1")
    assert channel is not None
    assert (channel.model, channel.temperature, channel.aspect_ratio) == (
        "llm-3.5-turbo-16k",
        0.4,
        "3:2",
    )
    mine = await world.store.settings.get_scope_settings("user", "fake", "root")
    assert mine is not None and mine.temperature == 1.5 and mine.aspect_ratio is None


async def test_remix_is_each_users_own_toggle(world: ChatWorld) -> None:
    await world.actor().command("settings", remix=True)
    assert world.platform.ephemerals_for("alice")[-1] == "Saved your defaults: remix → on."
    mine = await world.store.settings.get_scope_settings("user", "fake", "alice")
    assert mine is not None and mine.remix is True


@pytest.mark.parametrize("plan", ["free", "developer"])
async def test_the_configured_plan_decides_what_the_settings_form_accepts(
    plan: Plan, tmp_path: Path
) -> None:
    user, place = User("alice", "Alice"), Place("fake", "w1", "c1")
    async with genbot_stack(tmp_path, plan=plan) as genbot:
        await genbot.core.handle(Command(user=user, place=place, name="settings"))
        [(_, form)] = genbot.platform.modals
        [hint] = [f.placeholder for f in form.fields if f.id == "model"]
        for model in ("llm-4", "llm-3.5-turbo-16k"):
            values = {"model": model}
            await genbot.core.handle(
                ModalSubmit(user=user, place=place, action=form.action, ref=form.ref, values=values)
            )
        told = genbot.platform.ephemerals_for("alice") + [
            m.notice for _, m in genbot.platform.modals[1:]
        ]
        saved = await genbot.store.settings.get_scope_settings("user", "fake", "alice")

    assert "llm-4" not in hint, "the form suggests a model every plan allows"
    assert saved is not None and saved.model == "llm-3.5-turbo-16k"
    if plan == "developer":
        assert not [t for t in told if "Developer plan" in t]
        return
    [refusal] = [t for t in told if "needs the Developer plan" in t]
    offered = refusal.split("Choose one of: ", 1)[1].rstrip(".").split(", ")
    assert offered == allowed_chat_models("free")
    assert genbot.sim.state.requests == []


async def test_settings_language_is_each_users_own_and_auto_clears_it(world: ChatWorld) -> None:
    alice = world.actor(ALICE, CHANNEL)
    await alice.command("settings", language="zh-hans")
    mine = await world.store.settings.get_scope_settings("user", "fake", "alice")
    assert mine is not None and mine.language == "zh-Hans"
    await alice.command("help")
    spoken = Command(user=ALICE, place=CHANNEL, name="help")
    assert (await world.genbot.parts.languages.stored(spoken)).user == "zh-Hans", (
        "the router's cached choices were dropped"
    )
    await alice.command("settings", language="auto")
    mine = await world.store.settings.get_scope_settings("user", "fake", "alice")
    assert mine is not None and mine.language is None
    told = world.platform.ephemerals_for("alice")
    assert told[-1] == "Saved your defaults: language → auto."
    assert (await world.genbot.parts.languages.stored(spoken)).user is None


async def test_admins_set_a_channels_language(world: ChatWorld) -> None:
    told = await settings_with_scope(world, ROOT, CHANNEL, language="de", scope="channel")
    assert told == "Saved this channel's defaults: language → Deutsch."
    channel = await world.store.settings.get_scope_settings("channel", "fake", CHANNEL.channel_id)
    assert channel is not None and channel.language == "de"
    refused = await settings_with_scope(world, ALICE, CHANNEL, language="ja", scope="channel")
    assert refused.startswith("Only genbot admins can change this channel's defaults")


def test_the_share_of_good_answers_is_a_percentage_the_readers_way() -> None:
    counts = [FeedbackCount("llm-4", 3, 1), FeedbackCount("llm-3.5-turbo", 0, 0)]
    assert feedback_lines(counts).splitlines()[1:] == [
        "• llm-4: 3 / 1, 75%",
        "• llm-3.5-turbo: 0 / 0, —",
    ]
    with speaking("de"):
        assert feedback_lines(counts).splitlines()[1] == "• llm-4: 3 / 1, 75\u00a0%"
