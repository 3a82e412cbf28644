"""What the job engines check prompts with: the router's moderation screen, as they see it."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Protocol

from bot.kernel import ButtonPress, Command, ModalSubmit, OptionValue


class ScreensPrompts(Protocol):
    """What checks a command's prompt against the moderation rules (the router's screen)."""

    async def screen(
        self, event: Command | ModalSubmit | ButtonPress, values: Mapping[str, OptionValue]
    ) -> None:
        """Refuse (:class:`~bot.kernel.UserError`) a prompt that breaks a rule, or any prompt of
        a banned user (a press's: a prompt it sends that the user never typed, as if typed)."""
        ...
