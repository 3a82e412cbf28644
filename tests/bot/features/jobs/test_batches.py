"""Several jobs from one /imagine: the preview's Run starts them once, pressed on two processes of
one PostgreSQL database at once; jobs past the cap of jobs at once wait in the queue and start as
places free, after a restart too; Cancel starts nothing — the real core against the simulator."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

from bot.features.jobs.params import job_language
from bot.kernel import Attachment, ButtonPress, Event, OutMessage
from simulator.server import RunningSimulator, serve
from storage import ALL_STATUSES, Job, ModerationRule
from tests.bot.features.chat.support import ALICE, BOB, CHANNEL, ROOMY, sim_config
from tests.bot.features.jobs.support import png
from tests.bot.harness import Genbot, running_genbot
from tests.bot.test_router import moderated, untimed
from tests.fakes.platform import Actor, FakePlatform
from tests.postgres import PostgresCluster


class PrivatePlatform(FakePlatform):
    """The fake platform, showing private messages (the previews) too, and changing the one a
    button was pressed on (the last one shown: presses here name no message)."""

    def __init__(self) -> None:
        super().__init__(profile=ROOMY)
        self.privates: list[OutMessage] = []

    async def send_private(self, origin: Event, message: OutMessage) -> None:
        self.privates.append(message)
        await self._notify()

    async def edit_pressed(self, press: ButtonPress, message: OutMessage) -> None:
        self.privates[-1] = message
        await self._notify()


def imagined(sim: RunningSimulator) -> list[str]:
    return sorted(r.body["prompt"] for r in sim.state.requests_to("/gen/v2/imagine"))


async def jobs_of(bot: Genbot) -> list[Job]:
    return await bot.store.tracking.list_unfinished_jobs(ALL_STATUSES)


async def run_pressed(
    bot: Genbot,
    platform: PrivatePlatform,
    label: str = "Run 4 jobs",
    preview: OutMessage | None = None,
) -> None:
    """ALICE presses ``label`` on ``preview`` (by default the newest), through ``bot``."""
    shown = preview or platform.privates[-1]
    [button] = [b for row in shown.buttons for b in row if b.label == label]
    await bot.core.handle(
        ButtonPress(user=ALICE, place=CHANNEL, message_id="p", action=button.action, ref=button.ref)
    )


async def until(condition: Any, seconds: float = 15.0) -> None:
    async with asyncio.timeout(seconds):
        while True:
            if await condition():
                return
            await asyncio.sleep(0.05)


async def test_run_pressed_on_two_processes_starts_the_previewed_jobs_once(
    postgres: PostgresCluster, tmp_path: Path
) -> None:
    platform = PrivatePlatform()
    on_postgres: dict[str, Any] = {
        "platform": platform,
        "storage_url": postgres.create_database(),
        "limits": {"max_concurrent_jobs_per_user": 4},
    }
    async with (
        serve(sim_config(time_scale=0.003)) as sim,
        running_genbot(sim, tmp_path / "a.db", **on_postgres) as first,
        running_genbot(sim, tmp_path / "b.db", **on_postgres) as second,
    ):
        await Actor(first.core, platform, ALICE, CHANNEL).command(
            "imagine", "{red, blue} fox --repeat 2"
        )
        [preview] = platform.privates
        assert "**4 jobs**" in preview.text and "estimated **16 credits**" in preview.text
        assert imagined(sim) == [] and await jobs_of(first) == []

        await asyncio.gather(run_pressed(first, platform), run_pressed(second, platform))
        await until(lambda: asyncio.sleep(0, len(imagined(sim)) == 4))
        await asyncio.sleep(0.3)
        assert imagined(sim) == ["blue fox", "blue fox", "red fox", "red fox"]
        assert len(await jobs_of(second)) == 4
        assert sorted(platform.ephemerals_for(ALICE.id)) == [
            "All 4 jobs started.",
            "These jobs were started already (their progress is in the channel).",
        ]


async def test_the_preview_says_when_none_of_its_jobs_can_start_now(tmp_path: Path) -> None:
    platform = PrivatePlatform()
    options: dict[str, Any] = {"platform": platform, "limits": {"max_concurrent_jobs_per_user": 1}}
    config = sim_config(time_scale=1.0, clock_start=1_700_000_000)
    async with serve(config) as sim, running_genbot(sim, tmp_path / "db", **options) as bot:
        alice = Actor(bot.core, platform, ALICE, CHANNEL)
        await alice.command("imagine", "a fox")
        await alice.command("imagine", "{a, b, c} owl")
        [preview] = platform.privates
        assert (
            "Your cap of jobs at once is reached: all 3 wait in the queue, each starting "
            "when one of your jobs finishes."
        ) in preview.text, preview.text
        assert "other" not in preview.text


async def test_jobs_past_the_cap_wait_in_the_queue_and_start_after_a_restart(
    tmp_path: Path,
) -> None:
    platform = PrivatePlatform()
    options: dict[str, Any] = {"platform": platform, "limits": {"max_concurrent_jobs_per_user": 1}}
    db = tmp_path / "genbot.db"
    async with serve(sim_config(time_scale=1.0, clock_start=1_700_000_000)) as sim:
        async with running_genbot(sim, db, **options) as bot:
            await Actor(bot.core, platform, ALICE, CHANNEL).command("imagine", "{a, b, c} owl")
            assert "lets 1 start now. The other 2 wait in" in platform.privates[0].text
            await run_pressed(bot, platform, "Run 3 jobs")
            assert imagined(sim) == ["a owl"]
            [told] = platform.ephemerals_for(ALICE.id)
            assert told.startswith("1 of 3 jobs started. 2 wait in the queue, each starting")
        sim.advance(3600)
        async with running_genbot(sim, db, **options) as bot:
            await until(lambda: asyncio.sleep(0, len(imagined(sim)) == 2))
            sim.advance(3600)
            await until(lambda: asyncio.sleep(0, len(imagined(sim)) == 3))
            assert imagined(sim) == ["a owl", "b owl", "c owl"]
            assert len(await jobs_of(bot)) == 3


async def test_a_cancelled_preview_starts_nothing(tmp_path: Path) -> None:
    platform = PrivatePlatform()
    async with (
        serve(sim_config(time_scale=0.003)) as sim,
        running_genbot(sim, tmp_path / "genbot.db", platform=platform) as bot,
    ):
        await Actor(bot.core, platform, ALICE, CHANNEL).command("imagine", "a fox --repeat 2")
        shown = platform.privates[-1].text
        await run_pressed(bot, platform, "Cancel")
        [preview] = platform.privates
        assert preview.text == shown
        assert [b.disabled for row in preview.buttons for b in row] == [True, True]
        await run_pressed(bot, platform, "Run 2 jobs")
        assert platform.ephemerals_for(ALICE.id) == [
            "Cancelled: nothing was started.",
            "You cancelled these jobs: run the command again to start them.",
        ]
        assert imagined(sim) == [] and await jobs_of(bot) == []


async def test_one_job_estimated_above_the_threshold_is_previewed_first(tmp_path: Path) -> None:
    platform = PrivatePlatform()
    options: dict[str, Any] = {"platform": platform, "limits": {"confirm_above_credits": 5}}
    async with (
        serve(sim_config(time_scale=0.003)) as sim,
        running_genbot(sim, tmp_path / "genbot.db", **options) as bot,
    ):
        actor = Actor(bot.core, platform, ALICE, CHANNEL)
        await actor.command("imagine", "a cheap fox --relax")
        assert imagined(sim) == ["a cheap fox"] and platform.privates == []

        await actor.command("imagine", "a dear fox --fast")
        [preview] = platform.privates
        assert preview.text == (
            "**1 job** of `/imagine` in fast mode — estimated **8 credits** (genbot's default "
            "price, until it has recorded what such jobs cost here):\n"
            "1. a dear fox\n"
            "Your daily budget left: 200 of 200 credits.\n"
            "Press Run to start it, or Cancel; this preview expires in 5 min."
        ), "one job: no 1 × 8, and it, not them"
        assert [b.label for row in preview.buttons for b in row] == ["Run", "Cancel"]
        assert imagined(sim) == ["a cheap fox"]
        await run_pressed(bot, platform, "Run")
        assert imagined(sim) == ["a cheap fox", "a dear fox"]
        assert platform.ephemerals_for(ALICE.id) == ["Started."]


async def test_an_uploaded_image_is_hosted_before_its_batch_is_stored(tmp_path: Path) -> None:
    platform = PrivatePlatform()
    options: dict[str, Any] = {"platform": platform, "webhooks": True}
    upload = Attachment("owl.png", data=png(), content_type="image/png")
    async with (
        serve(sim_config(time_scale=0.003, insecure_webhooks=True)) as sim,
        running_genbot(sim, tmp_path / "genbot.db", **options) as bot,
    ):
        actor = Actor(bot.core, platform, ALICE, CHANNEL)
        await actor.command("imagine", "{red, blue} owl --sref #1", upload1=upload)
        [preview] = platform.privates
        assert "**2 jobs**" in preview.text
        [batch] = await bot.store.db.fetch_all("SELECT command FROM batches")
        assert "data" not in str(batch["command"]), "the batch keeps a link, not the bytes"
        await run_pressed(bot, platform, "Run 2 jobs")
        prompts = imagined(sim)
        assert [p.split(" --sref ")[0] for p in prompts] == ["blue owl", "red owl"]
        hosted = {p.split(" --sref ")[1] for p in prompts}
        assert len(hosted) == 1 and hosted.pop().startswith("http://127.0.0.1:")


async def test_images_among_the_choices_are_decided_across_the_whole_command(
    tmp_path: Path,
) -> None:
    platform = PrivatePlatform()
    options: dict[str, Any] = {"platform": platform, "webhooks": True}
    owl, fox = (Attachment(f"{n}.png", data=png(), content_type="image/png") for n in "ab")
    async with (
        serve(sim_config(time_scale=0.003, insecure_webhooks=True)) as sim,
        running_genbot(sim, tmp_path / "genbot.db", **options) as bot,
    ):
        actor = Actor(bot.core, platform, ALICE, CHANNEL)
        await actor.command("imagine", "{#1, #3} owl", upload1=owl, upload2=fox)
        assert platform.privates == [], "refused before any preview, not at Run"
        assert platform.ephemerals_for(ALICE.id) == [
            "#3 names image 3 sent with the command, but only 2 came with it: attach the images "
            "(on Slack, share them in the channel first), then name them #1, #2…"
        ]

        await actor.command("imagine", "{#1, #2} owl", upload1=owl, upload2=fox)
        [preview] = platform.privates
        assert "**2 jobs**" in preview.text and "\n1. #1 owl\n2. #2 owl\n" in preview.text
        await run_pressed(bot, platform, "Run 2 jobs")
        await until(lambda: asyncio.sleep(0, len(imagined(sim)) == 2))
        prompts = [prompt.split() for prompt in imagined(sim)]
        assert [words[1:] for words in prompts] == [["owl"], ["owl"]], (
            "each job has the one image its choice names, not the other as an image prompt too"
        )
        assert prompts[0][0] != prompts[1][0]


async def test_an_aspect_ratio_among_the_choices_is_refused_on_every_platform(
    tmp_path: Path,
) -> None:
    platform = PrivatePlatform()
    async with (
        serve(sim_config(time_scale=0.003)) as sim,
        running_genbot(sim, tmp_path / "genbot.db", platform=platform) as bot,
    ):
        actor = Actor(bot.core, platform, ALICE, CHANNEL)
        await actor.command("imagine", "a fox --ar {16:9, 1:1}")
        await actor.command("imagine", prompt="a fox --ar {16:9, 1:1}")
        await actor.command("imagine", "{a fox --ar 16:9, a cat}")
        refusal = (
            "--ar cannot vary with {…} choices: the jobs of one command share one aspect ratio. "
            "Give one ratio (like --ar 16:9) outside the braces, and run the command again for "
            "another."
        )
        assert platform.ephemerals_for(ALICE.id) == [refusal] * 3, (
            "typed as text (Slack, the playground) and in Discord's prompt option alike"
        )
        assert platform.privates == [] and imagined(sim) == []


async def test_queued_jobs_speak_the_language_their_command_was_run_in(tmp_path: Path) -> None:
    platform = PrivatePlatform()
    options: dict[str, Any] = {"platform": platform, "limits": {"max_concurrent_jobs_per_user": 1}}
    db = tmp_path / "genbot.db"
    async with serve(sim_config(time_scale=1.0, clock_start=1_700_000_000)) as sim:
        async with running_genbot(sim, db, **options) as bot:
            japanese = Actor(bot.core, platform, ALICE, CHANNEL, locale="ja-JP")
            await japanese.command("imagine", "{a, b} owl")
            run = next(b for row in platform.privates[-1].buttons for b in row)
            await bot.core.handle(
                ButtonPress(
                    user=ALICE,
                    place=CHANNEL,
                    message_id="p",
                    action=run.action,
                    ref=run.ref,
                    locale="ja-JP",
                )
            )
        sim.advance(3600)
        async with running_genbot(sim, db, **options) as bot:
            await until(lambda: asyncio.sleep(0, len(imagined(sim)) == 2))
            jobs = await jobs_of(bot)
            assert [job_language(job) for job in jobs] == ["ja", "ja"], (
                "the queued job, started by the queue after a restart, speaks the command's"
            )


async def test_one_job_waiting_is_told_in_the_singular(tmp_path: Path) -> None:
    platform = PrivatePlatform()
    async with (
        serve(sim_config(time_scale=1.0, clock_start=1_700_000_000)) as sim,
        running_genbot(sim, tmp_path / "genbot.db", platform=platform) as bot,
    ):
        await Actor(bot.core, platform, ALICE, CHANNEL).command("imagine", "{a, b, c, d} owl")
        assert (
            "Your cap of jobs at once lets 3 start now. The other 1 waits in the queue, starting "
            "when one of your jobs finishes."
        ) in platform.privates[0].text
        await run_pressed(bot, platform)
        assert platform.ephemerals_for(ALICE.id) == [
            "3 of 4 jobs started. 1 waits in the queue, starting when one of your jobs finishes "
            "(your cap of jobs at once)."
        ]


async def test_combinations_giving_one_prompt_are_previewed_and_run_once(tmp_path: Path) -> None:
    platform = PrivatePlatform()
    async with (
        serve(sim_config(time_scale=0.003)) as sim,
        running_genbot(sim, tmp_path / "genbot.db", platform=platform) as bot,
    ):
        actor = Actor(bot.core, platform, ALICE, CHANNEL)
        await actor.command("imagine", "{,,,,} cat")
        [preview] = platform.privates
        assert preview.text.startswith(
            "**1 job** of `/imagine` in relax mode — estimated **4 credits** (genbot's default "
            "price, until it has recorded what such jobs cost here):\n"
        )
        assert "\n1. cat\n4 duplicates left out: combinations of the {…} choices" in preview.text
        await actor.command("imagine", "{a, a} {b , b } {x, y}")
        assert "**2 jobs**" in platform.privates[-1].text
        assert "\n1. a b x\n2. a b y\n6 duplicates left out" in platform.privates[-1].text
        await run_pressed(bot, platform, "Run", preview)
        assert imagined(sim) == ["cat"] and len(await jobs_of(bot)) == 1


async def test_the_cap_and_the_queue_are_one_paragraph_in_japanese(tmp_path: Path) -> None:
    platform = PrivatePlatform()
    async with (
        serve(sim_config(time_scale=0.003)) as sim,
        running_genbot(sim, tmp_path / "genbot.db", platform=platform) as bot,
    ):
        japanese = Actor(bot.core, platform, ALICE, CHANNEL, locale="ja-JP")
        await japanese.command("imagine", "{a, b, c, d} owl")
        [preview] = platform.privates
        assert "3 件はすぐに開始します。残りの 1 件はキューで待機し" in preview.text
        assert "。 " not in preview.text


async def test_run_checks_the_prompts_against_the_rules_in_force_as_it_is_pressed(
    tmp_path: Path,
) -> None:
    platform = PrivatePlatform()
    async with (
        serve(sim_config(time_scale=0.003)) as sim,
        running_genbot(sim, tmp_path / "genbot.db", platform=platform, screen=moderated) as bot,
    ):
        await Actor(bot.core, platform, ALICE, CHANNEL).command("imagine", "{a calm, a gory} fox")
        [batch] = await bot.store.db.fetch_all("SELECT id FROM batches")
        await bot.store.moderation.add_rule("fake", "w1", ModerationRule("gore", "gory"), "root")

        await run_pressed(bot, platform, "Run 2 jobs")
        await Actor(bot.core, platform, BOB, CHANNEL).command("imagine", "a gory fox")

        assert imagined(sim) == [] and await jobs_of(bot) == []
        [refused] = platform.ephemerals_for(ALICE.id)
        [typed] = platform.ephemerals_for(BOB.id)
        assert "**gore**" in refused and untimed(refused) == untimed(typed)
        settled = await bot.store.preferences.batch(str(batch["id"]))
        assert settled is not None and settled.outcome == "cancelled", "it can run no more"
        [preview] = platform.privates
        assert [b.disabled for row in preview.buttons for b in row] == [True, True]


async def test_jobs_run_refuses_are_told_once_per_reason(tmp_path: Path) -> None:
    platform = PrivatePlatform()
    options: dict[str, Any] = {"platform": platform, "limits": {"daily_credit_budget_per_user": 4}}
    async with (
        serve(sim_config(time_scale=0.003)) as sim,
        running_genbot(sim, tmp_path / "genbot.db", **options) as bot,
    ):
        alice = Actor(bot.core, platform, ALICE, CHANNEL)
        await alice.command("imagine", "a fox")
        await until(lambda: asyncio.sleep(0, bool(platform.with_images())))
        await alice.command("imagine", "{a, b} owl")
        await run_pressed(bot, platform, "Run 2 jobs")
        assert imagined(sim) == ["a fox"]
        assert platform.ephemerals_for(ALICE.id) == [
            "2 jobs did not start: `a owl`, `b owl`. You have used 4 of "
            "your 4 credits for today — that is the daily budget; it resets at 00:00 UTC."
        ]
