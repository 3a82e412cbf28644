"""genbot's storage: the ports features depend on (:mod:`storage.interfaces`,
:mod:`storage.job_interfaces`), the records they exchange (:mod:`storage.records`), and one
implementation of them all for SQLite (:class:`SqliteStore`, one process) and PostgreSQL
(:class:`storage.postgres.PostgresStore`, many): :class:`Store`, the queries of
:mod:`storage.queries` over the databases of :mod:`storage.sqlite` and :mod:`storage.postgres`.

Platform-free and independent of ``bot/``: it only knows its own records."""

# ruff: noqa: I001 (each name is re-exported as itself: one import per module)

from storage.errors import (
    StorageError as StorageError,
    StoreClosedError as StoreClosedError,
)
from storage.interfaces import (
    ConversationLocks as ConversationLocks,
    ConversationStore as ConversationStore,
    EventDedupe as EventDedupe,
    PlaygroundHistory as PlaygroundHistory,
    SettingsReader as SettingsReader,
    SettingsStore as SettingsStore,
    SlackInstallations as SlackInstallations,
    Storage as Storage,
    UsageLedger as UsageLedger,
    WriteWindows as WriteWindows,
)
from storage.job_interfaces import (
    DeliveryClaims as DeliveryClaims,
    JobAdmission as JobAdmission,
    JobCounts as JobCounts,
    JobHistory as JobHistory,
    JobLeasing as JobLeasing,
    JobReader as JobReader,
    JobTracking as JobTracking,
    JobWriter as JobWriter,
    MessageLinks as MessageLinks,
    TaskLookup as TaskLookup,
)
from storage.lock import DatabaseInUse as DatabaseInUse, ProcessLock as ProcessLock
from storage.records.chat import (
    ChatMessage as ChatMessage,
    ChatRole as ChatRole,
    Conversation as Conversation,
    ConversationKey as ConversationKey,
    ConversationKind as ConversationKind,
)
from storage.records.job_params import (
    JOB_TYPES as JOB_TYPES,
    BlendParams as BlendParams,
    DescribeParams as DescribeParams,
    DiffusionParams as DiffusionParams,
    DiffusionType as DiffusionType,
    ImageParams as ImageParams,
    JobParams as JobParams,
    JobResult as JobResult,
    JobType as JobType,
    ResultChange as ResultChange,
    TaskType as TaskType,
    adding_pressed as adding_pressed,
    adding_refused as adding_refused,
    params_of as params_of,
    result_with as result_with,
)
from storage.records.jobs import (
    ACTIVE_STATUSES as ACTIVE_STATUSES,
    ALL_STATUSES as ALL_STATUSES,
    IN_FLIGHT_STATUSES as IN_FLIGHT_STATUSES,
    JOB_ID_MAX as JOB_ID_MAX,
    JOB_TRANSITIONS as JOB_TRANSITIONS,
    TERMINAL_STATUSES as TERMINAL_STATUSES,
    UNFINISHED_STATUSES as UNFINISHED_STATUSES,
    Job as Job,
    JobFamily as JobFamily,
    JobMessage as JobMessage,
    JobMessageKind as JobMessageKind,
    JobMove as JobMove,
    JobQuota as JobQuota,
    JobStatus as JobStatus,
    NewJob as NewJob,
    Lease as Lease,
    QuotaRefusal as QuotaRefusal,
    new_job_id as new_job_id,
)
from storage.records.jobs import ProcessInfo as ProcessInfo, ProcessStatus as ProcessStatus
from storage.records.platforms import (
    PlaygroundImage as PlaygroundImage,
    PlaygroundMessage as PlaygroundMessage,
    SlackInstallation as SlackInstallation,
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
from storage.records.usage import ESTIMATED_CREDITS as ESTIMATED_CREDITS, UsageTotals as UsageTotals
from storage.rules import PRECEDENCE as PRECEDENCE
from storage.sql.migrations import migrate as migrate
from storage.sql.schema import (
    LATEST_VERSION as LATEST_VERSION,
    MIGRATIONS as MIGRATIONS,
    Migration as Migration,
)
from storage.sqlite import SqliteStore as SqliteStore
from storage.store import Store as Store
