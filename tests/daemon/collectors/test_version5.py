"""The same cycle against brokers answering as 4.9.7 and as 5.3.3: the collector reads the version
every response carries, and fills what only 5.x says (pullOffset, brokerActive, the renamed TPS key)."""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime

import pytest

from daemon.collectors.cluster import CollectResult, collect_cluster
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


def test_a_pop_group_gets_its_broker_side_rows_and_its_clients_are_not_asked_for_process_queues() -> None:
    with SimulatorThread("healthy", server_version=479) as sim:
        sim.inspect(lambda m: setattr(m.groups["orderConsumerB"], "consume_type", "CONSUME_POP"))
        offsets_committed(sim, topics=["OrderTopic"])

        async def run() -> CollectResult:
            async with RemotingClient(default_timeout=2.0, connect_timeout=1.0) as client:
                return await collect_cluster(AdminClient(client), "DefaultCluster", [sim.namesrv_addr],
                                             datetime.now(UTC), call_timeout=2.0)

        result = asyncio.run(run())
    rows = result.rows
    pop_clients = [r for r in rows["consumer_client"] if r["group"] == "orderConsumerB"]
    assert pop_clients and all(r["consume_type"] == "CONSUME_POP" for r in pop_clients)
    assert any(r["group"] == "orderConsumerB" for r in rows["consumer_queue"])
    assert not [r for r in rows["process_queue"] if r["group"] == "orderConsumerB"]
    assert {r["group"] for r in rows["process_queue"]} == {"orderConsumerA"}
    asked = [r for r in rows["collector_health"] if r["call"] == "GET_CONSUMER_RUNNING_INFO"]
    assert len(asked) == len([r for r in rows["consumer_client"] if r["group"] == "orderConsumerA"])
