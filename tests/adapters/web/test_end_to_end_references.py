"""/imagine with an image prompt and a style reference from the playground's attachment tray, on
two genbot processes sharing PostgreSQL: the browser's uploads reach the first, the provider
fetches both hosted images from the second (the first's ``[webhook] public_url`` is the second's
receiver, as a load balancer in front of both would route it)."""

from __future__ import annotations

from pathlib import Path

from pydantic import SecretStr

from adapters.web.settings import WebSettings
from bot.kernel import StorageSettings, WebhookSettings
from genbot.demo import demo_settings, free_port
from genbot.runtime import running
from genbot.settings import Settings
from simulator.server import serve
from simulator.state import SimulatorConfig
from tests.adapters.web.fakes import eventually, upload
from tests.bot.features.jobs.support import png
from tests.genbot.stack import FAST_POLLING, playground_user, real_stack
from tests.postgres import PostgresCluster


def process_settings(sim_url: str, api_key: str, folder: Path, storage_url: str) -> Settings:
    """One genbot process's settings: the playground on, its receiver on a port of its own,
    the shared database."""
    base = Settings(web=WebSettings(enabled=True, port=0), limits=FAST_POLLING)
    settings = demo_settings(base, sim_url, api_key, folder)
    storage = StorageSettings(path=folder / "genbot.db", url=SecretStr(storage_url))
    return settings.model_copy(update={"storage": storage})


async def test_tray_images_named_in_the_prompt_are_fetched_from_the_other_process(
    tmp_path: Path, postgres: PostgresCluster
) -> None:
    url = postgres.create_schema()
    config = SimulatorConfig(time_scale=0.01, insecure_webhooks=True)
    async with serve(config) as sim:
        other_settings = process_settings(sim.base_url, config.api_key, tmp_path / "b", url)
        mine = process_settings(sim.base_url, config.api_key, tmp_path / "a", url)
        port = free_port()
        hook = WebhookSettings(
            public_url=other_settings.webhook.public_url, port=port, allow_insecure_loopback=True
        )
        mine = mine.model_copy(update={"webhook": hook})
        async with (
            running(other_settings) as other,
            running(mine) as first,
            playground_user(first.web_url) as user,
        ):
            fox, style = png(40, 30, "blue"), png(30, 40, "green")
            status, answer = await upload(user.session, ("fox.png", fox), ("style.png", style))
            assert status == 201, answer
            ids = [item["id"] for item in answer["uploads"]]
            body = {"text": "/imagine a fox --sref #2 --sw 300", "attachments": ids}
            await user.post("/api/command", body)

            def imagined() -> list[str]:
                requests = sim.state.requests_to("/gen/v2/imagine")
                return [str(request.body["prompt"]) for request in requests if request.created_id]

            await eventually(lambda: bool(imagined()), 15.0)
            [prompt] = imagined()
            words = prompt.split()
            assert words[1:4] == ["a", "fox", "--sref"] and words[5:] == ["--sw", "300"]
            hosted = (words[0], words[4])
            served_by_the_other = other_settings.webhook.public_url + "/media/"
            assert all(link.startswith(served_by_the_other) for link in hosted)
            names = tuple(link.rsplit("/", 1)[1] for link in hosted)
            assert await other.store.media.fetches(names) == dict.fromkeys(names, 1)


async def test_titles_show_the_prompt_as_it_ran_with_the_images_named_as_typed(
    tmp_path: Path,
) -> None:
    """Midjourney titles a result with the prompt and every parameter as the job ran, then its
    speed: ``--ar`` and the mode, typed as options, are shown; the hosted images are named as
    the user named them (their links expire), in the progress, the grid and its upscale."""
    async with real_stack(tmp_path) as stack, playground_user(stack.url) as user:
        view = await user.watch("general")
        fox, style = png(40, 30, "blue"), png(30, 40, "green")
        status, answer = await upload(user.session, ("fox.png", fox), ("style.png", style))
        assert status == 201, answer
        ids = [item["id"] for item in answer["uploads"]]
        text = "/imagine a cat --no dogs --seed 42 --sref #2 --ar 2:3 --turbo"
        echo = await user.post("/api/command", {"text": text, "attachments": ids})
        grid = await view.until(lambda: view.with_buttons(echo, "U1"))

        [sent] = stack.sim.state.requests_to("/gen/v2/imagine")
        assert str(sent.body["prompt"]).startswith("http"), "the provider gets the links"
        ran = "#1 a cat --no dogs --seed 42 --sref #2 --ar 2:3"
        assert grid["text"] == f"**Imagined** — {ran} (turbo)"
        first = view.events_of(grid["id"])[0]["message"]["text"]
        assert first.startswith(f"⏳ **Imagine** — {ran}\n"), first
        await user.press(grid, "U1")
        upscale = await view.until(lambda: view.with_buttons(grid["id"], "Vary (Strong)"))
        assert upscale["text"] == f"**Upscaled #1** — {ran} (turbo)"
