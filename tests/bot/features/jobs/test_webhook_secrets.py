"""The jobs' webhook secrets are sealed in the database: the file holds none of them, the
provider's notifications still authenticate, secrets stored plain before sealing keep working
and are sealed at startup, a new key reads what the previous one sealed, and a key that opens
nothing stops genbot."""

from __future__ import annotations

import json
from pathlib import Path

import aiohttp
import pytest

from bot.kernel import SEALED_PREFIX, SealError
from simulator.server import RunningSimulator, serve
from simulator.state import SimulatorConfig
from storage import Job, NewJob, SqliteStore
from tests.bot.harness import Genbot, running_genbot
from tests.fakes.platform import FakePlatform
from tests.storage.helpers import create_job

MANUAL = SimulatorConfig(time_scale=1.0, clock_start=1_700_000_000, insecure_webhooks=True)
KEY_A, KEY_B = "a" * 32, "b" * 32


def database_bytes(db: Path) -> bytes:
    return b"".join(path.read_bytes() for path in sorted(db.parent.glob(db.name + "*")))


def secrets_sent(sim: RunningSimulator) -> list[str]:
    """The webhook secrets the provider was given (what it sends back)."""
    return [str(r.body["webhook_secret"]) for r in sim.state.requests_to("/gen/v2/imagine")]


async def notify(bot: Genbot, job: Job, secret: str) -> int:
    """A signal notification for ``job`` carrying ``secret``: its HTTP status."""
    url = f"{bot.settings.webhook.public_url}/webhooks/tasks/{job.id}"
    headers = {"x-webhook-secret": secret, "Content-Type": "application/json"}
    async with (
        aiohttp.ClientSession() as http,
        http.post(url, data=json.dumps({"status": "finished"}), headers=headers) as answer,
    ):
        return answer.status


async def imagined(bot: Genbot) -> Job:
    await bot.actor().command("imagine", prompt="a red fox")
    return await bot.latest_job()


async def test_the_database_file_holds_no_webhook_secret_and_notifications_authenticate(
    tmp_path: Path,
) -> None:
    db = tmp_path / "genbot.db"
    async with serve(MANUAL) as sim, running_genbot(sim, db, webhooks=True) as bot:
        job = await imagined(bot)
        (secret,) = secrets_sent(sim)
        accepted = await notify(bot, job, secret)
        refused = await notify(bot, job, job.webhook_secret or "")
        files = database_bytes(db)

    assert (accepted, refused) == (200, 401), "the stored value is no secret"
    assert len(secret) >= 32 and secret.encode() not in files
    assert job.webhook_secret is not None and job.webhook_secret.startswith(SEALED_PREFIX)


async def test_a_secret_stored_plain_before_sealing_works_and_is_sealed_at_startup(
    tmp_path: Path,
) -> None:
    db = tmp_path / "genbot.db"
    plain = "plain-secret-from-before-sealing-0123"
    async with await SqliteStore.open(db) as store:
        job = await create_job(store.admission, NewJob(
            family="task", type="imagine", requester_id="alice", platform="fake",
            channel_id="c1", workspace_id="w1", prompt="a fox", webhook_secret=plain,
        ))  # fmt: skip
    async with serve(MANUAL) as sim, running_genbot(sim, db, webhooks=True) as bot:
        stored = await bot.store.jobs.get_job(job.id)
        status = await notify(bot, job, plain)

    assert stored is not None and stored.webhook_secret is not None
    assert stored.webhook_secret.startswith(SEALED_PREFIX) and plain not in stored.webhook_secret
    assert status == 200
    assert plain.encode() not in database_bytes(db)


async def test_a_new_key_reads_what_the_previous_key_sealed_and_a_wrong_key_stops_genbot(
    tmp_path: Path,
) -> None:
    db = tmp_path / "genbot.db"
    platform = FakePlatform()
    async with serve(MANUAL) as sim:
        async with running_genbot(
            sim, db, platform=platform, webhooks=True, secret_keys=(KEY_A, "")
        ) as first:
            job = await imagined(first)
        (secret,) = secrets_sent(sim)

        with pytest.raises(SealError, match=r"secret_key_previous"):
            async with running_genbot(
                sim, db, platform=platform, webhooks=True, secret_keys=(KEY_B, "")
            ):
                pass
        async with running_genbot(
            sim, db, platform=platform, webhooks=True, secret_keys=(KEY_B, KEY_A)
        ) as rotating:
            during = await notify(rotating, job, secret)
        async with running_genbot(
            sim, db, platform=platform, webhooks=True, secret_keys=(KEY_B, "")
        ) as after:
            resealed = await notify(after, job, secret)

    assert (during, resealed) == (200, 200)
