"""Settings per user, channel and workspace, merged into effective settings; :data:`UNSET`
marks what a partial update leaves as it is."""

from __future__ import annotations

import enum
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, fields
from typing import Final, Literal

ScopeKind = Literal["user", "channel", "workspace"]


class _Unset(enum.Enum):
    """Marker for "leave this field as it is" in partial updates (``None`` clears a field)."""

    UNSET = "UNSET"


UNSET: Final = _Unset.UNSET


@dataclass(frozen=True)
class SettingValues:
    """A set of setting values; None means "not set here". Used for defaults."""

    model: str | None = None
    system_prompt: str | None = None
    process_mode: str | None = None
    aspect_ratio: str | None = None
    temperature: float | None = None
    stream: bool | None = None
    remix: bool | None = None
    top_p: float | None = None
    presence_penalty: float | None = None
    frequency_penalty: float | None = None
    stop: str | None = None
    """Stop sequences as a JSON array of strings (see :func:`encode_stop`)."""
    n: int | None = None
    language: str | None = None
    """The language genbot speaks (a tag of :data:`bot.kernel.i18n.LANGUAGES`): a user's own,
    or a channel's or workspace's for what everyone there reads."""

    @property
    def stop_sequences(self) -> tuple[str, ...]:
        """``stop`` decoded (none when unset or unreadable)."""
        if not self.stop:
            return ()
        try:
            loaded = json.loads(self.stop)
        except ValueError:
            return ()
        return tuple(str(item) for item in loaded) if isinstance(loaded, list) else ()


def encode_stop(sequences: Sequence[str]) -> str:
    """Stop sequences as the ``stop`` setting stores them."""
    return json.dumps(list(sequences))


SETTING_NAMES: Final[tuple[str, ...]] = tuple(field.name for field in fields(SettingValues))


@dataclass(frozen=True)
class ScopeSettings(SettingValues):
    """The settings stored for one scope (a user, a channel or a workspace on a platform)."""

    kind: ScopeKind = "user"
    platform: str = ""
    scope_id: str = ""
    updated_at: float = 0.0


SettingSource = Literal["conversation", "user", "channel", "workspace", "default"]


@dataclass(frozen=True)
class EffectiveSettings(SettingValues):
    """Merged settings; ``sources`` names where each non-None value came from."""

    sources: Mapping[str, SettingSource] = field(default_factory=dict)
