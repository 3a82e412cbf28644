"""What users do in the playground, turned into core events.

Every endpoint validates first and answers ``400 {"error": ...}`` with a specific message when
the input cannot be acted on (nothing reaches the core then); otherwise it shows the user's
message, hands the event to the core in the background and answers ``202 {"event_id": ...}``.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import re
from collections.abc import Iterable, Iterator
from dataclasses import replace
from typing import Any

from aiohttp import BodyPartReader, web

from adapters.listener import refused
from adapters.web.language import request_locale
from adapters.web.messages import StoredFile, WebMessage
from adapters.web.platform import PLATFORM, WebContext, can_see, is_dm_channel, web_place
from adapters.web.playground import FORM_CLOSED_TEXT, HISTORY_ERRORS, NotKept, Playground
from adapters.web.routes import ADAPTER, DEFAULT_CHANNELS, USER, Serving, json_error
from adapters.web.translate import BadInput, assign_attachments, parse_channel, parse_slash
from adapters.web.uploads import UploadCacheFull
from bot.kernel import (
    PDF_TYPE,
    Attachment,
    ButtonPress,
    Command,
    EventRouter,
    FormChecks,
    MediaError,
    ModalField,
    ModalSubmit,
    Place,
    User,
    UserMessage,
    _,
    decode_custom_id,
    format_bytes,
    format_number,
    inspect_image,
    is_document,
    is_image,
    is_pdf,
    named,
    ngettext,
)

log = logging.getLogger(__name__)

MAX_UPLOADS_PER_MESSAGE = 10
MAX_FILES_PER_REQUEST = 10
MAX_CHANNELS = 50
"""The most shared channels the playground keeps (made by posting in them; each keeps ``[web]
messages_per_channel`` messages). Users' DMs are not among them (each user has one, always open:
:data:`adapters.web.playground.DMS_IN_MEMORY` bounds what they hold in memory), nor are the
default channels, always open too; a channel none of whose messages is left (``/forget-me``, or
quiet for ``[web] channel_idle_days``) no longer counts.

A process checks the limits and counts a new channel in one step (:func:`_posting`), so posts
at the same moment never exceed them there. Processes sharing a database each check what they
know, and learn of the channels the others start by notice, within moments: channels started on
several processes within that moment can pass this (and :data:`MAX_CHANNELS_PER_USER`) by a few
(each process starts channels only while it knows of fewer: never more than this many of its
own). That bound is kept: a check in the database would serialize every first post of a channel
for a few channels more, and quiet channels go anyway (``[web] channel_idle_days``)."""
MAX_CHANNELS_PER_USER = 3
"""The most of those channels one user (not an admin) may have started: whoever wrote the
oldest message the playground keeps in one started it."""
_CHUNK = 64 * 1024


async def json_body(request: web.Request) -> dict[str, Any]:
    """The request's JSON object; :class:`BadInput` for anything else."""
    if request.content_type != "application/json":
        raise BadInput(_("Send a JSON body (Content-Type: application/json)."))
    raw = await request.read()
    try:
        body = json.loads(raw)
    except json.JSONDecodeError as exc:
        raise BadInput(
            _(
                "Malformed JSON: {problem} at character {position}.",
                problem=exc.msg,
                position=exc.pos,
            )
        ) from None
    except UnicodeDecodeError:
        raise BadInput(_("Malformed JSON: the body is not UTF-8.")) from None
    if not isinstance(body, dict):
        raise BadInput(_("The JSON body must be an object."))
    return body


def string_field(body: dict[str, Any], key: str) -> str:
    """``body[key]``, a string (empty when absent); :class:`BadInput` for anything else."""
    value = body.get(key, "")
    if not isinstance(value, str):
        raise BadInput(_("'{key}' must be a string.", key=key))
    return value


def _text(body: dict[str, Any], playground: Playground) -> str:
    """What the user typed, within the playground's message length."""
    text = string_field(body, "text")
    limit = playground.profile.max_text
    if len(text) > limit:
        raise BadInput(
            _(
                "Your message is {length} characters long; the playground takes at most "
                "{most}. Shorten it, or send it in parts.",
                length=format_number(len(text)),
                most=format_number(limit),
            )
        )
    return text.strip()


