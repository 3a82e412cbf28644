"""Discord's rules for Components V2 messages, as the fake Discord checks them: the layout
types a message may hold, at most 40 components in all, 4000 characters of text displays,
galleries of 1–10 items that show the message's own attachments, action rows of 1–5 buttons."""

from __future__ import annotations

from typing import Any

from tests.fakes.discord_model import FakeAttachment, walk

V2_TOP_LEVEL = {1, 9, 10, 12, 13, 14, 17}
V2_NESTED = {1, 2, 9, 10, 11, 12, 13, 14}
MAX_COMPONENTS = 40
MAX_TEXT = 4000


def v2_problem(components: list[dict[str, Any]]) -> str | None:
    """Why Discord refuses ``components`` in a Components V2 message, or ``None``."""
    if not components:
        return "a components v2 message needs components"
    if any(c.get("type") not in V2_TOP_LEVEL for c in components):
        return "component type not allowed at the top level of a components v2 message"
    everything = walk(components)
    if len(everything) > MAX_COMPONENTS:
        return f"at most {MAX_COMPONENTS} components in a message"
    if sum(len(c.get("content", "")) for c in everything if c["type"] == 10) > MAX_TEXT:
        return f"text displays hold at most {MAX_TEXT} characters in all"
    seen: set[str] = set()
    for component in everything:
        kind = component["type"]
        if kind == 17 and any(c.get("type") not in V2_NESTED for c in component["components"]):
            return "component type not allowed in a container"
        if kind == 12 and not 1 <= len(component.get("items", [])) <= 10:
            return "a media gallery holds 1 to 10 items"
        if kind == 1 and not 1 <= len(component.get("components", [])) <= 5:
            return "an action row holds 1 to 5 components"
        if kind == 2:
            custom_id = component.get("custom_id", "")
            if len(custom_id) > 100 or len(component.get("label") or "") > 80:
                return "custom_id or label too long"
            if custom_id in seen:
                return "component custom id cannot be duplicated"
            seen.add(custom_id)
    return None


def gallery_problem(
    components: list[dict[str, Any]], attachments: list[FakeAttachment]
) -> str | None:
    """Why a card's ``attachment://`` media does not resolve to the message's files, or None."""
    names = {a.filename for a in attachments}
    for component in walk(components):
        for item in component.get("items", []) if component["type"] == 12 else []:
            url = str(item.get("media", {}).get("url", ""))
            if url.startswith("attachment://") and url.removeprefix("attachment://") not in names:
                return f"{url} is not one of the message's attachments"
    return None
