"""The app manifest declares everything the adapter registers and calls."""

from __future__ import annotations

import re
from pathlib import Path

import yaml

from adapters.slack.agent import ASK_CALLBACK
from adapters.slack.distribution import BOT_SCOPES
from adapters.slack.inbound import SLASH_COMMANDS

MANIFEST = Path(__file__).resolve().parents[3] / "config" / "slack-manifest.yaml"

# Web API methods the adapter calls → the bot scopes they need.
SCOPES_FOR_CALLS = {
    "chat.postMessage / chat.update / chat.postEphemeral": {"chat:write"},
    "files_upload_v2": {"files:write"},
    "url_private downloads": {"files:read"},
    "conversations.history (channels, private channels, DMs, group DMs)": {
        "channels:history",
        "groups:history",
        "im:history",
        "mpim:history",
    },
    "users.info": {"users:read"},
    "assistant.threads.setStatus / setSuggestedPrompts": {"assistant:write"},
    "usergroups.list (tiers mapped from user groups)": {"usergroups:read"},
    "slash commands": {"commands"},
    "app_mention": {"app_mentions:read"},
    "DMs": {"im:read", "im:write"},
}


def listed(key: str) -> list[str]:
    """The ``- item`` lines following ``key:`` in the manifest (comments skipped)."""
    lines = MANIFEST.read_text(encoding="utf-8").splitlines()
    start = next(i for i, line in enumerate(lines) if line.strip() == f"{key}:")
    items = []
    for line in lines[start + 1 :]:
        if line.strip().startswith("#"):
            continue
        match = re.fullmatch(r"\s*- ([\w:.]+)", line)
        if not match:
            break
        items.append(match.group(1))
    return items


def test_every_slash_command_is_declared_without_escaping() -> None:
    text = MANIFEST.read_text(encoding="utf-8")
    declared = re.findall(r"- command: (/\w+)", text)
    assert sorted(declared) == sorted(SLASH_COMMANDS)
    assert text.count("should_escape: false") == len(SLASH_COMMANDS)


def test_every_scope_the_adapter_needs_is_requested() -> None:
    needed = set().union(*SCOPES_FOR_CALLS.values())
    assert set(listed("bot")) == needed


def test_events_interactivity_and_socket_mode() -> None:
    text = MANIFEST.read_text(encoding="utf-8")
    assert set(listed("bot_events")) == {
        "app_context_changed",
        "agent_session_stopped",
        "app_home_opened",
        "app_mention",
        "message.channels",
        "message.groups",
        "message.im",
        "message.mpim",
    }
    assert re.search(r"interactivity:\n\s+is_enabled: true", text)
    assert "socket_mode_enabled: true" in text


def test_the_oauth_install_asks_for_the_manifests_scopes_and_home_is_on() -> None:
    assert set(BOT_SCOPES) == set(listed("bot"))
    text = MANIFEST.read_text(encoding="utf-8")
    assert "home_tab_enabled: true" in text
    assert "/slack/oauth_redirect" in text


def test_the_agent_messaging_experience_and_the_message_shortcut() -> None:
    features = yaml.safe_load(MANIFEST.read_text(encoding="utf-8"))["features"]
    assert "assistant_view" not in features
    assert features["agent_view"]["agent_description"]
    assert features["app_home"]["messages_tab_enabled"] is True
    (shortcut,) = features["shortcuts"]
    assert (shortcut["type"], shortcut["callback_id"]) == ("message", ASK_CALLBACK)
    assert shortcut["name"] == "Ask genbot about this"
