"""The playground's :class:`bot.kernel.surface.Surface`: how the core posts, edits and asks
there (the users and channels genbot's text names shown by name: ``@guest 3fa2``, ``#art``)."""

from __future__ import annotations

import logging
from collections.abc import Mapping
from dataclasses import replace

from adapters.web.access import display_name
from adapters.web.messages import BOT_AUTHOR, WebMessage
from adapters.web.platform import PLATFORM, PendingModal, WebContext, reply_target, web_place
from adapters.web.playground import Playground
from adapters.web.translate import modal_json
from adapters.web.uploads import UploadCacheFull
from bot.kernel import (
    Attachment,
    ButtonPress,
    Event,
    Mention,
    MessageGone,
    MessageRef,
    Modal,
    OutMessage,
    Place,
    SurfaceError,
    _,
    draw_mentions,
    named,
    ngettext,
)

log = logging.getLogger(__name__)

MAX_BUTTON_ROWS = 5
FILE_TYPES = {"zip": "application/zip", "jsonl": "application/x-ndjson"}
"""The types of the files genbot hands users (exports), by extension."""


def name_of(mention: Mention) -> str:
    """A user or a channel as the playground names it: ``@guest 3fa2``, ``#general``."""
    return f"@{display_name(mention.id)}" if mention.kind == "user" else f"#{mention.id}"


def drawn_text(message: OutMessage) -> str:
    """The text the playground shows for ``message``: its mentions drawn by name."""
    return draw_mentions(message.text, name_of)


