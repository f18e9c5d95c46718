"""`one-stuck-message` seen by the real collector plays what the 4.9.7 capture shows for ONE hung message
(fixtures README step 2, timeline_A.log 23:37:13 "tree drained to {0}"): the committed offset stays on the
hung message, every message behind it is still pulled and consumed, the ProcessQueue drains to just the
hung message (count 1, span 0), and the "span too long" flow control only delays a pull now and then —
it stops a queue for good only with a second hung message more than 2000 offsets on (`stuck-far-apart`)."""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime
from typing import Any

import pytest

from daemon.collectors.cluster import CollectResult, collect_cluster
from daemon.collectors.remoting.admin import AdminClient
from daemon.collectors.remoting.client import RemotingClient
from daemon.simulator import SimulatorThread
from tests.helpers.waiting import wait_until

A = "orderConsumerA"
Q3 = ("OrderTopic", "broker-a", 3)
MAX_SPAN = 2000  # consumeConcurrentlyMaxSpan
RATE = 5.0  # messages/s per queue in the scenario
TIMEOUT_S = 2.0


def _collect(sim: SimulatorThread) -> CollectResult:
    async def run() -> CollectResult:
        async with RemotingClient(default_timeout=TIMEOUT_S, connect_timeout=TIMEOUT_S) as client:
            return await collect_cluster(AdminClient(client), "DefaultCluster", [sim.namesrv_addr], datetime.now(UTC),
                                         call_timeout=TIMEOUT_S)

    return asyncio.run(run())


def _row(result: CollectResult, table: str) -> dict[str, Any] | None:
    return next((r for r in result.rows[table]
                 if r["group"] == A and (r["topic"], r["broker"], r["queue_id"]) == Q3), None)


def _q3(sim: SimulatorThread) -> tuple[dict[str, Any], dict[str, Any]]:
    """Group A's (consumer_queue, process_queue) rows of broker-a/3, once a cycle has both."""
    def both() -> tuple[dict[str, Any], dict[str, Any]] | None:
        result = _collect(sim)
        cq, pq = _row(result, "consumer_queue"), _row(result, "process_queue")
        return (cq, pq) if cq is not None and pq is not None else None

    return wait_until(both, "group A's broker-a/3 in ConsumeStats and running info")


@pytest.mark.parametrize("version", [407, 479])  # 4.9.7; 5.3.3 also reports the pull offset
def test_one_hung_message_pins_the_commit_while_the_queue_is_still_pulled(version: int) -> None:
    with SimulatorThread("one-stuck-message", server_version=version) as sim:
        _, pq = _q3(sim)
        hung = pq["cached_min_offset"]
        assert pq["cached_msg_count"] == 1 and pq["commit_offset"] == hung, pq
        # Let the topic's traffic carry queue 3 well past hung + 2000: every pull from then on puts the
        # ProcessQueue's span over consumeConcurrentlyMaxSpan until its batch is consumed.
        sim.fast_forward((MAX_SPAN + 200) / RATE)
        cq, pq = _q3(sim)
        assert cq["broker_offset"] - hung > MAX_SPAN + 100, cq
        assert cq["consumer_offset"] == hung and pq["commit_offset"] == hung, (cq, pq)  # pinned
        # Drained to the hung message: a consumed message leaves the tree, so count 1 and span 0.
        assert (pq["cached_msg_count"], pq["cached_min_offset"], pq["cached_max_offset"]) == (1, hung, hung), pq
        consumed_at = pq["last_consume_ts"]
        # Still pulled: messages written after the span passed 2000 keep being consumed.
        sim.fast_forward(20.0)
        _, later = _q3(sim)
        assert later["last_consume_ts"] > consumed_at and later["commit_offset"] == hung, later
        if version >= 433:
            # A 5.x broker reports how far the client pulled: up to what was written, not hung + 1.
            cq, _ = _q3(sim)
            assert cq["pull_offset"] >= cq["broker_offset"] - 32, cq
