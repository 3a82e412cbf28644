"""REST routes of the fake Discord: login, commands, messages, webhooks, interaction callbacks,
typing and threads. Validation follows Discord's documented limits so mistakes surface as the
same 4xx answers the real API gives."""

from __future__ import annotations

import asyncio
import unicodedata
from typing import Any

from aiohttp import web

from tests.fakes.discord_bodies import MessageBodies, invalid
from tests.fakes.discord_core import Req, error, json_response
from tests.fakes.discord_model import (
    APPLICATION_COMMAND,
    AUTOCOMPLETE,
    EPHEMERAL,
    LOADING,
    MESSAGE_COMPONENT,
    MODAL_SUBMIT,
    PUBLIC_THREAD,
    TEXT_CHANNEL,
    FakeChannel,
    FakeInteraction,
    FakeMessage,
    snowflake,
)

_CALLBACK_TYPES = {
    APPLICATION_COMMAND: {4, 5, 9},
    MESSAGE_COMPONENT: {4, 5, 6, 7, 9},
    AUTOCOMPLETE: {8},
    MODAL_SUBMIT: {4, 5, 6, 7},
}


DISCORD_LOCALES = frozenset(
    [
        "id",
        "da",
        "de",
        "en-GB",
        "en-US",
        "es-ES",
        "es-419",
        "fr",
        "hr",
        "it",
        "lt",
        "hu",
        "nl",
        "no",
        "pl",
        "pt-BR",
        "ro",
        "fi",
        "sv-SE",
        "vi",
        "tr",
        "cs",
        "el",
        "bg",
        "ru",
        "uk",
        "hi",
        "th",
        "zh-CN",
        "ja",
        "zh-TW",
        "ko",
    ]
)
"""The locales Discord takes in ``name_localizations`` and ``description_localizations``."""
CHAT_INPUT = 1


def chat_input_name(name: str) -> bool:
    """Discord's ``^[-_\\p{L}\\p{N}\\p{sc=Deva}\\p{sc=Thai}]{1,32}$``, lowercase where a
    letter has a lowercase form (slash commands, subcommands, options)."""
    if not 1 <= len(name) <= 32 or name != name.lower():
        return False
    for character in name:
        code = ord(character)
        script_mark = 0x0900 <= code <= 0x097F or 0x0E00 <= code <= 0x0E7F
        letter = character in "-_" or unicodedata.category(character)[0] in "LN"
        if not (letter or script_mark):
            return False
    return True


def command_problem(command: dict[str, Any]) -> tuple[str, str] | None:
    """What Discord refuses in a command of a bulk overwrite: names (and their localizations)
    that are not valid for the command's type, descriptions and choice names outside 1–100
    characters, localizations for unknown locales, options named alike in one language."""
    slash = command.get("type", CHAT_INPUT) == CHAT_INPUT
    return _named_problem(command, slash, "") or (
        _options_problem(command.get("options") or [], "options") if slash else None
    )


def _named_problem(entry: dict[str, Any], slash: bool, at: str) -> tuple[str, str] | None:
    names = entry.get("name_localizations") or {}
    descriptions = entry.get("description_localizations") or {}
    for locale in (*names, *descriptions):
        if locale not in DISCORD_LOCALES:
            return f"{at}name_localizations", f"{locale!r} is not a Discord locale"
    for locale, name in {"": entry["name"], **names}.items():
        valid = chat_input_name(name) if slash else 1 <= len(name) <= 32
        if not valid:
            return f"{at}name", f"APPLICATION_COMMAND_INVALID_NAME {locale} {name!r}"
    for locale, text in descriptions.items():
        if not 1 <= len(text) <= 100:
            return f"{at}description_localizations", f"{locale}: 1 to 100 characters"
    return None


