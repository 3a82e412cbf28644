"""The playground on the real core and the simulator: ``/prefer option set`` then ``--neon`` in a
prompt; an unknown ``--name`` refused with no provider call; ``{red, blue} fox --repeat 2``
previewed privately with its cost, and Run starting its 4 jobs once, pressed twice, the
preview's buttons disabled from then on."""

from __future__ import annotations

import asyncio
from pathlib import Path

from bot.kernel import LimitsSettings
from tests.genbot.stack import labels, playground_user, real_stack

SREF = "https://example.com/styles/neon.png"
ROOMY = LimitsSettings(
    poll_interval_min=0.01, poll_interval_max=0.1, max_concurrent_jobs_per_user=4
)


async def test_saved_options_and_a_previewed_batch_in_the_playground(tmp_path: Path) -> None:
    async with real_stack(tmp_path, limits=ROOMY) as stack, playground_user(stack.url) as user:
        view = await user.watch()
        said = await user.command(f"/prefer option set neon --style raw --sref {SREF}")
        await view.until(lambda: view.handled(said))
        [saved] = view.after(said)
        assert saved["kind"] == "ephemeral" and saved["text"].startswith("Saved: --neon")

        said = await user.command("/imagine a city --nein")
        await view.until(lambda: view.handled(said))
        [refused] = view.after(said)
        assert "--nein is not one of your saved options (yours are --neon" in refused["text"]
        assert stack.sim.state.requests_to("/gen/") == [], "no provider call"

        said = await user.command("/imagine a city --neon")
        await view.until(lambda: view.handled(said))
        [sent] = stack.sim.state.requests_to("/gen/v2/imagine")
        assert sent.body["prompt"] == f"a city --style raw --sref {SREF}"

        said = await user.command("/imagine {red, blue} fox --repeat 2")
        await view.until(lambda: view.handled(said))
        preview = next(m for m in view.after(said) if m["buttons"])
        assert "**4 jobs** of `/imagine`" in preview["text"] and "16 credits" in preview["text"]
        assert labels(preview) == [["Run 4 jobs", "Cancel"]]
        assert len(stack.sim.state.requests_to("/gen/v2/imagine")) == 1

        presses = await asyncio.gather(*(user.press(preview, "Run 4 jobs") for _ in range(2)))
        await view.until(lambda: all(view.handled(p) for p in presses))
        await view.until(lambda: len(stack.sim.state.requests_to("/gen/v2/imagine")) == 5)
        answers = [m["text"] for m in view.after(preview["id"]) if m["kind"] == "ephemeral"]
        assert sum("started already" in text for text in answers) == 1, answers
        closed = await view.until(
            lambda: (m := view.messages[preview["id"]])["edited"] and m, timeout=10
        )
        assert closed["text"] == preview["text"] and closed["kind"] == "ephemeral"
        assert [[b["disabled"] for b in row] for row in closed["buttons"]] == [[True, True]]
        prompts = sorted(r.body["prompt"] for r in stack.sim.state.requests_to("/gen/v2/imagine"))
        assert prompts == ["a city --style raw --sref " + SREF, *["blue fox"] * 2, *["red fox"] * 2]
