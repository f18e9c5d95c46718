"""A broker that leaves one kind of request unanswered is degraded collection, not an unreachable broker.

Over the wire: the `call-timeout` scenario's broker-a never answers QUERY_CONSUME_TIME_SPAN and
answers everything else; broker-b is refused outright. One real collection cycle goes into a store
and the built-in collector rules are evaluated on it with Spark.
"""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from daemon.collectors.cluster import CollectResult, collect_cluster
from daemon.collectors.remoting.admin import AdminClient
from daemon.collectors.remoting.client import RemotingClient
from daemon.simulator import SimulatorThread
from daemon.store.writer import ParquetStore
from rules.loader import BUILTIN_DIR, load_rule_files

TIMEOUT_S = 1.0


def _cycle(sim: SimulatorThread, now: datetime) -> CollectResult:
    async def run() -> CollectResult:
        async with RemotingClient(default_timeout=TIMEOUT_S, connect_timeout=TIMEOUT_S) as client:
            return await collect_cluster(AdminClient(client), "DefaultCluster", [sim.namesrv_addr], now,
                                         call_timeout=TIMEOUT_S)

    return asyncio.run(run())


def test_each_health_row_says_how_its_target_fared_in_the_cycle() -> None:
    with SimulatorThread("call-timeout", time_scale=0.1) as sim:
        sim.set_fault("broker-b", refuse=True)
        result = _cycle(sim, datetime.now(UTC))
        a, b, namesrv = sim.broker_addrs["broker-a"], sim.broker_addrs["broker-b"], sim.namesrv_addr
    rows = result.rows["collector_health"]
    answered_a = sum(1 for r in rows if r["target"] == a and r["ok"])
    assert answered_a > 0
    assert {(r["target_ok_calls"], r["target_failing"]) for r in rows if r["target"] == a} == {
        (answered_a, "QUERY_CONSUME_TIME_SPAN")}
    failing_b = {r["call"] for r in rows if r["target"] == b}
    assert {(r["target_ok_calls"], r["target_failing"]) for r in rows if r["target"] == b} == {
        (0, ", ".join(sorted(failing_b)))}
    assert {(r["target_ok_calls"], r["target_failing"]) for r in rows if r["target"] == namesrv} == {
        (sum(1 for r in rows if r["target"] == namesrv), None)}


@pytest.mark.spark
def test_one_unanswered_call_warns_of_degraded_collection_and_a_dead_broker_pages(spark: object, tmp_path: Path) -> None:
    from spark.reference import evaluate_reference

    now = datetime.now(UTC).replace(microsecond=0)
    with SimulatorThread("call-timeout", time_scale=0.1) as sim:
        sim.set_fault("broker-b", refuse=True)
        result = _cycle(sim, now)
        a, b = sim.broker_addrs["broker-a"], sim.broker_addrs["broker-b"]
    ParquetStore(tmp_path).append_all(result.rows, now)
    rules = list(load_rule_files([str(BUILTIN_DIR / "collector.yaml")]).rules)
    found = evaluate_reference(spark, tmp_path, rules, now, timedelta(seconds=60))
    firing = {(f.rule, f.labels["target"], f.severity): f for f in found if f.severity is not None}

    # broker-a answers: a warning that names the one call that fails, and no page.
    assert set(firing) == {("CollectionDegraded", a, "warning"), ("CollectorTargetUnreachable", b, "critical")}
    degraded = firing[("CollectionDegraded", a, "warning")].annotations
    assert f"{a} answers, but these calls to it keep failing: QUERY_CONSUME_TIME_SPAN" in degraded["summary"]
    assert "did not answer QUERY_CONSUME_TIME_SPAN" in degraded["summary"]
    # broker-b answers nothing: that is the unreachable target.
    assert f"nothing can be collected from {b}" in firing[("CollectorTargetUnreachable", b, "critical")].annotations[
        "summary"]
