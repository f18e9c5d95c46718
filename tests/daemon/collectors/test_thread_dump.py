"""Clients of the groups in jstack_groups send their jstack (jstackEnable=true), parsed into thread_dump rows;
no other client is asked (a jstack costs the client)."""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime

from config.models import ClusterConfig
from daemon.collectors.cluster import CollectResult, collect_cluster
from daemon.collectors.remoting.admin import AdminClient
from daemon.collectors.remoting.client import RemotingClient
from daemon.simulator import SimulatorThread
from rules.tables import get_table
from tests.helpers.waiting import offsets_committed


def test_only_configured_groups_yield_thread_dump_rows() -> None:
    cluster = ClusterConfig.model_validate(
        {"name": "DefaultCluster", "namesrv": "127.0.0.1:1", "jstack_groups": ["orders*"]}
    )
    with SimulatorThread("healthy", time_scale=0.1, group_a="ordersA", group_b="billingB") as sim:
        offsets_committed(sim)
        clients = sim.inspect(lambda m: sorted(c.client_id for c in m.groups["ordersA"].clients))

        async def run() -> CollectResult:
            async with RemotingClient(default_timeout=2.0) as client:
                return await collect_cluster(AdminClient(client), "DefaultCluster", [sim.namesrv_addr],
                                             datetime.now(UTC), call_timeout=2.0, selection=cluster.selection())

        result = asyncio.run(run())
    rows = result.rows["thread_dump"]
    assert rows and {r["group"] for r in rows} == {"ordersA"}
    assert {r["client_id"] for r in rows} == set(clients)
    assert any(r["thread"].startswith("ConsumeMessageThread") for r in rows)
    assert {r["state"] for r in rows} <= {"RUNNABLE", "BLOCKED", "WAITING", "TIMED_WAITING", "NEW", "TERMINATED"}
    assert all(r["top_frame"] and len(r["stack_hash"]) == 16 for r in rows if r["state"] != "NEW")
    declared = {c.name for c in get_table("thread_dump").columns}
    assert all(set(r) == declared for r in rows)
