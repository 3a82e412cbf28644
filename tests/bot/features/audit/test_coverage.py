"""Every admin action is recorded: each admin check in ``bot/`` is listed here with the audit
kind its action records, or why it is no action (a new admin check fails this test until it is
listed), and every kind is recorded somewhere."""

from __future__ import annotations

import ast
import re
from pathlib import Path

from bot.features.audit import KINDS

ROOT = Path(__file__).resolve().parents[4]
ADMIN_CHECKS: dict[tuple[str, str], str] = {
    ("bot/features/account.py", "_scope"): "settings.changed",
    ("bot/features/moderation/admin.py", "perform"): "moderation.rule_added",
    ("bot/features/audit/command.py", "on_command"): "reading the log changes nothing",
    ("bot/features/jobs/cancel.py", "cancel"): "job.cancelled",
    ("bot/features/moderation/screen.py", "_check"): "an admin's text is refused without offence",
    ("bot/features/jobs/admission.py", "quota_for"): "admins bypass caps: no change to record",
    ("bot/features/chat/caps.py", "answering"): "admins bypass caps: no change to record",
    ("bot/features/jobs/admission.py", "check_use"): "admins bypass tiers: no change to record",
    ("bot/features/chat/caps.py", "check_budget"): "admins bypass tiers: no change to record",
    ("bot/features/chat/caps.py", "check_model"): "admins bypass tiers: no change to record",
    ("bot/features/jobs/prompt_translation.py", "_over_budget"): "admins bypass tiers: no "
    "change to record",
    ("bot/features/account.py", "_tier_usage"): "/usage tells an admin no limit applies",
    ("bot/features/home.py", "on_button"): "posting a result again changes nothing shared",
    ("bot/features/archive/search.py", "check"): "searching everyone's jobs changes nothing",
    ("bot/refs.py", "_job_for"): "pressing a button of another's job makes the admin's own job",
    ("bot/features/console.py", "_admin"): "the admin page's check; its changes are the "
    "moderation command's and the Cancel button's, which record themselves",
    ("bot/refs.py", "_scope"): "opens the settings form; saving it records settings.changed",
    ("bot/refs.py", "_user"): "the confirmation it checks records user.forgotten",
    ("bot/features/retention/forget.py", "_may_name_others"): "user.forgotten",
    ("bot/features/chat/controls.py", "check_asked_by"): "an admin may stop, regenerate, "
    "switch to vision or pick another's answer: that answer changes, nothing shared",
    ("bot/features/account.py", "_usage"): "/usage shows an admin the answers' ratings: "
    "reading changes nothing",
}
"""``(file, function)`` of each ``is_admin`` check → the kind recorded, or why none is."""


def admin_checks() -> set[tuple[str, str]]:
    found: set[tuple[str, str]] = set()
    for path in sorted((ROOT / "bot").rglob("*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for function in ast.walk(tree):
            if not isinstance(function, ast.FunctionDef | ast.AsyncFunctionDef):
                continue
            body = ast.unparse(function)
            inner = [n for n in ast.walk(function) if n is not function]
            nested = any(isinstance(n, ast.FunctionDef | ast.AsyncFunctionDef) for n in inner)
            if ".is_admin" in body and not nested:
                found.add((str(path.relative_to(ROOT)), function.name))
    return found


def test_every_admin_check_is_listed_with_what_it_records() -> None:
    assert admin_checks() == set(ADMIN_CHECKS)
    recorded = {kind for kind in ADMIN_CHECKS.values() if kind in KINDS}
    assert recorded == {
        "settings.changed",
        "moderation.rule_added",
        "job.cancelled",
        "user.forgotten",
    }


def test_every_kind_is_recorded_somewhere_and_nothing_else_is() -> None:
    calls: set[str] = set()
    for path in (ROOT / "bot").rglob("*.py"):
        calls |= set(re.findall(r"\.record\(\s*\"([a-z_.]+)\"", path.read_text(encoding="utf-8")))
    assert calls == set(KINDS)
