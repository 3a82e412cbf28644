"""Bad input (issue 8, item 7): every invalid command, press, form or upload of the corpus gets
one specific answer naming the broken rule; nothing reaches the provider, nothing is stored or
posted, nothing crashes (no "Something went wrong", no logged error)."""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

import aiohttp
import pytest

from bot.kernel import ButtonPress, Command, InboundEvent, ModalSubmit, User
from simulator.server import serve
from storage import NewJob, SqliteStore
from tests.resilience import corpus
from tests.resilience.corpus import WEB_UPLOAD_LIMIT, CoreCase, WebCase
from tests.resilience.corpus_hostile import HOSTILE_CORE_CASES, HOSTILE_WEB_CASES
from tests.resilience.support import (
    GENERIC_FAILURE,
    PLACE,
    Genbot,
    error_records,
    leaked_secrets,
    record_lines,
    running_genbot,
    sim_config,
)
from tests.storage.helpers import create_job

USER = User("alice", "Alice")
CORE_CASES = (*corpus.CORE_CASES, *HOSTILE_CORE_CASES)
WEB_CASES = (*corpus.WEB_CASES, *HOSTILE_WEB_CASES)
HTTP_TIMEOUT = aiohttp.ClientTimeout(total=10)


async def seed_jobs(store: SqliteStore) -> dict[str, str]:
    """Finished jobs of every kind the corpus presses buttons on; their ids by key."""
    common: dict[str, Any] = {
        "requester_id": USER.id,
        "platform": PLACE.platform,
        "channel_id": PLACE.channel_id,
        "workspace_id": PLACE.workspace_id,
        "status": "posted",
    }
    grid = await create_job(
        store.admission,
        NewJob(family="task", type="imagine", prompt="a fox --v 6", provider_id="grid-1", **common),
    )
    upscale = await create_job(
        store.admission,
        NewJob(
            family="task",
            type="upscale",
            prompt="a fox --v 6",
            parent_job_id=grid.id,
            action="upscale1",
            provider_id="upscale-task-1",
            **common,
        ),
    )
    diffusion = await create_job(
        store.admission,
        NewJob(
            family="diffusion",
            type="txt2img",
            prompt="a fox",
            provider_id="100001",
            parameters={"endpoint": "txt2img", "body": {"prompt": "a fox"}},
            **common,
        ),
    )
    describe = await create_job(
        store.admission,
        NewJob(family="task", type="describe", provider_id="describe-task-1", **common),
    )
    await store.jobs.update_job(
        upscale.id,
        actions=["high_variation", "low_variation", "vary_region", "outpaint_custom"],
        result={"width": 384, "height": 384},
        result_urls=["https://images.example.org/up.png"],
    )
    await store.jobs.update_job(grid.id, actions=["upscale1", "variation1", "reroll"])
    await store.jobs.update_job(diffusion.id, result_urls=["https://images.example.org/diff.png"])
    await store.jobs.update_job(describe.id, result={"prompts": ["a", "b", "c", "d"]})
    jobs = {"grid": grid, "upscale": upscale, "diffusion": diffusion, "describe": describe}
    return {key: job.id for key, job in jobs.items()}


def event_for(case: CoreCase, seeded: dict[str, str]) -> InboundEvent:
    if case.kind in ("text", "options"):
        return Command(
            user=USER,
            place=PLACE,
            name=case.name,
            text=case.text,
            options=case.options,
            attachments=case.attachments,
        )
    ref = case.ref if case.ref is not None else seeded[case.target]
    if case.kind == "press":
        return ButtonPress(user=USER, place=PLACE, message_id="m-seeded", action=case.name, ref=ref)
    return ModalSubmit(user=USER, place=PLACE, action=case.name, ref=ref, values=case.values)


def assert_untouched(bot: Genbot, caplog: pytest.LogCaptureFixture) -> None:
    assert bot.sim.state.requests == [], [r.path for r in bot.sim.state.requests]
    assert error_records(caplog) == []
    assert leaked_secrets(record_lines(caplog.records)) == []


