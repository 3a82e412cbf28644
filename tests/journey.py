"""Journeys, not snapshots: which project files a real run passes through, traced with a
profile hook in the test process.

A :class:`Journey` names where it begins and where it ends, as functions of the project
(``"bot/api/tasks.py", "TaskClient.upscale"``):

- ``root``: entering this function marks the running task's context as being *on the
  journey*; every task created from then on inherits the mark (contextvars are copied into new
  tasks), so the supervised task an adapter submits to, a delivery the tracker schedules or a
  renderer's reader task are all on it, and the other tasks of the process (the gateway, the
  fake platform, the simulator, the tracker's other jobs) are not. The mark is taken back when
  the root function returns for good (not when it merely awaits).
- ``start``: recording begins at the first call of this function on the journey (the root
  itself when left out); ``end``: it ends when this function, called on the journey, returns
  for good (or, with ``end_at_entry``, as soon as it is entered). ``where`` filters a
  function's calls by their arguments.

While recording, every *entry* into a project file is noted: a fresh call of a function, or a
generator resumed by its consumer (``async for`` pulling the next delta). Resuming a coroutine
because what it awaited is ready is not an entry (its frame never left). For each entry the
*caller* is the innermost project frame below it on the stack (for a task's first frame, the
project frame that created the task). Counted are only files outside ``storage/`` and
``tests/`` (storage calls are listed apart); a *move* is an entry whose caller is another file
(or none: the platform library calling in), a *re-entry* is a move into a file the journey
had already entered.

:func:`tracing` installs the hook for a block; each journey's :class:`Trace` is then read from
it. Nothing here knows genbot's modules: the test that uses it names them.
"""

from __future__ import annotations

import contextvars
import dis
import inspect
import sys
import threading
from collections import Counter
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from types import FrameType
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
_EXCLUDED = ("storage/", "tests/")
_PACKAGES = ("adapters/", "bot/", "genbot/", "simulator/", "storage/")

_RESUME = dis.opmap["RESUME"]
_YIELD_VALUE = dis.opmap["YIELD_VALUE"]
_ASYNC_GEN_WRAP = dis.opmap.get("ASYNC_GEN_WRAP", -1)
_GENERATORS = inspect.CO_GENERATOR | inspect.CO_ASYNC_GENERATOR | inspect.CO_COROUTINE

Where = Callable[[dict[str, Any]], bool]


@dataclass(frozen=True)
class Point:
    """A function of the project: its file (from the repository's root) and qualified name;
    ``where`` (optional) picks the calls whose local variables (arguments) it accepts."""

    file: str
    qualname: str
    where: Where | None = None

    def matches(self, file: str, frame: FrameType) -> bool:
        if file != self.file or frame.f_code.co_qualname != self.qualname:
            return False
        return self.where is None or self.where(frame.f_locals)


@dataclass(frozen=True)
class Journey:
    """One path to trace (see the module docstring)."""

    name: str
    root: Point
    end: Point
    start: Point | None = None
    end_at_entry: bool = False
    """End when ``end`` is entered (the call itself counted) rather than when it returns."""


@dataclass(frozen=True)
class Entry:
    """One entry into a project file: ``caller`` (a file, or ``None``) → ``file`` ``function``;
    ``callback``: ``file`` was still running below the caller (a call back up the stack)."""

    caller: str | None
    file: str
    function: str
    callback: bool = False


