"""The Slack adapter: a slack-bolt ``AsyncApp`` translating Slack traffic into genbot events.

Every listener acknowledges at once and submits the event to its intake from genbot's router
(:mod:`bot.router`), so Slack's 3-second limit never depends on the core. Transport: Socket
Mode when ``[slack] app_token`` is set, else HTTP on ``http_host:http_port`` at ``/slack/events``
(bolt verifies the signatures) on a hardened listener.

One workspace (``[slack] bot_token``), or any number (``client_id`` and ``client_secret``): then
workspaces install genbot by OAuth on the same listener (:mod:`adapters.slack.distribution`)
and every request and answer uses its own workspace's token. Listeners take the bot user, the
workspace and the client from bolt's request context either way.
"""

from __future__ import annotations

import logging
import re
import time
from collections import OrderedDict
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import replace
from functools import partial
from typing import Any, TypeVar

from slack_bolt.adapter.socket_mode.async_handler import AsyncSocketModeHandler
from slack_bolt.async_app import AsyncApp
from slack_bolt.context.async_context import AsyncBoltContext
from slack_bolt.context.say_stream.async_say_stream import AsyncSayStream
from slack_sdk.errors import SlackApiError
from slack_sdk.web.async_client import AsyncWebClient

from adapters import AdapterStartError, FatalHandler, log_fatal
from adapters.listener import Listener
from adapters.slack.ports import ChannelsInView, EventDedupe, Installations
from adapters.slack.settings import SlackSettings
from bot.kernel import (
    DEFAULT_LANGUAGE,
    STOP_ACTION,
    ButtonPress,
    ChosenLanguages,
    Command,
    CommandError,
    EventRouter,
    EventSink,
    FormChecks,
    InboundEvent,
    LimitsSettings,
    ModalSubmit,
    Place,
    Sealer,
    SealError,
    User,
    UserMessage,
    _,
    command_images,
    speaking,
    supported,
)

from .agent import ASK_CALLBACK, AgentSurfaces, ChannelUnreadable, default_prompts
from .conversation_types import ConversationTypes
from .distribution import INSTALL_PATH, Distribution
from .formatting import escape_mrkdwn
from .inbound import (
    SLASH_COMMANDS,
    SlackOrigin,
    attachments_from_files,
    channel_type_named,
    home_opened,
    is_im,
    mentions,
    message_place,
    place_for,
    plain_text,
    press_from_action,
    route_command,
    submit_from_view,
    user_for,
)
from .redelivery import Redeliveries
from .shared_images import recent_files
from .surface import SlackSurface
from .transport import EVENTS_PATH, checked_call, open_socket, serve_http
from .usergroups import UserGroups

log = logging.getLogger(__name__)
E = TypeVar("E", ButtonPress, ModalSubmit)

NAMES_MAX = 4096
PEOPLE_SECONDS = 3600.0
"""How long a user's name and language read from Slack are trusted (a change of either in
Slack shows within this)."""
ACCEPTED_MESSAGE_SUBTYPES = frozenset({None, "file_share", "thread_broadcast"})
STOP_GRACE_SECONDS = 2.0
CUSTOM_ID_PATTERN = re.compile(r"^gb:")


