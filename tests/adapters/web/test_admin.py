"""The admin page's API on the real core and the simulator: admins only (every read, change
and download asks), changes through ``/admin moderation``'s and the Cancel button's code and
recorded in the audit log, cross-site changes refused, the export downloaded as JSON lines."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from storage import ModerationRule, NewJob
from tests.adapters.web.test_end_to_end_moderation import become_admin
from tests.genbot.stack import PlaygroundUser, playground_user, real_stack
from tests.storage.helpers import create_job

WEB = {"platform": "web", "workspace": "web"}


async def answer(user: PlaygroundUser, path: str, body: dict[str, Any]) -> tuple[int, Any]:
    async with user.session.post(path, json=body) as response:
        return response.status, await response.json()


async def overview(who: PlaygroundUser, **query: str) -> tuple[int, Any]:
    async with who.session.get("/api/admin/overview", params={**WEB, **query}) as response:
        return response.status, await response.json()


async def me(user: PlaygroundUser) -> str:
    async with user.session.get("/api/history") as history:
        return str((await history.json())["me"]["id"])


async def test_only_admins_read_change_or_download_anything(tmp_path: Path) -> None:
    async with (
        real_stack(tmp_path, demo=True) as stack,
        playground_user(stack.url) as admin,
        playground_user(stack.url) as user,
    ):
        await become_admin(stack, admin)
        async with user.session.get("/admin") as page:
            assert page.status == 200 and "genbot admin" in await page.text()
        status, refused = await overview(user)
        assert (status, refused["error"]) == (403, "Only genbot admins may use the admin page.")
        ban = {**WEB, "action": "ban", "entry": "web-someone"}
        assert (await answer(user, "/api/admin/moderation", ban))[0] == 403
        assert (await answer(user, "/api/admin/cancel", {"job_id": "j1"}))[0] == 403
        async with user.session.get("/api/admin/audit.jsonl", params=WEB) as download:
            assert download.status == 403
        assert await stack.runtime.store.moderation.bans("web") == []

        status, shown = await overview(admin)
        assert status == 200 and shown["platforms"] == ["web"]
        assert {"keys", "queue", "moderation", "tiers", "audit", "cluster"} <= set(shown)
        assert [p["live"] for p in shown["cluster"]["processes"]] == [True]
        [key] = shown["keys"]
        assert (key["name"], key["state"], key["active"]) == ("default", "in", 0)
        assert (await overview(admin, platform="slack"))[0] == 400, "a platform not served"
        assert (await overview(admin, workspace="a b"))[0] == 400
        status, choices = await overview(admin, workspace="")
        assert (status, choices["platforms"]) == (200, ["web"])


async def test_a_ban_and_a_rule_set_on_the_page_are_enforced_and_recorded(tmp_path: Path) -> None:
    async with (
        real_stack(tmp_path, demo=True) as stack,
        playground_user(stack.url) as admin,
        playground_user(stack.url) as user,
    ):
        await become_admin(stack, admin)
        user_id = await me(user)
        view = await user.watch()
        said = await user.command("/settings --ar 16:9")
        await view.until(lambda: view.handled(said))
        ban = {**WEB, "action": "ban", "entry": user_id, "minutes": 30}
        status, told = await answer(admin, "/api/admin/moderation", ban)
        assert status == 200 and told["text"].startswith(f"Banned `{user_id}` until")
        rule = {**WEB, "action": "add", "entry": "gory", "category": "gore"}
        assert (await answer(admin, "/api/admin/moderation", rule))[0] == 200
        bad = {**WEB, "action": "add", "entry": "(x", "pattern": True}
        status, refused = await answer(admin, "/api/admin/moderation", bad)
        assert status == 400 and "cannot be used" in refused["error"]

        said = await user.command("/imagine a calm fox")
        await view.until(lambda: view.handled(said))
        [banned] = view.after(said)
        assert "no prompts from you until" in banned["text"]
        assert stack.sim.state.requests == [], "no provider call"

        _, shown = await overview(admin)
        assert [b["user_id"] for b in shown["moderation"]["bans"]] == [user_id]
        assert [r["entry"] for r in shown["moderation"]["rules"]] == ["gory"]
        kinds = [(e["entry"]["kind"], e["entry"]["actor_id"]) for e in shown["audit"]["entries"]]
        admin_id = kinds[-1][1]
        assert kinds == [
            ("moderation.refused", user_id),
            ("moderation.rule_added", admin_id),
            ("moderation.banned", admin_id),
        ]
        _, only_bans = await overview(admin, kind="moderation.banned", user=user_id, days="1")
        [entry] = only_bans["audit"]["entries"]
        assert entry["entry"]["after"]["minutes"] == 30

        unban = {**WEB, "action": "unban", "entry": user_id}
        assert (await answer(admin, "/api/admin/moderation", unban))[0] == 200
        async with admin.session.get("/api/admin/audit.jsonl", params=WEB) as download:
            assert download.status == 200
            assert download.headers["Content-Disposition"].endswith('.jsonl"')
            lines = [json.loads(line) for line in (await download.text()).splitlines()]
        assert [line["kind"] for line in lines][:2] == ["moderation.unbanned", "moderation.refused"]


async def test_what_would_act_on_nothing_or_on_everyone_is_refused_saying_why(
    tmp_path: Path,
) -> None:
    """qa2 D12: an unknown action is refused, not taken for a listing; a rule that would refuse
    nearly every prompt, a ban of an id genbot has not seen and an admin's ban of themself are
    refused, and none of them changes anything."""
    async with (
        real_stack(tmp_path, demo=True) as stack,
        playground_user(stack.url) as admin,
        playground_user(stack.url) as user,
    ):
        await become_admin(stack, admin)
        refused: dict[str, tuple[dict[str, Any], str]] = {
            "frob": (
                {"action": "frob"},
                "`/admin moderation` has no action 'frob': use add, remove, list, ban or unban.",
            ),
            "a": (
                {"action": "add", "entry": "a"},
                "That rule cannot be used: a word rule has at least 2 letters or digits",
            ),
            ".*": (
                {"action": "add", "entry": ".*", "pattern": True},
                "That pattern cannot be used: it can match an empty stretch of text, so it",
            ),
            "nobody": (
                {"action": "ban", "entry": "nobody-here"},
                "genbot has not seen `nobody-here` in this workspace. Check the id, or mention",
            ),
            "self": ({"action": "ban", "entry": await me(admin)}, "You cannot ban yourself."),
            "unseen": ({"action": "ban", "entry": await me(user)}, "genbot has not seen `web-"),
        }
        for name, (asked, said) in refused.items():
            status, told = await answer(admin, "/api/admin/moderation", {**WEB, **asked})
            assert (status, told["error"][: len(said)]) == (400, said), name
        assert await stack.runtime.store.moderation.bans("web") == []
        assert await stack.runtime.store.moderation.rules("web", "web") == []
        assert await stack.runtime.store.audit.entries("web", "web") == []

        named = {**WEB, "action": "add", "entry": r"(?P<Part>Nude)s?", "pattern": True}
        status, told = await answer(admin, "/api/admin/moderation", named)
        assert status == 200 and told["text"].startswith("Added the pattern"), told
        view = await user.watch()
        said = await user.command("/imagine two NUDES")
        await view.until(lambda: view.handled(said))
        [refusal] = view.after(said)
        assert "Refused: this matches genbot's rules on **blocked**" in refusal["text"]


@pytest.mark.timeout(90)
async def test_no_pattern_rule_set_on_the_page_can_stall_genbot(tmp_path: Path) -> None:
    async with (
        real_stack(tmp_path, demo=True) as stack,
        playground_user(stack.url) as admin,
        playground_user(stack.url) as user,
    ):
        await become_admin(stack, admin)
        backreference = {**WEB, "action": "add", "entry": r"(ab)\1", "pattern": True}
        status, refused = await answer(admin, "/api/admin/moderation", backreference)
        assert (
            status == 400
            and "That pattern cannot be used: genbot runs patterns on RE2" in (refused["error"])
        )
        assert r"no backreferences (\1)" in refused["error"]
        assert refused["error"].endswith(r"(RE2 says: invalid escape sequence: \1).")
        nested = {**WEB, "action": "add", "entry": "(a+)+$", "category": "test", "pattern": True}
        assert (await answer(admin, "/api/admin/moderation", nested))[0] == 200
        stored_before = ModerationRule("old", r"(x)\1", pattern=True)
        assert await stack.runtime.store.moderation.add_rule("web", "web", stored_before, "w-1")

        _, shown = await overview(admin)
        inactive = {rule["entry"]: rule["inactive"] for rule in shown["moderation"]["rules"]}
        assert inactive["(a+)+$"] is None
        assert "no backreferences" in inactive[r"(x)\1"]
        view = await admin.watch()
        listed = await admin.command("/admin moderation list")
        await view.until(lambda: view.handled(listed))
        [listing] = view.after(listed)
        assert "• **test**: `(a+)+$` (pattern)" in listing["text"]
        assert (
            r"• **old**: `(x)\1` (pattern, inactive: genbot runs patterns on RE2"
            in (listing["text"])
        )

        users_view = await user.watch()
        said = await user.command("/imagine " + "a" * 2_000 + "b")
        await users_view.until(lambda: users_view.handled(said))
        assert not any("**test**" in m["text"] for m in users_view.after(said))


async def test_a_cross_site_change_is_refused_and_changes_nothing(tmp_path: Path) -> None:
    async with real_stack(tmp_path, demo=True) as stack, playground_user(stack.url) as admin:
        await become_admin(stack, admin)
        ban = {**WEB, "action": "ban", "entry": "web-victim"}
        headers = {"Origin": "http://evil.example", "Sec-Fetch-Site": "cross-site"}
        async with admin.session.post("/api/admin/moderation", json=ban, headers=headers) as sent:
            assert sent.status == 403
        async with admin.session.post(
            "/api/admin/moderation", data="action=ban&entry=web-victim"
        ) as form:
            assert form.status == 400, "a form post is not JSON"
        assert await stack.runtime.store.moderation.bans("web") == []
        assert await stack.runtime.store.audit.entries("web", "web") == []


async def test_an_admin_cancels_another_users_job_through_the_cancel_path(tmp_path: Path) -> None:
    async with (
        real_stack(tmp_path, demo=True, clock_start=1_700_000_000) as stack,
        playground_user(stack.url) as admin,
        playground_user(stack.url) as user,
    ):
        await become_admin(stack, admin)
        view = await user.watch()
        said = await user.command("/imagine a slow fox")
        await view.until(lambda: view.handled(said))
        [job] = await stack.runtime.store.tracking.list_unfinished_jobs()
        _, shown = await overview(admin)
        assert [j["id"] for j in shown["queue"]["jobs"]] == [job.id]
        assert shown["queue"]["jobs"][0]["requester_id"] == job.requester_id

        status, told = await answer(admin, "/api/admin/cancel", {"job_id": job.id})
        assert status == 200 and told["text"].startswith(f"Cancelled {job.id}")
        assert "tells its requester" in told["text"]
        cancelled = await stack.runtime.store.jobs.get_job(job.id)
        assert cancelled is not None and cancelled.result.get("cancelled")
        progress = cancelled.progress_message_id
        assert progress is not None

        def told_in_place() -> dict[str, Any] | None:
            shown = view.messages.get(progress)
            return shown if shown is not None and "admin cancelled" in shown["text"] else None

        note = await view.until(told_in_place)
        assert not note.get("deleted") and note["buttons"] == []
        assert note["mention"] == job.requester_id
        assert "may still finish it and charge its credits to you" in note["text"]
        again = await answer(admin, "/api/admin/cancel", {"job_id": job.id})
        assert again[0] == 400, again
        assert (await answer(admin, "/api/admin/cancel", {"job_id": "nope"}))[0] == 400

        admins_view = await admin.watch()
        said = await admin.command("/imagine the admin's own fox")
        await admins_view.until(lambda: admins_view.handled(said))
        unfinished = await stack.runtime.store.tracking.list_unfinished_jobs()
        [own] = [j for j in unfinished if j.requester_id != job.requester_id]
        status, told = await answer(admin, "/api/admin/cancel", {"job_id": own.id})
        assert status == 200 and "its progress message is removed" in told["text"]
        assert "charges you" in told["text"]
        [entry] = await stack.runtime.store.audit.entries("web", "web", kind="job")
        assert (entry.kind, entry.target) == ("job.cancelled", job.id)


async def test_cancelling_a_job_the_service_never_confirmed_says_it_no_longer_counts(
    tmp_path: Path,
) -> None:
    """qa D6: a job left ``unknown`` (the provider never confirmed it) gives its place back
    when cancelled, and the admin page says so instead of "it counts toward the cap"."""
    async with (
        real_stack(tmp_path, demo=True) as stack,
        playground_user(stack.url) as admin,
        playground_user(stack.url) as user,
    ):
        await become_admin(stack, admin)
        told: list[str] = []
        for requester in (await me(admin), await me(user)):
            unconfirmed = NewJob(
                family="task",
                type="imagine",
                status="unknown",
                requester_id=requester,
                platform="web",
                workspace_id="web",
                channel_id="general",
                prompt="a fox",
            )
            job = await create_job(stack.runtime.store.admission, unconfirmed)
            status, answered = await answer(admin, "/api/admin/cancel", {"job_id": job.id})
            assert status == 200, answered
            told.append(answered["text"])
        own, theirs = told
        assert "it no longer counts toward your cap" in own and "until it ends" not in own
        assert "it no longer counts toward their cap" in theirs and "until it ends" not in theirs


async def test_the_tiers_and_who_is_in_which_on_this_platform(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    pro = {"name": "pro", "daily_credits": 500, "users": ["web:web-pro", "slack:U9"]}
    pro["roles"] = ["discord:42"]
    monkeypatch.setenv("GENBOT_QUOTAS__TIERS", json.dumps([pro]))
    async with real_stack(tmp_path, demo=True) as stack, playground_user(stack.url) as admin:
        await become_admin(stack, admin)
        _, shown = await overview(admin)
        assert shown["tiers"]["configured"]
        listed, default = shown["tiers"]["tiers"]
        assert (listed["name"], listed["users"], listed["roles"]) == ("pro", ["web-pro"], [])
        assert listed["limits"]["daily_credits"] == 500 and not listed["default"]
        assert default["default"] and default["users"] == []


async def test_the_queue_counts_jobs_in_direct_messages_and_shows_or_cancels_none(
    tmp_path: Path,
) -> None:
    """An admin acts on a job made in a DM only in that DM (:mod:`bot.refs`): the page shows
    how many there are, nothing of them, and its cancel knows no such job."""
    async with (
        real_stack(tmp_path, demo=True, clock_start=1_700_000_000) as stack,
        playground_user(stack.url) as admin,
        playground_user(stack.url) as user,
    ):
        await become_admin(stack, admin)
        dm = await user.dm_channel()
        view = await user.watch(dm)
        private = {"text": "/imagine my private dm secret prompt", "channel": dm}
        said = await user.post("/api/command", private)
        await view.until(lambda: view.handled(said))
        in_general = await user.watch()
        said = await user.command("/imagine a public fox")
        await in_general.until(lambda: in_general.handled(said))
        jobs = await stack.runtime.store.tracking.list_unfinished_jobs()
        [secret] = [job for job in jobs if job.is_dm]
        [public] = [job for job in jobs if not job.is_dm]

        _, shown = await overview(admin)
        assert [j["id"] for j in shown["queue"]["jobs"]] == [public.id]
        assert shown["queue"]["direct_messages"] == 1
        assert "secret" not in json.dumps(shown) and dm not in json.dumps(shown)

        status, refused = await answer(admin, "/api/admin/cancel", {"job_id": secret.id})
        assert (status, refused["error"]) == (400, "There is no such job.")
        kept = await stack.runtime.store.jobs.get_job(secret.id)
        assert kept is not None and kept.status != "cancelled"
        assert not kept.result.get("cancelled")
        assert await stack.runtime.store.audit.entries("web", "web", kind="job") == []
