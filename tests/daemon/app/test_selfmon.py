"""The daemon's own health rows (real SQLite outbox, real Parquet store) and the partial tracker update."""

from __future__ import annotations

import asyncio
from datetime import timedelta

import pyarrow.parquet as pq
import pytest

from config.ha import HaConfig
from daemon.alerts.db import StateDB
from daemon.alerts.model import EventKind
from daemon.app.selfmon import SelfMonitor, self_rules
from daemon.coordination.factory import service_for
from daemon.notify.dispatcher import Dispatcher
from daemon.notify.outbox import Outbox
from daemon.store.writer import ParquetStore, partition_dir
from rules.findings import Finding, RuleTiming
from rules.loader import load_rule_files
from tests.daemon.notify.conftest import Cycle, at, span
from tests.helpers.daemon_proc import free_port


@pytest.fixture
def db(tmp_path):
    db = StateDB(tmp_path / "state.db")
    yield db
    db.close()


def test_the_health_row_reports_the_outbox_backlog_the_failure_streak_and_the_disk(tmp_path, db):
    cycle = Cycle(db, ["oncall-mail"])
    cycle.run([span(), span(group="payGroup")], at(0))  # two groups -> two undelivered rows, queued at T0
    store = ParquetStore(tmp_path / "store")
    monitor = SelfMonitor(store, db, tmp_path / "store", timedelta(seconds=30), host="ops-1")
    monitor.evaluation_done(4.5)
    monitor.evaluation_failed()
    monitor.evaluation_failed()

    row = monitor.record(at(95), last_cycle_at=at(60))

    assert (row["cluster"], row["host"]) == ("rocketwatch", "ops-1")
    assert (row["outbox_depth"], row["outbox_oldest_age_s"]) == (2, 95.0)
    assert (row["evaluation_failures"], row["evaluate_seconds"], row["last_cycle_age_s"]) == (2, 4.5, 35.0)
    assert row["store_free_bytes"] > 0 and 0 < row["store_free_ratio"] <= 1
    (written,) = (tmp_path / "store" / "daemon_health").rglob("*.parquet")
    assert written.parent == partition_dir(tmp_path / "store", "daemon_health", at(95))
    assert pq.read_table(written).to_pylist()[0]["outbox_depth"] == 2

    monitor.evaluation_done(3.0)  # one success ends the streak
    assert monitor.row(at(125), at(120))["evaluation_failures"] == 0


def test_an_empty_outbox_is_zero_old_not_missing(tmp_path, db):
    monitor = SelfMonitor(ParquetStore(tmp_path), db, tmp_path, timedelta(seconds=30), host="ops-1")
    row = monitor.row(at(0), None)
    assert (row["outbox_depth"], row["outbox_oldest_age_s"], row["last_cycle_age_s"]) == (0, 0.0, None)


def test_notifications_held_while_the_coordinator_is_away_are_in_the_row(tmp_path, db):
    # A PostgreSQL coordinator on a port nobody listens on: the daemon starts, holds nothing, and what
    # it would send is queued held; its health row says so, for RocketwatchNotificationsHeld.
    ha = HaConfig(connection=f"host=127.0.0.1 port={free_port()} dbname=rocketwatch user=rw connect_timeout=1",
                  timeout="1s", node="ops-1")
    service = service_for(ha, tmp_path / "state.db")
    cycle = Cycle(db, ["oncall-mail"])
    cycle.outbox = Outbox(db, coordination=service)
    cycle.dispatcher = Dispatcher(cycle.outbox, ["oncall-mail"], ["alertname", "cluster", "group"])
    monitor = SelfMonitor(ParquetStore(tmp_path / "store"), db, tmp_path / "store", timedelta(seconds=30),
                          host="ops-1", coordination=service)

    async def away() -> dict:
        await service.start()
        try:
            await cycle.arun([span(), span(group="payGroup")], at(0))
            return monitor.row(at(40), at(30))
        finally:
            await service.stop()

    row = asyncio.run(away())
    assert (row["ha_coordinator_up"], row["held_notifications"], row["held_oldest_age_s"]) == (0, 2, 40.0)
    assert row["outbox_depth"] == 2


def test_a_single_node_coordinator_is_up_and_holds_nothing(tmp_path, db):
    cycle = Cycle(db, ["oncall-mail"])
    cycle.run([span()], at(0))
    monitor = SelfMonitor(ParquetStore(tmp_path), db, tmp_path, timedelta(seconds=30), host="ops-1",
                          coordination=cycle.outbox.coordination)
    row = monitor.row(at(10), None)
    assert (row["ha_coordinator_up"], row["held_notifications"], row["held_oldest_age_s"]) == (1, 0, 0.0)
    assert row["outbox_depth"] == 1


def test_the_builtin_pack_has_self_rules_and_only_they_run_after_a_failed_evaluation():
    rules = self_rules(load_rule_files(["builtin"]).rules)
    assert {r.alert for r in rules} >= {
        "RocketwatchEvaluationFailing", "RocketwatchEvaluationSlow", "RocketwatchOutboxBackingUp",
        "RocketwatchStoreDiskFilling", "RocketwatchCoordinatorUnreachable", "RocketwatchNotificationsHeld"}
    assert all(r.table == "daemon_health" for r in rules)


def test_a_partial_update_leaves_other_rules_alerts_firing(db):
    cycle = Cycle(db, ["oncall-mail"])
    cycle.run([span()], at(0))  # ProcessQueueSpanTooLong fires (for 0)
    failing = Finding("RocketwatchEvaluationFailing", {"cluster": "rocketwatch", "host": "ops-1"}, "warning", 2, 1,
                      {"summary": "rocketwatch on ops-1: the last 2 rule evaluations failed"})
    timings = {"RocketwatchEvaluationFailing": RuleTiming("RocketwatchEvaluationFailing")}

    events = cycle.tracker.update(timings, [failing], at(30), only_evaluated=True)

    assert [(e.kind, e.alert.rule) for e in events] == [(EventKind.FIRING, "RocketwatchEvaluationFailing")]
    assert {a.rule for a in cycle.tracker.active_alerts()} == {"ProcessQueueSpanTooLong",
                                                               "RocketwatchEvaluationFailing"}
    # Without the flag the same call would resolve the span alert as if its rule were gone.
    events = cycle.tracker.update(timings, [failing], at(60))
    assert [(e.kind, e.alert.rule) for e in events] == [(EventKind.RESOLVED, "ProcessQueueSpanTooLong")]
