"""diagnose against each symptom scenario of the simulator: the verdict names the right side, client and queue."""

from __future__ import annotations

import pytest

from daemon.diagnose.run import Options, diagnose
from daemon.simulator import SimulatorThread
from tests.helpers.waiting import offsets_committed

GROUP_A = "orderConsumerA"
ALL_QUEUES = 8


def _diagnose(scenario: str) -> tuple[object, str]:
    with SimulatorThread(scenario, time_scale=0.1) as sim:
        offsets_committed(sim, [GROUP_A])
        client = sim.inspect(lambda m: sorted(c.client_id for c in m.groups[GROUP_A].clients))
        verdict = diagnose(Options(sim.namesrv_addr, GROUP_A, samples=3, every=0.5, jstack=True))
    return verdict, (client[0] if client else "")


def test_one_stuck_message_names_its_queue_client_and_thread(spark: object) -> None:
    verdict, client = _diagnose("one-stuck-message")
    assert (verdict.status, verdict.side, verdict.scope) == ("problem", "consumer", "one queue")  # type: ignore[attr-defined]
    assert verdict.queues == ["OrderTopic/broker-a/3"] and verdict.clients == [client]  # type: ignore[attr-defined]
    assert "FROZEN" in verdict.evidence[3].marks and len(verdict.threads) == 1  # type: ignore[attr-defined]


@pytest.mark.parametrize("scenario", ["slow-consumer", "one-group-lagging"])
def test_a_group_behind_on_every_queue_is_its_consumers_all_queues(spark: object, scenario: str) -> None:
    verdict, client = _diagnose(scenario)
    assert (verdict.side, verdict.scope) == ("consumer", "all queues"), verdict.headline  # type: ignore[attr-defined]
    assert len(verdict.queues) == ALL_QUEUES and verdict.clients == [client]  # type: ignore[attr-defined]
    assert all(not p.lagging for p in verdict.peers)  # type: ignore[attr-defined]


def test_blocked_consumer_shows_every_thread_stuck(spark: object) -> None:
    verdict, client = _diagnose("blocked-consumer")
    assert (verdict.side, verdict.scope) == ("consumer", "all queues")  # type: ignore[attr-defined]
    assert len(verdict.threads) == 4 and {t.client_id for t in verdict.threads} == {client}  # type: ignore[attr-defined]
    assert all("BLOCKED" in e.marks for e in verdict.evidence)  # type: ignore[attr-defined]


def test_all_groups_lagging_points_at_the_broker(spark: object) -> None:
    verdict, _ = _diagnose("all-groups-lagging")
    assert (verdict.status, verdict.side, verdict.scope) == ("problem", "broker", "all groups lagging")  # type: ignore[attr-defined]
    assert [p.lagging for p in verdict.peers] == [True]  # type: ignore[attr-defined]


def test_group_offline_is_offline_with_its_waiting_messages(spark: object) -> None:
    verdict, _ = _diagnose("group-offline")
    assert verdict.status == "offline" and verdict.exit_code == 1  # type: ignore[attr-defined]
    assert sum(e.lag for e in verdict.evidence) > 1000  # type: ignore[attr-defined]


def test_healthy_busy_is_healthy(spark: object) -> None:
    verdict, _ = _diagnose("healthy-busy")
    assert verdict.status == "healthy" and verdict.exit_code == 0, verdict.headline  # type: ignore[attr-defined]
    assert not any(e.marks for e in verdict.evidence)  # type: ignore[attr-defined]


def test_two_stuck_messages_far_apart_name_the_queue_its_span_and_both_threads(spark: object) -> None:
    verdict, client = _diagnose("stuck-far-apart")
    assert (verdict.status, verdict.side, verdict.scope) == ("problem", "consumer", "one queue")  # type: ignore[attr-defined]
    assert verdict.queues == ["OrderTopic/broker-a/3"] and verdict.clients == [client]  # type: ignore[attr-defined]
    assert "span 3626 > 2000" in verdict.headline and len(verdict.threads) == 2  # type: ignore[attr-defined]


@pytest.mark.parametrize(("scenario", "scope", "broker"), [
    ("put-latency", "put latency", "broker-b"),
    ("dispatch-lag", "dispatch behind", "broker-a"),
])
def test_store_trouble_points_at_that_broker_not_the_consumers(spark: object, scenario: str, scope: str,
                                                                 broker: str) -> None:
    verdict, _ = _diagnose(scenario)
    assert (verdict.status, verdict.side, verdict.scope) == ("problem", "broker", scope)  # type: ignore[attr-defined]
    assert f"on {broker} " in verdict.headline and verdict.clients == []  # type: ignore[attr-defined]


def test_dead_letters_name_the_dlq_and_the_failing_client(spark: object) -> None:
    verdict, client = _diagnose("dlq-growth")
    assert (verdict.status, verdict.side, verdict.scope) == ("problem", "consumer", "failing messages")  # type: ignore[attr-defined]
    assert f"%DLQ%{GROUP_A}" in verdict.headline and verdict.clients == [client]  # type: ignore[attr-defined]
    assert verdict.dlq_total > 0 and verdict.exit_code == 1  # type: ignore[attr-defined]