async def _place(playground: Playground, body: dict[str, Any], user: User) -> Place:
    channel = parse_channel(body.get("channel"), user.id)
    thread = body.get("thread")
    if thread is None or thread == "":
        return web_place(channel)
    parent = None
    if isinstance(thread, str):
        try:
            parent = await playground.message(thread, with_images=False)
        except HISTORY_ERRORS as error:
            raise NotKept(error) from error
    if parent is None or parent.channel != channel or parent.thread_info is None:
        raise BadInput(
            _("There is no thread {thread} in #{channel}.", thread=repr(thread), channel=channel)
        )
    return web_place(channel, parent.id)


@contextlib.contextmanager
def _posting(playground: Playground, channel: str, user: User) -> Iterator[None]:
    """While ``user`` posts in ``channel``: refused (:func:`_may_post_in`) or counted as one
    of the shared channels from the check on (:meth:`Playground.starting`), in one step, so
    that posts at the same moment cannot all take the last place."""
    _may_post_in(playground, channel, user)
    with playground.starting(channel, user.id):
        yield


def _may_post_in(playground: Playground, channel: str, user: User) -> None:
    """:class:`BadInput` when posting in ``channel`` would start a shared channel the playground
    has no room for (:data:`MAX_CHANNELS`), or one more than ``user`` may start
    (:data:`MAX_CHANNELS_PER_USER`). The user's own DM (``parse_channel`` refused anyone
    else's) and the default channels are always open."""
    if is_dm_channel(channel) or channel in DEFAULT_CHANNELS:
        return
    shared = playground.shared_channels()
    if channel in shared:
        return
    if len(shared) >= MAX_CHANNELS:
        raise BadInput(
            ngettext(
                "The playground keeps at most {n} channel; post in one of them.",
                "The playground keeps at most {n} channels; post in one of them.",
                MAX_CHANNELS,
            )
        )
    started = [
        known
        for known in shared
        if known not in DEFAULT_CHANNELS and playground.starter(known) == user.id
    ]
    if not user.is_admin and len(started) >= MAX_CHANNELS_PER_USER:
        raise BadInput(
            ngettext(
                "You have started {n} channel — the most one person may; post in it or in "
                "another channel that exists.",
                "You have started {n} channels — the most one person may; post in one of them "
                "or in another channel that exists.",
                len(started),
            )
        )


MENTION = re.compile(r"(?<![\w@])@genbot\b", re.IGNORECASE)


def without_mention(text: str) -> tuple[str, bool]:
    """``text`` without ``@genbot``, and whether it mentioned genbot."""
    stripped, count = MENTION.subn("", text)
    return (" ".join(stripped.split()) if count else text), bool(count)


def _uploads(
    playground: Playground, body: dict[str, Any], owner: str
) -> tuple[list[str], list[StoredFile]]:
    ids = body.get("attachments", [])
    if not isinstance(ids, list) or not all(isinstance(i, str) for i in ids):
        raise BadInput(_("'attachments' must be a list of upload ids."))
    ids = list(dict.fromkeys(ids))
    if len(ids) > MAX_UPLOADS_PER_MESSAGE:
        raise BadInput(
            ngettext(
                "At most {n} image per message.",
                "At most {n} images per message.",
                MAX_UPLOADS_PER_MESSAGE,
            )
        )
    files = []
    for upload_id in ids:
        stored = playground.uploads.get(upload_id, owner)
        if stored is None:
            raise BadInput(_("An attached image has expired or was already sent; attach it again."))
        files.append(stored)
    return ids, files


TAB_HEADER = "X-Genbot-Tab"
_TAB = re.compile(r"^[A-Za-z0-9_-]{1,64}$")


def _tab(request: web.Request) -> str | None:
    """The browser tab a request comes from (the page sends a random id per page load)."""
    tab = request.headers.get(TAB_HEADER, "")
    return tab if _TAB.match(tab) else None


def _accepted(event_id: str) -> web.Response:
    return web.json_response({"event_id": event_id}, status=202)


