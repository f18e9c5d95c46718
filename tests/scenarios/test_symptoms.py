"""Per symptom: the simulator plays the incident, the real collector samples it over the wire into
a Parquet store, the built-in pack is evaluated with Spark, and the rule an operator needs fires
with the right cause labels (group, queue, broker), with no other critical finding beside it.

Scenarios arrive with their history already played (see daemon/simulator/scenarios_symptoms.py),
so a few cycles a second apart suffice. Findings are the rules' conditions at the last cycle,
before any `for:` hold (as `diagnose` reads them); rules whose `over:` window is longer than the
cycles span cannot be judged here and are left out.
"""

from __future__ import annotations

import asyncio
import contextlib
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from daemon.collectors.cluster import collect_cluster
from daemon.collectors.remoting.admin import AdminClient
from daemon.collectors.remoting.client import RemotingClient
from daemon.diagnose.rules_eval import builtin_rules
from daemon.simulator import SimulatorThread
from daemon.simulator.scenarios_symptoms import GROUP_A
from daemon.store.writer import ParquetStore
from rules.findings import Finding
from rules.kinds.base import RuleBase
from spark.session import get_session as spark_session
from tests.scenarios.judge import Case, assert_fires_only_its_rule, show

pytestmark = pytest.mark.spark

CYCLES = 3
INTERVAL_S = 1.0
TIMEOUT_S = 1.0


CASES: dict[str, Case] = {
    "stuck-far-apart": Case(
        [("ProcessQueueSpanTooLong", {"group": GROUP_A, "broker": "broker-a", "queue_id": "3"}, "critical")],
        # The hung thread's queue is also flow-controlled and may carry a big cache.
        may_also=frozenset({"ProcessQueueCachedCountHigh"}),
    ),
    "blocked-consumer": Case(
        [("ConsumptionBlocked", {"group": GROUP_A}, "warning")],
        may_also=frozenset({"ProcessQueueCachedCountHigh"}),
    ),
    "slow-consumer": Case(
        [("OneGroupLagging", {"group": GROUP_A, "topic": "OrderTopic"}, "warning")],
        # A slow consumer fills its ProcessQueues up to pullThresholdForQueue: that is the evidence.
        may_also=frozenset({"ProcessQueueCachedCountHigh", "ConsumeDelayHigh"}),
    ),
    "one-group-lagging": Case(
        [("OneGroupLagging", {"group": GROUP_A, "topic": "OrderTopic"}, "warning")],
        may_also=frozenset({"ProcessQueueCachedCountHigh", "ConsumeDelayHigh"}),
    ),
    "all-groups-lagging": Case(
        [("AllGroupsLagging", {"topic": "OrderTopic"}, "warning")],
        may_also=frozenset({"ProcessQueueCachedCountHigh", "ConsumeDelayHigh"}), names_group_b=True,
    ),
    "group-offline": Case(
        [("ConsumerGroupOffline", {"group": GROUP_A}, "critical")],
        may_also=frozenset({"OneGroupLagging"}),
    ),
    "broker-down": Case(
        [("CollectorTargetUnreachable", {}, "critical")],
        fault="broker-b",
    ),
    "healthy-busy": Case([]),
    "dispatch-lag": Case([("DispatchBehind", {"broker": "broker-a"}, "critical")]),
    "put-latency": Case([("BrokerPutLatencyHigh", {"broker": "broker-b"}, "critical")]),
}


def _collect(sims: dict[str, SimulatorThread], store: ParquetStore) -> datetime:
    """CYCLES cycles of every scenario's cluster (named after it), all stamped alike; the last time."""

    async def run() -> datetime:
        async with RemotingClient(default_timeout=TIMEOUT_S, connect_timeout=TIMEOUT_S) as client:
            admin = AdminClient(client)
            for i in range(CYCLES):
                if i:
                    await asyncio.sleep(INTERVAL_S)
                now = datetime.now(UTC)
                results = await asyncio.gather(*(
                    collect_cluster(admin, name, [sim.namesrv_addr], now, call_timeout=TIMEOUT_S)
                    for name, sim in sims.items()
                ))
                for result in results:
                    store.append_all(result.rows, now)
        return now

    return asyncio.run(run())


@dataclass(frozen=True)
class Played:
    """The store every scenario was collected into, what to evaluate on it, and each scenario's brokers."""

    root: Path
    rules: list[RuleBase]
    now: datetime
    addrs: dict[str, dict[str, str]]

    def findings(self) -> list[Finding]:
        """The rules' findings at the last cycle, from kept state (every committed cycle folded)."""
        from spark.evaluate import Evaluator

        return Evaluator(spark_session(), self.root).evaluate(self.rules, self.now, timedelta(seconds=INTERVAL_S * 1.5))

    def reference(self) -> list[Finding]:
        """The rules' findings at the last cycle from their full windows (spark/reference.py)."""
        from spark.reference import evaluate_reference

        return evaluate_reference(spark_session(), self.root, self.rules, self.now, timedelta(seconds=INTERVAL_S * 1.5))


@pytest.fixture(scope="module")
def store(spark: object, tmp_path_factory: pytest.TempPathFactory) -> Played:
    """Every scenario served at once and collected into one store."""
    root = tmp_path_factory.mktemp("symptoms")
    with contextlib.ExitStack() as stack:
        sims = {name: stack.enter_context(SimulatorThread(name, cluster=name, **case.options))
                for name, case in CASES.items()}
        for name, case in CASES.items():
            if case.fault:
                sims[name].set_fault(case.fault, refuse=True)
        addrs = {name: sim.broker_addrs for name, sim in sims.items()}
        first = datetime.now(UTC)
        now = _collect(sims, ParquetStore(root))
    # Only rules the cycles can judge: an `over:` window longer than they span would compare with nothing.
    return Played(root, [r for r in builtin_rules() if r.window() <= now - first], now, addrs)


@pytest.fixture(scope="module")
def played(store: Played) -> dict[str, tuple[list[Finding], dict[str, str]]]:
    """Scenario name → (its firing findings, its broker addresses), from one Spark job."""
    firing = [f for f in store.findings() if not f.no_data and f.severity is not None]
    return {name: ([f for f in firing if f.labels.get("cluster") == name], store.addrs[name]) for name in CASES}


def test_the_kept_state_and_the_full_window_find_the_same(store: Played, played: dict) -> None:
    # The simulator's own collection cycles, committed as the daemon commits them: the engine's kept
    # state must judge them as the reference path judges the window.
    window = [f for f in store.reference() if not f.no_data and f.severity is not None]
    assert sorted(show([f]) for f in window) == sorted(show([f]) for firing, _ in played.values() for f in firing)
    assert window, "the scenarios fire rules: an empty result would prove nothing"


@pytest.mark.parametrize("name", sorted(CASES))
def test_symptom_fires_its_rule_with_its_cause(name: str, played: dict) -> None:
    case = CASES[name]
    firing, addrs = played[name]
    assert_fires_only_its_rule(name, case, firing)
    if case.fault:
        assert all(f.labels.get("target") == addrs[case.fault]
                   for f in firing if f.rule == "CollectorTargetUnreachable"), show(firing)
