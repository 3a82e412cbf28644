"""Issue 23's layering rules, all held outright.

- Adapters import nothing of ``storage`` and nothing of ``bot/`` beyond the kernel (the package
  :data:`KERNEL` names): what they need of the rest they declare in their own ``ports.py``.
- Exactly one module of ``bot/`` names a surface's write methods (calls them, or hands them to
  the pacer to call): the outbox. It is also the only module of ``bot/`` beyond the kernel that
  holds surfaces: no other imports ``Surface`` or ``SurfaceRegistry`` (features read what a
  platform allows and can do through the outbox).

- The layers of ``bot/`` import only downwards: the provider client (``bot/api``) nothing of the
  rest of ``bot/``; the kernel only itself and the client; the outbox only the kernel (and the
  client); the features neither the router nor each other beyond :data:`FEATURE_ARROWS`; the
  router (``bot/router.py``, ``bot/refs.py``) no feature (it knows them through the protocols it
  declares); and nothing of ``bot/`` imports the composition root (``genbot``) or an adapter.

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
LAYERS: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("bot/api/", ("bot.api",)),
    ("bot/kernel/", ("bot.kernel", "bot.api")),
    ("bot/outbox/", ("bot.outbox", "bot.kernel", "bot.api")),
    ("bot/features/", ("bot.features", "bot.outbox", "bot.kernel", "bot.api", "bot.refs")),
    ("bot/refs.py", ("bot.kernel", "bot.api")),
    ("bot/router.py", ("bot.refs", "bot.outbox", "bot.kernel", "bot.api")),
)
"""Each part of ``bot/`` and the parts of ``bot/`` it may import (``genbot`` and ``adapters``
are above every one of them)."""
FEATURE_ARROWS = frozenset(
    {
        ("account", "jobs"),
        ("archive", "jobs"),
        ("home", "account"),
        ("home", "jobs"),
        ("chat", "provider_waits"),
        ("jobs", "provider_waits"),
        ("account", "audit"),
        ("jobs", "audit"),
        ("moderation", "audit"),
        ("console", "audit"),
        ("retention", "audit"),
        ("console", "jobs"),
        ("console", "moderation"),
        ("console", "provider_keys"),
    }
)
"""Which feature may import which: the home shows the jobs' last images and the account's
settings button, the archive finds, shows and describes jobs, the account uses the jobs'
settings form; the features where admins act (forgetting a user too) or moderation refuses
record it in the audit trail (which imports no feature); the admin page's console acts through
the moderation command's, the Cancel button's and the audit log's code; chat reaches jobs only
through the ``ChatJobs`` protocol it declares, wired by ``genbot/compose.py``."""
WRITES = frozenset(
    {
        "send",
        "edit",
        "edit_pressed",
        "delete",
        "send_ephemeral",
        "send_private",
        "open_modal",
        "start_thread",
        "typing",
        "show_activity",
        "end_activity",
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
    """Whether ``tree`` names a write method of anything named a surface: calls it, or hands
    it on to be called (``partial(surface.send, …)``)."""
    return any(
        isinstance(node, ast.Attribute)
        and node.attr in WRITES
        and "surface" in ast.unparse(node.value).lower()
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


def _modules(tree: ast.AST) -> set[str]:
    """The modules ``tree`` imports (a ``from`` import names its module only)."""
    modules: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            modules.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            modules.add(node.module)
    return modules


def _within(module: str, packages: tuple[str, ...]) -> bool:
    return any(module == p or module.startswith(f"{p}.") for p in packages)


def upward_imports() -> set[tuple[str, str]]:
    """Every (module of ``bot/``, module it imports) against :data:`LAYERS`."""
    found: set[tuple[str, str]] = set()
    for path in _sources("bot"):
        name = _name(path)
        allowed = next((a for prefix, a in LAYERS if name.startswith(prefix)), None)
        for module in _modules(ast.parse(path.read_text())):
            if _within(module, ("genbot", "adapters")) or (
                allowed is not None and module.startswith("bot.") and not _within(module, allowed)
            ):
                found.add((name, module))
    return found


def _feature(module: str) -> str | None:
    """The feature a module (dotted, or a path) belongs to: ``jobs``, ``chat``, ``account``…"""
    parts = module.removesuffix(".py").replace("/", ".").split(".")
    return parts[2] if parts[:2] == ["bot", "features"] and len(parts) > 2 else None


def feature_arrows() -> set[tuple[str, str]]:
    """Every (feature, other feature it imports)."""
    arrows: set[tuple[str, str]] = set()
    for path in _sources("bot/features"):
        source = _feature(_name(path))
        for module in _modules(ast.parse(path.read_text())):
            target = _feature(module)
            if source is not None and target is not None and source != target:
                arrows.add((source, target))
    return arrows


def test_the_layers_of_bot_import_only_downwards() -> None:
    assert sorted(upward_imports()) == []


def test_features_import_each_other_only_as_allowed() -> None:
    assert feature_arrows() <= FEATURE_ARROWS


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
    assert _writes_to_a_surface(ast.parse("await pacer.run(partial(surface.send, place, m))"))
    assert not _writes_to_a_surface(ast.parse("await self.outbox.write(place, post, policy)"))
    assert _writes_to_a_surface(ast.parse((ROOT / OUTBOX).read_text()))
    assert _surface_names_imported(ast.parse("from bot.kernel import Place, Surface")) == {
        "Surface"
    }
    assert _surface_names_imported(ast.parse("from bot.kernel.registry import SurfaceRegistry"))
    assert not _surface_names_imported(ast.parse("from bot.kernel import PlatformProfile"))
    assert _surface_names_imported(ast.parse((ROOT / OUTBOX).read_text()))
    assert _feature("bot.features.jobs.tracking.tracker") == "jobs"
    assert _feature("bot/features/account.py") == "account"
    assert _feature("bot.features") is None and _feature("bot.kernel.events") is None
    assert _within("bot.features.chat", ("bot.features",))
    assert not _within("bot.featuresque", ("bot.features",))
    assert _modules(ast.parse("from bot.router import Homes\nimport genbot.compose")) == {
        "bot.router",
        "genbot.compose",
    }
