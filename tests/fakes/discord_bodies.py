"""Message bodies for the fake Discord: build and edit messages from JSON or multipart payloads,
validated against Discord's limits (content length, components, file size, empty messages)."""

from __future__ import annotations

import mimetypes
import time
from typing import Any

from aiohttp import web

from tests.fakes.discord_components import gallery_problem, v2_problem
from tests.fakes.discord_core import FakeDiscordCore, Req, error, json_response
from tests.fakes.discord_model import (
    COMPONENTS_V2,
    DM_CHANNEL,
    EPHEMERAL,
    LOADING,
    FakeAttachment,
    FakeMessage,
    snowflake,
    timestamp,
)

MAX_CONTENT = 2000
MAX_NONCE_LENGTH = 25
NONCE_WINDOW = 300.0


def invalid(field: str, message: str) -> web.Response:
    """Discord's 50035 "Invalid Form Body" answer for ``field``."""
    body = {
        "message": "Invalid Form Body",
        "code": 50035,
        "errors": {field: {"_errors": [{"code": "INVALID", "message": message}]}},
    }
    return json_response(body, 400)


def uploaded_type(filename: str, declared: str) -> str:
    """The content type Discord gives an upload: discord.py declares every file
    ``application/octet-stream``; Discord names it after the file's extension."""
    if declared != "application/octet-stream":
        return declared
    return mimetypes.guess_type(filename)[0] or declared


