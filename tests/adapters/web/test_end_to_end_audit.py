"""The playground on the real core and the simulator: an admin's rule and another user's
refusal and ban are recorded, and ``/admin audit`` shows them privately to the admin only."""

from __future__ import annotations

from pathlib import Path

from tests.adapters.web.test_end_to_end_moderation import become_admin
from tests.genbot.stack import playground_user, real_stack


async def test_the_admin_reads_the_log_of_a_rule_a_refusal_and_a_ban(tmp_path: Path) -> None:
    async with (
        real_stack(tmp_path, demo=True) as stack,
        playground_user(stack.url) as admin,
        playground_user(stack.url) as user,
    ):
        await become_admin(stack, admin)
        view, users_view = await admin.watch(), await user.watch()

        async def answer(said: str, by_admin: bool = True) -> dict[str, object]:
            who, seen = (admin, view) if by_admin else (user, users_view)
            echo = await who.command(said)
            await seen.until(lambda: seen.handled(echo))
            [told] = seen.after(echo)
            return told

        await answer("/admin moderation add gory --category gore")
        await answer("/imagine a gory fox", by_admin=False)
        refused = await answer("/admin audit", by_admin=False)
        assert "Only genbot admins" in str(refused["text"])

        shown = await answer("/admin audit --kind moderation")
        assert shown["kind"] == "ephemeral"
        text = str(shown["text"])
        assert (
            text.index("**moderation.banned** by `genbot`")
            < text.index("**moderation.refused**")
            < text.index("**moderation.rule_added**")
        )
        assert " in #general" in text and "<#" not in text, "the channel by its name"
        export = await answer("/admin audit --export")
        link = str(export["text"]).split("Download: ")[1].split(" ")[0]
        async with admin.session.get(link.removeprefix(stack.url)) as response:
            lines = (await response.text()).splitlines()
        assert len(lines) == 3 and response.content_type == "application/x-ndjson"
        assert stack.sim.state.requests == [], "no provider call"
