"""diagnose against the simulated cluster (real wire protocol on 127.0.0.1), one test per scenario."""

from __future__ import annotations

import pytest

from daemon.diagnose.run import CollectError, Options, diagnose
from daemon.simulator import SimulatorThread
from tests.helpers.waiting import offsets_committed, wait_until

GROUP_A, GROUP_B = "orderConsumerA", "orderConsumerB"


def _options(sim: SimulatorThread, group: str, **kw: object) -> Options:
    settings: dict[str, object] = {"samples": 3, "every": 0.5, **kw}
    return Options(namesrv=sim.namesrv_addr, group=group, **settings)  # type: ignore[arg-type]


def test_healthy_says_healthy_and_exits_0(spark: object) -> None:
    with SimulatorThread("healthy", time_scale=0.1) as sim:
        offsets_committed(sim)
        verdict = diagnose(_options(sim, GROUP_A))
    assert verdict.status == "healthy" and verdict.exit_code == 0, verdict.headline
    assert verdict.side == "none" and not verdict.clients and not verdict.threads
    assert len(verdict.evidence) == 8 and not any(e.marks for e in verdict.evidence)
    assert [(p.group, p.lagging) for p in verdict.peers] == [(GROUP_B, False)]


def test_stuck_consumer_names_the_client_the_queue_and_the_threads(spark: object) -> None:
    with SimulatorThread("stuck-consumer", time_scale=0.1, block_at=10.0) as sim:
        wait_until(lambda: sim.inspect(lambda m: len(m.groups[GROUP_A].clients[0].blocked_threads())) >= 2,
                   "the scenario's second block")
        client = sim.inspect(lambda m: m.groups[GROUP_A].clients[0].client_id)
        verdict = diagnose(_options(sim, GROUP_A, jstack=True))
        peer = diagnose(_options(sim, GROUP_B))
    assert verdict.status == "problem" and verdict.exit_code == 1
    assert (verdict.side, verdict.scope) == ("consumer", "one queue")
    assert verdict.queues == ["OrderTopic/broker-a/3"] and verdict.clients == [client]
    q3 = next(e for e in verdict.evidence if e.key == "OrderTopic/broker-a/3")
    assert "SPAN" in q3.marks and q3.cached_span is not None and q3.cached_span > 2000
    assert len(verdict.threads) == 2 and all(t.client_id == client for t in verdict.threads)
    assert all(t.app_frame and "OrderListener.consumeMessage" in t.app_frame for t in verdict.threads)
    # The other group on the topic keeps up: diagnosing it says so, and names A as the lagging peer.
    assert peer.status == "healthy" and peer.exit_code == 0, peer.headline
    assert [(p.group, p.lagging) for p in peer.peers] == [(GROUP_A, True)]


def test_offline_group_with_offsets_gets_an_offline_verdict(spark: object) -> None:
    with SimulatorThread("healthy", time_scale=0.1) as sim:
        offsets_committed(sim, [GROUP_B])
        for cid in sim.inspect(lambda m: [c.client_id for c in m.groups[GROUP_B].clients]):
            sim.inspect(lambda m, cid=cid: m.remove_client(GROUP_B, cid))
        wait_until(lambda: sim.inspect(_backlog_of_b) > 0, "messages waiting for the offline group")
        verdict = diagnose(_options(sim, GROUP_B))
    assert verdict.status == "offline" and verdict.exit_code == 1, verdict.headline
    assert "no client is connected" in verdict.headline
    assert sum(e.lag for e in verdict.evidence) > 0
    assert [r for r, _ in verdict.next_steps] == ["ConsumerGroupOffline"]


def test_unknown_group_is_a_clear_verdict_without_spark() -> None:
    with SimulatorThread("healthy", time_scale=0.1) as sim:
        verdict = diagnose(_options(sim, "noSuchGroup", samples=1))
    assert verdict.status == "unknown" and verdict.exit_code == 2
    assert "group noSuchGroup is unknown" in verdict.headline


def test_every_broker_down_is_could_not_collect_naming_the_broker() -> None:
    with SimulatorThread("healthy", time_scale=0.1) as sim:
        for name in sim.broker_addrs:
            sim.set_fault(name, refuse=True)
        with pytest.raises(CollectError) as err:
            diagnose(_options(sim, GROUP_A, samples=1, timeout=1.0))
    assert "no broker answered" in str(err.value) and "subscription groups (201)" in str(err.value)


def _backlog_of_b(model: object) -> int:
    # Messages written after group B's committed offsets: they wait on the brokers with nobody consuming.
    return sum(
        model.brokers[mq.broker].queue(topic, mq.queue_id).max_offset  # type: ignore[attr-defined]
        - model.brokers[mq.broker].committed(GROUP_B, topic, mq.queue_id)  # type: ignore[attr-defined]
        for topic in model.groups[GROUP_B].subscribed  # type: ignore[attr-defined]
        for mq in model.queues_of(topic)  # type: ignore[attr-defined]
    )
