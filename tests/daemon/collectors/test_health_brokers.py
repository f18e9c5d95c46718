"""collector_health rows of calls to a broker name the broker (name and id from the cluster info); rows of
name-server calls, and of collectors that talk to no broker, leave both null.

So CollectorTargetUnreachable can carry the broker its address belongs to, and be linked to the
broker's own alerts (BrokerStoppedReporting, rules/builtin/broker-availability.yaml).
"""

from __future__ import annotations

import asyncio
from dataclasses import replace
from datetime import UTC, datetime
from typing import Any

import pytest

from daemon.collectors.cluster import COLLECTOR_HEALTH, CollectResult, collect_cluster
from daemon.collectors.health import with_target_figures
from daemon.collectors.remoting import bodies
from daemon.collectors.remoting.admin import AdminClient
from daemon.collectors.remoting.client import RemotingClient
from daemon.collectors.remoting.errors import RemotingConnectError
from daemon.simulator import SimulatorThread
from rules.tables import get_table
from tests.daemon.collectors.test_cluster import BROKER, NAMESRV, NOW, FakeAdmin

pytestmark = pytest.mark.timeout(60)

TIMEOUT_S = 1.0
STORED = {c.name for c in get_table(COLLECTOR_HEALTH).stored_columns}


def _cycle(sim: SimulatorThread) -> CollectResult:
    async def run() -> CollectResult:
        async with RemotingClient(default_timeout=TIMEOUT_S, connect_timeout=TIMEOUT_S) as client:
            return await collect_cluster(AdminClient(client), "DefaultCluster", [sim.namesrv_addr],
                                         datetime.now(UTC), call_timeout=TIMEOUT_S)

    return asyncio.run(run())


def _brokers_by_target(rows: list[dict[str, Any]]) -> dict[str, set[tuple[Any, Any]]]:
    found: dict[str, set[tuple[Any, Any]]] = {}
    for row in rows:
        found.setdefault(row["target"], set()).add((row["broker"], row["broker_id"]))
    return found


def test_over_the_wire_each_broker_call_names_its_broker_and_name_server_calls_none() -> None:
    # The simulator answers 106 with the real brokerAddrTable bytes; broker-b refuses every connection.
    with SimulatorThread("healthy", time_scale=0.1) as sim:
        sim.set_fault("broker-b", refuse=True)
        result = _cycle(sim)
        a, b, namesrv = sim.broker_addrs["broker-a"], sim.broker_addrs["broker-b"], sim.namesrv_addr
    rows = result.rows[COLLECTOR_HEALTH]
    assert all(set(r) == STORED for r in rows)
    assert _brokers_by_target(rows) == {
        namesrv: {(None, None)},
        a: {("broker-a", 0)},
        b: {("broker-b", 0)},  # unreachable, yet named: the address is in the cluster info
    }
    assert {r["call"] for r in rows if r["target"] == namesrv} >= {"GET_BROKER_CLUSTER_INFO"}
    assert not any(r["ok"] for r in rows if r["target"] == b)


class _MasterAndSlave(FakeAdmin):
    """The captured cluster, with a slave (broker id 1) of broker-a registered too."""

    SLAVE = "127.0.0.1:10921"

    async def get_cluster_info(self, namesrv: str, *, timeout: float | None = None) -> bodies.ClusterInfo:
        info = await super().get_cluster_info(namesrv, timeout=timeout)
        a = info.brokers["broker-a"]
        return replace(info, brokers={**info.brokers, "broker-a": replace(a, addrs={**a.addrs, 1: self.SLAVE})})


def test_a_slave_is_named_with_its_own_broker_id() -> None:
    admin = _MasterAndSlave()
    admin.faults[("28", admin.SLAVE)] = RemotingConnectError(admin.SLAVE, "connection refused")
    result = asyncio.run(collect_cluster(admin, "DefaultCluster", [NAMESRV], NOW,  # type: ignore[arg-type]
                                         call_timeout=admin.call_timeout))
    rows = result.rows[COLLECTOR_HEALTH]
    assert _brokers_by_target(rows) == {
        NAMESRV: {(None, None)},
        BROKER: {("broker-a", 0)},
        admin.SLAVE: {("broker-a", 1)},
    }
    (slave,) = [r for r in rows if r["target"] == admin.SLAVE]
    assert (slave["call"], slave["ok"], slave["target_ok_calls"]) == ("GET_BROKER_RUNTIME_INFO", False, 0)


def test_no_cluster_info_no_broker_named() -> None:
    admin = FakeAdmin()
    admin.faults[("106", NAMESRV)] = RemotingConnectError(NAMESRV, "connection refused")
    result = asyncio.run(collect_cluster(admin, "DefaultCluster", [NAMESRV], NOW,  # type: ignore[arg-type]
                                         call_timeout=admin.call_timeout))
    (row,) = result.rows[COLLECTOR_HEALTH]
    assert (row["target"], row["broker"], row["broker_id"]) == (NAMESRV, None, None)
    assert set(row) == STORED


def test_rows_of_collectors_that_name_no_broker_get_null_columns() -> None:
    # The exporter and log collectors pass no brokers: their rows still fill every column.
    rows = with_target_figures([{"ts": NOW, "cluster": "c", "target": "http://exporter:5557/metrics",
                                 "call": "EXPORTER_SCRAPE", "ok": True, "error": None, "latency_ms": 3.0}])
    assert (rows[0]["broker"], rows[0]["broker_id"], rows[0]["target_ok_calls"]) == (None, None, 1)
    assert set(rows[0]) == STORED