async def command(request: web.Request) -> web.Response:
    """``{"text": "/imagine a fox --ar 16:9", "channel": ..., "attachments": [upload ids]}``."""
    adapter, user = request.app[ADAPTER], request[USER]
    playground = adapter.playground
    body = await json_body(request)
    text = _text(body, playground)
    if not text or text == "/":
        raise BadInput(_("Empty command: type a command such as /imagine a fox, or /help."))
    spec, _rest = parse_slash(text)
    place = await _place(playground, body, user)
    with _posting(playground, place.channel_id, user):
        ids, files = _uploads(playground, body, user.id)
        assign_attachments(spec, files)
        playground.uploads.take(ids, user.id)
        shown = await playground.post_user_message(user, place, text, files, command=spec.name)
    origin = f"{request.scheme}://{request.host}"
    event = command_event(
        playground, user, shown, origin, tab=_tab(request), locale=request_locale(request)
    )
    adapter.dispatch(event, shown.id)
    return _accepted(shown.id)


def command_event(
    playground: Playground,
    user: User,
    shown: WebMessage,
    origin: str,
    *,
    tab: str | None = None,
    locale: str | None = None,
) -> Command:
    """The core's event for the command message ``shown`` (its images served from ``origin``;
    sent from the browser tab ``tab``, in language ``locale``)."""
    spec, rest = parse_slash(shown.text)
    return Command(
        user=user,
        place=web_place(shown.channel, shown.thread),
        locale=locale,
        context=WebContext(shown.id, tab),
        name=spec.name,
        text=rest,
        options={},
        attachments=assign_attachments(spec, playground.attachments_of(shown, origin)),
        key=f"{PLATFORM}:{shown.id}",
    )


async def resume_commands(adapter: Serving, claimed: Iterable[str]) -> None:
    """Handle the ``claimed`` commands (accepted, not handled, and now this process's: see
    :meth:`~adapters.web.ports.PlaygroundHistory.claim_pending_commands`) unless this process is
    handling them already; the ones genbot answered, and any that no longer read as a command,
    are only marked handled. A command that started a job carries its key, so handling it again
    finds that job instead of starting another."""
    playground = adapter.playground
    for message_id in claimed:
        shown = await playground.pending_command(message_id)
        if shown is None or adapter.handling(message_id):
            continue
        author = shown.author
        user = User(str(author["id"]), str(author.get("name", "")), shown.requester_is_admin)
        try:
            event = command_event(playground, user, shown, playground.url)
        except BadInput:
            event = None
        if event is None or playground.store.answered(shown.id):
            await playground.settle(shown)
            continue
        log.info("handling command %s, accepted but not handled by a process now gone", shown.id)
        adapter.dispatch(event, shown.id)


async def message(request: web.Request) -> web.Response:
    """``{"text": "hello", "channel": ..., "thread": ..., "attachments": [upload ids]}``."""
    adapter, user = request.app[ADAPTER], request[USER]
    playground = adapter.playground
    body = await json_body(request)
    text = _text(body, playground)
    place = await _place(playground, body, user)
    with _posting(playground, place.channel_id, user):
        ids, files = _uploads(playground, body, user.id)
        if not text and not files:
            raise BadInput(_("Empty message: type something or attach an image."))
        playground.uploads.take(ids, user.id)
        shown = await playground.post_user_message(user, place, text, files)
    origin = f"{request.scheme}://{request.host}"
    said, mentioned = without_mention(text)
    event = UserMessage(
        user=user,
        place=place,
        locale=request_locale(request),
        context=WebContext(shown.id, _tab(request)),
        message_id=shown.id,
        text=said,
        attachments=tuple(playground.attachments_of(shown, origin)),
        mentions_bot=mentioned,
    )
    adapter.dispatch(event, shown.id)
    return _accepted(shown.id)


async def edit(request: web.Request) -> web.Response:
    """``{"message_id": ..., "text": "..."}``: the user changes the text of their own message
    (not a command); everyone watching sees it edited, and the core hears the edit (a turn of
    a conversation is answered again, on a branch)."""
    adapter, user = request.app[ADAPTER], request[USER]
    playground = adapter.playground
    body = await json_body(request)
    shown = await pressed_message(playground, string_field(body, "message_id"))
    if shown is None or shown.kind != "user" or shown.author.get("id") != user.id:
        raise BadInput(_("Only your own messages can be edited."))
    if shown.command is not None:
        raise BadInput(_("A command cannot be edited; run it again instead."))
    text = _text(body, playground)
    if not text:
        raise BadInput(_("Empty message: type something."))
    edited = replace(shown, text=text, edited=playground.clock())
    await playground.keep("edit", edited)
    said, mentioned = without_mention(text)
    event = UserMessage(
        user=user,
        place=web_place(shown.channel, shown.thread),
        locale=request_locale(request),
        context=WebContext(shown.id, _tab(request)),
        message_id=shown.id,
        text=said,
        mentions_bot=mentioned,
        edited=True,
    )
    event_id = playground.store.new_id()
    adapter.dispatch(event, event_id)
    return _accepted(event_id)