def _options_problem(options: list[dict[str, Any]], at: str) -> tuple[str, str] | None:
    seen: set[tuple[str, str]] = set()
    for index, option in enumerate(options):
        where = f"{at}.{index}."
        problem = _named_problem(option, True, where)
        if problem is not None:
            return problem
        for locale, name in {
            "": option["name"],
            **(option.get("name_localizations") or {}),
        }.items():
            if (locale, name) in seen:
                return f"{where}name", f"APPLICATION_COMMAND_OPTIONS_NAME_ALREADY_EXISTS {name!r}"
            seen.add((locale, name))
        for choice in option.get("choices") or []:
            for text in (choice["name"], *(choice.get("name_localizations") or {}).values()):
                if not 1 <= len(text) <= 100:
                    return f"{where}choices", f"choice name {text!r}: 1 to 100 characters"
        problem = _options_problem(option.get("options") or [], f"{where}options")
        if problem is not None:
            return problem
    return None


def created_payload(message: FakeMessage, bot_id: int) -> dict[str, Any]:
    """``message`` as a create answer gives it: with the nonce it was sent with, if any."""
    payload = message.payload(bot_id)
    if message.nonce is not None:
        payload["nonce"] = message.nonce
    return payload


class RestRoutes(MessageBodies):
    """The REST API under ``/api/v10``."""

    def __init__(self, **options: Any) -> None:
        super().__init__(**options)
        self.forbidden_channels: set[int] = set()
        self.user_installed_channels: set[int] = set()
        """Channels of a server genbot is not a member of, where a user who added genbot to
        their account uses it: interactions there are authorised by that user only, and the
        bot's own channel requests are refused as in ``forbidden_channels``."""
        app = r"(?P<app>\d+)"
        hook = rf"/webhooks/{app}/(?P<token>[^/]+)"
        channel = r"/channels/(?P<cid>\d+)"
        self.route("GET", r"/users/@me", self._me)
        self.route("GET", r"/oauth2/applications/@me", self._application)
        self.route("GET", r"/gateway(/bot)?", self._gateway_info)
        self.route("PUT", rf"/applications/{app}/commands", self._put_commands)
        self.route("GET", rf"/applications/{app}/commands", self._get_commands)
        guild_commands = rf"/applications/{app}/guilds/(?P<gid>\d+)/commands"
        self.route("PUT", guild_commands, self._put_commands)
        self.route("GET", guild_commands, self._get_commands)
        callback = r"/interactions/(?P<iid>\d+)/(?P<token>[^/]+)/callback"
        self.route("POST", callback, self._callback, auth=False)
        self.route("POST", hook, self._followup, auth=False)
        for method in ("GET", "PATCH", "DELETE"):
            self.route(
                method, hook + r"/messages/(?P<mid>@original|\d+)", self._hook_message, auth=False
            )
        self.route("GET", channel, self._get_channel)
        self.route("POST", channel + r"/messages", self._post_message)
        self.route("GET", channel + r"/messages", self._list_messages)
        for method in ("GET", "PATCH", "DELETE"):
            self.route(method, channel + r"/messages/(?P<mid>\d+)", self._channel_message)
        self.route("POST", channel + r"/typing", self._typing)
        self.route("POST", channel + r"/threads", self._thread)
        self.route("POST", channel + r"/messages/(?P<mid>\d+)/threads", self._thread)
        self.route("POST", r"/users/@me/channels", self._open_dm)

    # Login and commands ------------------------------------------------------------------------

    async def _me(self, req: Req) -> web.Response:
        return json_response(self.bot.payload() | {"verified": True, "mfa_enabled": False})

    async def _application(self, req: Req) -> web.Response:
        return json_response(
            {
                "id": str(self.app_id),
                "name": "genbot",
                "icon": None,
                "description": "",
                "summary": "",
                "rpc_origins": [],
                "bot_public": True,
                "bot_require_code_grant": False,
                "owner": self.users["alice"].payload(),
                "verify_key": "0" * 64,
                "team": None,
                "flags": 0,
                "interactions_endpoint_url": None,
            }
        )

    async def _gateway_info(self, req: Req) -> web.Response:
        limit = {"total": 1000, "remaining": 999, "reset_after": 0, "max_concurrency": 1}
        shards = self.recommended_shards
        return json_response(
            {"url": self.gateway_url, "shards": shards, "session_start_limit": limit}
        )

    async def _put_commands(self, req: Req, app: str, gid: str | None = None) -> web.Response:
        if int(app) != self.app_id or (gid is not None and int(gid) != self.guild_id):
            return error(403, 50001, "Missing Access")
        stored = []
        for command in req.json:
            if len(command.get("options", [])) > 25 or not 1 <= len(command["name"]) <= 32:
                return invalid("name", f"bad command {command['name']!r}")
            problem = command_problem(command)
            if problem is not None:
                return invalid(*problem)
            made = {"id": str(snowflake()), "application_id": app, "version": "1"}
            stored.append({"description": "", "type": 1} | command | made)
        if gid is None:
            self.global_commands = stored
        else:
            self.guild_commands[int(gid)] = stored
        return json_response(stored)

    async def _get_commands(self, req: Req, app: str, gid: str | None = None) -> web.Response:
        commands = self.global_commands if gid is None else self.guild_commands.get(int(gid), [])
        return json_response(commands)

    # Interactions ------------------------------------------------------------------------------

    async def _callback(self, req: Req, iid: str, token: str) -> web.Response:
        interaction = self.interactions.get(int(iid))
        if interaction is None or interaction.token != token:
            return error(404, 10062, "Unknown interaction")
        if asyncio.get_running_loop().time() - interaction.created > self.interaction_deadline:
            interaction.late_callbacks += 1
            return error(404, 10062, "Unknown interaction")
        if interaction.callbacks:
            return error(400, 40060, "Interaction has already been acknowledged.")
        kind = req.json["type"]
        data = req.json.get("data") or {}
        allowed = _CALLBACK_TYPES[interaction.type]
        if kind not in allowed or (kind in (6, 7) and interaction.message_id is None):
            return invalid("type", f"callback type {kind} is not valid for this interaction")
        message: FakeMessage | None = None
        if kind == 4:
            built = self._build(req, data, interaction.channel_id, webhook=True)
            if isinstance(built, web.Response):
                return built
            message = built
        elif kind == 5:
            message = FakeMessage(
                snowflake(),
                interaction.channel_id,
                self.bot,
                guild_id=interaction.guild_id,
                flags=LOADING | (data.get("flags", 0) & EPHEMERAL),
                webhook_id=self.app_id,
            )
        elif kind == 7:
            assert interaction.message_id is not None
            problem = self._edit(self.messages[interaction.message_id], req, data)
            if problem is not None:
                return problem
        elif kind == 9 and not 1 <= len(data.get("components", [])) <= 5:
            return invalid("data.components", "a modal needs 1 to 5 components")
        elif kind == 9 and (modal_error := modal_problem(data)) is not None:
            return invalid("data.components", modal_error)
        elif kind == 9 and (len(data.get("title", "")) > 45 or len(data["custom_id"]) > 100):
            return invalid("data.title", "modal title or custom_id too long")
        interaction.callbacks.append(req.json)
        if kind in (6, 7):
            # A component's interaction answered with an update: its original response is the
            # message the component is on (``@original`` edits that message, ephemeral or not).
            interaction.original_message_id = interaction.message_id
        if message is not None:
            message.interaction_id = interaction.id
            self.messages[message.id] = message
            interaction.original_message_id = message.id
        resource: dict[str, Any] = {"type": kind}
        if message is not None:
            resource["message"] = message.payload(self.bot.id)
        answer = {
            "interaction": {
                "id": str(interaction.id),
                "type": interaction.type,
                "response_message_id": str(message.id) if message else None,
                "response_message_loading": kind == 5,
                "response_message_ephemeral": bool(message and message.ephemeral),
            },
            "resource": resource,
        }
        if req.query.get("with_response") in ("1", "true", "True"):
            return json_response(answer)
        return web.Response(status=204)

    def _interaction_for(self, app: str, token: str) -> FakeInteraction | web.Response:
        found = next((i for i in self.interactions.values() if i.token == token), None)
        if found is None or int(app) != self.app_id:
            return error(404, 10015, "Unknown Webhook")
        if found.token_expired:
            return error(401, 50027, "Invalid Webhook Token")
        return found

    async def _followup(self, req: Req, app: str, token: str) -> web.Response:
        interaction = self._interaction_for(app, token)
        if isinstance(interaction, web.Response):
            return interaction
        if not interaction.callbacks:
            return error(404, 10015, "Unknown Webhook")
        original = self.messages.get(interaction.original_message_id or 0)
        if original is not None and original.loading:
            problem = self._edit(original, req, req.json)
            return problem or json_response(original.payload(self.bot.id))
        built = self._build(req, req.json, interaction.channel_id, webhook=True)
        if isinstance(built, web.Response):
            return built
        built.interaction_id = interaction.id
        self.messages[built.id] = built
        interaction.followup_ids.append(built.id)
        return json_response(built.payload(self.bot.id))

    async def _hook_message(self, req: Req, app: str, token: str, mid: str) -> web.Response:
        interaction = self._interaction_for(app, token)
        if isinstance(interaction, web.Response):
            return interaction
        message_id = interaction.original_message_id if mid == "@original" else int(mid)
        owned = [interaction.original_message_id, *interaction.followup_ids]
        message = self.messages.get(message_id or 0)
        if message is None or message.deleted or message_id not in owned:
            return error(404, 10008, "Unknown Message")
        return await self._message_verb(req, message)

    async def _message_verb(self, req: Req, message: FakeMessage) -> web.Response:
        if req.method == "DELETE":
            message.deleted = True
            return web.Response(status=204)
        if req.method == "PATCH":
            problem = self._edit(message, req, req.json or {})
            if problem is not None:
                return problem
        return json_response(message.payload(self.bot.id))

    # Channels ----------------------------------------------------------------------------------

    def _channel_or_error(self, cid: str) -> FakeChannel | web.Response:
        channel = self.channels.get(int(cid))
        if channel is None:
            return error(404, 10003, "Unknown Channel")
        if channel.id in self.forbidden_channels | self.user_installed_channels:
            return error(403, 50001, "Missing Access")
        return channel

    async def _get_channel(self, req: Req, cid: str) -> web.Response:
        channel = self._channel_or_error(cid)
        return channel if isinstance(channel, web.Response) else json_response(channel.payload())

    async def _post_message(self, req: Req, cid: str) -> web.Response:
        channel = self._channel_or_error(cid)
        if isinstance(channel, web.Response):
            return channel
        spent = self.spend(channel.id)
        if isinstance(spent, web.Response):
            return spent
        payload = req.json or {}
        problem = self._nonce_problem(payload)
        if problem is not None:
            return problem
        earlier = self._posted_with_nonce(payload, channel.id)
        if earlier is not None:
            return json_response(created_payload(earlier, self.bot.id), headers=spent)
        built = self._build(req, payload, channel.id, webhook=False)
        if isinstance(built, web.Response):
            return built
        built.nonce = payload.get("nonce")
        self.messages[built.id] = built
        return json_response(created_payload(built, self.bot.id), headers=spent)

    async def _list_messages(self, req: Req, cid: str) -> web.Response:
        channel = self._channel_or_error(cid)
        if isinstance(channel, web.Response):
            return channel
        limit = max(1, min(int(req.query.get("limit", "50")), 100))
        newest_first = list(reversed(self.messages_in(channel.id)))[:limit]
        return json_response([m.payload(self.bot.id) for m in newest_first])

    async def _channel_message(self, req: Req, cid: str, mid: str) -> web.Response:
        channel = self._channel_or_error(cid)
        if isinstance(channel, web.Response):
            return channel
        message = self.messages.get(int(mid))
        if message is None or message.deleted or message.channel_id != channel.id:
            return error(404, 10008, "Unknown Message")
        if req.method != "GET" and message.author.id != self.bot.id:
            return error(403, 50005, "Cannot edit a message authored by another user")
        spent: dict[str, str] = {}
        if req.method == "PATCH":
            outcome = self.spend(channel.id)
            if isinstance(outcome, web.Response):
                return outcome
            spent = outcome
        response = await self._message_verb(req, message)
        response.headers.update(spent)
        return response

    async def _typing(self, req: Req, cid: str) -> web.Response:
        channel = self._channel_or_error(cid)
        if isinstance(channel, web.Response):
            return channel
        self.typing_in.append(channel.id)
        return web.Response(status=204)

    async def _thread(self, req: Req, cid: str, mid: str | None = None) -> web.Response:
        parent = self._channel_or_error(cid)
        if isinstance(parent, web.Response):
            return parent
        if parent.type != TEXT_CHANNEL:
            return error(400, 50024, "Cannot execute action on this channel type")
        body = req.json or {}
        name = str(body.get("name", ""))
        if not 1 <= len(name) <= 100:
            return invalid("name", "Must be between 1 and 100 in length.")
        thread_id = snowflake()
        if mid is not None:
            starter = self.messages.get(int(mid))
            if starter is None or starter.channel_id != parent.id:
                return error(404, 10008, "Unknown Message")
            if starter.thread_id is not None:
                return error(400, 160004, "A thread has already been created for this message")
            thread_id = starter.id
            starter.thread_id = thread_id
        thread = FakeChannel(
            thread_id,
            int(body.get("type", PUBLIC_THREAD)),
            name,
            self.guild_id,
            parent_id=parent.id,
            owner_id=self.bot.id,
        )
        self.channels[thread.id] = thread
        await self.dispatch("THREAD_CREATE", thread.payload() | {"newly_created": True})
        return json_response(thread.payload(), 201)

    async def _open_dm(self, req: Req) -> web.Response:
        recipient = int(req.json["recipient_id"])
        user = next((u for u in self.users.values() if u.id == recipient), None)
        if user is None:
            return error(404, 10013, "Unknown User")
        return json_response(self.dm_channel(user).payload())


