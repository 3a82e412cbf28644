"""The state of the fake Slack: recorded calls, messages, files, views, ephemerals, responses.

Objects render themselves as the JSON Slack would send (``payload()``); tests read them to
assert what users would see.
"""

from __future__ import annotations

import html
import itertools
import re
import time
from dataclasses import dataclass, field
from typing import Any

_sequence = itertools.count(1)

# The tokens Slack turns into notifications when it parses mrkdwn. The markdown block is
# checked conservatively: there plain ``@here``-style words in any letter case count as pings as
# well, and so do tokens written with HTML entities (``&lt;!here&gt;``, ``&#60;!here>``), which
# a Markdown renderer decodes.
PING_TOKEN = re.compile(
    r"<(!everyone|!here|!channel|@[UW][A-Z0-9]+|!subteam\^[A-Z0-9]+)(\|[^>]*)?>", re.IGNORECASE
)
PLAIN_BROADCAST = re.compile(r"(?<![\w\u200b])@(everyone|here|channel)\b", re.IGNORECASE)


def new_ts() -> str:
    """A fresh, increasing Slack timestamp (``seconds.sequence``)."""
    return f"{int(time.time())}.{next(_sequence):06d}"


def new_id(prefix: str) -> str:
    return f"{prefix}{next(_sequence):08d}"


class SlackError(Exception):
    """An error answer of a Web API method: ``{"ok": false, "error": ...}``."""

    def __init__(
        self,
        error: str,
        *,
        status: int = 200,
        headers: dict[str, str] | None = None,
        errors: list[str] | None = None,
    ) -> None:
        super().__init__(error)
        self.error = error
        self.status = status
        self.headers = headers or {}
        self.errors = errors or []


@dataclass
class ApiCall:
    """One Web API request as the fake received and answered it."""

    method: str
    args: dict[str, Any]
    token: str | None
    status: int
    response: dict[str, Any]
    team: str = ""
    """The workspace whose token made the call."""

    @property
    def ok(self) -> bool:
        return bool(self.response.get("ok"))

    @property
    def error(self) -> str | None:
        return None if self.ok else str(self.response.get("error"))

    @property
    def blocks(self) -> list[dict[str, Any]]:
        blocks = self.args.get("blocks")
        return blocks if isinstance(blocks, list) else []


@dataclass
class FakeFile:
    """A file: uploaded by the app (``files_upload_v2``) or shared by a user."""

    id: str
    name: str
    length: int
    user: str
    base_url: str
    title: str = ""
    data: bytes | None = None
    channel: str | None = None
    thread_ts: str | None = None
    message_ts: str | None = None
    team: str = "T0FAKE"
    created: float = field(default_factory=time.time)
    """Unix time of the upload (``files.list`` filters on it)."""
    ready_at: float = 0.0
    """When Slack has processed the upload (the fake's clock): before then the file cannot be
    shown in a block and ``files.info`` gives it no type yet."""

    @property
    def mimetype(self) -> str:
        suffix = self.name.rsplit(".", 1)[-1].lower()
        return {
            "png": "image/png",
            "jpg": "image/jpeg",
            "jpeg": "image/jpeg",
            "webp": "image/webp",
            "gif": "image/gif",
            "pdf": "application/pdf",
            "txt": "text/plain",
            "md": "text/plain",
            "csv": "text/csv",
            "json": "application/json",
        }.get(suffix, "application/octet-stream")

    @property
    def url_private(self) -> str:
        return f"{self.base_url}/files-pri/{self.team}-{self.id}/{self.name}"

    def payload(self) -> dict[str, Any]:
        shares: dict[str, Any] = {}
        if self.channel and self.message_ts:
            share = {
                "ts": self.message_ts,
                **({"thread_ts": self.thread_ts} if self.thread_ts else {}),
            }
            kind = "private" if self.channel[0] in "DG" else "public"
            shares = {kind: {self.channel: [share]}}
        return {
            "id": self.id,
            "name": self.name,
            "title": self.title or self.name,
            "mimetype": self.mimetype,
            "filetype": self.name.rsplit(".", 1)[-1].lower(),
            "size": len(self.data) if self.data is not None else self.length,
            "user": self.user,
            "url_private": self.url_private,
            "url_private_download": self.url_private + "?download=1",
            "shares": shares,
            "created": int(self.created),
            "is_public": bool(shares.get("public")),
        }


