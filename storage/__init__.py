"""genbot's storage: the ports features depend on, each carrying its one implementation
(:mod:`storage.queries`), the records they exchange (:mod:`storage.records`), and
:class:`Store`, all the ports on one database of :mod:`storage.sqlite` (:class:`SqliteStore`,
one process) or :mod:`storage.postgres` (:class:`storage.postgres.PostgresStore`, many).

Platform-free and independent of ``bot/``: it only knows its own records."""

# ruff: noqa: I001 (each name is re-exported as itself: one import per module)

from storage.errors import (
    StorageError as StorageError,
    StoreClosedError as StoreClosedError,
)
from storage.queries.admission import JobAdmission as JobAdmission
from storage.queries.answer_places import AnswerPlaces as AnswerPlaces
from storage.queries.archive import JobArchive as JobArchive
from storage.queries.audit import AuditLog as AuditLog
from storage.queries.branches import ConversationBranches as ConversationBranches
from storage.queries.conversations import (
    AnswerStops as AnswerStops,
    ConversationLocks as ConversationLocks,
    ConversationStore as ConversationStore,
)
from storage.queries.feedback import AnswerFeedback as AnswerFeedback
from storage.queries.jobs import (
    JobReader as JobReader,
    JobWriter as JobWriter,
    MessageLinks as MessageLinks,
)
from storage.queries.base import Owner as Owner
from storage.queries.leasing import JobLeasing as JobLeasing
from storage.queries.ledger import UsageLedger as UsageLedger
from storage.queries.media import HostedMedia as HostedMedia, MediaCaps as MediaCaps
from storage.queries.moderation import ModerationStore as ModerationStore
from storage.queries.preferences import Preferences as Preferences
from storage.queries.settings import (
    SettingsReader as SettingsReader,
    SettingsStore as SettingsStore,
)
from storage.queries.playground import PlaygroundHistory as PlaygroundHistory
from storage.queries.retention import Retention as Retention, forgotten as forgotten
from storage.queries.write_windows import WriteWindows as WriteWindows
from storage.queries.tracking import (
    DeliveryClaims as DeliveryClaims,
    JobHistory as JobHistory,
    JobTracking as JobTracking,
)
from storage.lock import DatabaseInUse as DatabaseInUse, ProcessLock as ProcessLock
from storage.records.chat import (
    AnswerPlace as AnswerPlace,
    ChatMessage as ChatMessage,
    ChatRole as ChatRole,
    Conversation as Conversation,
    ConversationKey as ConversationKey,
    FeedbackCount as FeedbackCount,
    Fork as Fork,
)
from storage.records.audit import AuditEntry as AuditEntry
from storage.records.retention import Cutoffs as Cutoffs, KeptAbout as KeptAbout, Purged as Purged
from storage.records.moderation import (
    Ban as Ban,
    ModerationRule as ModerationRule,
    Offence as Offence,
)
from storage.records.preferences import (
    Batch as Batch,
    BatchOutcome as BatchOutcome,
    SavedOption as SavedOption,
)
from storage.records.jobs import (
    ACTIVE_STATUSES as ACTIVE_STATUSES,
    ALL_STATUSES as ALL_STATUSES,
    IN_FLIGHT_STATUSES as IN_FLIGHT_STATUSES,
    JOB_ID_MAX as JOB_ID_MAX,
    JOB_TRANSITIONS as JOB_TRANSITIONS,
    TERMINAL_STATUSES as TERMINAL_STATUSES,
    UNFINISHED_STATUSES as UNFINISHED_STATUSES,
    DiffusionType as DiffusionType,
    Job as Job,
    JobBrief as JobBrief,
    JobChannel as JobChannel,
    JobFamily as JobFamily,
    JobMessage as JobMessage,
    JobMessageKind as JobMessageKind,
    JobMove as JobMove,
    JobQuota as JobQuota,
    JobSearch as JobSearch,
    JobStatus as JobStatus,
    JobType as JobType,
    KeyRoom as KeyRoom,
    KeyUsage as KeyUsage,
    NewJob as NewJob,
    NoKeyRoom as NoKeyRoom,
    QuotaRefusal as QuotaRefusal,
    ResultChange as ResultChange,
    RunningJob as RunningJob,
    TaskType as TaskType,
    new_job_id as new_job_id,
)
from storage.records.jobs import Heartbeat as Heartbeat
from storage.records.jobs import ProcessInfo as ProcessInfo
from storage.records.platforms import (
    PlaygroundImage as PlaygroundImage,
    PlaygroundMessage as PlaygroundMessage,
    SlackInstallation as SlackInstallation,
    WriteBooking as WriteBooking,
    WriteWindow as WriteWindow,
)
from storage.records.settings import (
    SETTING_NAMES as SETTING_NAMES,
    UNSET as UNSET,
    EffectiveSettings as EffectiveSettings,
    ScopeKind as ScopeKind,
    ScopeSettings as ScopeSettings,
    SettingSource as SettingSource,
    SettingValues as SettingValues,
    encode_stop as encode_stop,
)
from storage.records.usage import (
    ESTIMATED_CREDITS as ESTIMATED_CREDITS,
    Refill as Refill,
    Spent as Spent,
    UsageTotals as UsageTotals,
)
from storage.queries.settings import PRECEDENCE as PRECEDENCE
from storage.sql.migrations import migrate as migrate
from storage.sql.schema import LATEST_VERSION as LATEST_VERSION
from storage.sqlite import SqliteStore as SqliteStore
from storage.store import Store as Store
