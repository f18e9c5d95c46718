"""CollectorTargetUnreachable names the broker only when its target is one, and is linked through it.

Rule unit tests (rules/builtin/tests/collector.test.yaml) match a subset of an alert's labels; this
checks the exact label sets the real evaluation gives: no `broker` label at all (not "None", not "")
for a name server, so its alert explains nothing on the broker side.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from daemon.collectors.health import with_target_figures
from daemon.store.writer import ParquetStore
from rules.findings import Finding
from rules.links import CausalLinks
from rules.loader import load_rule_files

pytestmark = pytest.mark.spark


def _row(now: datetime, target: str, call: str, ok: bool) -> dict[str, object]:
    return {"ts": now, "cluster": "prod", "target": target, "call": call, "ok": ok,
            "error": None if ok else "connection refused", "latency_ms": 1.0}


def test_only_a_broker_target_gives_a_broker_label(spark: object, tmp_path: Path) -> None:
    from spark.reference import evaluate_reference

    now = datetime(2026, 11, 26, 8, 54, tzinfo=UTC)
    rows = with_target_figures(
        [_row(now, "10.0.0.9:9876", "GET_BROKER_CLUSTER_INFO", False),
         _row(now, "10.0.0.1:9876", "GET_BROKER_CLUSTER_INFO", True),
         _row(now, "10.0.0.2:10911", "GET_BROKER_RUNTIME_INFO", False),
         _row(now, "10.0.0.2:10911", "GET_CONSUME_STATS", False)],
        {"10.0.0.2:10911": ("broker-b", 0)},
    )
    ParquetStore(tmp_path).append_all({"collector_health": rows}, now)
    pack = load_rule_files(["builtin"])
    found = evaluate_reference(spark, tmp_path, [pack.get("CollectorTargetUnreachable")], now, timedelta(seconds=60))
    labels = sorted((f.labels for f in found if f.severity is not None), key=lambda x: x["target"])
    assert labels == [
        {"cluster": "prod", "target": "10.0.0.2:10911", "broker": "broker-b", "broker_id": "0",
         "category": "collector"},
        {"cluster": "prod", "target": "10.0.0.9:9876", "category": "collector"},
    ]

    links = CausalLinks.from_rules(pack)
    stopped = Finding("BrokerStoppedReporting", {"cluster": "prod", "broker": "broker-b", "broker_id": "0",
                                                 "category": "broker"}, "critical", 300, None)
    broker, name_server = (Finding("CollectorTargetUnreachable", x, "critical", 1, None) for x in labels)
    assert links.explains(broker.rule, broker.labels, stopped.rule, stopped.labels) is not None
    assert links.explains(name_server.rule, name_server.labels, stopped.rule, stopped.labels) is None

