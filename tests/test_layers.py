"""Issue 23's two layering rules, both held outright.

- Adapters import nothing of ``storage`` and nothing of ``bot/`` beyond the kernel (the package
  :data:`KERNEL` names): what they need of the rest they declare in their own ``ports.py``.
- Exactly one module of ``bot/`` calls a surface's write methods: the outbox. It is also the
  only module of ``bot/`` beyond the kernel that holds surfaces: no other imports ``Surface`` or
  ``SurfaceRegistry`` (features read what a platform allows and can do through the outbox).

Beside them, code outside the kernel imports it through its face, ``bot.kernel`` (one name, one
address), and never the face from inside: a kernel module importing the face would be a circle.
"""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
KERNEL = ("bot.kernel",)
OUTBOX = "bot/outbox/outbox.py"
SURFACE_HOLDERS = frozenset({"Surface", "SurfaceRegistry"})
WRITES = frozenset(
    {
        "send",
        "edit",
        "delete",
        "send_ephemeral",
        "send_private",
        "open_modal",
        "start_thread",
        "typing",
        "show_status",
        "end_status",
        "start_stream",
        "publish_home",
        "repost",
    }
)


def _sources(package: str) -> list[Path]:
    return sorted((ROOT / package).rglob("*.py"))


def _name(path: Path) -> str:
    return str(path.relative_to(ROOT))


def _imported(tree: ast.AST) -> set[str]:
    modules: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            modules.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            modules.add(node.module)
            modules.update(f"{node.module}.{alias.name}" for alias in node.names)
    return modules


def _beyond_the_kernel(module: str) -> str | None:
    """``module``'s package when an adapter may not import it, else None."""
    if module == "storage" or module.startswith("storage."):
        return "storage"
    if module == "bot" or not module.startswith("bot."):
        return None
    if any(module == k or module.startswith(f"{k}.") for k in KERNEL):
        return None
    return ".".join(module.split(".")[:2])


def adapters_beyond_the_kernel() -> set[tuple[str, str]]:
    """Every (adapter file, package) where an adapter imports more than the kernel."""
    found: set[tuple[str, str]] = set()
    for path in _sources("adapters"):
        for module in _imported(ast.parse(path.read_text())):
            beyond = _beyond_the_kernel(module)
            if beyond is not None:
                found.add((_name(path), beyond))
    return found


def _writes_to_a_surface(tree: ast.AST) -> bool:
    """Whether ``tree`` calls a write method on anything named a surface."""
    return any(
        isinstance(node, ast.Call)
        and isinstance(node.func, ast.Attribute)
        and node.func.attr in WRITES
        and "surface" in ast.unparse(node.func.value).lower()
        for node in ast.walk(tree)
    )


def surface_writers() -> set[str]:
    """Every module of ``bot/`` (but the provider client) that calls a surface's write method."""
    return {
        _name(path)
        for path in _sources("bot")
        if not _name(path).startswith("bot/api/")
        and _writes_to_a_surface(ast.parse(path.read_text()))
    } - {OUTBOX}


def _surface_names_imported(tree: ast.AST) -> set[str]:
    """The names of :data:`SURFACE_HOLDERS` that ``tree`` imports from the kernel."""
    return {
        alias.name
        for node in ast.walk(tree)
        if isinstance(node, ast.ImportFrom)
        and node.module is not None
        and (node.module == "bot.kernel" or node.module.startswith("bot.kernel."))
        for alias in node.names
        if alias.name in SURFACE_HOLDERS
    }


def surface_holders() -> set[str]:
    """Every module of ``bot/`` outside the kernel, the provider client and the outbox that
    imports ``Surface`` or ``SurfaceRegistry``."""
    return {
        _name(path)
        for path in _sources("bot")
        if not _name(path).startswith(("bot/api/", "bot/kernel/"))
        and _surface_names_imported(ast.parse(path.read_text()))
    } - {OUTBOX}


def test_adapters_import_nothing_beyond_the_kernel() -> None:
    assert sorted(adapters_beyond_the_kernel()) == []


def test_only_the_outbox_writes_to_surfaces() -> None:
    assert sorted(surface_writers()) == []


def test_only_the_outbox_holds_surfaces() -> None:
    assert sorted(surface_holders()) == []


def kernel_modules_imported_past_the_face() -> set[tuple[str, str]]:
    """Every (file outside the kernel, kernel module) it imports by the module's own name
    instead of through ``bot.kernel`` (``bot.kernel.metrics``, a namespace, excepted)."""
    found: set[tuple[str, str]] = set()
    for package in ("bot", "adapters", "genbot", "bench", "tests"):
        for path in _sources(package):
            if _name(path).startswith("bot/kernel/"):
                continue
            for node in ast.walk(ast.parse(path.read_text())):
                modules = (
                    [alias.name for alias in node.names]
                    if isinstance(node, ast.Import)
                    else [node.module]
                    if isinstance(node, ast.ImportFrom) and node.module
                    else []
                )
                found.update(
                    (_name(path), module)
                    for module in modules
                    if module.startswith("bot.kernel.") and module != "bot.kernel.metrics"
                )
    return found


def test_code_outside_the_kernel_imports_it_through_its_face() -> None:
    assert kernel_modules_imported_past_the_face() == set()


def test_the_rules_see_what_they_look_for() -> None:
    assert _beyond_the_kernel("storage.records") == "storage"
    assert _beyond_the_kernel("bot.features.jobs.starter") == "bot.features"
    assert _beyond_the_kernel("bot.kernel.events") is None
    assert _beyond_the_kernel("bot.kernel") is None
    assert _beyond_the_kernel("bot.events") == "bot.events"
    assert _writes_to_a_surface(ast.parse("await self.surfaces.get(p).send_ephemeral(e, t)"))
    assert _writes_to_a_surface(ast.parse("await surface.publish_home(event, view)"))
    assert not _writes_to_a_surface(ast.parse("await self.outbox.write(place, post, policy)"))
    assert _writes_to_a_surface(ast.parse((ROOT / OUTBOX).read_text()))
    assert _surface_names_imported(ast.parse("from bot.kernel import Place, Surface")) == {
        "Surface"
    }
    assert _surface_names_imported(ast.parse("from bot.kernel.registry import SurfaceRegistry"))
    assert not _surface_names_imported(ast.parse("from bot.kernel import SurfaceLimits"))
    assert _surface_names_imported(ast.parse((ROOT / OUTBOX).read_text()))
