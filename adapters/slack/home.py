"""genbot's App Home tab on Slack, and results posted again from it.

The core's :class:`~bot.kernel.outbound.HomeView` becomes a ``home`` view published with
``views.publish``: the user's defaults with a button that opens the settings form, their usage
today, and their last image jobs, each with its image as a thumbnail and a button that posts
the result again. The view's ``private_metadata`` holds the user's conversation with genbot,
where presses on the tab are answered.

Thumbnails and copies use the images Slack already holds (Block Kit ``slack_file``), so
nothing is downloaded or uploaded again: a result message carries the ids of its uploaded
files in its metadata (:func:`~adapters.slack.keyed.key_metadata`); :class:`ResultFiles` keeps
them for the messages this process posted and reads them back from Slack for older ones. A
result whose files are gone shows no thumbnail (and is posted again from the provider's
images by the core).
"""

from __future__ import annotations

import logging
from collections import OrderedDict
from collections.abc import Awaitable, Callable, Mapping, Sequence
from typing import Any

from slack_sdk.web.async_client import AsyncWebClient

from bot.kernel import (
    HomeJob,
    HomeOpened,
    HomeView,
    MessageRef,
    OutMessage,
    Place,
    RateLimited,
    SurfaceError,
    _,
    format_moment,
    format_number,
    ngettext,
)

from .calls import Call
from .errors import SlackRefused
from .formatting import (
    encode_place,
    escape_mrkdwn,
    fallback_text,
    markdown_to_mrkdwn,
    message_blocks,
)
from .keyed import files_of, key_metadata
from .uploads import FILE_REF_PREFIX

log = logging.getLogger(__name__)
Clients = Callable[[str], Awaitable[AsyncWebClient]]

REMEMBERED_MESSAGES = 2048
HOME_CALLBACK_ID = "gb:home:"
ALT_TEXT_MAX = 2000


class ResultFiles:
    """The Slack files each result message shows, by message."""

    def __init__(self, clients: Clients, call: Call) -> None:
        self._clients = clients
        self._call = call
        self._known: OrderedDict[tuple[str, str], tuple[str, ...]] = OrderedDict()

    def remember(self, channel: str, ts: str, file_ids: Sequence[str]) -> None:
        """The message ``ts`` in ``channel`` shows ``file_ids`` (this process posted it)."""
        self._known[(channel, ts)] = tuple(file_ids)
        while len(self._known) > REMEMBERED_MESSAGES:
            self._known.popitem(last=False)

    async def of(self, ref: MessageRef, *, strict: bool = False) -> tuple[str, ...]:
        """The files ``ref`` shows; ``()`` when Slack has none, or cannot say (unless
        ``strict``: then Slack's refusal propagates)."""
        key = (ref.place.channel_id, ref.message_id)
        if key in self._known:
            return self._known[key]
        if ref.message_id.startswith(FILE_REF_PREFIX):
            return (ref.message_id.removeprefix(FILE_REF_PREFIX),)
        try:
            client = await self._clients(ref.place.workspace_id)
            found = await files_of(client, self._call, ref.place, ref.message_id)
        except SlackRefused as refused:
            if strict:
                raise
            log.info("no files for %s: %s", ref.message_id, refused.code)
            return ()
        self.remember(*key, found)
        return found


def home_view(
    view: HomeView, conversation: Place, thumbnails: Mapping[str, str] | None = None
) -> dict[str, Any]:
    """The ``home`` view of ``view``; ``thumbnails`` maps job ids to Slack file ids."""
    thumbnails = thumbnails or {}
    blocks: list[dict[str, Any]] = [
        {"type": "header", "text": {"type": "plain_text", "text": "genbot"}},
        {
            "type": "section",
            "block_id": "gb_defaults",
            "text": {"type": "mrkdwn", "text": _defaults(view)},
            "accessory": _button(view.change_settings.label, view.change_settings.custom_id),
        },
        {
            "type": "section",
            "block_id": "gb_usage",
            "text": {"type": "mrkdwn", "text": _usage(view)},
        },
        {"type": "divider"},
        {"type": "header", "text": {"type": "plain_text", "text": _("Your last images")}},
    ]
    if not view.jobs:
        blocks.append(_section(_("No images yet: try `/imagine a fox in the snow`.")))
    for job in view.jobs:
        blocks += _job_blocks(job, thumbnails.get(job.job.id))
    return {
        "type": "home",
        "callback_id": HOME_CALLBACK_ID,
        "private_metadata": encode_place(conversation),
        "blocks": blocks,
    }


