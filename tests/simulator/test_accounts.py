"""Several keys, several accounts: credits per account, tasks and diffusion jobs visible only
to the account that made them, a revoked key answering 401, the request log naming accounts,
and ``genbot sim --account``."""

from __future__ import annotations

import click
import pytest

from genbot.cli import parse_account
from simulator.task_model import account_id
from tests.simulator.conftest import KEY, running

OTHER, EMPTY = "other-key", "empty-key"


async def test_each_account_has_its_own_credits_and_sees_only_its_own_tasks() -> None:
    async with running(accounts=((OTHER, 100), (EMPTY, 0))) as api:
        mine = await api.finished("imagine", {"prompt": "a fox"})
        theirs = await api.finished("imagine", {"prompt": "an owl"}, key=OTHER)
        assert "insufficient credit" in await api.failed("imagine", {"prompt": "x"}, key=EMPTY)
        accounts = api.sim.state.accounts
        assert accounts[KEY].charged > 0 and accounts[OTHER].charged > 0
        assert accounts[OTHER].balance + accounts[OTHER].charged == 100
        assert accounts[EMPTY].charged == 0

        status, _ = await api.post("/gen/v2/fetch", {"task_id": theirs}, key=KEY)
        assert status == 400
        status, _ = await api.post("/gen/v2/fetch", {"task_id": theirs}, key=OTHER)
        assert status == 200
        status, answer = await api.post("/gen/v2/multi_fetch", {"task_ids": [mine, theirs]})
        assert answer["data"][theirs] is None and answer["data"][mine]["task_id"] == mine
        _, keyless = await api.post("/gen/v2/multi_fetch", {"task_ids": [theirs]}, key=None)
        assert keyless["data"][theirs] is not None
        upscale = {"origin_task_id": theirs, "index": "1"}
        assert "does not exist" in await api.failed("upscale", upscale, key=KEY)
        await api.finished("upscale", upscale, key=OTHER)

        generated = await api.post("/diff/txt2img", {"prompt": "a cat"}, key=OTHER)
        job = generated[1]["id"]
        status, _ = await api.post("/diff/fetch", {"id": job}, key=KEY)
        assert status == 400
        status, _ = await api.post("/diff/fetch", {"id": job}, key=OTHER)
        assert status == 200


async def test_a_revoked_key_answers_401_and_the_log_names_each_requests_account() -> None:
    async with running(accounts=((OTHER, 100),)) as api:
        task = await api.finished("imagine", {"prompt": "a fox"}, key=OTHER)
        api.sim.state.accounts[OTHER].revoked = True
        status, _ = await api.post("/gen/v2/imagine", {"prompt": "a fox"}, key=OTHER)
        assert status == 401
        status, _ = await api.post("/gen/v2/fetch", {"task_id": task}, key=OTHER)
        assert status == 401
        await api.post("/gen/v2/imagine", {"prompt": "a fox"}, key="unknown")
        logged = [(r.path, r.account) for r in api.sim.state.requests_to("/gen/v2/imagine")]
        other = account_id(OTHER)
        assert logged == [("/gen/v2/imagine", other)] * 2 + [("/gen/v2/imagine", None)]
        assert OTHER not in repr(api.sim.state.requests)


def test_accounts_are_given_as_key_and_credits_on_the_command_line() -> None:
    assert parse_account("second=500") == ("second", 500)
    for wrong in ("second", "=5", "second=many"):
        with pytest.raises(click.BadParameter):
            parse_account(wrong)
