"""End to end, the pool of provider keys (issue 30 item 3): three keys — one the provider
refuses with 401, one whose account is out of credit, one healthy. New jobs all land on the
healthy key; follow-ups of earlier jobs made on the others still go to them. Through the real
discord.py, the fake Discord, the real core on a tmp SQLite database (restarted between the
two configurations) and the simulator over HTTP, whose accounts each see only their own
tasks."""

from __future__ import annotations

import asyncio
import logging
from pathlib import Path

import pytest
from prometheus_client import REGISTRY
from pydantic import SecretStr

from bot.api.settings import KeyMode, KeySettings
from bot.features.provider_keys import ProviderKeys
from simulator.server import serve
from simulator.state import RecordedRequest, SimulatorConfig
from simulator.task_model import account_id
from storage import Job, JobStatus
from tests.adapters.discord.harness import Harness
from tests.adapters.discord.real_core import (
    QUICK_BUCKET,
    QUICK_WINDOW,
    RealGenbot,
    creations,
    newest,
    real_genbot,
    with_image,
)
from tests.fakes.discord import FakeChannel, FakeDiscord, FakeMessage

POSTED: tuple[JobStatus, ...] = ("posted",)
pytestmark = pytest.mark.parametrize("fake", [QUICK_BUCKET], indirect=True)

SECRETS = {"revoked": "key-revoked-0123", "broke": "key-broke-4567", "healthy": "key-ok-89ab"}
CHANNELS = 8
WEIGHTS = {"revoked": 1000.0, "broke": 100.0, "healthy": 1.0}
"""The refused keys weigh most, so that new jobs try them first (and find them refused)."""


def pool(modes: dict[str, list[KeyMode]] | None = None) -> tuple[KeySettings, ...]:
    """The three keys, each allowed ``modes[name]`` (default: every mode)."""
    return tuple(
        KeySettings(
            name=name,
            key=SecretStr(secret),
            weight=WEIGHTS[name],
            modes=(modes or {}).get(name, []),
        )
        for name, secret in SECRETS.items()
    )


def failures(key: str, kind: str) -> float:
    value = REGISTRY.get_sample_value(
        "genbot_provider_key_failures_total", {"key": key, "kind": kind}
    )
    return value or 0.0


def sent_with(requests: list[RecordedRequest], name: str) -> list[RecordedRequest]:
    return [r for r in requests if r.account == account_id(SECRETS[name])]


async def grid_in(fake: FakeDiscord, channel: FakeChannel, prompt: str) -> FakeMessage:
    """The grid of ``prompt`` in ``channel``, once posted."""

    def found() -> FakeMessage | None:
        return newest(
            fake.bot_messages(channel.id),
            lambda m: with_image(m) and prompt in m.text and m.button("U1") is not None,
        )

    return await fake.wait_for(found, 20.0, f"the grid of {prompt!r}")


async def job_of(genbot: RealGenbot, job_type: str, prompt: str) -> Job:
    """The one job of ``job_type`` for ``prompt``, once its row exists (within 30 s)."""
    async with asyncio.timeout(30.0):
        while True:
            found = [
                j for j in await genbot.all_jobs() if j.type == job_type and j.prompt == prompt
            ]
            if found:
                [job] = found
                return job
            await asyncio.sleep(0.05)