async def button(request: web.Request) -> web.Response:
    """``{"message_id": ..., "custom_id": "gb:upscale1:<ref>"}``: a press of a button on a
    message the playground showed (kept in memory, or saved in its history by an earlier run
    or another process) and the presser can see; the core then decides whether the presser may
    use what the button names (:mod:`bot.refs`)."""
    adapter, user = request.app[ADAPTER], request[USER]
    body = await json_body(request)
    message_id = string_field(body, "message_id")
    custom_id = string_field(body, "custom_id")
    decoded = decode_custom_id(custom_id)
    if decoded is None:
        raise BadInput(_("That is not one of genbot's buttons."))
    shown = await pressed_message(adapter.playground, message_id)
    if shown is None:
        raise BadInput(_("That message is no longer in the playground."))
    if shown.visible_to not in (None, user.id) or not can_see(shown.channel, user.id):
        raise BadInput(_("That message is not yours to use."))
    pressed = shown.button(custom_id)
    if pressed is None:
        raise BadInput(_("That button is no longer on the message."))
    if pressed.disabled:
        raise BadInput(_("That button is turned off: it cannot be pressed."))
    action, ref = decoded
    event_id = adapter.playground.store.new_id()
    event = ButtonPress(
        user=user,
        place=web_place(shown.channel, shown.thread),
        locale=request_locale(request),
        context=WebContext(message_id, _tab(request)),
        message_id=message_id,
        action=action,
        ref=ref,
    )
    adapter.dispatch(event, event_id)
    return _accepted(event_id)


async def pressed_message(playground: Playground, message_id: str) -> WebMessage | None:
    """The message ``message_id`` as the playground shows it, else as its history saved it
    (posted by an earlier run, or scrolled out of memory); None when neither knows it."""
    shown = playground.store.get(message_id)
    if shown is not None or playground.journal is None or not message_id:
        return shown
    saved = await playground.journal.fetch(message_id, with_images=False)
    return saved[0] if saved is not None else None


async def modal(request: web.Request) -> web.Response:
    """``{"custom_id": ..., "values": {"field id": "text"}}`` for a form genbot opened."""
    adapter, user = request.app[ADAPTER], request[USER]
    body = await json_body(request)
    custom_id = string_field(body, "custom_id")
    values = body.get("values", {})
    if not isinstance(values, dict) or not all(isinstance(v, str) for v in values.values()):
        raise BadInput(_("'values' must map field ids to strings."))
    pending = adapter.playground.pending_modal(user.id, custom_id)
    if pending is None and adapter.playground.form_closed(user.id, custom_id):
        raise BadInput(_(FORM_CLOSED_TEXT, forget=named("forget-me")))
    if pending is None:
        raise BadInput(_("This form has expired or was already submitted; open it again."))
    fields = pending.modal.fields
    unknown = sorted(set(values) - {f.id for f in fields})
    if unknown:
        raise BadInput(
            ngettext(
                "Unknown form field: {fields}.",
                "Unknown form fields: {fields}.",
                len(unknown),
                fields=", ".join(unknown),
            )
        )
    event = ModalSubmit(
        user=user,
        place=pending.place,
        locale=request_locale(request),
        context=WebContext(pending.reply_to, _tab(request)),
        action=pending.modal.action,
        ref=pending.modal.ref,
        values={f.id: values.get(f.id, "") for f in fields},
    )
    errors = _form_errors(adapter.router, pending.modal.fields, event)
    if errors:
        first = next(iter(errors.values()))
        return web.json_response({"error": first, "errors": errors}, status=400)
    adapter.playground.close_modal(user.id, custom_id)
    event_id = adapter.playground.store.new_id()
    adapter.dispatch(event, event_id)
    return _accepted(event_id)