def _defaults(view: HomeView) -> str:
    lines = [_("*Your defaults*")]
    for setting in view.settings:
        lines.append(
            # Translators: a setting on the Home: "• Temperature: `0.7` _(yours)_".
            _(
                "• {setting}: `{value}` _({source})_",
                setting=escape_mrkdwn(setting.label),
                value=escape_mrkdwn(setting.value),
                source=escape_mrkdwn(setting.source),
            )
        )
    return "\n".join(lines)


def _usage(view: HomeView) -> str:
    usage = view.usage
    budget = view.daily_credit_budget
    tokens = ngettext(
        "{count} chat token", "{count} chat tokens", usage.tokens, count=format_number(usage.tokens)
    )
    credits = (
        ngettext(
            "{count} image credit of your {budget} a day",
            "{count} image credits of your {budget} a day",
            usage.credits,
            count=format_number(usage.credits),
            budget=format_number(budget),
        )
        if budget
        else ngettext(
            "{count} image credit",
            "{count} image credits",
            usage.credits,
            count=format_number(usage.credits),
        )
    )
    # Translators: the usage on the Home; {tokens} is "12 chat tokens", {credits} "3 image credits".
    return _("*Today (UTC)*\n{tokens} · {credits}", tokens=tokens, credits=credits)


def _job_blocks(job: HomeJob, thumbnail: str | None) -> list[dict[str, Any]]:
    when = format_moment(job.job.created_at)
    section: dict[str, Any] = {
        "type": "section",
        "block_id": f"gb_job_{job.job.id}",
        "text": {"type": "mrkdwn", "text": f"{markdown_to_mrkdwn(job.title)}\n_{when}_"[:3000]},
    }
    if thumbnail is not None:
        section["accessory"] = {
            "type": "image",
            "slack_file": {"id": thumbnail},
            "alt_text": _alt(job.job.prompt or job.title),
        }
    actions = {
        "type": "actions",
        "block_id": f"gb_repost_{job.job.id}",
        "elements": [_button(job.repost.label, job.repost.custom_id)],
    }
    return [section, actions]


def _button(label: str, action_id: str) -> dict[str, Any]:
    return {
        "type": "button",
        "text": {"type": "plain_text", "text": label[:75], "emoji": True},
        "action_id": action_id,
        "value": action_id,
    }


def _section(text: str) -> dict[str, Any]:
    return {"type": "section", "text": {"type": "mrkdwn", "text": text}}


def _alt(text: str) -> str:
    return (text or "image")[:ALT_TEXT_MAX]


class HomeTab:
    """Publishes homes and posts results again, with the files Slack holds."""

    def __init__(self, clients: Clients, call: Call, files: ResultFiles) -> None:
        self._clients = clients
        self._call = call
        self.files = files

    async def publish(self, event: HomeOpened, view: HomeView) -> None:
        """Show ``view`` on ``event.user``'s App Home tab (without thumbnails when Slack
        refuses one: a file deleted since)."""
        thumbnails: dict[str, str] = {}
        for job in view.jobs:
            try:
                found = await self.files.of(job.result) if job.result is not None else ()
            except (RateLimited, SurfaceError) as error:
                log.info("no more thumbnails for %s now: %s", event.user.id, error)
                break
            if found:
                thumbnails[job.job.id] = found[0]
        client = await self._clients(event.place.workspace_id)
        for shown in (thumbnails, {}):
            try:
                await self._call(
                    "views.publish",
                    client.views_publish(
                        user_id=event.user.id, view=home_view(view, event.place, shown)
                    ),
                )
                return
            except SlackRefused as refused:
                if not shown or refused.code not in ("invalid_blocks", "invalid_arguments"):
                    raise
                log.info("the home of %s without thumbnails: %s", event.user.id, refused.code)

    async def repost(self, ref: MessageRef, place: Place, message: OutMessage) -> MessageRef:
        """Post ``message`` in ``place`` under the images result ``ref`` shows."""
        found = await self.files.of(ref)
        if not found:
            raise SurfaceError("the result's images are no longer on Slack")
        client = await self._clients(place.workspace_id)
        response = await self._call(
            "chat.postMessage",
            client.chat_postMessage(
                channel=place.channel_id,
                thread_ts=place.thread_id,
                text=fallback_text(message),
                blocks=message_blocks(message, found),
                unfurl_links=False,
                unfurl_media=False,
                metadata=key_metadata(None, found),
            ),
        )
        ts = str(response["ts"])
        self.files.remember(place.channel_id, ts, found)
        return MessageRef(place, ts)