@pytest.mark.parametrize("jobs", [8, pytest.param(50, marks=pytest.mark.heavy)])
async def test_new_jobs_land_on_the_healthy_key_and_follow_ups_keep_their_parents_key(
    harness: Harness, tmp_path: Path, caplog: pytest.LogCaptureFixture, jobs: int
) -> None:
    fake = harness.fake
    alice, general = fake.user("alice"), fake.channel("general")
    accounts = tuple((secret, 100_000) for secret in SECRETS.values())
    config = SimulatorConfig(time_scale=0.003, seed=7, accounts=accounts)
    db = tmp_path / "genbot.db"
    uncapped = {"max_concurrent_jobs_per_user": 0, "daily_credit_budget_per_user": 0}
    caplog.set_level(logging.INFO)
    async with serve(config) as sim:
        # Before: each key makes one grid (the modes a key allows steer them).
        by_mode: dict[str, list[KeyMode]] = {
            "revoked": ["fast"],
            "broke": ["turbo"],
            "healthy": ["relax"],
        }
        first = pool(by_mode)
        async with real_genbot(
            harness, sim, db, edit_window_seconds=QUICK_WINDOW, keys=first, **uncapped
        ) as genbot:
            for name, mode in (("revoked", "fast"), ("broke", "turbo")):
                await fake.slash(
                    alice, general, "imagine", {"prompt": f"a {name} fox", "process_mode": mode}
                )
                await grid_in(fake, general, f"a {name} fox")
                made = await job_of(genbot, "imagine", f"a {name} fox")
                assert made.provider_key == name
            grids = {
                name: await grid_in(fake, general, f"a {name} fox") for name in ("revoked", "broke")
            }
        # Then the provider revokes one key, and another account runs out of credit.
        sim.state.accounts[SECRETS["revoked"]].revoked = True
        sim.state.accounts[SECRETS["broke"]].balance = 0
        before = {
            "revoked": failures("revoked", "refused"),
            "broke": failures("broke", "no_credit"),
        }

        async with real_genbot(
            harness, sim, db, edit_window_seconds=QUICK_WINDOW, keys=pool(), **uncapped
        ) as genbot:
            imagined_before = len(creations(sim, "imagine"))
            channels = [await fake.user_thread(alice, general, f"art {n}") for n in range(CHANNELS)]
            await asyncio.gather(
                *(
                    fake.slash(alice, channels[n % CHANNELS], "imagine", {"prompt": f"fox {n}"})
                    for n in range(jobs)
                )
            )
            posted = [
                await genbot.jobs.watch.wait(
                    (await job_of(genbot, "imagine", f"fox {n}")).id, POSTED, 60.0
                )
                for n in range(jobs)
            ]
            assert {job.provider_key for job in posted} == {"healthy"}
            sent = creations(sim, "imagine")[imagined_before:]
            accepted = [r for r in sent if r.created_id is not None]
            assert len(accepted) == jobs and sent_with(accepted, "healthy") == accepted
            # The refused keys were tried by the jobs that chose them before the first refusal
            # came back: each such job was sent again with another key, so no user saw it.
            refused = sent_with(sent, "revoked")
            assert refused and {r.status for r in refused} == {401}
            broke = sent_with(sent, "broke")
            assert broke and all(r.status == 200 and r.created_id is None for r in broke)
            assert failures("revoked", "refused") == before["revoked"] + len(refused)
            assert failures("broke", "no_credit") == before["broke"] + len(broke)
            # Taken out: later jobs no longer try them.
            for n in range(2):
                await fake.slash(alice, general, "imagine", {"prompt": f"later fox {n}"})
                later = await job_of(genbot, "imagine", f"later fox {n}")
                later = await genbot.jobs.watch.wait(later.id, POSTED, 30.0)
                assert later.provider_key == "healthy"
            assert len(creations(sim, "imagine")) == imagined_before + len(sent) + 2
            assert genbot.jobs.starter.keys is not None
            keys = ProviderKeys(genbot.jobs.starter.keys, genbot.store.admission)
            health = {row.name: row for row in await keys.health()}
            assert {name: row.state for name, row in health.items()} == {
                "revoked": "refused",
                "broke": "no_credit",
                "healthy": "in",
            }
            assert health["healthy"].tasks_today == jobs + 2
            assert health["revoked"].tasks_today == 1 and health["revoked"].failures == len(refused)

            # Follow-ups of the earlier grids still go to the keys that made them.
            upscales_before = len(creations(sim, "upscale"))
            for name in ("revoked", "broke"):
                await fake.press(alice, grids[name], "U1")
            healthy_grid = await grid_in(fake, channels[0], "fox 0")
            await fake.press(alice, healthy_grid, "U1")

            def three_upscales() -> list[RecordedRequest] | None:
                found = creations(sim, "upscale")[upscales_before:]
                return found if len(found) == 3 else None

            upscales = await fake.wait_for(three_upscales, 20.0, "three upscale requests")
            [to_revoked] = sent_with(upscales, "revoked")
            [to_broke] = sent_with(upscales, "broke")
            [to_healthy] = sent_with(upscales, "healthy")
            assert to_revoked.status == 401 and to_revoked.created_id is None
            assert to_broke.created_id is None
            assert to_healthy.created_id is not None
            follow_ups = [j for j in await genbot.all_jobs() if j.type == "upscale"]
            assert {
                j.provider_key: j.status for j in follow_ups if j.provider_key != "healthy"
            } == {
                "revoked": "create_failed",
                "broke": "create_failed",
            }
    logged = "\n".join(record.getMessage() for record in caplog.records)
    assert "provider key revoked taken out" in logged and "provider key broke taken out" in logged
    assert not any(secret in logged for secret in SECRETS.values())


