"""``[discord]``: the Discord adapter's settings and the platform profile it gives the core."""

from __future__ import annotations

from pydantic import Field, SecretStr, model_validator

from bot.kernel import Address, PlatformProfile, Section

MAX_MESSAGE_CHARS = 2000


class DiscordSettings(Section):
    """``[discord]``: the Discord adapter (started when ``token`` is set)."""

    token: SecretStr = SecretStr("")
    guild_ids: list[int] = Field(default_factory=list)
    admin_ids: list[int] = Field(default_factory=list)
    allowed_channel_ids: list[int] = Field(default_factory=list)
    open_channel_ids: list[int] = Field(default_factory=list)
    api_base: Address = "https://discord.com/api/v10"
    gateway_url: Address = "wss://gateway.discord.gg/"
    result_cards: bool = True
    """genbot's own messages (progress, results) as Components V2 cards; false: classic
    content, attachments and button rows."""
    shard_count: int | None = Field(default=None, ge=1)
    shard_ids: list[int] | None = None
    edits_per_window: int = Field(default=5, ge=1)
    edit_window_seconds: float = Field(default=5.0, gt=0)
    """Edits genbot allows itself per channel in each window (Discord's own bucket is 5 per 5 s)."""

    @model_validator(mode="after")
    def _shards_within_count(self) -> DiscordSettings:
        if self.shard_ids is None:
            return self
        if self.shard_count is None:
            raise ValueError("[discord] shard_ids needs shard_count")
        outside = [n for n in self.shard_ids if not 0 <= n < self.shard_count]
        if outside or not self.shard_ids or len(set(self.shard_ids)) != len(self.shard_ids):
            raise ValueError(
                f"[discord] shard_ids must be distinct shards 0–{self.shard_count - 1}"
            )
        return self

    def shards(self) -> str | None:
        """The shards this process runs, for the cluster's view (None: all it is given)."""
        if self.shard_count is None:
            return None
        ids = self.shard_ids if self.shard_ids is not None else range(self.shard_count)
        return f"{','.join(map(str, ids))} of {self.shard_count}"

    def platform_profile(self) -> PlatformProfile:
        """What genbot's writes on Discord respect."""
        return PlatformProfile(
            max_text=MAX_MESSAGE_CHARS,
            edits_per_window_per_channel=self.edits_per_window,
            edit_window_seconds=self.edit_window_seconds,
            max_buttons_per_row=5,
            forms_take_files=True,
        )
