"""Where the verdict puts the problem, from samples shaped like the collector's rows (no I/O)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

from daemon.collectors.group_sample import Sample, Target
from daemon.collectors.remoting.bodies import Connection, ConsumerConnection
from daemon.diagnose.verdict import decide
from rules.findings import Finding

GROUP, PEER, TOPIC = "g", "peer", "T"
T0 = datetime(2026, 11, 22, 12, 0, tzinfo=UTC)
TARGET = Target(GROUP, None, [("broker-a", "127.0.0.1:1")], [("broker-a", 0, "127.0.0.1:1")],
                {"broker-a": "c"}, configured=True)


def _conn(clients: list[str], consume_type: str = "CONSUME_PASSIVELY") -> ConsumerConnection:
    return ConsumerConnection([Connection(c, "10.0.0.1:1", "JAVA", 407) for c in clients], consume_type,
                              "CLUSTERING", "CONSUME_FROM_LAST_OFFSET", {})


def _sample(i: int, queues: dict[int, dict[str, Any]], clients: list[str], *, peer_lag: int | None = None,
            consume_type: str = "CONSUME_PASSIVELY") -> Sample:
    """Queue q: broker/committed offsets and the owner's cache; values may be (first, last) pairs."""
    ts = T0 + timedelta(seconds=i)
    s = Sample(ts, connection=_conn(clients, consume_type))
    for q, spec in queues.items():
        pick = {k: (v[i] if isinstance(v, tuple) else v) for k, v in spec.items()}
        s.rows["consumer_queue"].append({
            "ts": ts, "cluster": "c", "group": GROUP, "topic": TOPIC, "broker": "broker-a", "queue_id": q,
            "broker_offset": pick["broker"], "consumer_offset": pick["committed"], "pull_offset": None,
            "consume_delay_ms": 0, "topic_kind": "normal"})
        if "owner" in pick:
            count = pick.get("cached", 0)
            s.rows["process_queue"].append({
                "ts": ts, "cluster": "c", "group": GROUP, "client_id": pick["owner"], "topic": TOPIC,
                "broker": "broker-a", "queue_id": q, "cached_msg_count": count, "cached_msg_size_mib": 0,
                "cached_min_offset": pick.get("min", pick["committed"]) if count else 0,
                "cached_max_offset": pick.get("min", pick["committed"]) + count - 1 if count else 0,
                "commit_offset": pick.get("client_commit", pick["committed"]), "last_consume_ts": ts,
                "dropped": False, "orderly": False, "pull_threshold_for_queue": 1000, "max_span": 2000,
                "pull_threshold_size_mib": 100})
    if peer_lag is not None:
        s.peers = {PEER}
        s.peer_connections = {PEER: _conn(["p@1"])}
        s.rows["consumer_queue"].append({
            "ts": ts, "cluster": "c", "group": PEER, "topic": TOPIC, "broker": "broker-a", "queue_id": 0,
            "broker_offset": 10_000, "consumer_offset": 10_000 - peer_lag, "topic_kind": "normal"})
    return s


def _decide(queues: dict[int, dict[str, Any]], clients: list[str], findings: list[Finding] | None = None,
            **kw: Any) -> Any:
    samples = [_sample(i, queues, clients, **kw) for i in range(2)]
    return decide(TARGET, samples, findings or [], [], {})


def test_one_client_with_every_queue_of_its_own_full() -> None:
    full = {"broker": (5000, 5100), "committed": (1000, 1010), "cached": 1200}
    fine = {"broker": (5000, 5100), "committed": (4990, 5090), "cached": 5}
    queues = {q: {**(full if q < 2 else fine), "owner": "A" if q < 2 else "B"} for q in range(4)}
    verdict = _decide(queues, ["A", "B"])
    assert (verdict.status, verdict.side, verdict.scope) == ("problem", "consumer", "one client")
    assert verdict.clients == ["A"] and verdict.queues == ["T/broker-a/0", "T/broker-a/1"]