class SlackAdapter:
    """genbot on Slack. ``surface`` is what the core answers through."""

    def __init__(
        self,
        settings: SlackSettings,
        limits: LimitsSettings,
        *,
        installations: Installations | None = None,
        sealer: Sealer | None = None,
        dedupe: EventDedupe | None = None,
        channels_in_view: ChannelsInView | None = None,
        read_user_groups: bool = False,
        clock: Callable[[], float] = time.time,
    ) -> None:
        """``installations``: where a distributed genbot keeps its workspaces (its database),
        their tokens sealed by ``sealer``; ``dedupe``: where processes sharing the app record
        the events they handled; ``channels_in_view``: where they share the channel each user
        looks at beside the Messages tab (else this process keeps it); ``read_user_groups``:
        every event's user carries the user groups they are in (``User.roles``, for tiers
        mapped from them; :mod:`.usergroups`); ``clock``: what OAuth states are dated by (the
        clock ``installations`` checks them on: the store's)."""
        bot_token = settings.bot_token.get_secret_value()
        if bot_token and settings.distributed:
            raise ValueError(
                "[slack] set bot_token (one workspace) or client_id and client_secret "
                "(installed by OAuth), not both"
            )
        if not bot_token and not settings.distributed:
            raise ValueError(
                "[slack] bot_token (one workspace) or client_id and client_secret "
                "(installed by OAuth) is required"
            )
        if settings.distributed and (installations is None or sealer is None):
            raise ValueError(
                "a Slack app installed by OAuth keeps its workspaces in storage, sealed"
            )
        self.settings = settings
        self._dedupe = dedupe
        self._admins = frozenset(settings.admin_ids)
        self._groups = UserGroups() if read_user_groups else None
        self._types = ConversationTypes()
        self._api_url = (
            settings.api_url if settings.api_url.endswith("/") else settings.api_url + "/"
        )
        self.client = AsyncWebClient(token=bot_token or None, base_url=self._api_url)
        self.distribution = (
            Distribution(settings, installations, sealer, self.client, clock=clock)
            if settings.distributed and installations is not None and sealer is not None
            else None
        )
        self.surface = SlackSurface(
            self.client,
            profile=settings.platform_profile(),
            max_upload_bytes=limits.max_upload_bytes,
            bot_token=bot_token,
            api_url=self._api_url,
            tokens=self.distribution.tokens if self.distribution is not None else None,
        )
        prompts = settings.suggested_prompts
        self.agent = AgentSurfaces(
            default_prompts() if prompts is None else prompts,
            settings.messages_tab_greeting,
            channels=channels_in_view,
        )
        self.bot_user_id = ""
        self.team_id = ""
        self.app: AsyncApp | None = None
        self._listener: Listener | None = None
        self._socket: AsyncSocketModeHandler | None = None
        self._people: OrderedDict[tuple[str, str], tuple[float, str, str | None]] = OrderedDict()
        """(team, user) → when read, their display name and language (``users.info``)."""
        self.router: EventRouter | None = None
        self._intake: EventSink | None = None
        self.http_port: int | None = None

    @property
    def socket_mode(self) -> bool:
        return bool(self.settings.app_token.get_secret_value())

    @property
    def events_url(self) -> str | None:
        """Where Slack must send HTTP requests (``None`` in Socket Mode or before ``start``)."""
        return self._http_url(EVENTS_PATH)

    @property
    def install_url(self) -> str | None:
        """Where a workspace installs genbot (``None`` unless distributed and listening)."""
        if self.distribution is None:
            return None
        return self._http_url(INSTALL_PATH)

    def _http_url(self, path: str) -> str | None:
        if self.http_port is None:
            return None
        return f"http://{self.settings.http_host}:{self.http_port}{path}"

    @property
    def intake(self) -> EventSink:
        """Where this adapter's events go; ``RuntimeError`` before :meth:`start`."""
        if self._intake is None:
            raise RuntimeError("the slack adapter is not started")
        return self._intake

    async def connected(self) -> bool:
        """Whether the Socket Mode websocket is connected (HTTP mode: whether it listens)."""
        if self._socket is not None:
            return bool(await self._socket.client.is_connected())
        return self._listener is not None

    # Lifecycle -------------------------------------------------------------------------------

    async def start(self, router: EventRouter, on_fatal: FatalHandler = log_fatal) -> None:
        """Check the tokens, build the bolt app and open the transport; from then on every
        event goes to ``router``'s intake. ``on_fatal`` is never called: bolt's Socket Mode client
        reconnects by itself, and in HTTP mode Slack comes to genbot.

        Raises :class:`adapters.AdapterStartError` with a one-line reason when a setting is
        missing, Slack refuses the bot token (``auth.test``) or the app token
        (``apps.connections.open``), Slack cannot be reached, or the HTTP port cannot be bound.
        """
        secret = self.settings.signing_secret.get_secret_value()
        if not self.socket_mode and not secret:
            raise AdapterStartError(
                "[slack] signing_secret is required in HTTP mode (or set app_token)"
            )
        if self.distribution is not None and self.socket_mode:
            raise AdapterStartError(
                "[slack] workspaces install genbot on the HTTP listener: leave app_token empty "
                "when client_id and client_secret are set"
            )
        if self.distribution is not None:
            try:
                await self.distribution.installations.check_key()
            except SealError as error:
                raise AdapterStartError(str(error)) from error
        else:
            identity = await checked_call(
                self.client.auth_test(), "auth.test", "bot_token", self._api_url
            )
            self.bot_user_id = str(identity.get("user_id") or "")
            self.team_id = str(identity.get("team_id") or "")
        self.app = self._build_app(secret)
        self.router = router
        self._intake = router.intake("slack")
        if self.socket_mode:
            app_token = self.settings.app_token.get_secret_value()
            self._socket = await open_socket(self.app, self.client, app_token, self._api_url)
            log.info("Slack adapter connected in Socket Mode")
            return
        self._listener, self.http_port = await serve_http(
            self.app, self.settings.http_host, self.settings.http_port
        )
        log.info("Slack adapter listening on %s", self.events_url)
        if self.install_url is not None:
            log.info("Workspaces install genbot at %s", self.install_url)

    async def stop(self) -> None:
        """Stop taking events, close the transport, give in-flight events a moment, then
        cancel them."""
        if self._intake is not None:
            self._intake.stop()
        if self._socket is not None:
            await self._socket.close_async()  # type: ignore[no-untyped-call]
            self._socket = None
        if self._listener is not None:
            await self._listener.stop()
            self._listener = None
            self.http_port = None
        if self._intake is not None:
            await self._intake.drain(STOP_GRACE_SECONDS)
        if self._groups is not None:
            await self._groups.close()
        await self.surface.close()

    def _build_app(self, secret: str) -> AsyncApp:
        distribution = self.distribution
        app = AsyncApp(
            client=self.client,
            signing_secret=secret or None,
            oauth_settings=distribution.oauth_settings() if distribution is not None else None,
            installation_store=distribution.installations if distribution is not None else None,
            logger=logging.getLogger("genbot.slack.bolt"),
        )
        if self.distribution is not None:
            self.distribution.listen(app)
        app.middleware(Redeliveries(self._dedupe).skip)
        app.event("app_mention")(self._on_mention)
        app.event("message")(self._on_message)
        app.event("app_home_opened")(self._on_home_opened)
        app.event("app_context_changed")(self._on_context_changed)
        app.shortcut(ASK_CALLBACK)(self._on_ask)
        app.view(ASK_CALLBACK)(self._on_asked)
        app.event("agent_session_stopped")(self._on_session_stopped)
        for slash in SLASH_COMMANDS:
            app.command(slash)(self._on_command)
        app.action(CUSTOM_ID_PATTERN)(self._on_action)
        app.view(CUSTOM_ID_PATTERN)(self._on_view_submission)
        return app

    # Redeliveries ----------------------------------------------------------------------------

    # Events ------------------------------------------------------------------------------------

    async def _on_mention(
        self,
        body: dict[str, Any],
        event: dict[str, Any],
        context: AsyncBoltContext,
        say_stream: AsyncSayStream | None = None,
    ) -> None:
        if event.get("bot_id") or event.get("subtype") or not event.get("user"):
            return
        self.intake.submit(self._mention(body, event, context, say_stream))

    async def _mention(
        self,
        body: dict[str, Any],
        event: dict[str, Any],
        context: AsyncBoltContext,
        say_stream: AsyncSayStream | None,
    ) -> InboundEvent | None:
        """An ``app_mention`` as the user's message; the event does not say whether its
        conversation is a group DM, so that is asked (:mod:`.conversation_types`)."""
        if not event.get("channel_type"):
            workspace = str(body.get("team_id") or event.get("team") or self.team_id)
            channel = str(event.get("channel") or "")
            event = {
                **event,
                "channel_type": await self._types.of(context.client, workspace, channel),
            }
        return await self._user_message(body, event, context, say_stream, mentions_bot=True)

    async def _on_message(
        self,
        body: dict[str, Any],
        event: dict[str, Any],
        context: AsyncBoltContext,
        say_stream: AsyncSayStream | None = None,
    ) -> None:
        if event.get("subtype") == "message_changed":
            await self._on_edit(body, event, context)
            return
        if event.get("subtype") not in ACCEPTED_MESSAGE_SUBTYPES or event.get("bot_id"):
            return
        bot_user_id = self._bot_user(context)
        user = event.get("user")
        if not user or user == bot_user_id:
            return
        text = str(event.get("text") or "")
        channel = str(event.get("channel") or "")
        thread_ts = event.get("thread_ts")
        in_thread = bool(thread_ts) and thread_ts != event.get("ts")
        mentioned = bool(bot_user_id) and mentions(text, bot_user_id)
        if event.get("channel_type") == "mpim":
            return
        if not is_im(channel, event.get("channel_type")) and (mentioned or not in_thread):
            return
        message = self._user_message(body, event, context, say_stream, mentions_bot=mentioned)
        self.intake.submit(message)

    async def _on_session_stopped(
        self, body: dict[str, Any], event: dict[str, Any], context: AsyncBoltContext
    ) -> None:
        """Slack's own stop (an agent session's stop button): each of genbot's messages Slack
        stopped streaming is heard as a press of ⏹ Stop on it (no ref: the answer it shows)."""
        user = str(event.get("user") or "")
        channel = str(event.get("channel") or "")
        if not user or not channel:
            return
        workspace = str(body.get("team_id") or self.team_id)
        thread_ts = event.get("thread_ts")
        for message_ts in event.get("streaming_message_ts") or ():
            press = ButtonPress(
                user=await self._user(context, workspace, user),
                place=place_for(workspace, channel, thread_ts or None, event.get("channel_type")),
                locale=await self._locale(context.client, workspace, user),
                message_id=str(message_ts),
                action=STOP_ACTION,
                ref="",
            )
            self.intake.submit(press)

    async def _on_edit(
        self, body: dict[str, Any], event: dict[str, Any], context: AsyncBoltContext
    ) -> None:
        """``message_changed``: a person's edit of their message in a DM or a thread is heard
        as an edited :class:`UserMessage` (the core answers it again when it is a turn of a
        conversation); edits of genbot's and other bots' messages are not."""
        edited = event.get("message") or {}
        user = edited.get("user")
        if not user or edited.get("bot_id") or user == self._bot_user(context):
            return
        channel = str(event.get("channel") or "")
        thread_ts = edited.get("thread_ts")
        in_thread = bool(thread_ts) and thread_ts != edited.get("ts")
        if not (
            in_thread
            or event.get("channel_type") == "mpim"
            or is_im(channel, event.get("channel_type"))
        ):
            return
        as_sent = {**edited, "channel": channel, "channel_type": event.get("channel_type")}
        message = await self._user_message(body, as_sent, context, None, mentions_bot=False)
        if isinstance(message, UserMessage):
            self.intake.submit(replace(message, edited=True, attachments=()))

    async def _user_message(
        self,
        body: dict[str, Any],
        event: dict[str, Any],
        context: AsyncBoltContext,
        say_stream: AsyncSayStream | None,
        *,
        mentions_bot: bool,
    ) -> InboundEvent | None:
        workspace = str(body.get("team_id") or event.get("team") or self.team_id)
        user_id = str(event["user"])
        place = message_place(workspace, event)
        text = plain_text(str(event.get("text") or ""), self._bot_user(context))
        attachments = attachments_from_files(event.get("files"))
        locale = await self._locale(context.client, workspace, user_id)
        if is_im(place.channel_id, event.get("channel_type")):
            try:
                with speaking(await self._private_language(context.client, user_id, place)):
                    in_view = await self.agent.channel_document(
                        context.client,
                        workspace,
                        user_id,
                        text,
                        partial(self._name, context.client, team_id=workspace),
                    )
            except ChannelUnreadable as unreadable:
                await self._say_in_thread(context.client, event, str(unreadable))
                return None
            attachments += (in_view,) if in_view is not None else ()
        return UserMessage(
            user=await self._user(context, workspace, user_id),
            place=place,
            locale=locale,
            context=stream_origin(say_stream),
            message_id=str(event.get("ts")),
            text=text,
            attachments=attachments,
            mentions_bot=mentions_bot,
        )

    async def _say_in_thread(
        self, client: AsyncWebClient, event: dict[str, Any], text: str
    ) -> None:
        """genbot's own ``text`` (mrkdwn, which may link a channel) in the thread of the
        message ``event``."""
        try:
            await client.chat_postMessage(
                channel=str(event.get("channel")),
                thread_ts=str(event.get("thread_ts") or event.get("ts")),
                text=text,
            )
        except SlackApiError as error:
            log.warning("could not tell the user: %s", error.response.get("error"))

    async def _on_home_opened(
        self, body: dict[str, Any], event: dict[str, Any], context: AsyncBoltContext
    ) -> None:
        if event.get("tab") == "home":
            self.intake.submit(self._home_opened(body, event, context))
        elif event.get("tab") == "messages":
            self.intake.submit(self._messages_opened(body, event, context))

    async def _messages_opened(
        self, body: dict[str, Any], event: dict[str, Any], context: AsyncBoltContext
    ) -> None:
        team = str(body.get("team_id") or self.team_id)
        user = str(event.get("user") or "")
        await self.agent.context_changed(team, user, event.get("context"))
        channel = str(event.get("channel") or "")
        if user and channel:
            dm = place_for(team, channel, None, "im")
            with speaking(await self._private_language(context.client, user, dm)):
                await self.agent.messages_tab_opened(context.client, team, user, channel)

    async def _on_context_changed(self, body: dict[str, Any], event: dict[str, Any]) -> None:
        team = str(body.get("team_id") or self.team_id)
        user = str(event.get("user") or _authorized_user(body))
        await self.agent.context_changed(team, user, event.get("context"))

    # "Ask genbot about this" ------------------------------------------------------------------

    async def _on_ask(
        self, ack: Callable[..., Awaitable[None]], body: dict[str, Any], client: AsyncWebClient
    ) -> None:
        await ack()
        team = str((body.get("team") or {}).get("id") or self.team_id)
        user_id = str((body.get("user") or {}).get("id") or "")
        channel = str((body.get("channel") or {}).get("id") or "")
        kind = channel_type_named(channel, (body.get("channel") or {}).get("name"))
        place = place_for(team, channel, None, kind)
        with speaking(await self._private_language(client, user_id, place)):
            form = self.agent.ask_form(body)
        try:
            await client.views_open(trigger_id=str(body.get("trigger_id")), view=form)
        except SlackApiError as error:
            log.warning("could not open the Ask genbot form: %s", error.response.get("error"))

    async def _on_asked(
        self,
        ack: Callable[..., Awaitable[None]],
        body: dict[str, Any],
        client: AsyncWebClient,
        context: AsyncBoltContext,
    ) -> None:
        await ack()
        self.intake.submit(self._asked(body, client, context))

    async def _asked(
        self, body: dict[str, Any], client: AsyncWebClient, context: AsyncBoltContext
    ) -> InboundEvent | None:
        """The question asked in the form, as the user's message in a new thread of their DM
        with genbot (its root is genbot's post of the question), the message and its thread
        attached as a document."""
        kept, question = self.agent.asked(body.get("view") or {})
        user_id = str((body.get("user") or {}).get("id") or "")
        if not question or not user_id:
            return None
        team = str((body.get("team") or {}).get("id") or self.team_id)
        document = await self.agent.thread_document(
            client, kept, partial(self._name, client, team_id=team)
        )
        opened = await client.conversations_open(users=user_id)
        dm = str((opened.get("channel") or {}).get("id") or "")
        locale = await self._locale(client, team, user_id)
        with speaking(
            await self._private_language(client, user_id, place_for(team, dm, None, "im"))
        ):
            about = _("_About a message in <#{channel}>:_", channel=kept.get("channel", ""))
        root = await client.chat_postMessage(channel=dm, text=f"{escape_mrkdwn(question)}\n{about}")
        ts = str(root["ts"])
        return UserMessage(
            user=await self._user(context, team, user_id),
            place=place_for(team, dm, ts, "im"),
            locale=locale,
            context=SlackOrigin(thread_ts=ts),
            message_id=ts,
            text=question,
            attachments=(document,),
            mentions_bot=True,
        )

    async def _home_opened(
        self, body: dict[str, Any], event: dict[str, Any], context: AsyncBoltContext
    ) -> InboundEvent | None:
        team = str(body.get("team_id") or self.team_id)
        user = await self._user(context, team, str(event.get("user") or ""))
        opened = home_opened(team, event, user)
        if opened is None:
            return None
        return replace(opened, locale=await self._locale(context.client, team, user.id))

    # Slash commands -----------------------------------------------------------------------------

    async def _on_command(
        self,
        ack: Callable[..., Awaitable[None]],
        body: dict[str, Any],
        respond: Callable[..., Awaitable[Any]],
        client: AsyncWebClient,
    ) -> None:
        await ack()
        self.intake.submit(self._command(body, respond, client))

    async def _command(
        self,
        body: dict[str, Any],
        respond: Callable[..., Awaitable[Any]],
        client: AsyncWebClient,
    ) -> InboundEvent | None:
        channel = str(body.get("channel_id"))
        user_id = str(body.get("user_id"))
        team = str(body.get("team_id") or self.team_id)
        place = place_for(
            team, channel, None, channel_type_named(channel, body.get("channel_name"))
        )
        locale = await self._locale(client, team, user_id)
        language = await self._private_language(client, user_id, place)
        with speaking(language):
            route = route_command(str(body.get("command", "")), str(body.get("text", "")))
        if isinstance(route, str):
            await respond(text=route, response_type="ephemeral", replace_original=False)
            return None
        try:
            with speaking(language):
                attachments, text = await command_images(
                    route.name, route.text, partial(recent_files, client, channel, user_id)
                )
        except CommandError as refused:
            await respond(text=str(refused), response_type="ephemeral", replace_original=False)
            return None
        roles = await self._roles(client, team, user_id)
        return Command(
            user=user_for(user_id, str(body.get("user_name") or ""), self._admins, roles),
            place=place,
            locale=locale,
            context=SlackOrigin(body.get("trigger_id"), body.get("response_url"), is_command=True),
            name=route.name,
            text=text,
            attachments=attachments,
            key=f"slack:{body['trigger_id']}" if body.get("trigger_id") else None,
        )

    # Interactivity ----------------------------------------------------------------------------

    async def _on_action(
        self, ack: Callable[..., Awaitable[None]], body: dict[str, Any], client: AsyncWebClient
    ) -> None:
        await ack()
        press = press_from_action(body, self._admins)
        if press is not None:
            self.intake.submit(self._with_roles(press, client))

    async def _on_view_submission(
        self, ack: Callable[..., Awaitable[None]], body: dict[str, Any], client: AsyncWebClient
    ) -> None:
        submit = submit_from_view(body, self._admins)
        router = self.router
        errors: Mapping[str, str] = {}
        if submit is not None and isinstance(router, FormChecks):
            errors = router.form_errors(submit)
        if errors:
            await ack(response_action="errors", errors=dict(errors))
            return
        await ack()
        if submit is not None:
            self.intake.submit(self._with_roles(submit, client))

    # Plumbing ----------------------------------------------------------------------------------

    def _bot_user(self, context: AsyncBoltContext) -> str:
        """genbot's own user in the request's workspace."""
        return str(context.bot_user_id or self.bot_user_id)

    async def _roles(self, client: AsyncWebClient, team_id: str, user_id: str) -> frozenset[str]:
        """The user groups ``user_id`` is in, when tiers map them (else none)."""
        if self._groups is None:
            return frozenset()
        return await self._groups.of(client, team_id, user_id)

    async def _with_roles(self, event: E, client: AsyncWebClient) -> E:
        """``event`` whose user carries their user groups, with their language."""
        team, user_id = event.place.workspace_id, event.user.id
        roles = await self._roles(client, team, user_id)
        locale = await self._locale(client, team, user_id)
        event = replace(event, user=replace(event.user, roles=roles)) if roles else event
        return replace(event, locale=locale)

    async def _private_language(self, client: AsyncWebClient, user_id: str, place: Place) -> str:
        """What genbot speaks to ``user_id`` alone in ``place`` — their ``/settings language``,
        else their Slack's — for what the adapter says itself, before or without the core (a
        refused command, the Messages tab, the "Ask genbot" form)."""
        locale = await self._locale(client, place.workspace_id, user_id)
        router = self.router
        if isinstance(router, ChosenLanguages):
            return await router.private_language(User(user_id, ""), place, locale)
        return supported(locale) or DEFAULT_LANGUAGE

    async def _user(self, context: AsyncBoltContext, team_id: str, user_id: str) -> User:
        roles = await self._roles(context.client, team_id, user_id)
        name = await self._name(context.client, user_id, team_id)
        return user_for(user_id, name, self._admins, roles)

    async def _name(self, client: AsyncWebClient, user_id: str, team_id: str = "") -> str:
        """``user_id``'s display name (empty when Slack says nothing)."""
        return (await self._person(client, team_id, user_id))[1]

    async def _locale(self, client: AsyncWebClient, team_id: str, user_id: str) -> str | None:
        """The language of ``user_id``'s Slack (``de-DE``; None when Slack says nothing)."""
        return (await self._person(client, team_id, user_id))[2]

    async def _person(
        self, client: AsyncWebClient, team_id: str, user_id: str
    ) -> tuple[float, str, str | None]:
        """``user_id``'s display name and language: one ``users.info`` (with
        ``include_locale``) per user per :data:`PEOPLE_SECONDS` at most, failed or not."""
        key = (team_id, user_id)
        now = time.monotonic()
        known = self._people.get(key)
        if known is not None and now - known[0] < PEOPLE_SECONDS:
            return known
        person: dict[str, Any] = {}
        try:
            info = await client.users_info(user=user_id, include_locale=True)
            person = info.get("user") or {}
        except SlackApiError as error:
            log.info("users.info failed for %s: %s", user_id, error.response.get("error"))
        profile = person.get("profile") or {}
        name = profile.get("display_name") or person.get("real_name") or person.get("name")
        locale = person.get("locale")
        read = (now, str(name or ""), str(locale) if locale else None)
        self._people.pop(key, None)
        self._people[key] = read
        while len(self._people) > NAMES_MAX:
            self._people.popitem(last=False)
        return read


def _authorized_user(body: dict[str, Any]) -> str:
    """The user an event was delivered for, when the event itself does not name one."""
    for authorization in body.get("authorizations") or []:
        if not authorization.get("is_bot") and authorization.get("user_id"):
            return str(authorization["user_id"])
    return ""


def stream_origin(say_stream: AsyncSayStream | None) -> SlackOrigin:
    """Where bolt's ``say_stream`` would stream the answer to an event, kept for the core."""
    if say_stream is None:
        return SlackOrigin()
    return SlackOrigin(
        thread_ts=say_stream.thread_ts, recipient_team_id=say_stream.recipient_team_id
    )