@dataclass
class Trace:
    """What one journey recorded: every entry, in order, and the storage files it called."""

    journey: Journey
    entries: list[Entry] = field(default_factory=list)
    storage: set[str] = field(default_factory=set)
    started: bool = False
    ended: bool = False

    @property
    def files(self) -> list[str]:
        """The files entered (outside ``storage/`` and ``tests/``), in the order first entered."""
        return list(dict.fromkeys(entry.file for entry in self.entries))

    @property
    def moves(self) -> list[Entry]:
        """The entries that came from another file (or from outside the project)."""
        return [entry for entry in self.entries if entry.caller != entry.file]

    @property
    def callbacks(self) -> Counter[str]:
        """How many times each file was called back while it was still running further down
        the stack (or in the task that created this one): a lower part calling up."""
        return Counter(entry.file for entry in self.moves if entry.callback)

    @property
    def reentries(self) -> Counter[str]:
        """How many times each file was moved into again after its first entry."""
        seen: set[str] = set()
        counts: Counter[str] = Counter()
        for entry in self.entries:
            if entry.caller != entry.file and entry.file in seen:
                counts[entry.file] += 1
            seen.add(entry.file)
        return counts

    def summary(self) -> str:
        """A few lines for a report: the figures, then the files and the re-entries."""
        again, up = self.reentries, self.callbacks
        lines = [
            f"{self.journey.name}: {len(self.files)} files, {len(self.moves)} moves, "
            f"{len(again)} files re-entered ({sum(again.values())} re-entries), "
            f"{len(up)} files called back ({sum(up.values())} callbacks); "
            f"storage files called: {len(self.storage)}",
            "  files: " + ", ".join(self.files),
            "  re-entered: " + ", ".join(f"{f} {n}x" for f, n in again.most_common()),
            "  called back: " + ", ".join(f"{f} {n}x" for f, n in up.most_common()),
        ]
        return "\n".join(lines)

    def path(self) -> str:
        """Every move, one a line: ``caller -> file function``."""
        return "\n".join(
            f"{m.caller} -> {m.file} {m.function}{' (callback)' if m.callback else ''}"
            for m in self.moves
        )


_ON: contextvars.ContextVar[frozenset[str]] = contextvars.ContextVar(
    "journeys", default=frozenset()
)


