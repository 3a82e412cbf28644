"""The playground as a chat platform: its channels' messages, the images and uploads they show,
the forms open in browsers, and the streams that show every change to the browsers.

Messages live in memory (:mod:`adapters.web.messages`) and, given a ``history``, in genbot's
storage (:mod:`adapters.web.journal`: written before browsers see a change, so a restart loses
nothing). Browsers follow a channel through :mod:`adapters.web.hub`. What other processes save
is read as far as this process shows it, channel by channel: a message they save in a channel a
browser here watches (:meth:`Playground.watch`), or one this process holds, is read and shown
here too; of any other, only its notice is read (:class:`adapters.web.notice.Notice`: its
channel is listed, and marked unread when it is news). A message not held is read when it is
asked for, and the first browser to watch a channel catches up on what it skipped there. A user
another process forgets (``/forget-me``: :class:`adapters.web.forgotten.Forgotten`) is dropped
from what this one holds too, with their open forms; when that notice was lost with the feed,
the catch-up once following resumes drops it instead (:meth:`Playground._catch_up`). The core
writes here through :class:`adapters.web.surface.WebSurface`; users through the routes
(:mod:`adapters.web.handlers`).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import sqlite3
import time
from collections import OrderedDict
from collections.abc import Callable, Collection, Iterator
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from adapters.web.arrivals import together
from adapters.web.forgotten import Forgotten
from adapters.web.hub import EventHub
from adapters.web.journal import PlaygroundJournal
from adapters.web.messages import MessageStore, StoredFile, WebMessage
from adapters.web.notice import Notice
from adapters.web.platform import WEB_PROFILE, PendingModal, dm_channel, is_dm_channel
from adapters.web.ports import PlaygroundHistory
from adapters.web.uploads import UploadCache
from bot.kernel import (
    DATABASE_UNREACHABLE_TEXT,
    N_,
    OUTAGE,
    Attachment,
    ImageFile,
    Place,
    PlatformProfile,
    StorageError,
    SurfaceError,
    User,
    _,
    backoff,
    storage_failure_text,
)

KEPT_MESSAGES = "playground_messages"
KEPT_IMAGES = "playground_images"
KEPT_FILES = "playground_files"
"""The kinds of what the playground keeps about a user (``/forget-me``)."""
log = logging.getLogger(__name__)

DOWNLOADS_BYTES = 128 * 1024 * 1024
"""The most bytes of files handed to users (exports) the playground keeps at once."""
DOWNLOADS_PER_USER = 3

MAX_PENDING_MODALS = 20
MAX_CLOSED_FORMS = 1000
"""How many forms closed by a deletion (:meth:`Playground.form_closed`) are remembered, for
their submissions to be told why (the oldest are then told the form expired)."""
FORM_CLOSED_TEXT = N_(
    "This form was closed because what it was about was deleted ({forget}); nothing was sent."
    " Open it again if you still need it."
)
HISTORY_ERRORS = (StorageError, sqlite3.Error, OSError)
"""What reading or writing the history raises when the database fails (or was closed); anything
else, a RuntimeError too, is a bug, not an outage."""
FOLLOW_RETRY_SECONDS = 30.0
"""The longest pause before following again after the history's feed was lost (doubling from
one second)."""
WATCH_GRACE_SECONDS = 30.0
"""How long a channel a page read the history of stays watched without an event stream on it
(a page opens its stream right after; a client that never does stops being followed)."""
CATCH_UP_RETRY_SECONDS = 30.0
"""The longest pause before a failed catch-up of a channel a browser still watches is tried
again (doubling from one second)."""
DMS_IN_MEMORY = 100
"""The most users' DMs the playground holds in memory (each up to ``[web]
messages_per_channel`` messages) besides those browsers watch: the quietest others go (see
:meth:`Playground._hold_fewer_dms`). DMs are not among the shared channels a user may start
(:data:`adapters.web.handlers.MAX_CHANNELS`): there is one per user, and users are not counted."""
FOLLOW_START_SECONDS = 10.0
"""How long opening waits for following to start before reading the history anyway (what is
saved in between is then read again once following starts)."""


class NotKept(SurfaceError):
    """The playground's history could not save a message (nothing was shown);
    :attr:`user_text` says so to the user."""

    def __init__(self, error: BaseException) -> None:
        super().__init__(f"the playground could not keep the message: {error}")
        self.user_text = (
            storage_failure_text(error)
            if isinstance(error, StorageError)
            else _(DATABASE_UNREACHABLE_TEXT)
        )


@dataclass
class _Following:
    """Where following the history stands, for one :meth:`Playground.open`."""

    subscribed: asyncio.Event = field(default_factory=asyncio.Event)
    loading: bool = False
    """The history has been (or is being) read: a later start of following may have missed
    saves, so it reads the history again."""
    restored: asyncio.Event = field(default_factory=asyncio.Event)


class Playground:
    """One playground's channels. ``url`` is where it is served (empty while it is not)."""

    def __init__(
        self,
        *,
        upload_cache_bytes: int,
        max_upload_bytes: int,
        max_document_bytes: int | None = None,
        history: PlaygroundHistory | None = None,
        legacy_file: Path | None = None,
        profile: PlatformProfile = WEB_PROFILE,
        max_image_memory: int = 256 * 1024 * 1024,
        messages_per_channel: int = 500,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self.profile = profile
        self.clock = clock
        """The wall clock messages are stamped with (created, edited) and a pending command's
        acceptance is judged by: the history's, which every process sharing it reads (see
        :class:`adapters.web.adapter.WebAdapter`)."""
        self.max_upload_bytes = max_upload_bytes
        """The most bytes of an uploaded image (``[limits] max_upload_bytes``)."""
        self.max_document_bytes = max_document_bytes or max_upload_bytes
        """The most bytes of an uploaded document: what chat reads (``[chat]
        documents_max_mb``)."""
        self.max_image_memory = max_image_memory
        self.messages_per_channel = messages_per_channel
        self.store = MessageStore(messages_per_channel, max_image_memory)
        self.uploads = UploadCache(upload_cache_bytes, clock=clock)
        self.downloads = UploadCache(DOWNLOADS_BYTES, max_per_user=DOWNLOADS_PER_USER, clock=clock)
        """Files genbot hands a user (an export), each at a link for them only, for an hour."""
        self.hub = EventHub()
        self.history = history
        self.legacy_file = legacy_file
        self.journal: PlaygroundJournal | None = None
        self._following: asyncio.Task[None] | None = None
        self._watched: dict[str, asyncio.Future[None]] = {}
        """The channels browsers watch, each with the catch-up done when the first came."""
        self._watched_at: dict[str, float] = {}
        """When :meth:`watch` was last called for each channel in :attr:`_watched`."""
        self._retrying: dict[str, asyncio.Task[None]] = {}
        """The channels whose catch-up failed while a browser watches them, each with the task
        trying it again (:meth:`_catch_up_again`)."""
        self._skipped: dict[str, dict[str, int]] = {}
        """The channels a notice was skipped in since their last catch-up (one is owed), each
        with the messages whose notices were skipped (the last ``messages_per_channel``: no
        catch-up reads more of a channel), numbered in the order they came (:meth:`_skip`)."""
        self._skips = 0
        """How many notices were skipped so far (the number of the last one)."""
        self._caught_up = False
        """Following is up and every save before it started was read: of a channel not in
        :attr:`_skipped` (and, a DM, in :attr:`_whole`), this process holds all that the
        history does."""
        self._whole: set[str] = set()
        """The DMs held as the history has them (read since they were last let go, see
        :meth:`_hold_fewer_dms`): a DM not among them is read when a browser comes to watch it,
        and none of them is :attr:`_skipped` unless it is held."""
        self._starting: dict[str, tuple[str, int]] = {}
        """The shared channels not known yet that a first message is being posted in (its
        save awaited), each with who posted first there and how many such posts are under
        way: they count toward the channel limits (:meth:`shared_channels`) from the check
        on, so two posts at the same moment cannot both take the last place."""
        self._active_at: dict[str, float] = {}
        """When a notice of a channel (in :attr:`_skipped`) was last skipped: that channel is
        not quiet (:meth:`expire_quiet`) before its time."""
        self.url = ""
        self._modals: dict[str, OrderedDict[str, tuple[PendingModal, float]]] = {}
        """The forms shown to each user, by custom id, each with when (by :attr:`clock`)."""
        self._closed_forms: OrderedDict[tuple[str, str], None] = OrderedDict()
        """The forms dropped with what they were about (user and custom id): see
        :meth:`form_closed`."""
        self.unkept_replies: set[str] = set()
        """Messages an answer to which could not be kept (the database failed)."""

    async def open(self) -> bytes | None:
        """Load the history, when there is one (once), and follow what other processes save;
        the session key it keeps. Following starts before the history is read, so a message
        another process saves meanwhile is not missed."""
        if self.history is None or self.journal is not None:
            return None
        journal = PlaygroundJournal(self.history, self.messages_per_channel)
        if self.legacy_file is not None:
            imported = await journal.import_file(self.legacy_file)
            if imported:
                log.info("imported %d playground messages from %s", imported, self.legacy_file)
        self.journal = journal
        state = _Following()
        self._following = asyncio.create_task(
            self._follow(journal, state), name="genbot-playground"
        )
        try:
            with contextlib.suppress(TimeoutError):
                async with asyncio.timeout(FOLLOW_START_SECONDS):
                    await state.subscribed.wait()
            state.loading = True
            saved = await journal.load(self.max_image_memory, most_dms=DMS_IN_MEMORY)
            self.store.restore(saved.messages, saved.images)
            self._whole.update(self.store.dms())
            self._hold_fewer_dms()
            self._caught_up = state.subscribed.is_set()
            state.restored.set()
            return await journal.session_key()
        except BaseException:
            await self.close()
            raise

    async def close(self) -> None:
        """Stop following the history (reopened by :meth:`open`, whose load reads what it
        skipped)."""
        self.journal = None
        self._caught_up = False
        watched, self._watched = self._watched, {}
        self._watched_at.clear()
        self._whole.clear()
        retrying, self._retrying = self._retrying, {}
        for catching_up in [*watched.values(), *retrying.values()]:
            catching_up.cancel()
        following, self._following = self._following, None
        if following is not None:
            following.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await following
        self._skipped.clear()

    async def _follow(self, journal: PlaygroundJournal, state: _Following) -> None:
        """Show the messages other processes save (until :meth:`close`): those in the channels
        browsers here watch (:meth:`watch`) and those this process holds (of any other, only
        the notice is read: :meth:`_show_saved_elsewhere`); drop what this process holds of
        the users they forget (:meth:`_forgotten_elsewhere`). After following (re)starts once
        the history was read, read it again for what was saved meanwhile. The notices that
        came while the previous ones were being shown are read together. Whatever fails
        (the feed, a read, a bug) stops following only until it starts again, after a pause
        doubling up to :data:`FOLLOW_RETRY_SECONDS` while it keeps failing."""
        failures = 0
        while True:
            try:
                async with contextlib.aclosing(together(journal.updates())) as updates:
                    async for arrived in updates:
                        if arrived[0] is None:
                            missed_some = state.loading
                            state.subscribed.set()
                            if missed_some:
                                await state.restored.wait()
                                await self._catch_up(journal)
                                self._caught_up = True
                        told = [update for update in arrived if update is not None]
                        if told:
                            await state.restored.wait()
                            await self._follow_told(journal, told)
                        failures = 0
                return
            except Exception as error:
                self._caught_up = False
                failures += 1
                if isinstance(error, HISTORY_ERRORS):
                    OUTAGE.failed("playground feed", error)
                else:
                    log.exception("following the playground's history failed; following again")
            await asyncio.sleep(backoff(failures, most=FOLLOW_RETRY_SECONDS))

    async def _follow_told(
        self, journal: PlaygroundJournal, told: list[Notice | Forgotten]
    ) -> None:
        """Act on what other processes told, in its order: the saves between two forgets
        together (:meth:`_show_saved_elsewhere`), each forget as it comes
        (:meth:`_forgotten_elsewhere`: a save told before it is read after it, so it is not
        shown when the forget deleted it; one told after it is shown)."""
        saves: list[Notice] = []
        for update in told:
            if isinstance(update, Notice):
                saves.append(update)
                continue
            if saves:
                await self._show_saved_elsewhere(journal, saves)
                saves = []
            self._forgotten_elsewhere(update.user_id)
        if saves:
            await self._show_saved_elsewhere(journal, saves)

    def _forgotten_elsewhere(self, user_id: str) -> None:
        """Another process forgot ``user_id`` (``/forget-me``): the history no longer holds the
        messages about them, so this process drops those it holds (from the browsers showing
        them too) with the images only they showed, and the files it holds for them (uploads
        not sent yet, exports to download), as the forgetting process did."""
        gone = {message.id for message in self.store.about(user_id, dm_channel(user_id))}
        self.uploads.forget(user_id)
        self.downloads.forget(user_id)
        self._close_forms_of(user_id)
        self._drop(gone)

    async def _show_saved_elsewhere(
        self, journal: PlaygroundJournal, notices: list[Notice]
    ) -> None:
        """Show messages other processes saved, in the order their notices came (each once,
        as it is now); their images are read when a browser asks. Only a message this process
        holds, or one in a channel a browser here watches, is read: of any other, the channel
        is remembered (listed, and caught up when a browser comes to watch it) and marked
        unread from the notice alone when it is news, as :meth:`_show` would."""
        wanted = []
        for notice in notices:
            channel = notice.channel
            if (
                channel is None
                or self._watches(channel)
                or self.store.get(notice.message_id) is not None
            ):
                wanted.append(notice.message_id)
                continue
            if not is_dm_channel(channel) or self.store.holds(channel):
                self._skip(channel, notice.message_id)
            if notice.news:
                self._mark_unread(channel, notice.visible_to, notice.mention)
        if not wanted:
            return
        for message in await journal.fetch_saved(wanted):
            self._show_saved(message, {})

    def _skip(self, channel: str, message_id: str) -> None:
        """Remember that the notice of ``message_id`` in ``channel`` was skipped (it marked the
        channel unread, when it was news). Past ``messages_per_channel`` in a channel, the
        message skipped longest ago is forgotten: should :meth:`_catch_up` read it, it marks
        it unread again (a mark twice rather than one lost)."""
        self._skips += 1
        self._active_at[channel] = self.clock()
        skipped = self._skipped.setdefault(channel, {})
        skipped.pop(message_id, None)
        skipped[message_id] = self._skips
        if len(skipped) > self.messages_per_channel:
            del skipped[next(iter(skipped))]

    def _read_up_to(self, skips: int, channels: list[str]) -> None:
        """A catch-up that started when ``skips`` notices had been skipped read ``channels``:
        forget their notices skipped up to then (those skipped while it read stay; a channel
        with none left owes no catch-up)."""
        for channel in channels:
            skipped = self._skipped.get(channel)
            if skipped is None:
                continue
            for message_id in [m for m, number in skipped.items() if number <= skips]:
                del skipped[message_id]
            if not skipped:
                del self._skipped[channel]

    def _watches(self, channel: str) -> bool:
        """A browser here watches ``channel`` (or is about to: :meth:`watch`, for
        :data:`WATCH_GRACE_SECONDS` without a stream): every message other processes save
        there is shown here."""
        if self.hub.subscriber_count(channel) > 0:
            return True
        if channel not in self._watched:
            return False
        if time.monotonic() - self._watched_at[channel] < WATCH_GRACE_SECONDS:
            return True
        self.unwatch(channel)
        return False

    def channels(self) -> list[str]:
        """The channels this process knows of: those of the messages it holds, and those
        other processes saved a message in that it did not read."""
        held = self.store.channels()
        return held + sorted(self._skipped.keys() - held)

    def shared_channels(self) -> list[str]:
        """The shared channels (not DMs) this process knows of (:meth:`channels`), and those a
        first message is being posted in (:meth:`starting`)."""
        known = [channel for channel in self.channels() if not is_dm_channel(channel)]
        return known + sorted(self._starting.keys() - set(known))

    def starter(self, channel: str) -> str | None:
        """Who started ``channel`` (:meth:`MessageStore.starter`), or who posts its first
        message now (:meth:`starting`)."""
        if self.store.holds(channel):
            return self.store.starter(channel)
        starting = self._starting.get(channel)
        return starting[0] if starting is not None else None

    @contextlib.contextmanager
    def starting(self, channel: str, user_id: str) -> Iterator[None]:
        """While ``user_id`` posts in ``channel``: a shared channel not known yet counts among
        :meth:`shared_channels`, started by them (or by whoever came first), until the post
        ends (kept: the channel is held; refused or failed: it is not). Enter it in the same
        step as the limits' check, with no ``await`` between. Across processes, see
        :data:`adapters.web.handlers.MAX_CHANNELS`."""
        if is_dm_channel(channel) or channel in self.channels():
            yield
            return
        starter, posts = self._starting.get(channel, (user_id, 0))
        self._starting[channel] = (starter, posts + 1)
        try:
            yield
        finally:
            starter, posts = self._starting[channel]
            if posts > 1:
                self._starting[channel] = (starter, posts - 1)
            else:
                del self._starting[channel]

    async def _catch_up(self, journal: PlaygroundJournal) -> None:
        """Show what was saved while following was down or notices were skipped: each message
        newer (by version) than the copy shown, never an older snapshot over a newer save.
        A message whose notice was skipped is not marked unread (that notice marked it
        already); one saved while following was down is. It reads every channel, so none owes
        a catch-up after it (no notice is skipped while it reads: :meth:`_follow` waits). Of the
        DMs it reads only the :data:`DMS_IN_MEMORY` a message was last saved in: a DM held and
        not among them is no longer held whole (it is read again when a browser watches it).
        What the history lost meanwhile is dropped too (:meth:`_drop_lost`), and what this
        process holds of the users forgotten meanwhile (:meth:`_forget_missed`)."""
        skips = self._skips
        versions = self.store.saved_versions()
        saved = await journal.load(self.max_image_memory, most_dms=DMS_IN_MEMORY)
        for message in saved.messages:
            keys = message.image_keys()
            self._show_read(message, {k: f for k, f in saved.images.items() if k in keys})
        read_ids = {message.id for message in saved.messages}
        await self._drop_lost(journal, {m: v for m, v in versions.items() if m not in read_ids})
        await self._forget_missed(journal)
        self._read_up_to(skips, list(self._skipped))
        read = {message.channel for message in saved.messages}
        held = set(self.store.dms())
        self._whole.difference_update(held - read)
        self._whole.update(held & read)

    async def _drop_lost(self, journal: PlaygroundJournal, unread: dict[str, int]) -> None:
        """Of the messages held before a catch-up that it did not read (``unread``: each with
        the version held then), drop those the history no longer has, from the browsers
        showing them too, with the images only they showed: deleted while following was down
        (a ``/forget-me`` whose notice was lost with the feed, a channel that expired, a
        trim). One changed here since (saved again) stays."""
        if not unread:
            return
        kept = {message.id for message in await journal.fetch_saved(list(unread))}
        lost = [
            message_id
            for message_id, version in unread.items()
            if message_id not in kept and self._held_version(message_id) == version
        ]
        if lost:
            log.info("dropping %d playground messages the history lost meanwhile", len(lost))
        self._drop(lost)

    async def _forget_missed(self, journal: PlaygroundJournal) -> None:
        """Of the users this process holds files or forms for, drop what it held of those
        another process forgot while following was down (their notice lost with the feed; the
        history marks each forget for as long as a file is held): the uploads, exports and
        forms it held before that forget, and what it shows them without having saved it.
        What they made since stays."""
        users = self.uploads.owners() | self.downloads.owners() | self._modals.keys()
        if not users:
            return
        for user_id, at in (await journal.forgotten_among(sorted(users))).items():
            self.uploads.forget(user_id, kept_before=at)
            self.downloads.forget(user_id, kept_before=at)
            self._close_forms_of(user_id, opened_before=at)
            unsaved = self.store.about(user_id, dm_channel(user_id))
            self._drop([m.id for m in unsaved if m.version == 0 and m.created < at])

    def _held_version(self, message_id: str) -> int | None:
        held = self.store.get(message_id)
        return None if held is None else held.version

    async def watch(self, channel: str) -> None:
        """A browser is about to show ``channel`` (a page reads its history, an event stream
        on it opens): when none watched it and a notice there was skipped meanwhile, first
        read what other processes saved there (its latest messages, without images:
        :meth:`image_file` reads one when a browser asks; marked unread as :meth:`_show_read`
        says; a save announced during it is shown too, and never an older copy over a newer
        one). From then on every message they save there is shown here, until
        its last stream ends (:meth:`unwatch`; without one, :data:`WATCH_GRACE_SECONDS` after
        the last call). When the history cannot be read, the browser is shown what this
        process holds; the catch-up is tried again (with backoff, as long as a browser watches
        the channel, and by the next one to come) and shows what it finds then."""
        journal = self.journal
        if journal is None:
            return
        watched = self._watched.get(channel)
        if watched is None or _failed(watched):
            watched = self._start_catch_up(journal, channel)
        self._watched_at[channel] = time.monotonic()
        try:
            await asyncio.shield(watched)
        except HISTORY_ERRORS as error:
            OUTAGE.failed("playground catch-up", error)
            retrying = self._retrying.get(channel)
            if retrying is None or retrying.done():
                self._retrying[channel] = asyncio.create_task(
                    self._catch_up_again(journal, channel), name="genbot-playground-catch-up"
                )

    def _start_catch_up(self, journal: PlaygroundJournal, channel: str) -> asyncio.Future[None]:
        catching_up = asyncio.ensure_future(self._catch_up_skipped(journal, channel))
        self._watched[channel] = catching_up
        return catching_up

    async def _catch_up_again(self, journal: PlaygroundJournal, channel: str) -> None:
        """Try a failed catch-up of ``channel`` again, after a pause doubling up to
        :data:`CATCH_UP_RETRY_SECONDS`, until it succeeds or no browser watches the channel
        any more (or following stops: :meth:`close`)."""
        failures = 1
        try:
            while True:
                await asyncio.sleep(backoff(failures, most=CATCH_UP_RETRY_SECONDS))
                if self.journal is not journal or not self._watches(channel):
                    return
                watched = self._watched.get(channel)
                if watched is None:
                    return
                if _failed(watched):
                    watched = self._start_catch_up(journal, channel)
                try:
                    await asyncio.shield(watched)
                    return
                except HISTORY_ERRORS as error:
                    OUTAGE.failed("playground catch-up", error)
                    failures += 1
        finally:
            if self._retrying.get(channel) is asyncio.current_task():
                del self._retrying[channel]

    async def _catch_up_skipped(self, journal: PlaygroundJournal, channel: str) -> None:
        """Read ``channel``, where notices were skipped. A message whose notice was skipped
        when the read began is not marked unread again, even when a full catch-up
        (:meth:`_catch_up`) has forgotten that notice meanwhile: the message had left the
        history by then (so that catch-up did not show it), but this read, begun earlier, may
        hold it. A DM this process does not hold whole (:attr:`_whole`) is read too, none of
        it marked unread (what was shown or marked before it was let go)."""
        skipped = self._skipped.get(channel)
        partial = is_dm_channel(channel) and channel not in self._whole
        if skipped is None and not partial:
            return
        skips, marked = self._skips, set(skipped or ())
        for message in await journal.channel(channel):
            if partial:
                self._show_saved(message, {}, news=False)
            else:
                self._show_read(message, {}, marked=marked)
        self._read_up_to(skips, [channel])
        if partial and self.store.holds(channel):
            self._whole.add(channel)

    def unwatch(self, channel: str) -> None:
        """A browser's event stream on ``channel`` ended (or was refused, or a page's watch
        lapsed): when no stream on it is left, only the messages this process holds there are
        read again (what it holds stays)."""
        if self.hub.subscriber_count(channel) == 0:
            self._watched.pop(channel, None)
            self._watched_at.pop(channel, None)
            if not self.store.holds(channel):
                self.hub.forget(channel)

    def _show_saved(
        self, message: WebMessage, images: dict[str, StoredFile], *, news: bool = True
    ) -> None:
        """Show a message another process saved (``news``: marked unread when it is news; not
        when it was already, from its notice)."""
        known = self.store.get(message.id)
        images_before = len(known.images) if known is not None else 0
        kept = self.store.merge(message, images)
        if kept is None:
            return
        kind = "post" if known is None else ("delete" if message.deleted else "edit")
        self._show(kind, kept, images_before=images_before, news=news)

    def _show_read(
        self,
        message: WebMessage,
        images: dict[str, StoredFile],
        *,
        marked: Collection[str] = (),
    ) -> None:
        """Show a message read from the history, not by its notice (a catch-up, or it was asked
        for): marked unread when it is news, unless its notice was skipped (that notice marked
        it; ``marked``: the messages whose notices were skipped when the read began, which a
        catch-up of every channel may have forgotten while it was under way). Else this
        process had no notice of it: it was saved while following was down, or its notice is
        still on its way (and then finds it shown)."""
        skipped = self._skipped.get(message.channel, ())
        news = message.id not in skipped and message.id not in marked
        self._show_saved(message, images, news=news)

    async def post_user_message(
        self,
        user: User,
        place: Place,
        text: str,
        files: list[StoredFile],
        command: str | None = None,
    ) -> WebMessage:
        """Show what a user sent (text, command and images) in the channel; a command stays
        pending (handled again after a restart) until its handler has run, and private (only
        its user sees it, with the answers only they see) until genbot answers it in public
        (:meth:`reveal`)."""
        message = WebMessage(
            id=self.store.new_id(),
            channel=place.channel_id,
            thread=place.thread_id,
            kind="user",
            author={"id": user.id, "name": user.name, "bot": False},
            text=text,
            command=command,
            pending=command is not None,
            requester_is_admin=user.is_admin,
            visible_to=user.id if command is not None and not place.is_dm else None,
            created=self.clock(),
        )
        images = tuple(ImageFile(f.filename, f.data, f.content_type) for f in files)
        self.store.replace_images(message, images)
        await self.keep("post", message, new=True)
        return message

    async def message(self, message_id: str, *, with_images: bool = True) -> WebMessage | None:
        """The message ``message_id``: as this process shows it, else read from the history
        (another process saved it while this one did not read it: no browser here watched its
        channel, or following was down; it is shown from now on, with its images unless
        ``with_images`` is False, and marked unread as :meth:`_show_read` says), else None."""
        shown = self.store.get(message_id)
        if shown is None and self.journal is not None:
            skipped = any(message_id in ids for ids in self._skipped.values())
            found = await self.journal.fetch(message_id, with_images=with_images)
            if found is not None:
                self._show_read(*found, marked=[message_id] if skipped else [])
                shown = self.store.get(message_id)
        return shown

    async def keyed(
        self, channel: str, thread: str | None, key: str, *, saved: bool
    ) -> WebMessage | None:
        """The message shown in the channel (or thread) with ``key``, else (with ``saved``,
        when a notice there was skipped or following was down: else this process holds all
        the history does there) the one the history holds there with it: another process
        posted it and this one did not read it (it is shown from now on, and marked unread as
        :meth:`_show_read` says). None when there is none; :class:`SurfaceError` when the
        history cannot be read."""
        shown = self.store.keyed(channel, thread, key)
        if shown is not None or not saved or self.journal is None:
            return shown
        catching_up = self._watched.get(channel)
        if catching_up is not None and not catching_up.done():
            await asyncio.wait({catching_up})
            shown = self.store.keyed(channel, thread, key)
        journal = self.journal
        if shown is not None or journal is None:
            return shown
        whole = not is_dm_channel(channel) or channel in self._whole
        if self._caught_up and channel not in self._skipped and whole:
            return shown
        marked = set(self._skipped.get(channel, ()))
        try:
            found = await journal.keyed(channel, thread, key)
        except HISTORY_ERRORS as error:
            raise SurfaceError(f"the playground could not read its history: {error}") from error
        if found is None:
            return None
        self._show_read(found, {}, marked=marked)
        return self.store.keyed(channel, thread, key)

    def _answers(self, message: WebMessage) -> str | None:
        """The command a message of genbot's replies to, for its save to mark it handled;
        None once this process knows it is (a command handled is never pending again: each
        edit of a job's message, the result too, marked it again)."""
        if message.kind == "user" or message.reply_to is None:
            return None
        command = self.store.get(message.reply_to)
        return None if command is not None and not command.pending else message.reply_to

    def _answered(self, message: WebMessage) -> None:
        """A message of genbot's replying to a command was saved: the history marked that
        command handled with it (no process handles it again), so does this one."""
        command = self.store.get(message.reply_to or "")
        if message.kind != "user" and command is not None and command.pending:
            command.pending = False

    async def pending_command(self, message_id: str) -> WebMessage | None:
        """The command message ``message_id`` while it waits for its handler, else None."""
        shown = await self.message(message_id)
        return shown if shown is not None and shown.pending else None

    async def claim_pending(self, accepted_before: float) -> list[str]:
        """The commands this process is to handle now: with a history, those it claims (see
        :meth:`adapters.web.journal.PlaygroundJournal.claim_pending`); without, its own
        pending ones accepted before ``accepted_before``."""
        if self.journal is not None:
            return await self.journal.claim_pending(accepted_before)
        return [m.id for m in self.store.pending() if m.created < accepted_before]

    async def reveal(self, message_id: str | None) -> None:
        """Show a private command message to everyone: genbot answers it in public (a job's
        message, a chat answer, a thread on it)."""
        shown = await self.message(message_id) if message_id else None
        if shown is None or shown.kind != "user" or shown.visible_to is None:
            return
        await self.keep("post", replace(shown, visible_to=None))

    async def settle(self, message: WebMessage) -> None:
        """Mark a command's message as handled (in the history first: a command whose end
        could not be recorded stays pending here too, so it is handled again)."""
        if self.journal is not None:
            await self.journal.settle(message.id)
        message.pending = False

    def attachments_of(self, message: WebMessage, origin: str) -> list[Attachment]:
        """The core's view of a user message's images: bytes included, URLs absolute."""
        attachments = []
        for image in message.images:
            stored = self.store.image(image["key"])
            attachments.append(
                Attachment(
                    filename=image["filename"],
                    url=origin + image["url"],
                    content_type=image["content_type"],
                    size=stored.size if stored is not None else None,
                    data=stored.data if stored is not None else None,
                )
            )
        return attachments

    async def image_file(self, key: str) -> StoredFile | None:
        """An image the playground shows: from memory, else from the history (then kept in
        memory, within its bound)."""
        stored = self.store.image(key)
        if stored is None and self.journal is not None:
            stored = await self.journal.image(key)
            if stored is not None:
                self.store.keep_image(key, stored)
        return stored

    def remember_modal(self, user_id: str, pending: PendingModal) -> None:
        """Keep a form shown to ``user_id`` until it is submitted (the newest 20 per user)."""
        self._closed_forms.pop((user_id, pending.modal.custom_id), None)
        forms = self._modals.setdefault(user_id, OrderedDict())
        forms.pop(pending.modal.custom_id, None)
        forms[pending.modal.custom_id] = (pending, self.clock())
        while len(forms) > MAX_PENDING_MODALS:
            forms.popitem(last=False)

    def pending_modal(self, user_id: str, custom_id: str) -> PendingModal | None:
        """The form ``custom_id`` shown to ``user_id``, while it waits for its submission."""
        forms = self._modals.get(user_id)
        form = None if forms is None else forms.get(custom_id)
        return None if form is None else form[0]

    def form_closed(self, user_id: str, custom_id: str) -> bool:
        """Whether the form ``custom_id`` shown to ``user_id`` was closed because what it was
        about was deleted (``/forget-me``): its submission is refused, told why."""
        return (user_id, custom_id) in self._closed_forms

    def _close_forms_of(self, user_id: str, opened_before: float | None = None) -> None:
        """``user_id`` was forgotten: close the forms shown to them, and those naming them
        (their ``custom_id``: a form about them shown to an admin), so that none submitted
        later makes what was deleted again (with ``opened_before``, a forget learnt of late:
        only those opened before it)."""

        def closes(owner: str, pending: PendingModal, opened: float) -> bool:
            if opened_before is not None and opened >= opened_before:
                return False
            return owner == user_id or user_id in pending.modal.custom_id

        self._close_forms(closes)

    def _close_forms(self, closes: Callable[[str, PendingModal, float], bool]) -> None:
        """Drop the pending forms ``closes`` picks (by their user, the form and when it was
        opened), remembering them for :meth:`form_closed`."""
        for owner, forms in list(self._modals.items()):
            for custom_id, (pending, opened) in list(forms.items()):
                if closes(owner, pending, opened):
                    del forms[custom_id]
                    self._closed_forms.pop((owner, custom_id), None)
                    self._closed_forms[owner, custom_id] = None
            if not forms:
                del self._modals[owner]
        while len(self._closed_forms) > MAX_CLOSED_FORMS:
            self._closed_forms.popitem(last=False)

    def close_modal(self, user_id: str, custom_id: str) -> None:
        """Forget a submitted form."""
        forms = self._modals.get(user_id)
        if forms is not None:
            forms.pop(custom_id, None)

    async def kept_about(self, user_id: str) -> dict[str, int]:
        """How many messages the playground keeps naming ``user_id`` or in their DM (in memory
        and in the storage), and images only they show: what :meth:`forget_user` deletes."""
        ids, images = await self._about(user_id, forget=False)
        files = self.uploads.owned_by(user_id) + self.downloads.owned_by(user_id)
        return {KEPT_MESSAGES: len(ids), KEPT_IMAGES: len(images), KEPT_FILES: files}

    async def forget_user(self, user_id: str) -> dict[str, int]:
        """Delete the messages naming ``user_id`` (theirs, answers to them, those only they
        see) and their DM, with the images only they show, from the storage first, then from
        memory and the browsers showing them, and the files held for them (uploads not sent
        yet, exports to download); how many of each (:meth:`kept_about`'s kinds). The other
        processes sharing the storage are told with its deletion and do the same with what
        they hold (:meth:`_forgotten_elsewhere`)."""
        gone, images = await self._about(user_id, forget=True)
        files = self.uploads.forget(user_id) + self.downloads.forget(user_id)
        self._close_forms_of(user_id)
        self._drop(gone)
        return {KEPT_MESSAGES: len(gone), KEPT_IMAGES: len(images), KEPT_FILES: files}

    def _drop(self, message_ids: Collection[str]) -> None:
        """Forget the messages ``message_ids`` held here (with the images only they showed),
        deleted from the browsers showing them, and close the forms opened from them; a
        channel left empty is let go."""
        self._close_forms(lambda _, pending, __: pending.reply_to in message_ids)
        for message_id in message_ids:
            message = self.store.remove(message_id)
            if message is not None:
                erased = replace(message, deleted=True, text="", buttons=(), images=[])
                self._show("delete", erased, images_before=0)
                if not self.store.holds(message.channel):
                    self._let_go(message.channel)

    async def _about(self, user_id: str, *, forget: bool) -> tuple[set[str], set[str]]:
        """The ids of the messages about ``user_id`` and the keys of the images only they show,
        in memory and in the storage (``forget``: deleted there, as found)."""
        channel = dm_channel(user_id)
        about = self.store.about(user_id, channel)
        ids = {message.id for message in about}
        images = self.store.images_only_of(about)
        if self.journal is not None:
            journal = self.journal
            stored = journal.forget_user if forget else journal.about_user
            stored_ids, stored_images = await stored(user_id, channel)
            ids.update(stored_ids)
            images.update(stored_images)
        return ids, images

    async def expire_quiet(self, made_before: float, spared: Collection[str]) -> list[str]:
        """Drop the shared channels (not a DM, nor ``spared``) no message was made in since
        ``made_before`` (by :attr:`clock`) and where no command waits for its handler, with
        their messages: first from the history (the jobs they showed stay in the archive),
        then from memory and the browsers showing them (a message made since, saved while the
        history deleted the others, stays, and with it the channel); the channels dropped. A
        channel this process knows of only by other processes' notices goes once none came for
        as long (whichever process sweeps first deletes it in the history)."""
        expired: set[str] = set()
        if self.journal is not None:
            expired.update(await self.journal.expire(made_before, sorted(spared)))
        for channel in self.channels():
            if is_dm_channel(channel) or channel in spared or self.store.has_pending(channel):
                continue
            newest = self.store.newest(channel)
            made = newest.created if newest is not None else 0.0
            if max(made, self._active_at.get(channel, 0.0)) < made_before:
                expired.add(channel)
        for channel in sorted(expired):
            for message in self.store.remove_made_before(channel, made_before):
                erased = replace(message, deleted=True, text="", buttons=(), images=[])
                self._show("delete", erased, images_before=0)
            if not self.store.holds(channel):
                self._skipped.pop(channel, None)
                self._let_go(channel)
        for channel in self._active_at.keys() - self._skipped.keys():
            del self._active_at[channel]
        return [channel for channel in sorted(expired) if channel not in self.channels()]

    def show_unkept(self, message: WebMessage) -> None:
        """Show a new ``message`` without writing it to the storage (this process forgets it
        at its end)."""
        self._show("ephemeral", self.store.add(message), images_before=0)

    async def keep(
        self, kind: str, message: WebMessage, *, new: bool = False, images_before: int = 0
    ) -> None:
        """Write ``message`` to the history file, then keep it in memory (``new``; else it is
        a changed copy of a kept message, which takes its fields) and show it to the browsers
        (``images_before``: how many images it showed before this change); :class:`NotKept`
        when it cannot be written (nothing is shown, the kept message is unchanged)."""
        if self.history is not None:
            if self.journal is None:
                raise SurfaceError("the playground is stopped")
            try:
                images = self.store.stored_images(message)
                saved = await self.journal.save(
                    message,
                    images,
                    answers=self._answers(message),
                    news=_news(kind, message, images_before),
                )
                message.version = max(message.version, saved)
                self._answered(message)
            except HISTORY_ERRORS as error:
                self.store.discard_images(message)
                if message.reply_to is not None:
                    self.unkept_replies.add(message.reply_to)
                raise NotKept(error) from error
        kept = self.store.add(message) if new else self.store.update(message)
        if kept is not None:
            self._show(kind, kept, images_before=images_before)

    def _show(
        self, kind: str, message: WebMessage, *, images_before: int, news: bool = True
    ) -> None:
        """Send the change to the browsers watching the channel, and tell the others of its
        audience when it is news (a new message, or a result: images gained; unless ``news``
        is False) to mark unread."""
        payload: dict[str, Any] = {"type": kind, "message": message.to_json()}
        self.hub.publish(message.channel, payload, visible_to=message.visible_to)
        if news and _news(kind, message, images_before):
            self._mark_unread(message.channel, message.visible_to, message.mention)
        if is_dm_channel(message.channel):
            self._hold_fewer_dms(message.channel)

    def _hold_fewer_dms(self, current: str | None = None) -> None:
        """Hold at most :data:`DMS_IN_MEMORY` DMs: past it, the quietest go from memory (not
        ``current``, nor one a browser watches or with a command waiting for its handler), and
        with them their feed of events. With a history, which keeps them, a DM let go is read
        again when its user opens it (:meth:`watch`) or a message of it is asked for; without
        one, what it showed is gone."""
        excess = self.store.dm_count() - DMS_IN_MEMORY
        if excess <= 0:
            return
        for channel in self.store.dms():
            if excess <= 0:
                return
            if channel == current or self._watches(channel) or self.store.has_pending(channel):
                continue
            self.store.drop_channel(channel)
            self._let_go(channel)
            excess -= 1

    def _let_go(self, channel: str) -> None:
        """``channel`` is no longer held (let go, or its last message was forgotten): what this
        process knows of it goes, and its feed unless a browser watches it."""
        self._whole.discard(channel)
        if is_dm_channel(channel):
            self._skipped.pop(channel, None)
        self.hub.forget(channel)

    def _mark_unread(self, channel: str, visible_to: str | None, mention: str | None) -> None:
        """Tell the browsers watching other channels, of the users who may see a message in
        ``channel`` (``visible_to`` only, when set), that it came (``mention``: whom it
        mentions)."""

        def audience(user_id: str) -> bool:
            if visible_to is not None and user_id != visible_to:
                return False
            return not is_dm_channel(channel) or dm_channel(user_id) == channel

        self.hub.mark_unread(channel, mention, audience)


def _failed(catching_up: asyncio.Future[None]) -> bool:
    return catching_up.done() and (catching_up.cancelled() or catching_up.exception() is not None)


def _news(kind: str, message: WebMessage, images_before: int) -> bool:
    """A change browsers mark unread: a new message (not a private reply, "only you can see
    this", which its saving process shows as such), or a result (images gained); never a
    deleted message. A process that reads a message from the history sees it as new."""
    if message.deleted:
        return False
    if kind == "post":
        return message.kind != "ephemeral"
    return kind == "edit" and len(message.images) > images_before
