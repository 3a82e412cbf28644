"""One word, one meaning for the two clocks (docs/architecture.md, the store's clock).

``clock`` is a wall clock: seconds since the epoch (``time.time``, or the store's clock, the
database server's on PostgreSQL), comparable with stored times and other processes' times.
``monotonic`` is the elapsed-time clock (``time.monotonic``), for intervals that live only in
this process. A parameter, a dataclass field, an attribute or a keyword argument named after
one clock is never given the other: ``clock`` (``_clock``) never ``time.monotonic``,
``monotonic`` (``_monotonic``) never ``time.time``.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PACKAGES = ("bot", "storage", "adapters", "genbot")
WRONG = {
    "clock": frozenset({"time.monotonic", "monotonic", "time.perf_counter", "perf_counter"}),
    "monotonic": frozenset({"time.time"}),
}
"""Each clock's name and the callables it must not name."""


def _bound(tree: ast.AST) -> Iterator[tuple[int, str, ast.expr]]:
    """Every (line, name, value) where ``tree`` gives a name a value by default or by keyword:
    parameter defaults, class-level fields, attribute and name assignments, keyword
    arguments."""
    for node in ast.walk(tree):
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda):
            args = node.args
            positional = [*args.posonlyargs, *args.args]
            for arg, default in zip(positional[::-1], args.defaults[::-1], strict=False):
                yield default.lineno, arg.arg, default
            for arg, kw_default in zip(args.kwonlyargs, args.kw_defaults, strict=True):
                if kw_default is not None:
                    yield kw_default.lineno, arg.arg, kw_default
        elif isinstance(node, ast.keyword) and node.arg is not None:
            yield node.value.lineno, node.arg, node.value
        elif isinstance(node, ast.AnnAssign) and node.value is not None:
            yield node.lineno, _target(node.target), node.value
        elif isinstance(node, ast.Assign):
            for target in node.targets:
                yield node.lineno, _target(target), node.value


def _target(target: ast.expr) -> str:
    if isinstance(target, ast.Name):
        return target.id
    if isinstance(target, ast.Attribute):
        return target.attr
    return ""


def mixed_clocks(source: str) -> list[tuple[int, str, str]]:
    """Every (line, name, value) in ``source`` where a clock's name is given the other clock."""
    found: list[tuple[int, str, str]] = []
    for line, name, value in _bound(ast.parse(source)):
        wrong = WRONG.get(name.lstrip("_"))
        if wrong is not None and ast.unparse(value) in wrong:
            found.append((line, name, ast.unparse(value)))
    return found


def test_no_clock_is_named_after_the_other() -> None:
    found = [
        f"{path.relative_to(ROOT)}:{line}: {name} = {value}"
        for package in PACKAGES
        for path in sorted((ROOT / package).rglob("*.py"))
        for line, name, value in mixed_clocks(path.read_text())
    ]
    assert found == []


def test_the_rule_sees_what_it_looks_for() -> None:
    wrong = {
        "def f(clock=time.monotonic): ...": "clock",
        "def f(*, clock: Callable[[], float] = monotonic): ...": "clock",
        "async def f(a, monotonic=time.time, b=1): ...": "monotonic",
        "class C:\n    clock: Clock = time.monotonic": "clock",
        "self._clock = time.monotonic": "_clock",
        "self._monotonic = time.time": "_monotonic",
        "RateWindow(1, 60.0, clock=time.perf_counter)": "clock",
        "Tracker(store, monotonic=time.time)": "monotonic",
        "g = lambda clock=time.monotonic: clock()": "clock",
    }
    for source, name in wrong.items():
        assert [n for _, n, _ in mixed_clocks(source)] == [name], source
    right = (
        "def f(clock=time.time, monotonic=time.monotonic, a=time.monotonic): ...",
        "class C:\n    monotonic: Callable[[], float] = time.monotonic",
        "self._clock = clock\nself._monotonic = monotonic",
        "Tracker(store, clock=store.clock, monotonic=time.monotonic)",
        "def f(clock=None, *, monotonic): ...",
    )
    for source in right:
        assert mixed_clocks(source) == [], source