@pytest.mark.parametrize("case", CORE_CASES, ids=[case.id for case in CORE_CASES])
async def test_core_refuses_with_a_specific_message(
    case: CoreCase, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG)
    async with (
        serve(sim_config()) as sim,
        running_genbot(sim, tmp_path / "genbot.db", plan=case.plan, webhooks=case.rehosting) as bot,
    ):
        seeded = await seed_jobs(bot.store)
        before = {job.id for job in await bot.all_jobs()}

        await bot.core.handle(event_for(case, seeded))

        reopened = [modal for _, modal in bot.platform.modals]
        answers = bot.platform.ephemerals_for(USER.id) + [modal.refusal for modal in reopened]
        seen = {
            "answers": answers,
            "posted": [m.text for m in bot.platform.messages.values()],
            "provider saw": [r.path for r in bot.sim.state.requests],
        }
        assert len(answers) == 1, f"expected one answer; {seen}"
        answer = answers[0]
        assert not answer.lower().startswith(GENERIC_FAILURE), answer
        missing = [word for word in case.keywords if word.lower() not in answer.lower()]
        assert not missing, f"{answer!r} does not name the rule ({missing})"
        assert bot.platform.messages == {}, "nothing may be posted for bad input"
        if case.kind == "form":
            assert [m.action for m in reopened] in ([], [case.name]), "the form comes back"
        else:
            assert reopened == []
        assert {job.id for job in await bot.all_jobs()} == before, "no job may be stored"
        assert_untouched(bot, caplog)


async def refusal(session: aiohttp.ClientSession, url: str, case: WebCase) -> tuple[int, str]:
    """Send ``case`` to the playground; the status and error of the refused request."""
    upload_ids: list[str] = []
    if case.uploads:
        form = aiohttp.FormData()
        for filename, data, content_type in case.uploads:
            form.add_field(case.field_name, data, filename=filename, content_type=content_type)
        async with session.post(f"{url}/api/upload", data=form) as response:
            body = await response.json()
            if not case.command:
                return response.status, str(body.get("error", ""))
            assert response.status == 201, body
            upload_ids = [upload["id"] for upload in body["uploads"]]
    command = {"text": case.command, "channel": "general", "attachments": upload_ids}
    async with session.post(f"{url}/api/command", json=command) as response:
        return response.status, str((await response.json()).get("error", ""))


@pytest.mark.parametrize("case", WEB_CASES, ids=[case.id for case in WEB_CASES])
async def test_playground_refuses_platform_limits(
    case: WebCase, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG)
    limits = {"max_upload_bytes": WEB_UPLOAD_LIMIT}
    async with (
        serve(sim_config()) as sim,
        running_genbot(sim, tmp_path / "genbot.db", with_web=True, limits=limits) as bot,
        aiohttp.ClientSession(
            timeout=HTTP_TIMEOUT, cookie_jar=aiohttp.CookieJar(unsafe=True)
        ) as session,
    ):
        assert bot.web is not None
        async with session.get(f"{bot.web.url}/") as page:
            assert page.status == 200
        status, error = await refusal(session, bot.web.url, case)

        assert status == 400, (status, error)
        missing = [word for word in case.keywords if word.lower() not in error.lower()]
        assert not missing, f"{error!r} does not name the limit ({missing})"
        assert (
            bot.web.running_handlers == 0 and bot.web.playground.store.history("general", "") == []
        )
        assert await bot.all_jobs() == []
        assert_untouched(bot, caplog)


def test_the_corpus_covers_at_least_eighty_invalid_inputs() -> None:
    assert len(CORE_CASES) + len(WEB_CASES) >= 80
    assert len({case.id for case in CORE_CASES} | {case.id for case in WEB_CASES}) == len(
        CORE_CASES
    ) + len(WEB_CASES)
