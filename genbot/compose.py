"""The composition root: genbot's parts made from its settings and wired together — the
provider client (:func:`provider_client`), the adapters (:func:`configured_adapters`), the
outbox, the job machinery (:func:`build_job_engines`), chat, account, home and the router
(:func:`build_core`), and the webhook receiver (:func:`webhook_receiver`).
:mod:`genbot.runtime` starts and stops what this module builds.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Final

from adapters import Adapter
from bot.api import ProviderClient
from bot.api.ratelimit import SharedPacing
from bot.features.account import AccountFeature, AccountStorage
from bot.features.archive import (
    ArchiveExport,
    ArchiveFeature,
    ArchivePages,
    ArchiveStorage,
    Gallery,
)
from bot.features.audit import AuditAdmin, AuditTrail
from bot.features.chat import DEFAULT_SYSTEM_PROMPT, ChatDefaults, ChatEngine
from bot.features.chat.caps import ChatCaps
from bot.features.chat.controls import AnswerControls
from bot.features.chat.documents import DocumentLimits
from bot.features.chat.engine import ChatStorage
from bot.features.chat.interrupted import InterruptedAnswers
from bot.features.chat.stops import StopRequests
from bot.features.chat.tools import ChatImageTools
from bot.features.console import Console, ConsoleStorage
from bot.features.home import HomeFeature, HomeStorage
from bot.features.jobs import (
    ChatJobs,
    DescribeButtons,
    DiffusionJobs,
    Experience,
    ImageJobs,
    JobCancel,
    JobMessages,
    JobStarter,
    JobWatch,
    PreviewButtons,
    ProgressTicker,
    Tiers,
    Tracker,
    UploadForms,
    WebhookSecrets,
)
from bot.features.jobs.batch_queue import BatchQueue
from bot.features.jobs.batches import Batches
from bot.features.jobs.copies import ResultCopies
from bot.features.jobs.described_prompts import ALL, DescribedPrompts
from bot.features.jobs.form_prompts import FormPrompts
from bot.features.jobs.messages import JobMessagesStorage
from bot.features.jobs.prompt_translation import PromptTranslation
from bot.features.jobs.screens import ScreensPrompts
from bot.features.jobs.starter import StarterStorage
from bot.features.jobs.tracking.provider_state import ScreensResults
from bot.features.jobs.tracking.tracker import TrackerStorage
from bot.features.jobs.translation_offers import TranslationOffers
from bot.features.jobs.webhook_secrets import SecretStorage
from bot.features.moderation import ModelCheck, Moderation, ModerationAdmin
from bot.features.prefer import PreferCommands, SavedExpansion
from bot.features.provider_keys import ProviderKeys
from bot.features.retention import ForgetFeature, RetentionPurge, UserAnswers
from bot.kernel import (
    ChatSettings,
    CoreSettings,
    LanguageChoices,
    MediaFetcher,
    MediaHost,
    Surface,
    SurfaceRegistry,
    provider_is_private,
    sealer_of,
)
from bot.outbox import Outbox, Pacer
from bot.refs import Refs, RefStorage
from bot.router import Feature, Lifecycle, Router
from genbot.settings import Settings
from genbot.webhooks import webhook_base_url
from storage import SettingValues, Store, WriteWindow, WriteWindows

if TYPE_CHECKING:
    from adapters.webhook import WebhookReceiver

log = logging.getLogger(__name__)

CHAT_PER_MINUTE: Final = "provider:chat:minute"
CHAT_PER_DAY: Final = "provider:chat:day"
"""The shared windows that hold ``[api] chat_requests_per_minute`` / ``_per_day`` over every
genbot process on one database."""


def shared_chat_pacing(shared: WriteWindows) -> SharedPacing:
    """The chat pacer's (:class:`bot.api.ratelimit.RequestPacer`) count across processes, kept
    in ``shared``, so N processes on one key send what one would (on a database only one
    process uses, every request may go at once: the pacer's own count is the whole count)."""

    async def reserve(per_minute: int, minute: float, per_day: int, day: float) -> float:
        windows = [
            WriteWindow(key, capacity, seconds)
            for key, capacity, seconds in (
                (CHAT_PER_MINUTE, per_minute, minute),
                (CHAT_PER_DAY, per_day, day),
            )
            if capacity > 0
        ]
        return await shared.reserve_writes(windows) if windows else 0.0

    return reserve


def provider_client(settings: Settings, store: Store) -> ProviderClient:
    """The provider client, its chat pacing counted across the processes sharing ``store``."""
    return ProviderClient(
        settings.api,
        allow_insecure_webhooks=settings.webhook.allow_insecure_loopback,
        shared_pacing=shared_chat_pacing(store.write_windows),
    )


def configured_adapters(
    settings: Settings, *, demo: bool = False, storage: Store | None = None
) -> dict[str, Adapter]:
    """The adapters whose credentials (or switch) are set, created but not started. ``demo``
    gives the playground an admin link (``genbot demo`` only); ``storage`` keeps the
    Slack workspaces of a distributed app, the Slack events the cluster handled and the channel
    each Slack user looks at, and the playground's history (with its clock, which the
    playground stamps its messages and judges pending commands and access cookies by)."""
    adapters: dict[str, Adapter] = {}
    if settings.discord.token.get_secret_value():
        from adapters.discord.adapter import DiscordAdapter

        adapters["discord"] = DiscordAdapter(settings.discord, settings.limits)
    if settings.slack.configured:
        from adapters.slack.adapter import SlackAdapter

        adapters["slack"] = SlackAdapter(
            settings.slack,
            settings.limits,
            installations=None if storage is None else storage.installations,
            sealer=sealer_of(settings.storage, settings.api),
            dedupe=None if storage is None else storage.dedupe,
            channels_in_view=None if storage is None else storage.channels_in_view,
            read_user_groups=settings.quotas.maps_roles_of("slack"),
            clock=time.time if storage is None else storage.clock,
        )
    if settings.web.enabled:
        from adapters.web.adapter import WebAdapter
        from adapters.web.journal import playground_path

        legacy = None if settings.storage.postgres_url else playground_path(settings.storage.path)
        adapters["web"] = WebAdapter(
            settings.web,
            settings.limits,
            chat=settings.chat,
            history=None if storage is None else storage.playground,
            legacy_history=legacy,
            admin_link=demo,
            clock=time.time if storage is None else storage.clock,
        )
    return adapters


def webhook_receiver(settings: CoreSettings, jobs: JobEngines) -> WebhookReceiver | None:
    """The receiver for ``jobs``' tracker and media host, or None when webhooks are off
    (``[webhook] public_url`` empty or not an address the provider accepts)."""
    if webhook_base_url(settings) is None:
        return None
    from adapters.webhook import WebhookReceiver

    return WebhookReceiver(settings.webhook, jobs.tracker, jobs.media_host)


@dataclass
class JobEngines:
    """Every part of the job machinery, for the composition root and tests."""

    images: ImageJobs
    diffusion: DiffusionJobs
    tracker: Tracker
    media: MediaFetcher
    media_host: MediaHost | None
    delivery: JobMessages
    starter: JobStarter
    tiers: Tiers
    watch: JobWatch
    chat_jobs: ChatJobs
    cancel: JobCancel
    ticker: ProgressTicker
    describe: DescribeButtons
    upload_forms: UploadForms
    previews: PreviewButtons
    batches: Batches
    queue: BatchQueue
    translation_offers: TranslationOffers

    @property
    def features(self) -> list[Feature[Any]]:
        """The features to give the core."""
        return [
            self.images,
            self.batches,
            self.diffusion,
            self.cancel,
            self.describe,
            self.upload_forms,
            self.previews,
            self.translation_offers,
        ]

    @property
    def services(self) -> list[Lifecycle]:
        """The services to give the core, in start order. The webhook receiver
        (``adapters.webhook``) is not one: the composition root starts it after these and stops
        it before them, so no webhook reaches a stopped tracker."""
        return [self.media, self.delivery.experience, self.tracker, self.ticker, self.queue]


def build_job_engines(
    settings: CoreSettings,
    store: Store,
    provider: ProviderClient,
    outbox: Outbox,
    *,
    shards: str | None = None,
    clock: Callable[[], float] | None = None,
    monotonic: Callable[[], float] = time.monotonic,
    results: ScreensResults | None = None,
    audit: AuditTrail | None = None,
    screen: ScreensPrompts | None = None,
) -> JobEngines:
    """Build the job machinery: its :attr:`JobEngines.features` and
    :attr:`JobEngines.services` (media session, tracker — in start order) go to the core,
    :attr:`JobEngines.chat_jobs` to the chat engine.

    ``shards``: the platform shards this process runs, for the cluster's view; ``clock``
    (wall time; by default the store's, which every process on the database shares: see
    :class:`storage.sql.server_clock.ServerClock`) stamps and compares what is stored:
    leases, timeouts, due polls, delivery retries;
    ``monotonic`` measures what lives only in this process: the wait between rounds, the
    sweep, the lost-task span, the heartbeat's stall and reachability; ``results`` moderates
    finished describe results before they are stored; ``screen`` checks translated prompts,
    the prompts a describe answered as they start and a batch's prompts as its Run is pressed
    and as its queued jobs start.
    """
    clock = store.clock if clock is None else clock
    limits_settings = settings.limits
    watch = JobWatch(store.jobs)
    media = MediaFetcher(
        limits_settings.max_upload_bytes,
        allow_private=provider_is_private(settings.api.base_url),
    )
    webhook_base = webhook_base_url(settings)
    media_host = (
        MediaHost(
            settings.webhook.public_url.strip(),
            store.media,
            max_total_bytes=settings.webhook.media_cache_mb * 1024 * 1024,
            max_bytes_per_owner=settings.webhook.media_cache_mb_per_user * 1024 * 1024,
        )
        if webhook_base is not None
        else None
    )
    experience = Experience(store.history, settings.api.diffusion_models)
    delivery = JobMessages(
        JobMessagesStorage(store.jobs, store.claims, store.message_links),
        outbox,
        media,
        watch,
        clock=clock,
        experience=experience,
        hosted=media_host,
    )
    tiers = Tiers(limits_settings, settings.quotas)
    webhook_secrets = WebhookSecrets(
        sealer_of(settings.storage, settings.api), SecretStorage(store.jobs, store.tracking)
    )
    starting: set[str] = set()
    tracker = Tracker(
        TrackerStorage(store.jobs, store.tracking, store.leasing),
        provider,
        delivery,
        watch,
        limits_settings,
        webhook_secrets,
        platforms=outbox.platforms,
        shards=lambda: shards,
        webhooks=webhook_base is not None,
        clock=clock,
        monotonic=monotonic,
        starting=starting,
        results=results,
    )
    starter = JobStarter(
        StarterStorage(store.jobs, store.admission, store.ledger),
        outbox,
        tiers,
        delivery,
        starting,
        tracker.submitted,
        webhook_secrets,
        webhook_base=webhook_base,
        media_host=media_host,
        max_upload_bytes=limits_settings.max_upload_bytes,
        upstream_cdn_hosts=settings.api.upstream_cdn_hosts,
        keys=provider.keys,
    )
    form_prompts = FormPrompts(SavedExpansion(store.preferences), screen)
    images = ImageJobs(starter, provider, media, store.settings, form_prompts)
    described = DescribedPrompts(starter, provider, screen)
    queue = BatchQueue(
        images,
        store.preferences,
        store.admission,
        tiers,
        outbox,
        starts={ALL: described},
        screen=screen,
    )
    diffusion = DiffusionJobs(starter, provider, limits_settings, clock, models=experience.models)
    chat_jobs = ChatJobs(images, watch)
    prompts = PromptTranslation(
        settings.prompts,
        provider.chat,
        settings.chat.model,
        store.ledger,
        tiers,
        store.preferences,
        outbox,
        screen,
    )
    batches = Batches(
        images,
        starter,
        queue,
        store.preferences,
        store.admission,
        store.ledger,
        outbox,
        tiers,
        experience.estimates,
        limits_settings,
        prompts,
        screen,
    )
    return JobEngines(
        images,
        diffusion,
        tracker,
        media,
        media_host,
        delivery,
        starter,
        tiers,
        watch,
        chat_jobs,
        JobCancel(
            store.jobs,
            outbox,
            delivery,
            watch,
            audit or AuditTrail(store.audit, settings.storage.keep_days.audit),
        ),
        ProgressTicker(
            store.tracking,
            delivery,
            owner=store.owner.process_id,
            every=limits_settings.progress_tick_seconds,
            deliveries_waiting=lambda: tracker.deliveries_waiting,
            holds_jobs=lambda: tracker.holds_jobs or bool(starting),
        ),
        DescribeButtons(starter, provider, store.settings, described, batches, form_prompts),
        UploadForms(starter, images),
        PreviewButtons(starter, images, media),
        batches,
        queue,
        TranslationOffers(prompts, batches, store.preferences, outbox),
    )


def chat_defaults(chat: ChatSettings) -> ChatDefaults:
    """The chat engine's defaults from the ``[chat]`` section."""
    return ChatDefaults(
        model=chat.model,
        system_prompt=chat.system_prompt or DEFAULT_SYSTEM_PROMPT,
        temperature=chat.temperature,
        top_p=chat.top_p,
        presence_penalty=chat.presence_penalty,
        frequency_penalty=chat.frequency_penalty,
        stop=tuple(chat.stop),
        max_tokens=chat.max_tokens,
        logit_bias=dict(chat.logit_bias) or None,
        answer_reserve=chat.answer_reserve,
        max_function_rounds=chat.max_function_rounds,
        stream=chat.stream,
    )


def document_limits(chat: ChatSettings) -> DocumentLimits:
    """What chat reads of attached documents, from ``[chat] documents_*``."""
    return DocumentLimits(
        max_bytes=int(chat.documents_max_mb * 1024 * 1024),
        max_pages=chat.documents_max_pages,
        max_files=chat.documents_max_files,
        share=chat.documents_share,
    )


def build_core(
    settings: CoreSettings,
    store: Store,
    provider: ProviderClient,
    surfaces: Iterable[Surface],
    *,
    open_channels: Mapping[str, frozenset[str]] | None = None,
    shards: str | None = None,
    on_console: Callable[[Console], None] | None = None,
    on_gallery: Callable[[Gallery], None] | None = None,
) -> tuple[Router, JobEngines]:
    """The core with every feature, answering on ``surfaces`` (one per platform), and the job
    engines (for tests and benchmarks to inspect). ``open_channels``: per platform, the channels
    whose job buttons anyone may press (:class:`bot.refs.Refs`); ``shards``: see
    :func:`build_job_engines`; ``on_console`` is given the admin page's core
    (:class:`~bot.features.console.Console`, built on the same features), when there is a page;
    ``on_gallery`` the playground gallery's (:class:`~bot.features.archive.Gallery`).

    One :class:`~bot.outbox.Outbox` (with one :class:`~bot.outbox.Pacer`) writes for every
    feature, so chat streams and job messages together stay within each platform's windows.
    """
    registry = SurfaceRegistry(surfaces)
    outbox = Outbox(
        registry, Pacer(shared=store.write_windows if store.db.dialect.shared else None)
    )
    rules = settings.moderation
    model = rules.model_check_model or settings.chat.model
    judge = ModelCheck(provider.chat, model, rules.model_check_seconds)
    audit = AuditTrail(store.audit, settings.storage.keep_days.audit)
    moderation = Moderation(rules, store.moderation, judge, audit=audit)
    jobs = build_job_engines(
        settings,
        store,
        provider,
        outbox,
        shards=shards,
        results=moderation,
        audit=audit,
        screen=moderation,
    )
    stops = StopRequests(store.answer_stops)
    chat = ChatEngine(
        ChatStorage(
            store.conversations,
            store.conversation_locks,
            store.settings,
            store.ledger,
            store.branches,
            store.feedback,
        ),
        provider,
        outbox,
        tools=ChatImageTools(jobs.chat_jobs, moderation=moderation),
        defaults=chat_defaults(settings.chat),
        image_host=jobs.media_host.put_bytes if jobs.media_host is not None else None,
        caps=ChatCaps(
            settings.limits.max_concurrent_chats_per_user,
            settings.limits.chat_answers_per_minute_per_user,
            tiers=jobs.tiers,
            spent=store.ledger.spent,
            places=store.answer_places,
        ),
        moderation=moderation,
        documents=document_limits(settings.chat),
        stops=stops,
        stopping=lambda: router.stopping,
    )
    home = HomeFeature(
        HomeStorage(store.settings, store.ledger, store.history, store.message_links),
        outbox,
        jobs.delivery.results,
        defaults=SettingValues(model=settings.chat.model, temperature=settings.chat.temperature),
        daily_credit_budget=settings.limits.daily_credit_budget_per_user,
        tiers=jobs.tiers,
    )
    models = jobs.diffusion.models
    languages = LanguageChoices(store.settings)
    account = AccountFeature(
        AccountStorage(store.settings, store.ledger, store.feedback),
        outbox,
        audit=audit,
        plan=settings.api.plan,
        daily_credit_budget=settings.limits.daily_credit_budget_per_user,
        home=home,
        diffusion_models=models.known,
        tiers=jobs.tiers,
        languages=languages,
    )
    moderation_admin = ModerationAdmin(settings.moderation, store.moderation, outbox, audit)
    refs = Refs(
        RefStorage(store.jobs, store.message_links, store.conversations, store.preferences),
        open_channels,
    )
    if on_console is not None:
        on_console(
            Console(
                ConsoleStorage(store.moderation, store.audit, store.tracking, store.jobs, store.db),
                moderation_admin,
                jobs.cancel,
                refs,
                platforms=outbox.platforms,
                keys=ProviderKeys(provider.keys, store.admission),
                tiers=jobs.tiers,
                lease_seconds=settings.storage.lease_seconds,
                clock=store.clock,
            )
        )
    archive = ArchiveFeature(
        ArchiveStorage(store.archive, store.jobs),
        outbox,
        ArchivePages(jobs.media),
        ResultCopies(outbox, jobs.delivery.results, store.message_links),
        refs,
        store.clock,
        ArchiveExport(store.archive, jobs.media),
    )
    if on_gallery is not None:
        on_gallery(Gallery(store.archive, jobs.delivery.results, refs, store.clock))
    router = Router(
        outbox,
        [
            *jobs.features,
            chat,
            AnswerControls(stops, store.feedback, outbox, store.conversations),
            account,
            home,
            moderation_admin,
            AuditAdmin(store.audit, outbox),
            ForgetFeature(
                store.retention,
                outbox,
                audit,
                store.clock,
                answers=UserAnswers(stops.request, chat.turn_lock, store.conversation_locks),
            ),
            archive,
            PreferCommands(store.preferences, outbox),
        ],
        conversations=chat,
        services=[
            *jobs.services,
            RetentionPurge(
                store.retention,
                settings.storage.keep_days,
                store.clock,
                audit=audit,
                uploads=jobs.media_host,
            ),
            stops,
            InterruptedAnswers(
                store.conversations,
                store.conversation_locks,
                store.settings,
                outbox,
                chat.turn_lock,
                feedback=store.feedback,
                ledger=store.ledger,
            ),
        ],
        plan=settings.api.plan,
        home=home,
        refs=refs,
        diffusion_models=models.known,
        screen=moderation,
        expansion=SavedExpansion(store.preferences),
        languages=languages,
    )
    return router, jobs
