"""The same cycle against brokers answering as 4.9.7 and as 5.3.3: the collector reads the version
every response carries, and fills what only 5.x says (pullOffset, brokerActive, the renamed TPS key, pop-mode
clients, timer and half-message backlogs, the native metrics page)."""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime
from typing import Any

import pytest

from config.native_metrics import NativeMetricsConfig
from daemon.collectors.cluster import CollectResult, collect_cluster
from daemon.collectors.native_metrics import collect_native
from daemon.collectors.remoting.admin import AdminClient
from daemon.collectors.remoting.client import RemotingClient
from daemon.simulator import SimulatorThread
from tests.helpers.waiting import offsets_committed, pulled_ahead_of_commit

pytestmark = pytest.mark.timeout(60)


def _cycle(version: int) -> tuple[CollectResult, dict[str, int | None]]:
    with SimulatorThread("healthy", server_version=version) as sim:
        offsets_committed(sim, topics=["OrderTopic"])
        pulled_ahead_of_commit(sim)  # a few pulls, so pull offsets run ahead of the committed ones

        async def run() -> tuple[CollectResult, dict[str, int | None]]:
            async with RemotingClient(default_timeout=2.0, connect_timeout=1.0) as client:
                result = await collect_cluster(AdminClient(client), "DefaultCluster", [sim.namesrv_addr],
                                               datetime.now(UTC), call_timeout=2.0)
                return result, {name: client.server_version(addr) for name, addr in sim.broker_addrs.items()}

        return asyncio.run(run())


def test_a_5x_broker_is_recognised_and_its_pull_offsets_split_lag_into_in_flight_and_waiting() -> None:
    result, versions = _cycle(479)
    assert set(versions.values()) == {479}
    queues = [r for r in result.rows["consumer_queue"] if r["topic_kind"] == "normal"]
    assert queues and all(r["pull_offset"] is not None for r in queues)
    assert all(r["consumer_offset"] <= r["pull_offset"] <= r["broker_offset"] for r in queues)
    assert any(r["pull_offset"] > r["consumer_offset"] for r in queues), "nothing in flight after a second of traffic"
    for row in result.rows["broker"]:
        assert row["version"] == "V5_3_3" and row["broker_active"] is True
        assert row["get_transferred_tps"] is not None  # 5.x spells it getTransferredTps


def test_a_49x_broker_has_no_pull_offset_and_no_broker_active() -> None:
    result, versions = _cycle(407)
    assert set(versions.values()) == {407}
    assert all(r["pull_offset"] is None for r in result.rows["consumer_queue"])
    for row in result.rows["broker"]:
        assert row["version"] == "V4_9_7" and row["broker_active"] is None
        assert row["get_transferred_tps"] is not None  # 4.x spells it getTransferedTps


def test_a_pop_mode_client_is_listed_as_push_and_found_by_its_pop_table() -> None:
    with SimulatorThread("pop-stuck", time_scale=0.05) as sim:
        sim.fast_forward(20)  # the four threads blocked at 3 s; the client stopped popping since

        async def run() -> CollectResult:
            async with RemotingClient(default_timeout=2.0, connect_timeout=1.0) as client:
                return await collect_cluster(AdminClient(client), "DefaultCluster", [sim.namesrv_addr],
                                             datetime.now(UTC), call_timeout=2.0)

        result = asyncio.run(run())
    rows = result.rows
    # As a real 5.3.3 broker lists it: CONSUME_PASSIVELY, never CONSUME_POP.
    assert {r["consume_type"] for r in rows["consumer_client"] if r["group"] == "popGroup"} == {"CONSUME_PASSIVELY"}
    pops = {r["broker"]: r for r in rows["pop_queue"] if r["group"] == "popGroup"}
    assert pops["broker-a"]["queue_id"] == -1 and pops["broker-a"]["topic"] == "PopTopic"
    assert pops["broker-a"]["wait_ack_count"] > pops["broker-a"]["pop_threshold_for_queue"] == 96
    assert not [r for r in rows["pop_queue"] if r["group"] == "mailGroup"]
    # Its only ProcessQueues are the classic retry topic's; the broker still reports its offsets and lag.
    assert {r["topic"] for r in rows["process_queue"] if r["group"] == "popGroup"} == {"%RETRY%popGroup"}
    assert any(r["group"] == "popGroup" and r["topic"] == "PopTopic" for r in rows["consumer_queue"])
    retry = {r["topic"]: r["group"] for r in rows["topic_queue"] if r["topic_kind"] == "retry"}
    assert retry.get("%RETRY%popGroup_PopTopic") == "popGroup"


@pytest.mark.parametrize(("scenario", "check"), [
    ("timer-backlog", lambda rows, broker: rows["native_topic"] and broker["timer_congest_num"] > 0),
    ("half-unresolved", lambda rows, broker: {r["topic"]: r["half_messages"] for r in rows["native_topic"]}["TxTopic"] > 0),
])
def test_a_53x_simulator_serves_native_metrics_with_timer_and_half_backlogs(scenario: str, check: Any) -> None:
    with SimulatorThread(scenario, time_scale=0.05) as sim:
        sim.fast_forward(20)

        async def run() -> tuple[CollectResult, CollectResult]:
            async with RemotingClient(default_timeout=2.0, connect_timeout=1.0) as client:
                remoting = await collect_cluster(AdminClient(client), "DefaultCluster", [sim.namesrv_addr],
                                                 datetime.now(UTC), call_timeout=2.0)
            native = await collect_native("DefaultCluster", NativeMetricsConfig(port=sim.metrics_port),
                                          remoting.rows["broker"], datetime.now(UTC))
            return remoting, native

        remoting, native = asyncio.run(run())
    (health,) = native.rows["collector_health"]
    assert health["ok"] and health["call"] == "NATIVE_METRICS_SCRAPE"
    broker_a = next(r for r in remoting.rows["broker"] if r["broker"] == "broker-a")
    assert check(native.rows, broker_a)
    # The page has the real quirks: a family read under its suffixed sample name, one it does not read.
    assert {r["broker"] for r in native.rows["native_broker"]} == {"broker-a", "broker-b"}
    assert all(r["unknown_families"] >= 1 for r in native.rows["native_broker"])
    assert all(r["lag_latency_ms"] is not None for r in native.rows["native_consumer"])
