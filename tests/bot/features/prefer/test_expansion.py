"""The router's expansion of a user's prompt with their saved suffix, on a real store: what the
user typed wins (options in the prompt as Slack and the playground send it, typed options as
Discord sends them), and a prompt with nothing visible gets no suffix."""

from __future__ import annotations

from collections.abc import AsyncIterator, Mapping
from pathlib import Path

import pytest

from bot.features.prefer.expansion import SUFFIX_KEY, SavedExpansion
from bot.kernel import Command, OptionValue, Place, User
from storage import SavedOption, SqliteStore

PLACE = Place("fake", "w1", "c1")
ALICE = User("alice", "Alice")


@pytest.fixture
async def store(tmp_path: Path) -> AsyncIterator[SqliteStore]:
    store = await SqliteStore.open(tmp_path / "genbot.db")
    yield store
    await store.close()


async def expanded(
    store: SqliteStore,
    suffix: str,
    text: str = "",
    options: Mapping[str, OptionValue] | None = None,
) -> Command:
    await store.preferences.set_option(PLACE.platform, ALICE.id, SavedOption(SUFFIX_KEY, suffix))
    event = Command(user=ALICE, place=PLACE, name="imagine", text=text, options=options or {})
    command, __ = await SavedExpansion(store.preferences).expand(event)
    return command


async def test_a_typed_option_wins_over_the_suffix(store: SqliteStore) -> None:
    assert (await expanded(store, "--v 5.2", "a cat --v 7")).text == "a cat --v 7"
    assert (await expanded(store, "--ar 16:9 --v 6", "a tower --aspect 1:1")).text == (
        "a tower --aspect 1:1 --v 6"
    )
    on_discord = await expanded(
        store, "--ar 16:9 --v 6", options={"prompt": "a tower --v 7", "aspect_ratio": "1:1"}
    )
    assert on_discord.options == {"prompt": "a tower --v 7", "aspect_ratio": "1:1"}


async def test_a_prompt_of_invisible_characters_gets_no_suffix(store: SqliteStore) -> None:
    assert (await expanded(store, "--v 5.2", "\u200b")).text == "\u200b"
    assert (await expanded(store, "--v 5.2", options={"prompt": "\u200b"})).options == {
        "prompt": "\u200b"
    }
