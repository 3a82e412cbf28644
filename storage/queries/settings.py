"""Settings per user, channel and workspace, and their merge into effective settings."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Final

from storage.errors import StorageError, check_word
from storage.queries.base import Clock
from storage.records.chat import Conversation
from storage.records.settings import (
    SETTING_NAMES,
    EffectiveSettings,
    ScopeKind,
    ScopeSettings,
    SettingSource,
    SettingValues,
)
from storage.sql.session import Database, Row, record

PRECEDENCE: Final[dict[str, tuple[SettingSource, ...]]] = {
    "model": ("conversation", "user", "channel", "workspace", "default"),
    "system_prompt": ("conversation", "channel", "workspace", "default"),
    "process_mode": ("user", "channel", "workspace", "default"),
    "aspect_ratio": ("user", "channel", "workspace", "default"),
    "temperature": ("user", "channel", "workspace", "default"),
    "stream": ("channel", "workspace", "default"),
    "remix": ("user", "channel", "workspace", "default"),
    "top_p": ("channel", "workspace", "default"),
    "presence_penalty": ("channel", "workspace", "default"),
    "frequency_penalty": ("channel", "workspace", "default"),
    "stop": ("channel", "workspace", "default"),
    "n": ("channel", "workspace", "default"),
    "language": ("user", "channel", "workspace", "default"),
}
"""Where each setting is looked for, first match wins. The system prompt and the chat request
parameters (stream, top_p, penalties, stop, n) are per channel (user-level ones are refused);
the conversation's own overrides exist for model and prompt."""
CHANNEL_ONLY: Final[frozenset[str]] = frozenset(
    name for name, sources in PRECEDENCE.items() if "user" not in sources
)
"""Settings with no user level."""
SQL_SCOPE: Final = "SELECT * FROM scope_settings WHERE platform = ? AND kind = ? AND scope_id = ?"
SQL_SCOPES: Final = (
    "SELECT * FROM scope_settings WHERE platform = ? AND (kind, scope_id) IN (VALUES {})"
)


@dataclass
class SettingsReader:
    """Effective settings, merged from the scopes."""

    db: Database

    async def effective_settings(
        self,
        platform: str,
        *,
        user_id: str | None,
        channel_id: str | None,
        workspace_id: str | None,
        defaults: SettingValues | None = None,
        conversation: Conversation | None = None,
    ) -> EffectiveSettings:
        """Merge conversation, user, channel, workspace and defaults by ``PRECEDENCE``. The
        scopes are read in one query; a None (or empty) id skips that scope."""
        found = await self.scopes(
            platform, user_id=user_id, channel_id=channel_id, workspace_id=workspace_id
        )
        return merge_settings(found, defaults=defaults, conversation=conversation)

    async def scopes(
        self,
        platform: str,
        *,
        user_id: str | None,
        channel_id: str | None,
        workspace_id: str | None,
    ) -> dict[SettingSource, ScopeSettings]:
        """The stored settings of the user, channel and workspace given, by scope, in one
        query (unmerged: the language genbot speaks reads the user's apart from the place's);
        a None (or empty) id skips that scope."""
        candidates: tuple[tuple[ScopeKind, str | None], ...] = (
            ("user", user_id),
            ("channel", channel_id),
            ("workspace", workspace_id),
        )
        scopes = [(kind, scope_id) for kind, scope_id in candidates if scope_id]
        found: dict[SettingSource, ScopeSettings] = {}
        if scopes:
            query = SQL_SCOPES.format(", ".join("(?, ?)" for _ in scopes))
            values = [platform, *(value for scope in scopes for value in scope)]
            for row in await self.db.fetch_all(query, values):
                found[row["kind"]] = scope_from_row(row)
        return found


@dataclass
class SettingsStore(SettingsReader):
    """Settings per user, channel and workspace."""

    clock: Clock

    async def set_scope_settings(
        self, kind: ScopeKind, platform: str, scope_id: str, **changes: str | float | None
    ) -> ScopeSettings:
        """Partial update of the settings named by :data:`storage.SETTING_NAMES`: given values
        are set, None clears, omitted ones stay; :class:`StorageError` for any other name."""
        given = given_settings(kind, changes)
        columns = ["platform", "kind", "scope_id", "updated_at", *given]
        updates = ", ".join(f"{name} = excluded.{name}" for name in ["updated_at", *given])
        upsert = (
            f"INSERT INTO scope_settings ({', '.join(columns)})"
            f" VALUES ({', '.join('?' * len(columns))})"
            f" ON CONFLICT (platform, kind, scope_id) DO UPDATE SET {updates} RETURNING *"
        )
        values = (platform, kind, scope_id, self.clock(), *given.values())
        row = await self.db.fetch_one(upsert, values, repeatable=False)
        assert row is not None
        return scope_from_row(row)

    async def get_scope_settings(
        self, kind: ScopeKind, platform: str, scope_id: str
    ) -> ScopeSettings | None:
        """One scope's stored settings, or None."""
        check_word(kind, ScopeKind, "settings scope")
        row = await self.db.fetch_one(SQL_SCOPE, (platform, kind, scope_id))
        return None if row is None else scope_from_row(row)


def scope_from_row(row: Row) -> ScopeSettings:
    flags = {flag: None if row[flag] is None else bool(row[flag]) for flag in ("stream", "remix")}
    return record(ScopeSettings, row, **flags)


def given_settings(kind: str, values: Mapping[str, Any]) -> dict[str, Any]:
    """The settings of a partial update, checked."""
    check_word(kind, ScopeKind, "settings scope")
    given = dict(values)
    unknown = set(given) - set(SETTING_NAMES)
    if unknown:
        raise StorageError(f"unknown settings: {', '.join(sorted(unknown))}")
    per_user = [name for name in CHANNEL_ONLY if given.get(name) is not None]
    if kind == "user" and per_user:
        raise StorageError(f"{per_user[0]} is set per channel or workspace, not per user")
    return given


def merge_settings(
    scopes: Mapping[SettingSource, SettingValues],
    *,
    defaults: SettingValues | None,
    conversation: Conversation | None,
) -> EffectiveSettings:
    """Merge the stored scopes, the conversation's overrides and the defaults by
    ``PRECEDENCE``; ``sources`` says where each value came from."""
    layers: dict[SettingSource, SettingValues] = dict(scopes)
    if conversation is not None:
        layers["conversation"] = SettingValues(
            model=conversation.model, system_prompt=conversation.system_prompt
        )
    if defaults is not None:
        layers["default"] = defaults
    values: dict[str, Any] = {}
    sources: dict[str, SettingSource] = {}
    for name in SETTING_NAMES:
        for source in PRECEDENCE[name]:
            layer = layers.get(source)
            value = None if layer is None else getattr(layer, name)
            if value is not None:
                values[name] = value
                sources[name] = source
                break
    return EffectiveSettings(**values, sources=sources)