class WebSurface:
    """Writes the core's messages into ``playground`` (and so to the browsers showing it)."""

    platform = PLATFORM

    def __init__(self, playground: Playground) -> None:
        self.playground = playground
        self.profile = playground.profile

    async def send(
        self, place: Place, message: OutMessage, *, origin: Event | None = None
    ) -> MessageRef:
        """Post ``message`` in ``place`` and stream it to the channel's browsers (the command
        it answers, private until then, is shown to everyone first); a keyed message the
        playground already shows (or, when it ``may_exist``, holds in its history) is
        returned as it is."""
        self._check(place, message)
        await self.playground.reveal(reply_target(origin))
        if message.key is not None and (
            earlier := await self._keyed(place, message.key, saved=message.may_exist)
        ):
            return earlier
        posted = WebMessage(
            id=self.playground.store.new_id(),
            channel=place.channel_id,
            thread=place.thread_id,
            kind="bot",
            author=BOT_AUTHOR,
            text=drawn_text(message),
            buttons=message.buttons,
            from_model=message.from_model,
            mention=message.mention_user_id,
            reply_to=reply_target(origin),
            key=message.key,
            created=self.playground.clock(),
        )
        self.playground.store.replace_images(posted, message.images)
        await self.playground.keep("post", posted, new=True)
        return MessageRef(place, posted.id)

    async def posted(self, place: Place, key: str) -> MessageRef | None:
        """The message the playground shows in ``place`` with ``key`` (or holds in its
        history: another process may have posted it), if any."""
        return await self._keyed(place, key, saved=True)

    async def _keyed(self, place: Place, key: str, *, saved: bool) -> MessageRef | None:
        shown = await self.playground.keyed(place.channel_id, place.thread_id, key, saved=saved)
        return MessageRef(place, shown.id) if shown is not None else None

    async def edit(self, ref: MessageRef, message: OutMessage) -> None:
        """Replace a genbot message's text and buttons (and its images, when some are given)."""
        self._check(ref.place, message)
        posted = await self._own(ref)
        edited = replace(
            posted,
            text=drawn_text(message),
            buttons=message.buttons,
            from_model=message.from_model,
            mention=message.mention_user_id,
            edited=self.playground.clock(),
        )
        if message.images:
            self.playground.store.replace_images(edited, message.images)
        await self.playground.keep("edit", edited, images_before=len(posted.images))

    async def edit_pressed(self, press: ButtonPress, message: OutMessage) -> None:
        """Replace the text and buttons of genbot's message ``press`` came from, one only the
        presser sees ("only you can see this") too."""
        self._check(press.place, message)
        shown = await self.playground.message(press.message_id)
        if (
            shown is None
            or shown.deleted
            or shown.kind not in ("bot", "ephemeral")
            or shown.visible_to not in (None, press.user.id)
        ):
            raise MessageGone(f"no genbot message {press.message_id!r} the presser sees")
        edited = replace(
            shown, text=drawn_text(message), buttons=message.buttons, edited=self.playground.clock()
        )
        await self.playground.keep("edit", edited, images_before=len(shown.images))

    async def delete(self, ref: MessageRef) -> None:
        """Remove a genbot message from the channel (and from the browsers showing it)."""
        posted = await self._own(ref)
        gone = replace(
            posted, deleted=True, text="", buttons=(), images=[], edited=self.playground.clock()
        )
        await self.playground.keep("delete", gone)

    async def link(self, ref: MessageRef) -> str | None:
        """An address of the playground that opens the channel at the message."""
        if not self.playground.url:
            return None
        return f"{self.playground.url}/#{ref.place.channel_id}/{ref.message_id}"

    async def kept_about(self, user_id: str) -> Mapping[str, int]:
        """What the playground keeps about ``user_id`` beyond genbot's records."""
        return await self.playground.kept_about(user_id)

    async def forget_user(self, user_id: str) -> Mapping[str, int]:
        """Delete the playground's messages and images about ``user_id`` (see
        :meth:`Playground.forget_user`)."""
        return await self.playground.forget_user(user_id)

    async def tell_forgotten(self, origin: Event, text: str) -> None:
        """Show ``text`` to ``origin``'s user only, without keeping it: gone on reload."""
        self.playground.show_unkept(self._private(origin, OutMessage(text=text)))

    async def send_file_privately(
        self, origin: Event, text: str, filename: str, data: bytes
    ) -> None:
        """A private message with a link to the file, for ``origin``'s user only, that expires
        (:attr:`Playground.downloads`). When the command that asked for it is gone (deleted
        meanwhile: by ``/forget-me``, or trimmed from a channel that took its
        ``messages_per_channel`` newer messages since), the file is refused: it is not held,
        and its user is told so privately without the playground keeping that (a kept answer
        to a forgotten user's command would name them again)."""
        command = reply_target(origin)
        if command is not None and await self._gone(command):
            log.info("export %s not handed over: its command %s is gone", filename, command)
            refused = _(
                "`{file}` is not handed over: the command that asked for it is gone (deleted"
                " meanwhile, as {forget} does). Ask again if you still want it.",
                file=filename,
                forget=named("forget-me"),
            )
            self.playground.show_unkept(self._private(origin, OutMessage(text=refused)))
            return
        downloads = self.playground.downloads
        try:
            with downloads.reserve(len(data)):
                kind = FILE_TYPES.get(filename.rsplit(".", 1)[-1], "application/octet-stream")
                file_id, stored = downloads.add(origin.user.id, filename, data, kind)
        except UploadCacheFull as full:
            raise SurfaceError(str(full)) from None
        link = f"{self.playground.url}/downloads/{file_id}/{stored.filename}"
        minutes = round(downloads.ttl / 60)
        await self.send_private(
            origin,
            OutMessage(
                text=ngettext(
                    "{text}\nDownload: {link} (only you can open it; it expires in {n} minute)",
                    "{text}\nDownload: {link} (only you can open it; it expires in {n} minutes)",
                    minutes,
                    text=text,
                    link=link,
                )
            ),
        )

    async def send_ephemeral(self, origin: Event, text: str) -> None:
        """Show ``text`` to ``origin``'s user only, marked "only you can see this"."""
        await self.send_private(origin, OutMessage(text=text))

    async def send_private(self, origin: Event, message: OutMessage) -> None:
        """``message`` (images and buttons too) to ``origin``'s user only, marked "only you
        can see this"."""
        private = self._private(origin, message)
        await self.playground.keep("ephemeral", private, new=True)

    def _private(self, origin: Event, message: OutMessage) -> WebMessage:
        self._check(origin.place, message)
        private = WebMessage(
            id=self.playground.store.new_id(),
            channel=origin.place.channel_id,
            thread=origin.place.thread_id,
            kind="ephemeral",
            author=BOT_AUTHOR,
            text=drawn_text(message),
            buttons=message.buttons,
            reply_to=reply_target(origin),
            visible_to=origin.user.id,
            created=self.playground.clock(),
        )
        self.playground.store.replace_images(private, message.images)
        return private

    async def open_modal(self, origin: Event, modal: Modal) -> None:
        """Open ``modal`` as a dialog in the browser tab ``origin`` came from (in every tab of
        its user when that is unknown); a region field draws on the image of the message the
        form was opened from."""
        modal = await self._with_image(modal, reply_target(origin))
        pending = PendingModal(modal, origin.place, reply_target(origin))
        self.playground.remember_modal(origin.user.id, pending)
        tab = origin.context.tab if isinstance(origin.context, WebContext) else None
        payload = {
            "type": "modal",
            "thread": origin.place.thread_id,
            "tab": tab,
            "modal": modal_json(modal),
        }
        self.playground.hub.publish(origin.place.channel_id, payload, visible_to=origin.user.id)

    async def typing(self, place: Place) -> None:
        """Show "genbot is typing…" in ``place`` for a few seconds."""
        self.playground.hub.publish(
            place.channel_id, {"type": "typing", "thread": place.thread_id, "seconds": 8}
        )

    async def start_thread(self, ref: MessageRef, name: str) -> Place:
        """Open a thread on a message; its messages show in the page's thread panel."""
        message = await self.playground.message(ref.message_id)
        if message is None or message.kind == "ephemeral":
            raise SurfaceError(f"no message {ref.message_id!r} to start a thread on")
        if message.thread is not None:
            raise SurfaceError("a thread cannot be started inside a thread")
        await self.playground.reveal(message.id)
        thread = {"id": message.id, "name": name.strip()[:100] or "thread"}
        await self.playground.keep("edit", replace(message, thread_info=thread))
        return web_place(message.channel, message.id)

    async def download(self, attachment: Attachment) -> bytes:
        """The bytes of an image the playground holds."""
        if attachment.data is not None:
            return attachment.data
        marker = "/images/"
        if marker in attachment.url:
            key = attachment.url.split(marker, 1)[1].split("/", 1)[0]
            stored = await self.playground.image_file(key)
            if stored is not None:
                return stored.data
        raise SurfaceError(f"the playground does not hold {attachment.filename!r}")

    async def _gone(self, message_id: str) -> bool:
        """Whether the playground no longer has message ``message_id`` (another process's too:
        read from the history when it is not held here)."""
        shown = await self.playground.message(message_id, with_images=False)
        return shown is None or shown.deleted

    async def _own(self, ref: MessageRef) -> WebMessage:
        """genbot's message ``ref`` (another process's too: a job taken over is delivered
        here); :class:`MessageGone` when there is none."""
        posted = await self.playground.message(ref.message_id)
        if posted is None or posted.kind != "bot" or posted.deleted:
            raise MessageGone(f"no genbot message {ref.message_id!r} in the playground")
        return posted

    async def _with_image(self, modal: Modal, message_id: str | None) -> Modal:
        shown = await self.playground.message(message_id) if message_id else None
        if shown is None or not shown.images:
            return modal
        url = str(shown.images[0]["url"])
        fields = tuple(
            replace(field, image_url=url) if field.kind == "region" else field
            for field in modal.fields
        )
        return replace(modal, fields=fields)

    def _check(self, place: Place, message: OutMessage) -> None:
        if place.platform != PLATFORM:
            raise SurfaceError(f"the web playground cannot post to platform {place.platform!r}")
        self._check_text(message.text)
        if len(message.buttons) > MAX_BUTTON_ROWS:
            raise SurfaceError(f"at most {MAX_BUTTON_ROWS} rows of buttons")
        if any(len(row) > self.profile.max_buttons_per_row for row in message.buttons):
            raise SurfaceError(f"at most {self.profile.max_buttons_per_row} buttons a row")

    def _check_text(self, text: str) -> None:
        if len(text) > self.profile.max_text:
            raise SurfaceError(
                f"message of {len(text)} characters; the playground takes {self.profile.max_text}"
            )
