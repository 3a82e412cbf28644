"""``[slack]``: the Slack adapter's settings."""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType

from pydantic import BaseModel, Field, SecretStr

from adapters.slack.formatting import MODEL_TEXT_MAX
from bot.kernel import N_, Address, PlatformProfile, Section, WriteKind

CHANNEL_WRITES_PER_WINDOW = 5
CHANNEL_WINDOW_SECONDS = 5.0
"""``chat.postMessage`` allows about one message per second per channel, with short bursts."""
SLACK_FORM_FIELDS = 100
"""A modal holds up to 100 blocks, each input one."""
METHOD_TIERS: Mapping[WriteKind, int | None] = MappingProxyType(
    {"send": None, "stream_start": 20, "stream_append": 100, "stream_stop": 20}
)
"""Per-workspace windows of the methods with a tier of their own: ``chat.startStream`` and
``chat.stopStream`` Tier 2, ``chat.appendStream`` Tier 4; ``chat.postMessage`` has only its
per-channel limit. ``chat.update`` (Tier 3) is the shared ``updates_per_minute``."""


SUGGESTED_PROMPTS_MAX = 4
DEFAULT_GREETING = N_(
    "Hi! I'm genbot. Ask me anything here: each message gets its answer in its own thread. "
    "Attach a text file or a PDF and I read it; while you look at a channel, ask me to "
    "summarize it. Create images with /imagine, /describe, /blend and /diffusion; "
    "/genbot help lists everything."
)


class SuggestedPrompt(BaseModel):
    """One suggested prompt of the Messages tab (:mod:`adapters.slack.agent`): its label and
    the message it sends."""

    title: str = Field(min_length=1, max_length=75)
    message: str = Field(min_length=1, max_length=2000)


class SlackSettings(Section):
    """``[slack]``: the Slack adapter, started when ``bot_token`` is set (one workspace) or
    ``client_id`` and ``client_secret`` are (installed by OAuth into any number of workspaces;
    ``redirect_uri`` is the public address of ``/slack/oauth_redirect`` when Slack has more
    than one on file)."""

    bot_token: SecretStr = SecretStr("")
    app_token: SecretStr = SecretStr("")
    signing_secret: SecretStr = SecretStr("")
    client_id: str = ""
    client_secret: SecretStr = SecretStr("")
    redirect_uri: Address = ""
    api_url: Address = "https://slack.com/api/"
    http_host: str = "127.0.0.1"
    http_port: int = Field(default=3000, ge=0, le=65535)
    admin_ids: list[str] = Field(default_factory=list)
    open_channel_ids: list[str] = Field(default_factory=list)
    updates_per_minute: int = Field(default=50, ge=1)
    """``chat.update`` calls per minute per workspace (Slack's Tier 3)."""
    message_updates_per_second: float = Field(default=1.0, gt=0)
    """Updates of one message per second."""
    suggested_prompts: list[SuggestedPrompt] | None = Field(
        default=None, max_length=SUGGESTED_PROMPTS_MAX
    )
    """The Messages tab's suggested prompts (``None``: genbot's own, drawn from its commands;
    empty: none)."""
    messages_tab_greeting: str = DEFAULT_GREETING
    """What genbot says the first time a user opens its Messages tab (empty: nothing)."""

    @property
    def distributed(self) -> bool:
        """Whether genbot is installed by OAuth (``client_id`` and ``client_secret`` set)."""
        return bool(self.client_id and self.client_secret.get_secret_value())

    @property
    def configured(self) -> bool:
        """Whether the Slack adapter runs (a bot token, or OAuth credentials)."""
        return bool(self.bot_token.get_secret_value()) or self.distributed

    def platform_profile(self) -> PlatformProfile:
        """What genbot's writes on Slack respect."""
        return PlatformProfile(
            max_text=MODEL_TEXT_MAX,
            edits_per_window_per_channel=CHANNEL_WRITES_PER_WINDOW,
            edit_window_seconds=CHANNEL_WINDOW_SECONDS,
            edits_per_minute_per_workspace=self.updates_per_minute,
            min_seconds_between_edits_of_one_message=1.0 / self.message_updates_per_second,
            max_buttons_per_row=5,
            writes_per_minute_per_workspace=METHOD_TIERS,
            channel_window_kinds=frozenset({"send", "edit"}),
            edits_add_images=False,
            shows_chosen_rating=False,
            forms_show_images=True,
            max_form_fields=SLACK_FORM_FIELDS,
        )
