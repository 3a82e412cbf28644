"""Settings per user, channel and workspace, and their merge into effective settings."""

from __future__ import annotations

from typing import Any, Final

from sqlite_utils import Database

from storage.base import StoreBase
from storage.errors import StorageError
from storage.records import (
    SETTING_NAMES,
    UNSET,
    Conversation,
    EffectiveSettings,
    ScopeKind,
    ScopeSettings,
    SettingSource,
    SettingValues,
    _Unset,
)
from storage.sql import Row, fetch_one, write_transaction

SCOPE_KINDS: Final[frozenset[str]] = frozenset(("user", "channel", "workspace"))
SQL_SCOPE: Final = "SELECT * FROM scope_settings WHERE platform = ? AND kind = ? AND scope_id = ?"

PRECEDENCE: Final[dict[str, tuple[SettingSource, ...]]] = {
    "model": ("conversation", "user", "channel", "workspace", "default"),
    "system_prompt": ("conversation", "channel", "workspace", "default"),
    "process_mode": ("user", "channel", "workspace", "default"),
    "aspect_ratio": ("user", "channel", "workspace", "default"),
    "temperature": ("user", "channel", "workspace", "default"),
}
"""Where each setting is looked for, first match wins. The system prompt is per channel (a
user-level one is refused); the conversation's own overrides exist for model and prompt."""


def _scope(row: Row) -> ScopeSettings:
    return ScopeSettings(
        kind=row["kind"],
        platform=row["platform"],
        scope_id=row["scope_id"],
        model=row["model"],
        system_prompt=row["system_prompt"],
        process_mode=row["process_mode"],
        aspect_ratio=row["aspect_ratio"],
        temperature=row["temperature"],
        updated_at=row["updated_at"],
    )


def _check_kind(kind: str) -> None:
    if kind not in SCOPE_KINDS:
        raise StorageError(f"unknown settings scope {kind!r} (user, channel or workspace)")


class SettingsStore(StoreBase):
    """Settings methods of :class:`storage.Store`."""

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
    ) -> ScopeSettings:
        """Partial update of one scope's settings: given values are set, None clears a value,
        omitted ones stay. Returns the stored result."""
        _check_kind(kind)
        given: dict[str, Any] = {
            name: value
            for name, value in (
                ("model", model),
                ("system_prompt", system_prompt),
                ("process_mode", process_mode),
                ("aspect_ratio", aspect_ratio),
                ("temperature", temperature),
            )
            if not isinstance(value, _Unset)
        }
        if kind == "user" and given.get("system_prompt") is not None:
            raise StorageError("the system prompt is set per channel or workspace, not per user")

        def work(db: Database) -> ScopeSettings:
            now = self._now()
            columns = ["platform", "kind", "scope_id", "updated_at", *given]
            updates = ", ".join(f"{name} = excluded.{name}" for name in ["updated_at", *given])
            with write_transaction(db):
                db.conn.execute(
                    f"INSERT INTO scope_settings ({', '.join(columns)})"
                    f" VALUES ({', '.join('?' * len(columns))})"
                    f" ON CONFLICT (platform, kind, scope_id) DO UPDATE SET {updates}",
                    (platform, kind, scope_id, now, *given.values()),
                )
                row = fetch_one(db, SQL_SCOPE, (platform, kind, scope_id))
            assert row is not None
            return _scope(row)

        return await self._call(work)

    async def get_scope_settings(
        self, kind: ScopeKind, platform: str, scope_id: str
    ) -> ScopeSettings | None:
        """One scope's stored settings, or None when nothing was ever set for it."""
        _check_kind(kind)
        row = await self._call(lambda db: fetch_one(db, SQL_SCOPE, (platform, kind, scope_id)))
        return None if row is None else _scope(row)

    async def clear_scope_settings(self, kind: ScopeKind, platform: str, scope_id: str) -> bool:
        """Forget every setting of one scope; False if there was none."""
        _check_kind(kind)

        def work(db: Database) -> bool:
            with write_transaction(db):
                cursor = db.conn.execute(
                    "DELETE FROM scope_settings WHERE platform = ? AND kind = ? AND scope_id = ?",
                    (platform, kind, scope_id),
                )
            return cursor.rowcount == 1

        return await self._call(work)

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
        """Merge the scopes by ``PRECEDENCE``: model = conversation > user > channel >
        workspace > defaults; process_mode, aspect_ratio, temperature = user > channel >
        workspace > defaults; system_prompt = conversation > channel > workspace > defaults.
        A None (or empty) id skips that scope. ``sources`` tells where each value came from."""
        candidates: tuple[tuple[ScopeKind, str | None], ...] = (
            ("user", user_id),
            ("channel", channel_id),
            ("workspace", workspace_id),
        )
        scopes = [(kind, scope_id) for kind, scope_id in candidates if scope_id]

        def work(db: Database) -> dict[SettingSource, ScopeSettings]:
            found: dict[SettingSource, ScopeSettings] = {}
            for kind, scope_id in scopes:
                row = fetch_one(db, SQL_SCOPE, (platform, kind, scope_id))
                if row is not None:
                    found[kind] = _scope(row)
            return found

        layers: dict[SettingSource, SettingValues] = dict(await self._call(work))
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
