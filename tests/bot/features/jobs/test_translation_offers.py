"""Prompt translation through the real core against the simulator: with ``translate = "auto"``
the job runs in English and shows both prompts, or says why it went as written; with ``"ask"``
the stored offer's buttons translate or run as written — once, only for its user, after a
restart too."""

from __future__ import annotations

from pathlib import Path

from bot.features.jobs.batch_queue import new_batch
from bot.features.jobs.prompt_translation import AS_WRITTEN, OFFER, OFFER_SECONDS, TRANSLATE
from bot.kernel import ButtonPress, Command, PromptsSettings
from bot.refs import NO_BATCH
from simulator.server import RunningSimulator, serve
from tests.bot.features.chat.support import ALICE, BOB, CHANNEL, sim_config
from tests.bot.features.jobs.test_batches import PrivatePlatform, imagined
from tests.bot.harness import Genbot, running_genbot
from tests.fakes.platform import Actor

AUTO = PromptsSettings(translate="auto")
ASK = PromptsSettings(translate="ask")
JAPANESE = "夕暮れの灯台 --ar 16:9"


def chats(sim: RunningSimulator) -> list[str]:
    return [r.body["messages"][-1]["content"] for r in sim.state.requests_to("/v1/chat/")]


async def pressed(bot: Genbot, platform: PrivatePlatform, label: str, user: str = "alice") -> None:
    """``user`` presses ``label`` on the newest private message."""
    [button] = [b for row in platform.privates[-1].buttons for b in row if b.label == label]
    who = ALICE if user == "alice" else BOB
    await bot.core.handle(
        ButtonPress(user=who, place=CHANNEL, message_id="p", action=button.action, ref=button.ref)
    )


async def test_auto_imagines_in_english_and_the_result_shows_both_prompts(tmp_path: Path) -> None:
    async with (
        serve(sim_config()) as sim,
        running_genbot(sim, tmp_path / "genbot.db", prompts=AUTO) as bot,
    ):
        await Actor(bot.core, bot.platform, ALICE, CHANNEL).command("imagine", prompt=JAPANESE)
        job = await bot.latest_job()
        result = await bot.result(job.id)

        assert imagined(sim) == ["a lighthouse at dusk --ar 16:9"]
        assert chats(sim) == ["夕暮れの灯台"]
        assert job.prompt == "a lighthouse at dusk --ar 16:9"
        assert "a lighthouse at dusk" in result.text
        assert "🌐 Translated from: 夕暮れの灯台 --ar 16:9" in result.text


async def test_auto_on_a_text_platform_translates_what_is_left_once_the_options_are_read(
    tmp_path: Path,
) -> None:
    """Slack and the playground read ``--ar`` and ``--fast`` as options first: the words left
    are translated, the options go as the request's own fields."""
    async with (
        serve(sim_config()) as sim,
        running_genbot(sim, tmp_path / "genbot.db", prompts=AUTO) as bot,
    ):
        alice = Actor(bot.core, bot.platform, ALICE, CHANNEL)
        await alice.command("imagine", "夕暮れの灯台 --ar 16:9 --fast --v 6")
        await bot.result((await bot.latest_job()).id)

        [sent] = [r.body for r in sim.state.requests_to("/gen/v2/imagine")]
        assert sent["prompt"] == "a lighthouse at dusk --v 6"
        assert (sent["aspect_ratio"], sent["process_mode"]) == ("16:9", "fast")
        assert chats(sim) == ["夕暮れの灯台"]


async def test_auto_sends_a_prompt_it_cannot_translate_as_written_and_says_so(
    tmp_path: Path,
) -> None:
    async with (
        serve(sim_config()) as sim,
        running_genbot(sim, tmp_path / "genbot.db", prompts=AUTO) as bot,
    ):
        prompt = "知らない言葉 --ar 16:9"
        await Actor(bot.core, bot.platform, ALICE, CHANNEL).command("imagine", prompt=prompt)
        result = await bot.result((await bot.latest_job()).id)

        assert imagined(sim) == [prompt]
        assert "🌐 Not translated: the translation came back unusable" in result.text


async def test_ask_offers_first_and_translate_runs_it_in_english_once_after_a_restart(
    tmp_path: Path,
) -> None:
    platform = PrivatePlatform()
    db = tmp_path / "genbot.db"
    async with serve(sim_config()) as sim:
        async with running_genbot(sim, db, platform=platform, prompts=ASK) as bot:
            alice = Actor(bot.core, platform, ALICE, CHANNEL)
            await alice.command("imagine", prompt=JAPANESE)
            [offer] = platform.privates
            labels = [b.label for b in offer.buttons[0]]
            assert labels == ["Translate to English?", "Run as written"]
            assert "> 夕暮れの灯台 --ar 16:9" in offer.text
            assert imagined(sim) == [] and chats(sim) == [] and await bot.all_jobs() == []
        async with running_genbot(sim, db, platform=platform, prompts=ASK) as restarted:
            await pressed(restarted, platform, "Translate to English?", user="bob")
            assert platform.ephemerals_for(BOB.id) == [NO_BATCH]

            await pressed(restarted, platform, "Translate to English?")
            job = await restarted.latest_job()
            result = await restarted.result(job.id)
            assert imagined(sim) == ["a lighthouse at dusk --ar 16:9"]
            assert "🌐 Translated from: 夕暮れの灯台 --ar 16:9" in result.text
            assert platform.ephemerals_for(ALICE.id) == [
                "Translated into English: a lighthouse at dusk --ar 16:9"
            ]

            await pressed(restarted, platform, "Run as written")
            assert platform.ephemerals_for(ALICE.id)[-1] == "You answered this offer already."
            assert len(await restarted.all_jobs()) == 1 and len(chats(sim)) == 1


async def test_ask_runs_as_written_without_a_chat_call(tmp_path: Path) -> None:
    platform = PrivatePlatform()
    async with (
        serve(sim_config()) as sim,
        running_genbot(sim, tmp_path / "genbot.db", platform=platform, prompts=ASK) as bot,
    ):
        await Actor(bot.core, platform, ALICE, CHANNEL).command("imagine", prompt=JAPANESE)
        await pressed(bot, platform, "Run as written")
        result = await bot.result((await bot.latest_job()).id)

        assert imagined(sim) == [JAPANESE] and chats(sim) == []
        assert "🌐" not in result.text


async def test_an_expired_offer_starts_nothing(tmp_path: Path) -> None:
    platform = PrivatePlatform()
    async with (
        serve(sim_config()) as sim,
        running_genbot(sim, tmp_path / "genbot.db", platform=platform, prompts=ASK) as bot,
    ):
        command = Command(user=ALICE, place=CHANNEL, name="imagine")
        stored = {OFFER: {"options": {"prompt": JAPANESE}}, "jobs": []}
        past = bot.store.clock() - OFFER_SECONDS - 1
        offer = new_batch(command, {}, stored, total=0, now=past, seconds=OFFER_SECONDS)
        await bot.store.preferences.save_batch(offer)
        for action in (TRANSLATE, AS_WRITTEN):
            press = ButtonPress(
                user=ALICE, place=CHANNEL, message_id="p", action=action, ref=offer.id
            )
            await bot.core.handle(press)

        expired = "This offer expired: run the command again."
        assert platform.ephemerals_for(ALICE.id) == [expired, expired]
        assert imagined(sim) == [] and chats(sim) == [] and await bot.all_jobs() == []
