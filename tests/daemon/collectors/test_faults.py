"""One broker misbehaving — dead, slow, dying mid-frame, answering broken JSON or bytes from another
protocol — costs that broker its rows and shows in collector_health; the rest of the cycle is
complete, and the next cycle after it recovers collects it again on the same client."""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime

import pytest

from daemon.collectors.cluster import CollectResult, collect_cluster
from daemon.collectors.remoting.admin import AdminClient
from daemon.collectors.remoting.client import RemotingClient
from daemon.simulator import SimulatorThread
from tests.helpers.waiting import offsets_committed

TIMEOUT = 1.0

FAULTS = {
    # name: (set the fault, undo it, words the health row's error must contain)
    "killed": ({"refuse": True}, {"refuse": False}, ("refused", "connect")),
    "slow": ({"delay_s": 2.5}, {"delay_s": 0.0}, ("did not answer",)),
    "drop mid-frame": ({"answer": "drop"}, {"answer": "ok"}, ("closed", "incomplete", "reset", "connection")),
    "malformed body": ({"answer": "malformed"}, {"answer": "ok"}, ("json", "parse", "body", "decode", "expected")),
    "garbage": ({"answer": "garbage"}, {"answer": "ok"}, ("frame", "length", "large", "bytes")),
}


def cycle(sim: SimulatorThread, client: RemotingClient) -> CollectResult:
    async def run() -> CollectResult:
        return await collect_cluster(AdminClient(client), "DefaultCluster", [sim.namesrv_addr], datetime.now(UTC),
                                     call_timeout=TIMEOUT)

    return asyncio.run(run())


def queues_of(result: CollectResult, broker: str) -> set[tuple[str, int]]:
    return {(r["group"], r["queue_id"]) for r in result.rows["consumer_queue"]
            if r["broker"] == broker and r["topic"] == "OrderTopic"}


@pytest.mark.parametrize("fault", sorted(FAULTS))
def test_one_bad_broker_costs_its_rows_only_and_recovers(fault: str) -> None:
    set_fault, undo, words = FAULTS[fault]
    with SimulatorThread("healthy", time_scale=0.1, group_a="ordersA", group_b="ordersB") as sim:
        offsets_committed(sim)
        bad = sim.broker_addrs["broker-b"]
        client = RemotingClient(default_timeout=TIMEOUT, connect_timeout=TIMEOUT)
        try:
            healthy = cycle(sim, client)
            assert queues_of(healthy, "broker-b") and healthy.failed_calls == 0

            sim.set_fault("broker-b", **set_fault)
            broken = cycle(sim, client)

            # broker-a is whole; broker-b's failures are named, one health row per failed call.
            assert queues_of(broken, "broker-a") == queues_of(healthy, "broker-a")
            assert not queues_of(broken, "broker-b")
            failures = [h for h in broken.rows["collector_health"] if not h["ok"]]
            assert failures and all(h["target"] == bad for h in failures), failures
            assert broken.failed_calls == len(failures)
            errors = " ".join(h["error"] or "" for h in failures).lower()
            assert any(w in errors for w in words), errors
            if fault == "slow":
                # Each failure costs its call timeout, never the wait for the late answer: every failed
                # call is the client giving up at TIMEOUT (not an answer, not the cycle's outer bound).
                assert all(f"within {TIMEOUT:g} s" in h["error"] for h in failures), failures

            sim.set_fault("broker-b", **undo)
            recovered = cycle(sim, client)
            assert queues_of(recovered, "broker-b") == queues_of(healthy, "broker-b")
            assert recovered.failed_calls == 0, [h for h in recovered.rows["collector_health"] if not h["ok"]]
        finally:
            asyncio.run(client.close())