async def test_a_restarted_genbot_reads_a_job_in_flight_with_the_key_that_made_it(
    harness: Harness, tmp_path: Path
) -> None:
    fake = harness.fake
    alice, general = fake.user("alice"), fake.channel("general")
    secrets = {"first": "first-secret", "second": "second-secret"}
    keys = (
        KeySettings(name="first", key=SecretStr(secrets["first"]), modes=["fast"]),
        KeySettings(name="second", key=SecretStr(secrets["second"])),
    )
    accounts = tuple((secret, 1000) for secret in secrets.values())
    manual = SimulatorConfig(time_scale=1.0, clock_start=1_700_000_000.0, accounts=accounts)
    db = tmp_path / "genbot.db"
    async with serve(manual) as sim:
        async with real_genbot(
            harness, sim, db, edit_window_seconds=QUICK_WINDOW, keys=keys
        ) as genbot:
            await fake.slash(alice, general, "imagine", {"prompt": "a slow fox"})
            job = await job_of(genbot, "imagine", "a slow fox")
            in_flight: tuple[JobStatus, ...] = ("submitted", "staged", "pending", "processing")
            job = await genbot.jobs.watch.wait(job.id, in_flight, 20.0)
            assert job.provider_key == "second", "relax: the first key takes fast jobs only"
        polled_before = len(sim.state.requests_to("/gen/v2/multi_fetch"))
        sim.advance(3600)
        async with real_genbot(
            harness, sim, db, edit_window_seconds=QUICK_WINDOW, keys=keys
        ) as restarted:
            posted = await restarted.jobs.watch.wait(job.id, POSTED, 20.0)
            assert posted.provider_key == "second"
            await grid_in(fake, general, "a slow fox")
    reads = sim.state.requests_to("/gen/v2/multi_fetch")[polled_before:]
    assert reads and {r.account for r in reads} == {account_id(secrets["second"])}


async def test_a_job_asked_in_mixed_mode_goes_to_the_key_of_the_mode_it_runs_in(
    harness: Harness, tmp_path: Path
) -> None:
    fake = harness.fake
    alice, general = fake.user("alice"), fake.channel("general")
    secrets = {"relaxed": "relaxed-secret", "fast": "fast-secret"}
    keys = (
        KeySettings(name="relaxed", key=SecretStr(secrets["relaxed"]), modes=["relax"]),
        KeySettings(name="fast", key=SecretStr(secrets["fast"]), modes=["fast"]),
    )
    accounts = tuple((secret, 1000) for secret in secrets.values())
    async with (
        serve(SimulatorConfig(time_scale=0.003, accounts=accounts)) as sim,
        real_genbot(
            harness, sim, tmp_path / "genbot.db", edit_window_seconds=QUICK_WINDOW, keys=keys
        ) as genbot,
    ):
        for prompt, key in (("a quick fox --fast", "fast"), ("a calm fox", "relaxed")):
            options = {"prompt": prompt, "process_mode": "mixed"}
            await fake.slash(alice, general, "imagine", options)
            job = await job_of(genbot, "imagine", prompt)
            assert job.provider_key == key, "mixed runs in the prompt's mode, else relax"
            await grid_in(fake, general, prompt.removesuffix(" --fast"))