def modal_problem(data: dict[str, Any]) -> str | None:
    """Why Discord refuses a modal's components, or ``None``: action rows of one text input,
    text displays (≤ 4000 characters) and labels (≤ 45) around a text input or a select menu
    (1–25 options, labels and values ≤ 100)."""
    for component in data["components"]:
        kind = component.get("type")
        if kind == 10:
            if not 1 <= len(component.get("content") or "") <= 4000:
                return "a text display holds 1 to 4000 characters"
            continue
        if kind == 1:
            inner = component.get("components") or []
            if len(inner) != 1 or inner[0].get("type") != 4:
                return "a modal action row holds one text input"
            continue
        if kind != 18:
            return f"component type {kind} cannot be in a modal"
        if not 1 <= len(component.get("label") or "") <= 45:
            return "a label's text is 1 to 45 characters"
        inner = component.get("component") or {}
        if inner.get("type") == 3:
            options = inner.get("options") or []
            if not 1 <= len(options) <= 25:
                return "a select menu has 1 to 25 options"
            if any(len(o.get("label", "")) > 100 or len(o.get("value", "")) > 100 for o in options):
                return "option labels and values are at most 100 characters"
        elif inner.get("type") == 19:
            if not 1 <= int(inner.get("max_values") or 1) <= 10:
                return "a file upload takes 1 to 10 files"
        elif inner.get("type") != 4:
            return "a label holds a text input, a select menu or a file upload"
        if len(str(inner.get("custom_id", ""))) > 100:
            return "custom_id too long"
    return None
