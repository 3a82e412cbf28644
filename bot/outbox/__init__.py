"""The outbox: the one way genbot writes to a platform (:class:`Outbox`), what a write does
(:mod:`~bot.outbox.operations`), what it does without room or when refused
(:mod:`~bot.outbox.policy`), and the windows that pace writes (:mod:`~bot.outbox.pacing`)."""

from bot.outbox.operations import (
    Activity,
    Delete,
    Edit,
    EditPressed,
    Notice,
    OpenForm,
    Operation,
    Post,
    Private,
    PrivateFile,
    PublishHome,
    Repost,
    StartThread,
    StreamAppend,
    StreamStart,
    StreamStop,
    Typing,
)
from bot.outbox.outbox import Outbox, Room
from bot.outbox.pacing import Clock, Pacer, PacingTimeout
from bot.outbox.policy import Stream, WritePolicy, WriteRateLimited, WriteSkipped
from bot.outbox.windows import Demand, Grant, StreamDemand

__all__ = [
    "Activity",
    "Clock",
    "Delete",
    "Demand",
    "Edit",
    "EditPressed",
    "Grant",
    "Notice",
    "OpenForm",
    "Operation",
    "Outbox",
    "Pacer",
    "PacingTimeout",
    "Post",
    "Private",
    "PrivateFile",
    "PublishHome",
    "Repost",
    "Room",
    "StartThread",
    "Stream",
    "StreamAppend",
    "StreamDemand",
    "StreamStart",
    "StreamStop",
    "Typing",
    "WritePolicy",
    "WriteRateLimited",
    "WriteSkipped",
]
