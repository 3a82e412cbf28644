"""What users do on the fake Discord: write messages, run slash commands, ask for autocomplete,
press buttons, submit modals. Each action is dispatched over the gateway like Discord does."""

from __future__ import annotations

import asyncio
import re
from typing import Any

from tests.fakes.discord_model import (
    APPLICATION_COMMAND,
    AUTOCOMPLETE,
    DM_CHANNEL,
    MESSAGE_COMPONENT,
    MODAL_SUBMIT,
    PUBLIC_THREAD,
    SUBCOMMAND,
    FakeChannel,
    FakeInteraction,
    FakeMessage,
    FakeUser,
    member_payload,
    snowflake,
    timestamp,
)
from tests.fakes.discord_rest import RestRoutes

Upload = tuple[str, bytes, str]
"""A user's file: (filename, bytes, content type)."""

_OPTION_TYPES = {"SUB_COMMAND": 1, "SUB_COMMAND_GROUP": 2}


class UserActions(RestRoutes):
    """Helpers that make users act; each returns the message or interaction it created."""

    async def user_message(
        self,
        author: FakeUser,
        channel: FakeChannel,
        content: str = "",
        *,
        reply_to: FakeMessage | None = None,
        attachments: tuple[Upload, ...] = (),
    ) -> FakeMessage:
        """``author`` posts in ``channel``; ``<@id>``/``<@&id>`` in ``content`` are mentions."""
        self._require_session()
        everyone = [*self.users.values(), self.bot]
        mentioned = {int(i) for i in re.findall(r"<@!?(\d+)>", content)}
        message = FakeMessage(
            snowflake(),
            channel.id,
            author,
            content,
            guild_id=None if channel.type == DM_CHANNEL else self.guild_id,
            mentions=[u for u in everyone if u.id in mentioned],
            mention_roles=[int(r) for r in re.findall(r"<@&(\d+)>", content)],
        )
        message.attachments = [
            self.store_attachment(channel.id, name, data, kind) for name, data, kind in attachments
        ]
        if reply_to is not None:
            message.message_reference = {
                "message_id": str(reply_to.id),
                "channel_id": str(reply_to.channel_id),
                "type": 0,
            }
            message.referenced = reply_to
        self.messages[message.id] = message
        await self.dispatch("MESSAGE_CREATE", message.payload(self.bot.id))
        return message

    async def user_edits(self, message: FakeMessage, content: str) -> None:
        """The author changes ``message`` to ``content``; the bot hears MESSAGE_UPDATE (the
        whole message, with its ``edited_timestamp``)."""
        message.history.append(message.content)
        message.content = content
        message.edited = timestamp()
        await self.dispatch("MESSAGE_UPDATE", message.payload(self.bot.id))
        self.changed()

    async def user_deletes(self, message: FakeMessage) -> None:
        """The author deletes ``message``; the bot hears MESSAGE_DELETE."""
        message.deleted = True
        deleted = {"id": str(message.id), "channel_id": str(message.channel_id)}
        if message.guild_id is not None:
            deleted["guild_id"] = str(message.guild_id)
        await self.dispatch("MESSAGE_DELETE", deleted)
        self.changed()

    async def user_thread(self, author: FakeUser, parent: FakeChannel, name: str) -> FakeChannel:
        """``author`` opens a public thread in ``parent`` (THREAD_CREATE reaches the bot)."""
        thread = FakeChannel(
            snowflake(), PUBLIC_THREAD, name, self.guild_id, parent.id, owner_id=author.id
        )
        self.channels[thread.id] = thread
        await self.dispatch("THREAD_CREATE", thread.payload() | {"newly_created": True})
        self.changed()
        return thread

    def registered_command(self, name: str, channel: FakeChannel) -> dict[str, Any]:
        """The synced command ``name`` visible in ``channel`` (guild commands first)."""
        candidates = (
            [] if channel.type == DM_CHANNEL else self.guild_commands.get(self.guild_id, [])
        )
        for command in [*candidates, *self.global_commands]:
            if command["name"] == name:
                return command
        raise KeyError(f"/{name} was never synced")

    async def slash(
        self,
        user: FakeUser,
        channel: FakeChannel,
        name: str,
        options: dict[str, Any] | None = None,
        *,
        attachments: dict[str, Upload] | None = None,
    ) -> FakeInteraction:
        """``user`` runs ``/name`` (``"diffusion txt2img"`` for a subcommand) with ``options``."""
        top, _, sub = name.partition(" ")
        command = self.registered_command(top, channel)
        schema = command.get("options", [])
        if sub:
            schema = next(o for o in schema if o["name"] == sub)["options"]
        types = {o["name"]: o["type"] for o in schema}
        values = [
            {"name": key, "type": types[key], "value": value}
            for key, value in (options or {}).items()
        ]
        resolved: dict[str, Any] = {}
        for key, (filename, content, kind) in (attachments or {}).items():
            assert types[key] == 11, f"{key} is not an attachment option"
            stored = self.store_attachment(channel.id, filename, content, kind)
            resolved[str(stored.id)] = stored.payload()
            values.append({"name": key, "type": 11, "value": str(stored.id)})
        if sub:
            values = [{"name": sub, "type": 1, "options": values}]
        data: dict[str, Any] = {"id": command["id"], "name": top, "type": 1, "options": values}
        if resolved:
            data["resolved"] = {"attachments": resolved}
        if "guild_id" in command or command in self.guild_commands.get(self.guild_id, []):
            data["guild_id"] = str(self.guild_id)
        return await self._interact(APPLICATION_COMMAND, user, channel, data)

    async def message_menu(
        self, user: FakeUser, message: FakeMessage, name: str
    ) -> FakeInteraction:
        """``user`` picks the app's message menu entry ``name`` on ``message``."""
        channel = self.channels[message.channel_id]
        command = self.registered_command(name, channel)
        assert command.get("type") == 3, f"{name!r} is not a message command"
        target = str(message.id)
        data: dict[str, Any] = {
            "id": command["id"],
            "name": name,
            "type": 3,
            "target_id": target,
            "resolved": {"messages": {target: message.payload(self.bot.id)}},
        }
        if "guild_id" in command or command in self.guild_commands.get(self.guild_id, []):
            data["guild_id"] = str(self.guild_id)
        return await self._interact(APPLICATION_COMMAND, user, channel, data)

    async def autocomplete(
        self, user: FakeUser, channel: FakeChannel, name: str, option: str, typed: str
    ) -> FakeInteraction:
        """``user`` types ``typed`` into ``/name``'s ``option`` (``name`` may be a group's
        subcommand, ``diffusion txt2img``); the bot answers (type 8)."""
        group, _, sub = name.partition(" ")
        command = self.registered_command(group, channel)
        leaf = next(o for o in command["options"] if o["name"] == sub) if sub else command
        kind = next(o["type"] for o in leaf["options"] if o["name"] == option)
        options = [{"name": option, "type": kind, "value": typed, "focused": True}]
        if sub:
            options = [{"name": sub, "type": SUBCOMMAND, "options": options}]
        data = {"id": command["id"], "name": group, "type": 1, "options": options}
        return await self._interact(AUTOCOMPLETE, user, channel, data)

    async def press(self, user: FakeUser, message: FakeMessage, label: str) -> FakeInteraction:
        """``user`` presses the button labelled ``label`` (or so custom-id'd) on ``message``."""
        button = next(
            (b for b in message.buttons if label in (b.get("label"), b.get("custom_id"))), None
        )
        if button is None:
            raise KeyError(f"no button {label!r} on message {message.id}")
        if button.get("disabled"):
            raise ValueError(f"button {label!r} on message {message.id} is disabled")
        data = {"custom_id": button["custom_id"], "component_type": 2}
        channel = self.channels[message.channel_id]
        return await self._interact(MESSAGE_COMPONENT, user, channel, data, message)

    async def submit_modal(
        self,
        opened: FakeInteraction,
        values: dict[str, str],
        user: FakeUser | None = None,
        *,
        files: dict[str, list[Upload]] | None = None,
    ) -> FakeInteraction:
        """Submit the modal the bot opened in answer to ``opened`` with ``values`` by field id
        (and ``files`` for its file uploads, stored on the fake CDN as Discord does)."""
        modal = opened.modal
        assert modal is not None, "the bot opened no modal for this interaction"
        uploaded: dict[str, list[str]] = {}
        resolved: dict[str, Any] = {}
        for field_id, uploads in (files or {}).items():
            for filename, content, kind in uploads:
                stored = self.store_attachment(opened.channel_id, filename, content, kind)
                resolved[str(stored.id)] = stored.payload()
                uploaded.setdefault(field_id, []).append(str(stored.id))
        rows = submitted_components(modal, values, uploaded)
        data: dict[str, Any] = {"custom_id": modal["custom_id"], "components": rows}
        if resolved:
            data["resolved"] = {"attachments": resolved}
        channel = self.channels[opened.channel_id]
        message = self.messages.get(opened.message_id or 0)
        return await self._interact(MODAL_SUBMIT, user or opened.user, channel, data, message)

    async def answered(self, interaction: FakeInteraction, timeout: float = 5.0) -> int:
        """Wait for the bot's first callback to ``interaction``; its type."""
        await self.wait_for(
            lambda: interaction.callbacks, timeout, f"an answer to interaction {interaction.id}"
        )
        assert interaction.response_type is not None
        return interaction.response_type

    async def _interact(
        self,
        kind: int,
        user: FakeUser,
        channel: FakeChannel,
        data: dict[str, Any],
        message: FakeMessage | None = None,
    ) -> FakeInteraction:
        self._require_session()
        in_guild = channel.type != DM_CHANNEL
        interaction = FakeInteraction(
            snowflake(),
            f"token-{snowflake()}",
            kind,
            user,
            channel.id,
            self.guild_id if in_guild else None,
            data,
            asyncio.get_running_loop().time(),
            message_id=message.id if message else None,
        )
        self.interactions[interaction.id] = interaction
        payload: dict[str, Any] = {
            "id": str(interaction.id),
            "application_id": str(self.app_id),
            "type": kind,
            "data": data,
            "token": interaction.token,
            "version": 1,
            "locale": user.locale,
            "app_permissions": "2248473465835073",
            "attachment_size_limit": self.attachment_size_limit,
            "entitlements": [],
            "authorizing_integration_owners": {"0": str(self.guild_id)},
            "context": 0 if in_guild else 1,
            "channel_id": str(channel.id),
            "channel": channel.payload(),
        }
        if in_guild:
            payload |= {
                "guild_id": str(self.guild_id),
                "guild_locale": self.guild_locale,
                "guild": {"id": str(self.guild_id), "locale": self.guild_locale, "features": []},
                "member": member_payload(user, []),
            }
        else:
            payload["user"] = user.payload()
        if channel.id in self.user_installed_channels:
            payload["authorizing_integration_owners"] = {"1": str(user.id)}
        if message is not None:
            payload["message"] = message.payload(self.bot.id)
        await self.dispatch("INTERACTION_CREATE", payload)
        return interaction

    def _require_session(self) -> None:
        if not any(s.identified and not s.closed for s in self.sessions):
            raise AssertionError("no bot is connected to the fake gateway")