def test_every_queue_full_is_all_queues() -> None:
    queues = {q: {"broker": (5000, 5100), "committed": (1000, 1010), "cached": 1200, "owner": "AB"[q % 2]}
              for q in range(4)}
    verdict = _decide(queues, ["A", "B"])
    assert (verdict.side, verdict.scope) == ("consumer", "all queues")
    assert all("COUNT" in e.marks for e in verdict.evidence)


def test_busy_but_keeping_up_is_healthy_although_the_broker_commit_is_5_s_old() -> None:
    # 500 behind on the broker's committed offset, but the client's own commit is right behind the head.
    queues = {q: {"broker": (5000, 5400), "committed": (4500, 4500), "client_commit": (4995, 5395), "cached": 5,
                  "min": (4995, 5395), "owner": "A"} for q in range(4)}
    verdict = _decide(queues, ["A"])
    assert verdict.status == "healthy" and verdict.exit_code == 0, verdict.headline


def test_broker_finding_with_starved_consumers_is_the_broker_side() -> None:
    queues = {q: {"broker": (5000, 5300), "committed": (3000, 3050), "cached": 0, "owner": "A"} for q in range(2)}
    put = Finding("BrokerPutLatencyHigh", {"cluster": "c", "broker": "broker-a", "category": "broker"}, "critical",
                  900.0, 500.0, {"summary": "broker-a puts take 900 ms", "next_steps": "grep PAGECACHERT"})
    verdict = _decide(queues, ["A"], [put])
    assert (verdict.status, verdict.side, verdict.scope) == ("problem", "broker", "put latency")
    assert verdict.next_steps == [("BrokerPutLatencyHigh", "grep PAGECACHERT")]


def test_a_stuck_queue_stays_the_consumers_fault_even_when_the_broker_is_slow() -> None:
    queues = {0: {"broker": (5000, 5100), "committed": 0, "cached": 2, "min": 0, "owner": "A"},
              1: {"broker": (5000, 5100), "committed": (4990, 5090), "cached": 0, "owner": "A"}}
    put = Finding("BrokerPutLatencyHigh", {"broker": "broker-a", "category": "broker"}, "warning", 300.0, 200.0, {})
    samples = [_sample(i, queues, ["A"]) for i in range(2)]
    for s in samples:  # the cache spans 0..3626, as in the capture
        s.rows["process_queue"][0]["cached_max_offset"] = 3626
    verdict = decide(TARGET, samples, [put], [], {})
    assert (verdict.side, verdict.scope, verdict.queues) == ("consumer", "one queue", ["T/broker-a/0"])
    assert "SPAN" in verdict.evidence[0].marks and "the broker also shows put latency" in verdict.headline


def test_every_group_of_the_topic_lagging_points_at_the_broker() -> None:
    queues = {q: {"broker": (5000, 5300), "committed": (2000, 2050), "cached": 0, "owner": "A"} for q in range(2)}
    verdict = _decide(queues, ["A"], peer_lag=4000)
    assert (verdict.side, verdict.scope) == ("broker", "all groups lagging")


def test_a_proxy_group_listed_consume_pop_gets_a_broker_side_only_verdict() -> None:
    queues = {q: {"broker": 100, "committed": 98} for q in range(2)}
    verdict = _decide(queues, ["pop@1"], consume_type="CONSUME_POP")
    assert verdict.status == "pop" and verdict.exit_code == 0
    assert "through a proxy" in verdict.headline and "only the broker side" in verdict.headline


def test_a_pop_mode_client_over_its_threshold_is_named_although_listed_consume_passively() -> None:
    queues = {q: {"broker": (100, 150), "committed": (98, 98)} for q in range(2)}
    samples = [_sample(i, queues, ["pop@1"]) for i in range(2)]
    for s in samples:
        s.rows["pop_queue"] = [{"client_id": "pop@1", "topic": "T", "broker": "broker-a", "queue_id": -1,
                                "wait_ack_count": 97, "pop_threshold_for_queue": 96, "pop_invisible_time_ms": 60000}]
    verdict = decide(TARGET, samples, [], [], {})
    assert (verdict.status, verdict.side, verdict.clients) == ("problem", "consumer", ["pop@1"])
    assert "stopped popping" in verdict.headline and "97 popped messages" in verdict.headline
    assert "ProcessQueue" not in verdict.headline
