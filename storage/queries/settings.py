"""Settings per user, channel and workspace, and their merge into effective settings."""

from __future__ import annotations

from dataclasses import dataclass, fields
from typing import Final

from storage.queries.base import Clock
from storage.records.chat import Conversation
from storage.records.settings import (
    UNSET,
    EffectiveSettings,
    ScopeKind,
    ScopeSettings,
    SettingSource,
    SettingValues,
    _Unset,
)
from storage.rules import check_word, given_settings, merge_settings
from storage.sql.session import Database, Row

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
        return merge_settings(found, defaults=defaults, conversation=conversation)


@dataclass
class SettingsStore(SettingsReader):
    """Settings per user, channel and workspace."""

    clock: Clock

    async def set_scope_settings(
        self,
        kind: ScopeKind,
        platform: str,
        scope_id: str,
        *,
        model: str | _Unset | None = UNSET,
        system_prompt: str | _Unset | None = UNSET,
        process_mode: str | _Unset | None = UNSET,
        aspect_ratio: str | _Unset | None = UNSET,
        temperature: float | _Unset | None = UNSET,
        stream: bool | _Unset | None = UNSET,
        remix: bool | _Unset | None = UNSET,
        top_p: float | _Unset | None = UNSET,
        presence_penalty: float | _Unset | None = UNSET,
        frequency_penalty: float | _Unset | None = UNSET,
        stop: str | _Unset | None = UNSET,
        n: int | _Unset | None = UNSET,
    ) -> ScopeSettings:
        """Partial update: given values are set, None clears, omitted ones stay."""
        settings = {
            "model": model, "system_prompt": system_prompt, "process_mode": process_mode,
            "aspect_ratio": aspect_ratio, "temperature": temperature, "stream": stream,
            "remix": remix, "top_p": top_p, "presence_penalty": presence_penalty,
            "frequency_penalty": frequency_penalty, "stop": stop, "n": n,
        }  # fmt: skip
        given = given_settings(kind, settings)
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


_SCOPE_COLUMNS: Final = tuple(field.name for field in fields(ScopeSettings))


def scope_from_row(row: Row) -> ScopeSettings:
    values = {name: row[name] for name in _SCOPE_COLUMNS}
    for flag in ("stream", "remix"):
        values[flag] = None if values[flag] is None else bool(values[flag])
    return ScopeSettings(**values)
