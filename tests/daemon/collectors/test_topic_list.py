"""Groups are found from %RETRY% topics too, and the namesrv topic list (a WARN per call there) is cached."""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime

import pytest

from config.name_filter import is_system_topic
from daemon.collectors.cluster import CollectResult, collect_cluster
from daemon.collectors.remoting import bodies
from daemon.collectors.remoting.admin import AdminClient
from daemon.collectors.remoting.client import RemotingClient
from daemon.collectors.topic_list import TopicListCache, groups_of_retry_topics
from daemon.simulator import SimulatorThread
from tests.daemon.collectors.wire import body
from tests.helpers.waiting import offsets_committed

TOPIC_LIST_CALL = "GET_ALL_TOPIC_LIST_FROM_NAMESERVER"


@pytest.mark.parametrize("rnd", ["t1", "t2"])
def test_206_real_topic_list_names_the_groups_of_its_retry_topics(rnd: str) -> None:
    topics = bodies.decode_topic_list(body(f"{rnd}_206_GET_ALL_TOPIC_LIST_FROM_NAMESERVER"))
    assert len(topics) == 16 and "OrderTopic" in topics and "AuditTopic" in topics
    assert groups_of_retry_topics(topics) == {"failGroup", "healthyGroup", "slowGroup", "stuckGroup"}
    system = {t for t in topics if is_system_topic(t)}
    assert {"TBW102", "SCHEDULE_TOPIC_XXXX", "DefaultCluster_REPLY_TOPIC", "RMQ_SYS_TRANS_HALF_TOPIC"} <= system
    assert "OrderTopic" not in system


def test_pop_retry_topics_name_their_group() -> None:
    assert groups_of_retry_topics(["%RETRY%popGroup+OrderTopic", "%DLQ%x", "%RETRY%"]) == {"popGroup"}


def test_a_group_known_only_by_its_retry_topic_is_collected_and_the_topic_list_is_asked_once() -> None:
    cache = TopicListCache(refresh_s=3600)

    def cycle(sim: SimulatorThread) -> CollectResult:
        async def run() -> CollectResult:
            async with RemotingClient(default_timeout=2.0) as client:
                return await collect_cluster(AdminClient(client), "DefaultCluster", [sim.namesrv_addr],
                                             datetime.now(UTC), call_timeout=2.0, topic_lists=cache)

        return asyncio.run(run())

    with SimulatorThread("healthy", time_scale=0.1, group_a="ordersA", group_b="ordersB") as sim:
        offsets_committed(sim)
        # ordersB's subscription config is gone (deleted, or on a broker not asked); its %RETRY% topic is not.
        sim.inspect(lambda m: m.subscription_groups.remove("ordersB"))
        first = cycle(sim)
        assert "ordersB" in {r["group"] for r in first.rows["consumer_queue"]}
        assert "ordersB" in {r["group"] for r in first.rows["consumer_client"]}
        second = cycle(sim)
        assert "ordersB" in {r["group"] for r in second.rows["consumer_queue"]}
        asked = [r for res in (first, second) for r in res.rows["collector_health"] if r["call"] == TOPIC_LIST_CALL]
        assert len(asked) == 1 and asked[0]["ok"]


def test_a_group_whose_clients_all_left_is_offline_with_its_offsets_still_collected() -> None:
    with SimulatorThread("healthy", time_scale=0.1, group_a="ordersA", group_b="ordersB") as sim:
        offsets_committed(sim)

        def stop_all(m: object) -> None:
            for c in list(m.groups["ordersB"].clients):  # type: ignore[attr-defined]
                m.remove_client("ordersB", c.client_id)  # type: ignore[attr-defined]

        sim.inspect(stop_all)

        async def run() -> CollectResult:
            async with RemotingClient(default_timeout=2.0) as client:
                return await collect_cluster(AdminClient(client), "DefaultCluster", [sim.namesrv_addr],
                                             datetime.now(UTC), call_timeout=2.0)

        result = asyncio.run(run())
    # 206 CONSUMER_NOT_ONLINE is an answer, not a failure; the offsets make the group offline, not unknown:
    # consumer_queue rows and no consumer_client rows are what consumer_group's online_clients == 0 reads.
    assert result.failed_calls == 0
    assert "ordersB" in {r["group"] for r in result.rows["consumer_queue"]}
    assert "ordersB" not in {r["group"] for r in result.rows["consumer_client"]}
    assert "1 online, 1 offline" in result.summary
