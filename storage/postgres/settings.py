"""Settings per user, channel and workspace on PostgreSQL."""

from __future__ import annotations

from typing import Final

from psycopg import sql

from storage.postgres.base import PostgresBase, Query
from storage.records import (
    UNSET,
    Conversation,
    EffectiveSettings,
    ScopeKind,
    ScopeSettings,
    SettingSource,
    SettingValues,
    _Unset,
)
from storage.rows import scope_from_row
from storage.rules import check_scope_kind, given_settings, merge_settings

SQL_SCOPE: Final[Query] = (
    "SELECT * FROM scope_settings WHERE platform = %s AND kind = %s AND scope_id = %s"
)
SQL_SCOPES: Final[Query] = (
    "SELECT * FROM scope_settings WHERE platform = %s"
    " AND (kind, scope_id) IN (SELECT * FROM unnest(%s::text[], %s::text[]))"
)


class PostgresSettings(PostgresBase):
    """Settings methods of :class:`storage.postgres.PostgresStore`."""

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
        given = given_settings(
            kind,
            {
                "model": model,
                "system_prompt": system_prompt,
                "process_mode": process_mode,
                "aspect_ratio": aspect_ratio,
                "temperature": temperature,
                "stream": stream,
                "remix": remix,
                "top_p": top_p,
                "presence_penalty": presence_penalty,
                "frequency_penalty": frequency_penalty,
                "stop": stop,
                "n": n,
            },
        )
        columns = ["platform", "kind", "scope_id", "updated_at", *given]
        statement = sql.SQL(
            "INSERT INTO scope_settings ({}) VALUES ({})"
            " ON CONFLICT (platform, kind, scope_id) DO UPDATE SET {} RETURNING *"
        ).format(
            sql.SQL(", ").join(map(sql.Identifier, columns)),
            sql.SQL(", ").join(sql.Placeholder() * len(columns)),
            sql.SQL(", ").join(
                sql.SQL("{0} = excluded.{0}").format(sql.Identifier(name))
                for name in ["updated_at", *given]
            ),
        )
        async with self._connection() as conn:
            cursor = await conn.execute(
                statement, (platform, kind, scope_id, self._now(), *given.values())
            )
            row = await cursor.fetchone()
        assert row is not None
        return scope_from_row(row)

    async def get_scope_settings(
        self, kind: ScopeKind, platform: str, scope_id: str
    ) -> ScopeSettings | None:
        """One scope's stored settings, or None."""
        check_scope_kind(kind)
        row = await self._fetch_one(SQL_SCOPE, (platform, kind, scope_id))
        return None if row is None else scope_from_row(row)

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
        """Merge conversation, user, channel, workspace and defaults by ``PRECEDENCE``, the
        scopes read in one query."""
        candidates: tuple[tuple[ScopeKind, str | None], ...] = (
            ("user", user_id),
            ("channel", channel_id),
            ("workspace", workspace_id),
        )
        scopes = [(kind, scope_id) for kind, scope_id in candidates if scope_id]
        found: dict[SettingSource, ScopeSettings] = {}
        if scopes:
            kinds, ids = [kind for kind, _ in scopes], [scope_id for _, scope_id in scopes]
            for row in await self._fetch_all(SQL_SCOPES, (platform, kinds, ids)):
                found[row["kind"]] = scope_from_row(row)
        return merge_settings(found, defaults=defaults, conversation=conversation)