@dataclass
class FakeMessage:
    """A message in a channel or thread, as its readers currently see it. A thread's parent
    carries ``thread_ts`` equal to its own ``ts`` once it has replies, as on Slack."""

    channel: str
    ts: str
    user: str
    text: str = ""
    blocks: list[dict[str, Any]] = field(default_factory=list)
    thread_ts: str | None = None
    files: list[FakeFile] = field(default_factory=list)
    bot_id: str | None = None
    team: str = ""
    history: list[str] = field(default_factory=list)
    timeline: list[tuple[float, str]] = field(default_factory=list)
    """When the message showed what (the fake's clock), its first version included."""
    streaming: bool = False
    stream_started: float = 0.0
    metadata: dict[str, Any] | None = None

    @property
    def markdown(self) -> str:
        """The text of the message's ``markdown`` blocks."""
        return "".join(b["text"] for b in self.blocks if b.get("type") == "markdown")

    @property
    def sections(self) -> str:
        """The text of the message's ``section`` blocks, one per line."""
        return "\n".join(b["text"]["text"] for b in self.blocks if b.get("type") == "section")

    @property
    def shown(self) -> str:
        """What a reader sees: markdown blocks, else section blocks, else ``text``."""
        return self.markdown or self.sections or self.text

    @property
    def buttons(self) -> list[dict[str, Any]]:
        return [
            element
            for block in self.blocks
            if block.get("type") == "actions"
            for element in block.get("elements", [])
            if element.get("type") == "button"
        ]

    @property
    def menu_items(self) -> list[str]:
        """The texts of the options of the message's overflow menus, in order."""
        return [
            option["text"]["text"]
            for block in self.blocks
            if block.get("type") == "actions"
            for element in block.get("elements", [])
            if element.get("type") == "overflow"
            for option in element.get("options", [])
        ]

    @property
    def action_ids(self) -> list[str]:
        return [b["action_id"] for b in self.buttons]

    @property
    def feedback(self) -> dict[str, Any] | None:
        """The message's ``feedback_buttons`` element (in a ``context_actions`` block), if any."""
        return next(
            (
                element
                for block in self.blocks
                if block.get("type") == "context_actions"
                for element in block.get("elements", [])
                if element.get("type") == "feedback_buttons"
            ),
            None,
        )

    @property
    def image_files(self) -> list[str]:
        """The ids of the Slack files the message's image blocks show, in order."""
        return [
            str(b["slack_file"].get("id"))
            for b in self.blocks
            if b.get("type") == "image" and isinstance(b.get("slack_file"), dict)
        ]

    def button(self, label: str) -> dict[str, Any]:
        """The button labelled ``label``; ``KeyError`` when there is none."""
        for button in self.buttons:
            if button["text"]["text"] == label:
                return button
        raise KeyError(f"no button {label!r} in {[b['text']['text'] for b in self.buttons]}")

    def pings(self) -> set[str]:
        """Who this message would notify: ``!everyone``, ``@U123``…"""
        found = {m.group(1) for m in PING_TOKEN.finditer(self.text)}
        for block in self.blocks:
            if block.get("type") == "section" and block["text"].get("type") == "mrkdwn":
                found |= {m.group(1) for m in PING_TOKEN.finditer(block["text"]["text"])}
            if block.get("type") == "markdown":
                for text in {block["text"], html.unescape(block["text"])}:
                    found |= {m.group(1) for m in PING_TOKEN.finditer(text)}
                    found |= {"plain " + m.group(1) for m in PLAIN_BROADCAST.finditer(text)}
        return found

    def payload(self, *, include_metadata: bool = False) -> dict[str, Any]:
        """The message as Slack returns it; ``metadata`` only when asked for, as with
        ``include_all_metadata``."""
        body: dict[str, Any] = {
            "type": "message",
            "ts": self.ts,
            "user": self.user,
            "text": self.text,
            "team": self.team,
        }
        if self.blocks:
            body["blocks"] = self.blocks
        if self.thread_ts:
            body["thread_ts"] = self.thread_ts
        if self.files:
            body["files"] = [f.payload() for f in self.files]
        if self.bot_id:
            body["bot_id"] = self.bot_id
        if include_metadata and self.metadata is not None:
            body["metadata"] = self.metadata
        return body


