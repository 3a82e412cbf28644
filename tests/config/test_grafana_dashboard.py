"""config/grafana-dashboard.json: importable (a datasource input, panels with queries), every
panel's query names only metrics genbot exports, and every genbot metric has a panel."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

from prometheus_client import REGISTRY

import bot.kernel.metrics

DASHBOARD = Path(__file__).resolve().parents[2] / "config" / "grafana-dashboard.json"
METRIC_NAME = re.compile(r"\b((?:genbot|process|python)_[a-z0-9_]+)\b")
SUFFIXES = {
    "counter": ("_total", "_created"),
    "histogram": ("_bucket", "_count", "_sum", "_created"),
}


def exported() -> dict[str, str]:
    """Every series name the registry can expose → the metric family it belongs to."""
    assert bot.kernel.metrics.JOBS is not None
    names: dict[str, str] = {}
    for family in REGISTRY.collect():
        names[family.name] = family.name
        for suffix in SUFFIXES.get(family.type, ()):
            names[family.name + suffix] = family.name
        for sample in family.samples:
            names[sample.name] = family.name
    return names


def dashboard() -> dict[str, Any]:
    loaded = json.loads(DASHBOARD.read_text())
    assert isinstance(loaded, dict)
    return loaded


def test_the_dashboard_is_importable() -> None:
    board = dashboard()
    [source] = board["__inputs"]
    assert source["type"] == "datasource" and source["pluginId"] == "prometheus"
    assert board["title"] and board["uid"] and board["schemaVersion"] >= 30
    ids = [panel["id"] for panel in board["panels"]]
    assert len(ids) == len(set(ids))
    for panel in board["panels"]:
        assert panel["targets"], panel["title"]
        assert panel["datasource"]["uid"] == "${DS_PROMETHEUS}"


def test_every_panel_query_names_a_metric_genbot_exports() -> None:
    known = exported()
    for panel in dashboard()["panels"]:
        for target in panel["targets"]:
            named = METRIC_NAME.findall(target["expr"])
            assert named, f"{panel['title']}: {target['expr']}"
            unknown = [name for name in named if name not in known]
            assert not unknown, f"{panel['title']}: {unknown}"


def test_every_genbot_metric_has_a_panel() -> None:
    known = exported()
    shown = {
        known[name]
        for panel in dashboard()["panels"]
        for target in panel["targets"]
        for name in METRIC_NAME.findall(target["expr"])
    }
    ours = {family for family in known.values() if family.startswith("genbot_")}
    assert ours - shown == set()
