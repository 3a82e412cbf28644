"""The end-to-end tests' view of a playground channel (:mod:`tests.genbot.stack`)."""

from __future__ import annotations

import asyncio
from pathlib import Path

from tests.genbot.stack import playground_user, real_stack


async def test_a_wait_sees_a_change_no_event_follows_and_loses_no_event(tmp_path: Path) -> None:
    """A wait over other state than the channel's (as a wait for the simulator's requests is)
    ends when that state changes, though no event follows; the event being read meanwhile is
    read whole by the next wait."""
    async with real_stack(tmp_path) as stack, playground_user(stack.url) as user:
        view = await user.watch()
        changed: list[bool] = []
        asyncio.get_running_loop().call_later(0.2, changed.append, True)

        assert await view.until(lambda: changed, timeout=5) == [True]

        said = await user.command("/help")
        await view.until(lambda: view.handled(said))
        assert view.messages[said]["text"] == "/help"
        assert view.after(said), "the answer to /help"
