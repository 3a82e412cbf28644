"""The playground as a platform: its name, profile and places, and its handle on events."""

from __future__ import annotations

from dataclasses import dataclass

from bot.kernel import ButtonPress, Event, Modal, Place, PlatformProfile, UserMessage

PLATFORM = "web"
WORKSPACE = "web"

WEB_PROFILE = PlatformProfile(
    max_text=4000,
    edits_per_window_per_channel=20,
    edit_window_seconds=1.0,
    edits_per_minute_per_workspace=None,
    min_seconds_between_edits_of_one_message=0.0,
    max_buttons_per_row=5,
    forms_draw_regions=True,
    enforces_windows=False,
)
"""The playground is its own platform: 4000 characters a message and a generous window of
20 edits per second per channel (advertised to the core's renderer and pacer, not enforced:
a write counts from its grant)."""


@dataclass(frozen=True)
class WebContext:
    """The adapter's handle on an inbound event: the message it answers, if any, and the
    browser tab it came from (a form it opens shows there only)."""

    request_message_id: str | None = None
    tab: str | None = None


@dataclass(frozen=True)
class PendingModal:
    """A form shown to a user, waiting for its submission."""

    modal: Modal
    place: Place
    reply_to: str | None


DM_PREFIX = "dm-"


def dm_channel(user_id: str) -> str:
    """The channel of ``user_id``'s direct messages with genbot (only they see it)."""
    return DM_PREFIX + user_id.removeprefix("web-")[:28]


def is_dm_channel(channel: str) -> bool:
    return channel.startswith(DM_PREFIX)


def can_see(channel: str, user_id: str) -> bool:
    """Whether ``user_id`` sees ``channel``: every channel but other people's DMs."""
    return not is_dm_channel(channel) or channel == dm_channel(user_id)


def web_place(channel: str, thread: str | None = None) -> Place:
    """Where a playground message lives. A user's direct messages with genbot are a DM (each
    message is a turn); other channels are channels: /chat and @genbot open threads there."""
    return Place(PLATFORM, WORKSPACE, channel, thread, is_dm=is_dm_channel(channel))


def reply_target(origin: Event | None) -> str | None:
    """The message an answer to ``origin`` refers to."""
    if isinstance(origin, UserMessage | ButtonPress):
        return origin.message_id
    if origin is not None and isinstance(origin.context, WebContext):
        return origin.context.request_message_id
    return None
