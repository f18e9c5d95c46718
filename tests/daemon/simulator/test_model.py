"""Deterministic model tests: explicit ticks, no sleeps, no sockets."""

from __future__ import annotations

from daemon.simulator import (
    ClusterModel,
    ConsumerSettings,
    MessageQueue,
    Producer,
    build_scenario,
    list_scenarios,
)
from daemon.simulator.jstack import jstack_text
from daemon.simulator.scenario import BLOCK_AT_S, SECOND_BLOCK_GAP, Scenario

A, B = "orderConsumerA", "orderConsumerB"
Q3 = MessageQueue("OrderTopic", "broker-a", 3)
STEP = 0.1


def run(sc: Scenario, until: float, check=None) -> None:
    """Tick in 100 ms steps (as the server does), calling `check(t)` after each step."""
    t = sc.model.now
    while t < until - 1e-9:
        t = round(t + STEP, 6)
        sc.tick(t)
        if check is not None:
            check(t)


def other_queues(model: ClusterModel) -> list[MessageQueue]:
    return [mq for mq in model.queues_of("OrderTopic") if mq != Q3]


def commit_invariant(model: ClusterModel) -> None:
    """Client commit = lowest cached offset, or the next pull offset when the cache is empty."""
    for group in model.groups.values():
        for client in group.clients:
            for pq in client.pqs.values():
                expected = pq.min_offset if pq.msgs else pq.next_offset
                assert pq.commit_offset == expected


def test_list_scenarios_names_both() -> None:
    assert {"healthy", "stuck-consumer"} <= set(list_scenarios())


def test_cluster_layout_and_retry_topics() -> None:
    model = build_scenario("stuck-consumer").model
    assert list(model.brokers) == ["broker-a", "broker-b"]
    assert len(model.queues_of("OrderTopic")) == 8
    for b in model.brokers.values():
        assert b.topics["OrderTopic"].read_queue_nums == 4
        assert b.topics[f"%RETRY%{A}"].read_queue_nums == 1
    assert {A, B, "TOOLS_CONSUMER"} <= set(model.subscription_groups)
    client = model.groups[A].clients[0]
    assert client.client_id.startswith("192.0.2.2@") and "#" in client.client_id
    assert len(client.pqs) == 8 + 2  # every OrderTopic queue plus the retry queue on each broker


def test_healthy_cluster_keeps_up() -> None:
    sc = build_scenario("healthy")
    run(sc, 120, check=lambda t: commit_invariant(sc.model) if int(t * 10) % 50 == 0 else None)
    for group in (A, B):
        for mq in sc.model.queues_of("OrderTopic"):
            assert sc.model.broker_lag(group, mq) <= 5
    assert sc.model.max_offset(Q3) >= 590  # 5 msg/s for 120 s