class Tracer:
    """The profile hook: feeds every journey's :class:`Trace` (use :func:`tracing`)."""

    def __init__(self, journeys: list[Journey]) -> None:
        self.journeys = journeys
        self.traces = {journey.name: Trace(journey) for journey in journeys}
        self._files: dict[str, str | None] = {}
        self._spawned_by: dict[int, tuple[FrameType, FrameType]] = {}
        self._last: dict[int, tuple[str, FrameType]] = {}
        self._roots: dict[int, contextvars.Token[frozenset[str]]] = {}
        self._ends: dict[int, set[str]] = {}

    def __getitem__(self, name: str) -> Trace:
        return self.traces[name]

    def hook(self, frame: FrameType, event: str, arg: Any) -> None:
        if event == "call":
            self._call(frame)
        elif event == "return":
            self._return(frame)

    def _file(self, frame: FrameType) -> str | None:
        filename = frame.f_code.co_filename
        try:
            return self._files[filename]
        except KeyError:
            path = Path(filename)
            name = str(path.relative_to(ROOT)) if path.is_relative_to(ROOT) else None
            if name is not None and not name.startswith((*_PACKAGES, "tests/")):
                name = None
            self._files[filename] = name
            return name

    def _call(self, frame: FrameType) -> None:
        thread = threading.get_ident()
        last = self._last.get(thread)
        self._last[thread] = ("call", frame)
        code = frame.f_code
        if code.co_name == "create_task" and code.co_filename.endswith("base_events.py"):
            self._note_spawn(frame)
            return
        file = self._file(frame)
        if file is None:
            return
        if not _fresh(frame):
            resumed_with_its_awaiter = last == ("call", frame.f_back)
            pulled = code.co_flags & (inspect.CO_GENERATOR | inspect.CO_ASYNC_GENERATOR)
            if resumed_with_its_awaiter or not pulled:
                return
        self._mark_roots(file, frame)
        on = _ON.get()
        if not on:
            return
        for name in on:
            trace = self.traces[name]
            journey = trace.journey
            if not trace.started and (journey.start is None or journey.start.matches(file, frame)):
                trace.started = True
            if trace.started and not trace.ended:
                self._note(trace, file, frame)
                if journey.end.matches(file, frame):
                    if journey.end_at_entry:
                        trace.ended = True
                    else:
                        self._ends.setdefault(id(frame), set()).add(name)

    def _mark_roots(self, file: str, frame: FrameType) -> None:
        for journey in self.journeys:
            trace = self.traces[journey.name]
            if trace.started or not journey.root.matches(file, frame):
                continue
            self._roots[id(frame)] = _ON.set(_ON.get() | {journey.name})

    def _note(self, trace: Trace, file: str, frame: FrameType) -> None:
        if file.startswith("storage/"):
            trace.storage.add(file)
            return
        if file.startswith(_EXCLUDED):
            return
        below = self._below(frame)
        caller = below[0] if below else None
        callback = caller != file and file in below[1:]
        trace.entries.append(Entry(caller, file, frame.f_code.co_qualname, callback))

    def _below(self, frame: FrameType) -> list[str]:
        """The project files running under ``frame``, innermost first, through the frames
        that created its task (outside ``storage/`` and ``tests/``)."""
        files: list[str] = []
        below = self._spawner(frame) or frame.f_back
        while below is not None and len(files) <= 200:
            file = self._file(below)
            if file is not None and not file.startswith(_EXCLUDED):
                files.append(file)
            below = self._spawner(below) or below.f_back
        return files

    def _spawner(self, frame: FrameType) -> FrameType | None:
        """The frame that created ``frame``'s task when ``frame`` is that task's first frame
        (below it runs only the event loop), else ``None``."""
        spawned = self._spawned_by.get(id(frame))
        return spawned[1] if spawned is not None and spawned[0] is frame else None

    def _note_spawn(self, frame: FrameType) -> None:
        coro = frame.f_locals.get("coro")
        inner = getattr(coro, "cr_frame", None)
        if inner is not None:
            self._spawned_by[id(inner)] = (inner, frame)

    def _return(self, frame: FrameType) -> None:
        self._last[threading.get_ident()] = ("return", frame)
        if _suspended(frame):
            return
        key = id(frame)
        token = self._roots.pop(key, None)
        if token is not None:
            _ON.reset(token)
        for name in self._ends.pop(key, ()):
            self.traces[name].ended = True


def _fresh(frame: FrameType) -> bool:
    """Whether a ``call`` event starts ``frame`` (not a generator or coroutine resumed): a frame
    starts at its first ``RESUME`` (argument 0); one resumed by a send stands at a later
    ``RESUME``, one resumed by a throw (a cancellation delivered into an ``await``, which
    CPython 3.11 hands to the innermost frame first) past its ``SEND`` loop."""
    if not frame.f_code.co_flags & _GENERATORS:
        return True
    code = frame.f_code.co_code
    lasti = frame.f_lasti
    return lasti < 0 or (code[lasti] == _RESUME and code[lasti + 1] == 0)


def _suspended(frame: FrameType) -> bool:
    """Whether a ``return`` event only suspends ``frame`` (an ``await``, a ``yield``)."""
    if not frame.f_code.co_flags & _GENERATORS:
        return False
    code = frame.f_code.co_code
    lasti = frame.f_lasti
    if lasti < 0 or code[lasti] != _YIELD_VALUE:
        return False
    yielded_to_consumer = code[lasti - 2] == _ASYNC_GEN_WRAP
    return not (frame.f_code.co_flags & inspect.CO_ASYNC_GENERATOR and yielded_to_consumer)


@contextmanager
def tracing(journeys: list[Journey]) -> Iterator[Tracer]:
    """Trace ``journeys`` while the block runs (this thread and the threads started in it)."""
    tracer = Tracer(journeys)
    previous = sys.getprofile()
    sys.setprofile(tracer.hook)
    threading.setprofile(tracer.hook)
    try:
        yield tracer
    finally:
        sys.setprofile(previous)
        threading.setprofile(None)
