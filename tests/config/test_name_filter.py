"""Operators choose which groups and topics a cycle collects; RocketMQ's own names stay out by default."""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime

import pytest
from pydantic import ValidationError

from config.models import ClusterConfig
from config.name_filter import Selection, is_system_topic
from daemon.collectors.cluster import CollectResult, collect_cluster
from daemon.collectors.remoting.admin import AdminClient
from daemon.collectors.remoting.client import RemotingClient
from daemon.simulator import SimulatorThread
from tests.helpers.waiting import offsets_committed


def cycle(sim: SimulatorThread, selection: Selection | None) -> CollectResult:
    async def run() -> CollectResult:
        async with RemotingClient(default_timeout=2.0) as client:
            return await collect_cluster(AdminClient(client), "DefaultCluster", [sim.namesrv_addr],
                                         datetime.now(UTC), call_timeout=2.0, selection=selection)

    return asyncio.run(run())


def groups_in(result: CollectResult) -> set[str]:
    return {r["group"] for table in ("consumer_queue", "consumer_client") for r in result.rows[table]}


def test_group_and_topic_patterns_from_the_config_decide_what_is_collected() -> None:
    def selection(**patterns: object) -> Selection:
        return ClusterConfig.model_validate({"name": "DefaultCluster", "namesrv": "127.0.0.1:1", **patterns}).selection()

    with SimulatorThread("healthy", time_scale=0.1, group_a="ordersA", group_b="billingB") as sim:
        offsets_committed(sim)
        everything = cycle(sim, None)
        assert {"ordersA", "billingB"} <= groups_in(everything)
        assert not any(g in groups_in(everything) for g in ("TOOLS_CONSUMER", "SCHEDULE_CONSUMER"))

        by_glob = cycle(sim, selection(groups={"exclude": ["billing*"]}))
        assert "ordersA" in groups_in(by_glob) and "billingB" not in groups_in(by_glob)

        by_regex = cycle(sim, selection(groups={"include": ["re:bill.*"]}))
        assert groups_in(by_regex) == {"billingB"}

        topics = {r["topic"] for r in everything.rows["consumer_queue"] if r["topic_kind"] == "normal"}
        assert topics
        dropped = sorted(topics)[0]
        no_topic = cycle(sim, selection(topics={"exclude": [dropped]}))
        kept = {r["topic"] for r in no_topic.rows["consumer_queue"]}
        assert dropped not in kept and dropped not in {r["topic"] for r in no_topic.rows["topic_queue"]}
        # The groups' own retry topics stay: they follow the group, not the topic patterns.
        assert any(t.startswith("%RETRY%") for t in kept)


def test_system_topics_are_recognised_and_a_bad_regex_is_named() -> None:
    assert is_system_topic("SCHEDULE_TOPIC_XXXX") and is_system_topic("rmq_sys_REVIVE_LOG")
    assert not is_system_topic("OrderTopic")
    with pytest.raises(ValidationError, match=r"re:\(unclosed"):
        ClusterConfig.model_validate({"name": "c", "namesrv": "h:1", "groups": {"include": ["re:(unclosed"]}})