def test_stuck_consumer_pins_commit_stops_pulls_and_lag_grows() -> None:
    sc = build_scenario("stuck-consumer")
    model = sc.model
    run(sc, BLOCK_AT_S - 1)
    assert all(model.broker_lag(A, mq) <= 5 for mq in model.queues_of("OrderTopic"))
    run(sc, BLOCK_AT_S + 30)
    first = sc.info["first_blocked_offset"]
    second = sc.info["second_blocked_offset"]
    assert second - first == SECOND_BLOCK_GAP
    pq = model.process_queue(A, Q3)
    assert pq is not None
    # Exactly the two hung messages remain; the commit is pinned at the lowest.
    assert list(pq.msgs) == [first, second]
    assert pq.commit_offset == first
    assert pq.span == SECOND_BLOCK_GAP > 2000
    assert model.brokers["broker-a"].committed(A, "OrderTopic", 3) == first
    client = model.groups[A].clients[0]
    assert sorted(off for _, off in (th.holding for th in client.blocked_threads())) == [first, second]
    commit_invariant(model)

    # From now on the client never pulls queue 3 again, while the broker keeps receiving.
    next_offset = pq.next_offset
    fc_before = pq.span_flow_control
    lag_before = model.broker_lag(A, Q3)

    def still_stuck(t: float) -> None:
        assert pq.span > 2000
        assert pq.next_offset == next_offset

    run(sc, BLOCK_AT_S + 150, check=still_stuck)
    assert pq.span_flow_control > fc_before
    assert model.broker_lag(A, Q3) >= lag_before + 5 * 110  # 5 msg/s for ~120 s
    for mq in other_queues(model):
        assert model.broker_lag(A, mq) <= 5
    for mq in model.queues_of("OrderTopic"):
        assert model.broker_lag(B, mq) <= 5  # the peer group on the same topic is fine
    # Real times: pulls of a throttled queue are still attempted every 50 ms.
    assert model.epoch_ms() - pq.last_pull_ms <= 100
    assert pq.last_consume_ms < model.epoch_ms() - 60_000

    dump = jstack_text(client)
    sleeping = [blk for blk in dump.split("\n\n") if "Thread.sleep" in blk]
    assert len(sleeping) == 2
    assert all("ConsumeMessageConcurrentlyService$ConsumeRequest.run" in blk for blk in sleeping)
    assert all(blk.startswith(f"ConsumeMessageThread_{A}_") for blk in sleeping)

    # Release: both threads finish, the commit jumps, pulls resume and the lag drains.
    lag_at_release = model.broker_lag(A, Q3)
    assert sc.trigger("release")
    assert pq.commit_offset > second
    run(sc, model.now + 30)
    assert not client.blocked_threads()
    assert model.broker_lag(A, Q3) <= 5 < lag_at_release
    commit_invariant(model)


def test_span_exceeds_limit_in_bursts_during_the_burst() -> None:
    sc = build_scenario("stuck-consumer")
    spans: list[int] = []
    run(sc, BLOCK_AT_S + 1)
    pq = sc.model.process_queue(A, Q3)
    assert pq is not None
    while not sc.model.groups[A].clients[0].blocked_threads()[1:]:
        sc.tick(round(sc.model.now + 0.02, 6))
        spans.append(pq.span)
    assert pq.span_flow_control > 0
    assert max(spans) > 2000 and 0 in spans  # span jumps past 2000, then drains to the one hung message


def test_block_is_triggerable_and_runs_once() -> None:
    sc = build_scenario("stuck-consumer", block_at=None)
    run(sc, 10)
    assert sc.trigger("block")
    assert not sc.trigger("block")
    run(sc, 40)
    pq = sc.model.process_queue(A, Q3)
    assert pq is not None and pq.count == 2 and pq.span == SECOND_BLOCK_GAP


def test_time_scale_shortens_the_timeline() -> None:
    sc = build_scenario("stuck-consumer", time_scale=0.5)
    run(sc, BLOCK_AT_S * 0.5 + 0.2)
    assert sc.log[0][0] == BLOCK_AT_S * 0.5
    assert sc.model.persist_interval_s == 2.5


def test_count_flow_control_when_the_handler_is_slow() -> None:
    model = ClusterModel(brokers=("broker-a",))
    model.add_topic("T", queues_per_broker=1)
    model.add_producer(Producer("T", [("broker-a", 0)], rate=400.0, start=0.0))
    model.add_group("slow", ["T"], ConsumerSettings(consume_thread_max=1, consume_rate_per_thread=50.0))
    model.tick(20.0)
    pq = model.process_queue("slow", MessageQueue("T", "broker-a", 0))
    assert pq is not None
    assert pq.count_flow_control > 0
    assert 1000 < pq.count <= 1000 + 32  # stops pulling once the cache passes pullThresholdForQueue
    commit_invariant(model)


def test_two_clients_split_queues_averagely() -> None:
    model = ClusterModel()
    model.add_topic("T", queues_per_broker=4)
    group = model.add_group("g", ["T"], ConsumerSettings(), clients=3)
    owned = [
        sorted(mq for mq in c.pqs if mq.topic == "T")
        for c in sorted(group.clients, key=lambda c: c.client_id)
    ]
    assert [len(o) for o in owned] == [3, 3, 2]
    assert sorted(mq for o in owned for mq in o) == model.queues_of("T")
