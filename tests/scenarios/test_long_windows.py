"""Symptoms whose rules look back minutes (a stall of 3 m, churn or DLQ growth over 10 m), played in seconds.

The simulator fast-forwards its model 30 s between collection cycles, and each cycle is stamped
with the model's clock, so the store holds minutes of real-looking history: offsets, pulls and
client lists moved by the model exactly as they would have in that time. The built-in rules are
evaluated unchanged (their `over:` windows included) at the last cycle.
"""

from __future__ import annotations

import asyncio
import contextlib
from datetime import UTC, datetime, timedelta

import pytest

from daemon.collectors.cluster import collect_cluster
from daemon.collectors.remoting.admin import AdminClient
from daemon.collectors.remoting.client import RemotingClient
from daemon.diagnose.rules_eval import builtin_rules
from daemon.simulator import SimulatorThread
from daemon.simulator.scenarios_symptoms import GROUP_A
from daemon.store.writer import ParquetStore
from rules.findings import Finding
from tests.scenarios.judge import Case, assert_fires_only_its_rule

pytestmark = pytest.mark.spark

STEP_S = 30.0  # model seconds between cycles: the daemon's default collect interval
CYCLES = 9  # four minutes of history: more than StuckMessage's 3 m stall
TIMEOUT_S = 1.0

CASES: dict[str, Case] = {
    "dlq-growth": Case(
        # Every 10th message fails three times (maxReconsumeTimes 2) and is dead-lettered: hundreds in 4 min.
        [("DeadLetterQueueGrowing", {"group": GROUP_A}, "critical")],
    ),
    "one-stuck-message": Case(
        [("StuckMessage", {"group": GROUP_A, "broker": "broker-a", "queue_id": "3"}, "warning")],
        # The same hung message also freezes the queue's committed offset while its lag grows.
        may_also=frozenset({"ConsumerOffsetStalled", "ConsumeDelayHigh"}),
    ),
    "retry-storm": Case(
        # A client joins and one leaves every 5 s; sampled every 30 s, each of the 8 later cycles sees a
        # new owner set: 8 changes in 4 minutes is past the warning (3), not yet the critical (10).
        [("RebalanceChurn", {"group": GROUP_A}, "warning")],
        # Queues in flight between owners briefly look held by two clients, and pause.
        may_also=frozenset({"QueueHeldByTwoClients", "ConsumeDelayHigh"}),
    ),
}


def _model_now(sim: SimulatorThread) -> datetime:
    return datetime.fromtimestamp(sim.inspect(lambda m: m.epoch_ms()) / 1000, UTC)


def _collect(sims: dict[str, SimulatorThread], store: ParquetStore) -> datetime:
    """CYCLES cycles of every cluster, STEP_S model seconds apart, each stamped with its model time."""

    async def run() -> datetime:
        async with RemotingClient(default_timeout=TIMEOUT_S, connect_timeout=TIMEOUT_S) as client:
            admin = AdminClient(client)
            latest = datetime.min.replace(tzinfo=UTC)
            for i in range(CYCLES):
                if i:
                    for sim in sims.values():
                        await asyncio.to_thread(sim.fast_forward, STEP_S)
                for name, sim in sims.items():
                    now = await asyncio.to_thread(_model_now, sim)
                    result = await collect_cluster(admin, name, [sim.namesrv_addr], now, call_timeout=TIMEOUT_S)
                    store.append_all(result.rows, now)
                    latest = max(latest, now)
        return latest

    return asyncio.run(run())


@pytest.fixture(scope="module")
def played(spark: object, tmp_path_factory: pytest.TempPathFactory) -> dict[str, list[Finding]]:
    """Both scenarios served and collected into one store, the whole pack evaluated once: name → firing."""
    from spark.evaluate import Evaluator

    root = tmp_path_factory.mktemp("long-windows")
    with contextlib.ExitStack() as stack:
        sims = {name: stack.enter_context(SimulatorThread(name, cluster=name)) for name in CASES}
        now = _collect(sims, ParquetStore(root))
    # Clusters are stamped a few milliseconds apart; a stale_after of 1.5 steps covers the last cycle of each.
    findings = Evaluator(spark, root).evaluate(builtin_rules(), now, timedelta(seconds=STEP_S * 1.5))
    firing = [f for f in findings if not f.no_data and f.severity is not None]
    return {name: [f for f in firing if f.labels.get("cluster") == name] for name in CASES}


@pytest.mark.parametrize("name", sorted(CASES))
def test_a_minutes_long_symptom_fires_its_rule_with_its_cause(name: str, played: dict) -> None:
    assert_fires_only_its_rule(name, CASES[name], played[name])