def submitted_components(
    modal: dict[str, Any], values: dict[str, str], files: dict[str, list[str]] | None = None
) -> list[dict[str, Any]]:
    """What Discord sends back for ``modal``: each input's value (``values`` by custom id, else
    what the form showed), selects as ``values`` lists, file uploads as attachment id lists
    (``files``), text displays as they were."""
    fields: list[str] = []
    rows: list[dict[str, Any]] = []
    for component in modal["components"]:
        if component["type"] == 10:
            rows.append({"type": 10, "id": component.get("id")})
            continue
        inner = component["component"] if component["type"] == 18 else component["components"][0]
        custom_id = inner["custom_id"]
        fields.append(custom_id)
        if inner["type"] == 19:
            answer: dict[str, Any] = {
                "type": 19,
                "custom_id": custom_id,
                "values": (files or {}).get(custom_id, []),
            }
            rows.append({"type": 18, "component": answer})
            continue
        if inner["type"] == 3:
            shown = [o["value"] for o in inner["options"] if o.get("default")]
            chosen = values.get(custom_id, shown[0] if shown else "")
            answer = {
                "type": 3,
                "custom_id": custom_id,
                "values": [chosen] if chosen else [],
            }
        else:
            answer = {
                "type": 4,
                "custom_id": custom_id,
                "value": values.get(custom_id, inner.get("value") or ""),
            }
        rows.append(
            {"type": 18, "component": answer}
            if component["type"] == 18
            else {"type": 1, "components": [answer]}
        )
    unknown = (set(values) | set(files or {})) - set(fields)
    assert not unknown, f"the modal has no fields {sorted(unknown)} (it has {fields})"
    return rows