@dataclass
class FakeView:
    """A modal opened with ``views.open``; ``updates``: the views ``views.update`` replaced."""

    id: str
    trigger_id: str
    view: dict[str, Any]
    updates: list[dict[str, Any]] = field(default_factory=list)
    closed: bool = False
    errors: dict[str, str] = field(default_factory=dict)
    """What the app's last ``response_action: errors`` showed beside the inputs, by block id."""

    @property
    def callback_id(self) -> str:
        return str(self.view.get("callback_id", ""))

    @property
    def input_ids(self) -> list[str]:
        return [b["block_id"] for b in self.view.get("blocks", []) if b.get("type") == "input"]

    def payload(self) -> dict[str, Any]:
        return {**self.view, "id": self.id, "hash": self.hash}

    @property
    def hash(self) -> str:
        """Changes with every update (``views.update`` refuses a stale one)."""
        return f"h-{self.id}-{len(self.updates)}"

    @property
    def image_files(self) -> list[str]:
        """The ids of the Slack files its ``image`` blocks show."""
        return [
            block["slack_file"]["id"]
            for block in self.view.get("blocks", [])
            if block.get("type") == "image" and "id" in block.get("slack_file", {})
        ]


@dataclass
class Ephemeral:
    """A message only ``user`` sees; ``via`` is ``chat.postEphemeral`` or ``response_url``."""

    channel: str
    user: str
    text: str
    via: str
    thread_ts: str | None = None
    blocks: list[dict[str, Any]] = field(default_factory=list)
    ts: str = ""

    def button(self, label: str) -> dict[str, Any]:
        """The button labelled ``label``."""
        return next(
            element
            for block in self.blocks
            if block.get("type") == "actions"
            for element in block["elements"]
            if element.get("text", {}).get("text") == label
        )

    @property
    def image_files(self) -> list[str]:
        """The ids of the Slack files its ``image`` blocks show."""
        return [
            block["slack_file"]["id"]
            for block in self.blocks
            if block.get("type") == "image" and "id" in block.get("slack_file", {})
        ]


@dataclass
class ResponsePost:
    """A POST to a ``response_url`` the fake handed out with a command or an action."""

    response_id: str
    body: dict[str, Any]
    channel: str
    user: str


@dataclass
class Delivery:
    """Slack's view of one request it delivered to the app: the HTTP status and body."""

    status: int
    text: str
    event_id: str | None = None


@dataclass
class ExternalRequest:
    """A request to the fake's stand-in for a non-Slack host (``/external/...``)."""

    path: str
    authorization: str | None


@dataclass
class FakeTeam:
    """A workspace of the fake Slack and genbot's bot user in it. ``bot_token`` is ``None``
    until the app is installed there (or after it was uninstalled)."""

    team_id: str
    name: str
    bot_user_id: str
    bot_id: str
    bot_token: str | None = None
    refresh_token: str | None = None
    token_expires_at: float | None = None
    installer: str = ""
    earlier_tokens: set[str] = field(default_factory=set)
    """Tokens replaced by a rotation: they work until they expire, as on Slack."""
    revoked_tokens: set[str] = field(default_factory=set)

    def accepts(self, token: str | None) -> bool:
        return token is not None and (token == self.bot_token or token in self.earlier_tokens)
