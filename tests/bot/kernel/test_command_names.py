"""How a text names a command: the catalogue's name in inline code, a platform's spelling, or a
platform's mention — as the place of the event being handled says."""

from __future__ import annotations

import asyncio

from bot.kernel import CommandNames, named, speaking, written

SLACK = CommandNames(spellings={"settings": "genbot settings"})
MENTIONS = CommandNames(mentions={"settings": "<settings 7>"})


def test_a_command_is_named_in_inline_code_unless_the_platform_mentions_it() -> None:
    assert named("settings") == "`/settings`"
    assert named("diffusion.txt2img") == "`/diffusion txt2img`"
    assert (
        written("settings", "--scope channel --top-p …") == "`/settings --scope channel --top-p …`"
    )
    with speaking("en", names=lambda: SLACK):
        assert named("settings") == "`/genbot settings`"
        assert named("imagine") == "`/imagine`"
    with speaking("en", names=lambda: MENTIONS):
        assert named("settings") == "<settings 7>"
        assert written("settings", "--ar 16:9") == "<settings 7> `--ar 16:9`"
        assert written("settings", "") == "<settings 7>"
    assert named("settings") == "`/settings`"


async def test_the_names_hold_in_the_tasks_a_block_starts() -> None:
    async def name() -> str:
        return named("settings")

    with speaking("en", names=lambda: MENTIONS):
        task = asyncio.create_task(name())
    assert await task == "<settings 7>"


def test_the_platform_is_asked_only_when_a_text_names_a_command_and_inner_blocks_keep_it() -> None:
    asked: list[str] = []

    def mentions() -> CommandNames:
        asked.append("asked")
        return MENTIONS

    with speaking("de", names=mentions):
        assert asked == []
        with speaking("ja"):
            assert named("settings") == "<settings 7>"
        assert asked == ["asked"]
