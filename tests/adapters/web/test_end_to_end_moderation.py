"""The playground on the real core and the simulator: a prompt breaking a moderation rule is
refused privately with no provider call, and its author's DM message is refused as banned."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from simulator.task_builders import describe_prompts
from tests.genbot.stack import PlaygroundUser, Stack, labels, playground_user, real_stack


async def become_admin(stack: Stack, user: PlaygroundUser) -> None:
    """``user`` opens the demo's admin link."""
    admin_url = stack.runtime.web_admin_url
    assert admin_url is not None
    async with user.session.get(admin_url[len(stack.url) :]) as opened:
        assert opened.status == 200


async def test_a_banned_prompt_is_refused_privately_and_its_author_banned(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("GENBOT_MODERATION__WORDS", json.dumps({"nsfw": ["nude"]}))
    async with real_stack(tmp_path) as stack, playground_user(stack.url) as user:
        view = await user.watch()
        echo_id = await user.command("/imagine a nսdе fox --ar 16:9")
        await view.until(lambda: view.handled(echo_id))
        [refusal] = view.after(echo_id)
        assert refusal["kind"] == "ephemeral" and refusal["reply_to"] == echo_id
        assert "**nsfw**" in refusal["text"] and "60 min" in refusal["text"]
        assert view.messages[echo_id]["private"], "the refused command stays its user's"

        dm = await user.dm_channel()
        dm_view = await user.watch(dm)
        said = await user.message("hello", channel=dm)
        await dm_view.until(lambda: dm_view.handled(said))
        [banned] = dm_view.after(said)
        assert "no prompts from you until" in banned["text"]
        assert stack.sim.state.requests == [], "no provider call"


async def test_an_admin_rule_set_in_the_playground_refuses_another_users_prompt(
    tmp_path: Path,
) -> None:
    async with (
        real_stack(tmp_path, demo=True) as stack,
        playground_user(stack.url) as admin,
        playground_user(stack.url) as user,
    ):
        await become_admin(stack, admin)
        view = await admin.watch()
        said = await admin.command("/admin moderation add gory --category gore")
        await view.until(lambda: view.handled(said))
        [added] = view.after(said)
        assert added["kind"] == "ephemeral" and "Added the word `gory`" in added["text"]

        users_view = await user.watch()
        refused = await user.command("/imagine a gory fox")
        await users_view.until(lambda: users_view.handled(refused))
        [refusal] = users_view.after(refused)
        assert "**gore**" in refusal["text"]
        assert stack.sim.state.requests == [], "no provider call"


async def test_the_model_check_refuses_an_unsure_prompt_before_any_job(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("GENBOT_MODERATION__WORDS", json.dumps({"violence": ["kill"]}))
    monkeypatch.setenv("GENBOT_MODERATION__MODEL_CHECK", "true")
    async with real_stack(tmp_path) as stack, playground_user(stack.url) as user:
        view = await user.watch()
        echo_id = await user.command("/imagine a skillful fox echo: BLOCK")
        await view.until(lambda: view.handled(echo_id))
        [refusal] = view.after(echo_id)
        assert "**violence**" in refusal["text"]
        [check] = stack.sim.state.requests_to("/v1/chat/completions")
        assert check.body["messages"][1]["content"] == "a skillful fox echo: BLOCK"
        assert stack.sim.state.requests_to("/gen/") == [], "no job"


async def test_an_answer_matching_a_rule_is_withheld_from_the_match_on(tmp_path: Path) -> None:
    async with (
        real_stack(tmp_path, demo=True) as stack,
        playground_user(stack.url) as admin,
        playground_user(stack.url) as user,
    ):
        dm = await user.dm_channel()
        view = await user.watch(dm)
        first = await user.message("a gory fox story", channel=dm)
        await view.until(lambda: view.handled(first))

        await become_admin(stack, admin)
        admins_view = await admin.watch()
        said = await admin.command("/admin moderation add gory --category gore")
        await admins_view.until(lambda: admins_view.handled(said))

        asked = await user.message("what was my first message", channel=dm)
        await view.until(lambda: view.handled(asked))
        [answer] = view.after(asked)
        assert answer["text"].startswith('Your first message was: "a ')
        assert "withheld the rest of this answer" in answer["text"] and "**gore**" in answer["text"]
        assert "gory" not in answer["text"]
        shown = [e["message"]["text"] for e in view.events_of(answer["id"])]
        assert not any("gory" in text for text in shown), "never shown, not even for a moment"


async def test_a_describe_prompt_matching_a_rule_is_withheld_with_a_notice(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    url = "https://files.example.com/cat.png"
    prompts = describe_prompts(url)
    style = prompts[1].split(", ")[1]
    assert [style in prompt for prompt in prompts] == [False, True, False, False]
    monkeypatch.setenv("GENBOT_MODERATION__WORDS", json.dumps({"art": [style]}))
    async with real_stack(tmp_path) as stack, playground_user(stack.url) as user:
        view = await user.watch()
        echo_id = await user.command(f"/describe {url}")
        described = await view.until(lambda: view.with_buttons(echo_id, "1"), timeout=20)
        assert style not in described["text"]
        assert "🚫 1 withheld: matched genbot's rules on **art**" in described["text"]
        assert [prompts[0], prompts[2], prompts[3]] == [
            line.split(" ", 1)[1] for line in described["text"].splitlines()[1:4]
        ]
        assert labels(described) == [["1", "2", "3", "🔄"], ["Imagine all", "ℹ️"]]


async def test_a_banned_user_pressing_u1_is_refused_privately_and_nothing_runs(
    tmp_path: Path,
) -> None:
    async with real_stack(tmp_path) as stack, playground_user(stack.url) as user:
        view = await user.watch()
        echo_id = await user.command("/imagine a lighthouse")
        grid = await view.until(lambda: view.with_buttons(echo_id, "U1"), timeout=20)
        me = view.messages[echo_id]["author"]["id"]
        await stack.runtime.store.moderation.ban("web", me, 30)
        shown = len(view.messages)

        pressed = await user.press(grid, "U1")
        await view.until(lambda: view.handled(pressed))
        [refusal] = list(view.messages.values())[shown:]
        assert refusal["kind"] == "ephemeral"
        assert refusal["text"].startswith("genbot takes no prompts from you until")
        assert stack.sim.state.requests_to("/gen/v2/upscale") == [], "no provider call"
