"""One collection cycle of a production-sized simulated cluster, row for row against its model.

3 brokers x 300 topics x 100 groups x 8 queues, 2 clients per group (the `scale` scenario):
every table the cycle fills is compared with the model, frozen for the cycle so that each answer
describes the same instant. Timing lives in bench/collect_cycle.py, not here.
"""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime
from typing import Any

import pytest

from daemon.collectors.cluster import CollectResult, collect_cluster
from daemon.collectors.remoting.admin import AdminClient
from daemon.collectors.remoting.client import RemotingClient
from daemon.simulator import SimulatorThread
from daemon.simulator.model import ClusterModel

pytestmark = pytest.mark.timeout(240)

GROUPS, CLIENTS_PER_GROUP, BROKERS = 100, 2, 3


@pytest.fixture(scope="module")
def cycle() -> tuple[CollectResult, dict[str, Any]]:
    """One cycle over the wire, and what the frozen model held at that instant."""
    with SimulatorThread("scale") as sim:
        sim.freeze()

        async def run() -> CollectResult:
            async with RemotingClient(default_timeout=20.0, connect_timeout=5.0) as client:
                return await collect_cluster(AdminClient(client), "DefaultCluster", [sim.namesrv_addr],
                                             datetime.now(UTC), call_timeout=20.0, concurrency=8)

        result = asyncio.run(run())
        expected = sim.inspect(_expected)
    return result, expected


def _expected(model: ClusterModel) -> dict[str, Any]:
    pqs, queues, clients, topic_offsets = {}, {}, set(), {}
    for group in model.groups.values():
        for client in group.clients:
            clients.add((group.name, client.client_id))
            for mq, pq in client.pqs.items():
                pqs[(group.name, mq.topic, mq.broker, mq.queue_id, client.client_id)] = (
                    pq.count, pq.min_offset, pq.commit_offset)
        for topic in group.subscribed:
            for mq in model.queues_of(topic):
                broker = model.brokers[mq.broker]
                queues[(group.name, mq.topic, mq.broker, mq.queue_id)] = (
                    model.max_offset(mq), broker.committed(group.name, mq.topic, mq.queue_id))
                topic_offsets[(mq.topic, mq.broker, mq.queue_id)] = model.max_offset(mq)
    return {"pqs": pqs, "queues": queues, "clients": clients, "topics": topic_offsets}


def test_the_cycle_asks_every_broker_group_and_client_and_nothing_fails(cycle) -> None:
    result, _ = cycle
    assert (result.masters, result.groups, result.online_groups, result.clients) == (
        BROKERS, GROUPS, GROUPS, GROUPS * CLIENTS_PER_GROUP)
    failed = [r for r in result.rows["collector_health"] if not r["ok"]]
    assert not failed, failed[:5]
    assert len(result.rows["broker"]) == BROKERS


def test_every_process_queue_row_is_the_clients_own(cycle) -> None:
    result, expected = cycle
    got = {(r["group"], r["topic"], r["broker"], r["queue_id"], r["client_id"]):
           (r["cached_msg_count"], r["cached_min_offset"], r["commit_offset"]) for r in result.rows["process_queue"]}
    assert len(got) == len(result.rows["process_queue"]) == 7_500  # 7,200 topic queues + 300 %RETRY% queues
    assert got == expected["pqs"]


def test_every_consumer_queue_row_has_the_brokers_offsets(cycle) -> None:
    result, expected = cycle
    got = {(r["group"], r["topic"], r["broker"], r["queue_id"]): (r["broker_offset"], r["consumer_offset"])
           for r in result.rows["consumer_queue"]}
    assert got == expected["queues"]


def test_every_client_and_every_consumed_topic_queue_is_there(cycle) -> None:
    result, expected = cycle
    assert {(r["group"], r["client_id"]) for r in result.rows["consumer_client"]} == expected["clients"]
    got = {(r["topic"], r["broker"], r["queue_id"]): r["max_offset"] for r in result.rows["topic_queue"]}
    assert got == expected["topics"]  # no %DLQ% rows: no dead letter yet, so the topics do not exist


def test_no_broker_is_asked_more_than_its_share_at_once() -> None:
    """Overall 8 calls at a time, at most 4 on one broker: a slow broker cannot take every slot."""
    with SimulatorThread("healthy") as sim:
        sim.set_fault("broker-a", delay_s=0.2)

        async def run() -> CollectResult:
            async with RemotingClient(default_timeout=5.0, connect_timeout=2.0) as client:
                return await collect_cluster(AdminClient(client), "DefaultCluster", [sim.namesrv_addr],
                                             datetime.now(UTC), call_timeout=5.0, concurrency=8, per_broker=4)

        result = asyncio.run(run())
        peaks = dict(sim.sim.peak_inflight)  # type: ignore[union-attr]  # read after the cycle, nothing in flight
    assert not [r for r in result.rows["collector_health"] if not r["ok"]]
    assert 1 < peaks["broker-a"] <= 4 and max(peaks.values()) <= 4, peaks


def test_every_client_reports_status_per_topic_and_every_queue_its_consume_delay(cycle) -> None:
    result, expected = cycle
    topics_per_client = {(g, c): {t for (g2, t, _, _, c2) in expected["pqs"] if (g2, c2) == (g, c)}
                         for g, c in expected["clients"]}
    got = {(r["group"], r["client_id"], r["topic"]) for r in result.rows["consumer_status"]}
    assert got == {(g, c, t) for (g, c), topics in topics_per_client.items() for t in topics}
    normal = [r for r in result.rows["consumer_queue"] if r["topic_kind"] == "normal"]
    assert len(normal) == 7_200 and all(r["consume_delay_ms"] is not None for r in normal)