class MessageBodies(FakeDiscordCore):
    """Creating and editing :class:`FakeMessage` objects from request payloads."""

    nonce_window = NONCE_WINDOW
    """Seconds a nonce sent with ``enforce_nonce`` keeps returning the message it created."""

    def _nonce_problem(self, payload: dict[str, Any]) -> web.Response | None:
        """A 400 answer when ``payload``'s nonce is neither an integer nor a short string."""
        nonce = payload.get("nonce")
        if nonce is None or type(nonce) is int:
            return None
        if not isinstance(nonce, str) or len(nonce) > MAX_NONCE_LENGTH:
            return invalid("nonce", f"Must be {MAX_NONCE_LENGTH} or fewer in length.")
        return None

    def _posted_with_nonce(self, payload: dict[str, Any], channel_id: int) -> FakeMessage | None:
        """The bot's message in ``channel_id`` that an enforced nonce in ``payload`` names, if it
        was created within :attr:`nonce_window` seconds."""
        nonce = payload.get("nonce")
        if nonce is None or payload.get("enforce_nonce") is not True:
            return None
        oldest = time.monotonic() - self.nonce_window
        return next(
            (
                m
                for m in self.messages_in(channel_id)
                if m.author.id == self.bot.id
                and str(m.nonce) == str(nonce)
                and m.posted_at >= oldest
            ),
            None,
        )

    def _build(
        self, req: Req, payload: dict[str, Any], channel_id: int, *, webhook: bool
    ) -> FakeMessage | web.Response:
        channel = self.channels[channel_id]
        message = FakeMessage(
            snowflake(),
            channel_id,
            self.bot,
            guild_id=None if channel.type == DM_CHANNEL else self.guild_id,
            webhook_id=self.app_id if webhook else None,
        )
        problem = self._edit(message, req, payload, creating=True)
        return problem or message

    def _edit(
        self, message: FakeMessage, req: Req, payload: dict[str, Any], *, creating: bool = False
    ) -> web.Response | None:
        """Apply ``payload`` (and uploaded files) to ``message``; an error answer or ``None``."""
        v2 = bool(int(payload.get("flags") or 0) & COMPONENTS_V2) or message.components_v2
        problem = self._validate(req, payload, v2=v2)
        if problem is not None:
            return problem
        reference = payload.get("message_reference") if creating else None
        referenced = self._referenced(reference) if reference else None
        if reference and referenced is None:
            if reference.get("fail_if_not_exists", True):
                return invalid("message_reference", "Unknown message")
            reference = None
        content = payload.get("content", message.content)
        attachments = self._attachments(req, payload, message)
        components = payload.get("components", message.components)
        embeds = payload.get("embeds", message.embeds)
        if not (content or attachments or embeds or components) and not message.loading:
            return error(400, 50006, "Cannot send an empty message")
        if not creating:
            message.history.append(message.content)
            message.edited = timestamp()
        message.content = content or ""
        if v2 and (gallery_error := gallery_problem(components or [], attachments)) is not None:
            return invalid("components", gallery_error)
        message.attachments = attachments
        message.components = components or []
        message.embeds = embeds or []
        if "allowed_mentions" in payload:
            message.allowed_mentions = payload["allowed_mentions"]
        if v2:
            message.flags |= COMPONENTS_V2
        if creating:
            message.flags = int(payload.get("flags") or 0) & EPHEMERAL | message.flags
            if reference:
                message.message_reference = reference
                message.referenced = referenced
        message.flags &= ~LOADING
        return None

    def _referenced(self, reference: dict[str, Any]) -> FakeMessage | None:
        """The message a ``message_reference`` points at, unless it is gone."""
        found = self.messages.get(int(reference.get("message_id") or 0))
        return None if found is None or found.deleted else found

    def _validate(
        self, req: Req, payload: dict[str, Any], *, v2: bool = False
    ) -> web.Response | None:
        content = payload.get("content") or ""
        if len(content) > MAX_CONTENT:
            return invalid("content", f"Must be {MAX_CONTENT} or fewer in length.")
        rows = payload.get("components") or []
        if v2:
            if content or payload.get("embeds"):
                return invalid("content", "Cannot send content or embeds with components v2")
            problem = v2_problem(rows)
            return invalid("components", problem) if problem else self._file_problem(req)
        if len(rows) > 5:
            return invalid("components", "Must be 5 or fewer in length.")
        seen: set[str] = set()
        for row in rows:
            buttons = row.get("components", [])
            if row.get("type") != 1 or not 1 <= len(buttons) <= 5:
                return invalid("components", "An action row holds 1 to 5 components.")
            for button in buttons:
                custom_id = button.get("custom_id", "")
                if len(custom_id) > 100 or len(button.get("label") or "") > 80:
                    return invalid("components", "custom_id or label too long")
                if custom_id in seen:
                    return invalid("components", "Component custom id cannot be duplicated")
                seen.add(custom_id)
        return self._file_problem(req)

    def _file_problem(self, req: Req) -> web.Response | None:
        for filename, _, data in req.files.values():
            if len(data) > self.attachment_size_limit:
                return error(413, 40005, f"Request entity too large ({filename})")
        return None

    def _attachments(
        self, req: Req, payload: dict[str, Any], message: FakeMessage
    ) -> list[FakeAttachment]:
        if "attachments" not in payload:
            kept = list(message.attachments)
            uploads = [(name, None) for name in req.files]
        else:
            existing = {str(a.id): a for a in message.attachments}
            kept = [
                existing[str(a["id"])] for a in payload["attachments"] if str(a["id"]) in existing
            ]
            uploads = [
                (f"files[{a['id']}]", a.get("filename"))
                for a in payload["attachments"]
                if f"files[{a['id']}]" in req.files
            ]
        for field, filename in uploads:
            original, content_type, data = req.files[field]
            name = filename or original
            kept.append(
                self.store_attachment(
                    message.channel_id, name, data, uploaded_type(name, content_type)
                )
            )
        return kept

    def store_attachment(
        self, channel_id: int, filename: str, data: bytes, content_type: str = "image/png"
    ) -> FakeAttachment:
        """Keep ``data`` on the fake CDN and describe it as Discord would."""
        attachment_id = snowflake()
        url = f"{self.base_url}/cdn/attachments/{channel_id}/{attachment_id}/{filename}"
        attachment = FakeAttachment(attachment_id, filename, data, content_type, url)
        self.attachments[attachment_id] = attachment
        return attachment
