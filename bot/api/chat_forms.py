"""Forms of a chat request the API documentation leaves open, learnt from the provider's
refusals and remembered for the process.

The documentation lists the roles ``system``, ``user`` and ``assistant`` ("values seen") and says
only that vision content is "an array of content parts". genbot sends a tool's result as
``{"role": "function", "name": …}`` and private images as ``data:`` URLs; a provider may refuse
either (docs/provider.md#function-results, docs/provider.md#vision-parts). A 400 that names the
role (or a message's name) of a request holding a function result switches every later request
to sending results as user messages, once the request sent so has been accepted; a 400 that
names an image URL of a request holding a ``data:`` URL means inline images are refused, and
the chat engine hosts them instead. :class:`bot.api.chat.ChatClient` keeps the forms and logs
each switch once.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, replace
from typing import Any

from bot.api.errors import N_, ApiError, BadRequest

_ROLE_WORDS = re.compile(r"\b(role|function|name)\b", re.IGNORECASE)
_IMAGE_WORDS = re.compile(r"image_url|\burl\b|\bdata\b|base64|inline", re.IGNORECASE)
DATA_URL_PREFIX = "data:"


class InlineImagesRefused(ApiError):
    """The provider refused an image sent inline (a ``data:`` URL): it must be given a link."""

    user_message = N_(
        "The service does not accept images sent inline; genbot can pass them on as links once "
        "an admin sets [webhook] public_url."
    )


def function_result_as_user(message: dict[str, Any]) -> dict[str, Any]:
    """A ``function`` message in a form the documentation allows: a user message naming the
    function whose result it carries."""
    name = message.get("name") or "the function"
    return {"role": "user", "content": f"[Result of the function {name}]\n{message['content']}"}


def has_inline_image(body: dict[str, Any]) -> bool:
    """Whether a request body carries an image as a ``data:`` URL."""
    for message in body.get("messages", []):
        content = message.get("content")
        if not isinstance(content, list):
            continue
        for part in content:
            url = part.get("image_url", {}).get("url", "") if isinstance(part, dict) else ""
            if isinstance(url, str) and url.startswith(DATA_URL_PREFIX):
                return True
    return False


@dataclass(frozen=True)
class ChatForms:
    """The forms a request is sent in (see the module docstring). ``function_role``: tool
    results go as ``function`` messages (else as user messages); ``inline_images``: images may
    go as ``data:`` URLs (else they must be hosted links)."""

    function_role: bool = True
    inline_images: bool = True

    def body(self, body: dict[str, Any]) -> dict[str, Any]:
        """``body`` in these forms."""
        if self.function_role:
            return body
        messages = [
            function_result_as_user(m) if m.get("role") == "function" else m
            for m in body["messages"]
        ]
        return {**body, "messages": messages}

    def after(self, error: ApiError, body: dict[str, Any]) -> ChatForms | None:
        """The forms to try after ``error`` refused ``body`` (as sent), or None when the
        refusal is not about a form genbot can change."""
        if not isinstance(error, BadRequest):
            return None
        said = error.provider_message
        roles = {m.get("role") for m in body.get("messages", [])}
        if self.function_role and "function" in roles and _ROLE_WORDS.search(said):
            return replace(self, function_role=False)
        if self.inline_images and has_inline_image(body) and _IMAGE_WORDS.search(said):
            return replace(self, inline_images=False)
        return None

    def changes(self, newer: ChatForms) -> str:
        """What ``newer`` changes, in words for the log."""
        changed = []
        if self.function_role and not newer.function_role:
            changed.append("tool results go as user messages")
        if self.inline_images and not newer.inline_images:
            changed.append("images go as links, not inline")
        return "; ".join(changed)