def _form_errors(
    router: EventRouter, fields: tuple[ModalField, ...], event: ModalSubmit
) -> dict[str, str]:
    """What is wrong with a submitted form's values, by field id: required fields left empty,
    values too long, and what the core finds in them (:class:`bot.kernel.events.FormChecks`). The
    form stays open with each sentence beside its field; nothing reaches the core."""
    errors: dict[str, str] = {}
    for field in fields:
        value = event.values.get(field.id, "")
        if field.required and not value.strip():
            errors[field.id] = _("'{field}' is required.", field=field.label)
        elif len(value) > field.max_length:
            errors[field.id] = ngettext(
                "'{field}' is longer than {n} character.",
                "'{field}' is longer than {n} characters.",
                field.max_length,
                field=field.label,
            )
    if not errors and isinstance(router, FormChecks):
        errors.update(router.form_errors(event))
    return errors


async def _read_part(part: BodyPartReader, limit: int, filename: str, document: bool) -> bytes:
    data = bytearray()
    while chunk := await part.read_chunk(_CHUNK):
        data.extend(chunk)
        if len(data) <= limit:
            continue
        if document:
            raise BadInput(
                _(
                    "{file} is too large: documents can be at most {size}.",
                    file=filename,
                    size=format_bytes(limit),
                )
            )
        raise BadInput(
            _(
                "{file} is too large: images can be at most {size}.",
                file=filename,
                size=format_bytes(limit),
            )
        )
    return bytes(data)


def largest_upload(playground: Playground) -> int:
    """The most bytes one uploaded file may have (an image or a document)."""
    return max(playground.max_upload_bytes, playground.max_document_bytes)


async def upload(request: web.Request) -> web.Response:
    """``multipart/form-data`` with one or more ``file`` fields (PNG, JPEG, GIF or WebP of at
    most ``[limits] max_upload_bytes``, or a document chat reads, a text file or PDF, of at most
    ``[chat] documents_max_mb``); 503
    while the playground holds as many pending uploads as ``[web] upload_cache_mb`` allows."""
    playground, user = request.app[ADAPTER].playground, request[USER]
    if not request.content_type.startswith("multipart/"):
        raise BadInput(_("Upload images as multipart/form-data in a field named 'file'."))
    arriving = request.content_length or MAX_FILES_PER_REQUEST * largest_upload(playground)
    try:
        with playground.uploads.reserve(arriving):
            received = await _receive_images(request, playground)
            kept = [playground.uploads.add(user.id, *image) for image in received]
    except UploadCacheFull as full:
        refused(request, "upload cache full")
        return json_error(503, str(full))
    uploads = [
        {
            "id": upload_id,
            "filename": stored.filename,
            "size": stored.size,
            "content_type": stored.content_type,
            "url": f"/uploads/{upload_id}/{stored.filename}",
        }
        for upload_id, stored in kept
    ]
    return web.json_response({"uploads": uploads}, status=201)


def document_type(filename: str, content_type: str | None) -> str | None:
    """The type the playground keeps and serves a document upload as (a PDF, else plain
    text: never a type a browser would run, such as HTML), or ``None`` when it is no
    document (then it must be an image)."""
    attachment = Attachment(filename, content_type=content_type)
    if is_image(attachment) or not is_document(attachment):
        return None
    return PDF_TYPE if is_pdf(attachment) else "text/plain"


async def _receive_images(
    request: web.Request, playground: Playground
) -> list[tuple[str, bytes, str]]:
    reader = await request.multipart()
    received: list[tuple[str, bytes, str]] = []
    while (part := await reader.next()) is not None:
        if not isinstance(part, BodyPartReader) or part.name != "file":
            raise BadInput(_("Unexpected form field: put each image in a field named 'file'."))
        if len(received) == MAX_FILES_PER_REQUEST:
            raise BadInput(
                ngettext(
                    "At most {n} image per upload.",
                    "At most {n} images per upload.",
                    MAX_FILES_PER_REQUEST,
                )
            )
        filename = part.filename or "image"
        document = document_type(filename, part.headers.get("Content-Type"))
        limit = playground.max_upload_bytes if document is None else playground.max_document_bytes
        data = await _read_part(part, limit, filename, document is not None)
        if not data:
            raise BadInput(_("{file} is empty.", file=filename))
        if document is not None:
            received.append((filename, data, document))
            continue
        try:
            image = await asyncio.to_thread(inspect_image, data)
        except MediaError as error:
            raise BadInput(_("{file}: {error}.", file=filename, error=error.told())) from None
        received.append((filename, data, image.content_type))
    if not received:
        raise BadInput(_("No image in the upload: send it in a form field named 'file'."))
    return received
