"""genbot's whole configuration: the core's sections (:mod:`bot.kernel.settings`) and each adapter's
own section (``[discord]``, ``[slack]``, ``[web]``), read from one TOML file and ``GENBOT_*``
variables (see :mod:`bot.kernel.settings` for the rules).

The platform keys ``[limits] discord_edits_per_window``, ``discord_edit_window_seconds``,
``slack_updates_per_minute`` and ``slack_message_updates_per_second`` of earlier versions are
read into their adapters' sections (``[discord] edits_per_window`` …), where they belong now.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from pydantic import Field, model_validator
from pydantic_settings import SettingsConfigDict

from adapters.discord.settings import DiscordSettings
from adapters.slack.settings import SlackSettings
from adapters.web.settings import WebSettings
from bot.kernel import CoreSettings
from genbot.settings_moderation import CheckedModerationSettings

MOVED_LIMITS: Mapping[str, tuple[str, str]] = {
    "discord_edits_per_window": ("discord", "edits_per_window"),
    "discord_edit_window_seconds": ("discord", "edit_window_seconds"),
    "slack_updates_per_minute": ("slack", "updates_per_minute"),
    "slack_message_updates_per_second": ("slack", "message_updates_per_second"),
}
"""``[limits]`` keys of earlier versions → (section, key) where they are now."""


class Settings(CoreSettings):
    """All of genbot's settings (``[moderation]`` patterns checked as the core runs them:
    :class:`genbot.settings_moderation.CheckedModerationSettings`)."""

    moderation: CheckedModerationSettings = Field(default_factory=CheckedModerationSettings)
    discord: DiscordSettings = Field(default_factory=DiscordSettings)
    slack: SlackSettings = Field(default_factory=SlackSettings)
    web: WebSettings = Field(default_factory=WebSettings)

    @model_validator(mode="before")
    @classmethod
    def _platform_keys_of_limits(cls, data: Any) -> Any:
        """Move the platform keys an earlier ``[limits]`` held into their sections (a value
        given in the section itself wins)."""
        if not isinstance(data, dict) or not isinstance(data.get("limits"), Mapping):
            return data
        limits = dict(data["limits"])
        moved = {key: limits.pop(key) for key in MOVED_LIMITS if key in limits}
        if not moved:
            return data
        data = {**data, "limits": limits}
        for old, value in moved.items():
            section, key = MOVED_LIMITS[old]
            current = data.get(section)
            values = dict(current) if isinstance(current, Mapping) else {}
            values.setdefault(key, value)
            data[section] = values
        return data

    def open_channels(self) -> dict[str, frozenset[str]]:
        """The channels whose job buttons anyone may press, per platform (``[discord]`` and
        ``[slack]`` ``open_channel_ids``)."""
        return {
            "discord": frozenset(str(channel) for channel in self.discord.open_channel_ids),
            "slack": frozenset(self.slack.open_channel_ids),
        }


def resolve_config_path(explicit: str | os.PathLike[str] | None) -> Path | None:
    """The TOML file to read: ``explicit``, else ``$GENBOT_CONFIG``, else ``./genbot.toml``."""
    if explicit:
        return Path(explicit)
    from_env = os.environ.get("GENBOT_CONFIG")
    if from_env:
        return Path(from_env)
    local = Path("genbot.toml")
    return local if local.is_file() else None


def load_settings(config: str | os.PathLike[str] | None = None, **overrides: Any) -> Settings:
    """Read settings from the TOML file (see :func:`resolve_config_path`) and the environment.

    Raises ``FileNotFoundError`` when an explicitly named file does not exist.
    """
    path = resolve_config_path(config)
    if path is not None and not path.is_file():
        raise FileNotFoundError(f"configuration file not found: {path}")

    class FileSettings(Settings):
        model_config = SettingsConfigDict(toml_file=path)

    return FileSettings(**overrides)
