"""The parsers on the real 4.9.7 logs find what the fixtures README says is there."""

from __future__ import annotations

from datetime import UTC, datetime

from daemon.collectors.logparse import detect_log_kind, parse_log
from tests.fixtures_path import CAPTURE

LOGS = CAPTURE / "logs"


def events(result, name):
    return [r for r in result.rows.get("log_event", []) if r["event"] == name]


def test_kinds_are_told_by_content():
    assert detect_log_kind(LOGS / "rocketmq_client_stuckGroup.log") == "client"
    assert detect_log_kind(LOGS / "store.log") == "store"
    assert detect_log_kind(LOGS / "broker.log") == "broker"
    assert detect_log_kind(LOGS / "stats.log") is None


def test_the_stuck_groups_flow_control_episode_in_utc_with_values_at_log_time():
    result = parse_log(LOGS / "rocketmq_client_stuckGroup.log", "DefaultCluster")
    assert result.problems == []
    spans = events(result, "flow_control_span")
    assert [r["ts"] for r in spans] == [
        datetime(2026, 11, 21, 23, 36, 21, 388000, tzinfo=UTC), datetime(2026, 11, 21, 23, 38, 3, 815000, tzinfo=UTC),
        datetime(2026, 11, 21, 23, 38, 54, 229000, tzinfo=UTC), datetime(2026, 11, 21, 23, 39, 44, 689000, tzinfo=UTC),
        datetime(2026, 11, 21, 23, 40, 35, 76000, tzinfo=UTC)]
    assert {(r["group"], r["topic"], r["broker"], r["queue_id"]) for r in spans} == {
        ("stuckGroup", "OrderTopic", "broker-a", 3)}
    # The first line of the episode logs the values after the cache drained (ref §9): span 0, then 3626.
    assert [r["value"] for r in spans] == [0.0, 3626.0, 3626.0, 3626.0, 3626.0]
    assert all(r["client_id"] == "192.0.2.2@5764#7903510994656" for r in spans)
    assert "occurrence 1001 of this consumer" in spans[1]["detail"]
    assigned = events(result, "rebalance_assigned")
    assert sorted(r["queue_id"] for r in assigned if r["topic"] == "OrderTopic") == list(range(8))
    assert [r["topic"] for r in assigned if r["topic"].startswith("%RETRY%")] == ["%RETRY%stuckGroup"]


def test_the_other_groups_never_flow_controlled():
    for group in ("healthyGroup", "slowGroup", "failGroup"):
        result = parse_log(LOGS / f"rocketmq_client_{group}.log", "DefaultCluster")
        assert not [r for r in result.rows.get("log_event", []) if r["event"].startswith("flow_control")]
        assert events(result, "rebalance_assigned")


def test_store_log_minutes_become_broker_rows_with_the_thirteen_buckets():
    result = parse_log(LOGS / "store.log", "DefaultCluster", broker="broker-a")
    minutes = result.rows["broker"]
    assert len(minutes) == 5 and len(events(result, "store_tps")) == 5
    first = minutes[0]
    assert first["ts"] == datetime(2026, 11, 21, 23, 36, 16, tzinfo=UTC)  # 07:36:16 GMT+8
    assert (first["broker"], first["put_latency_le_0ms"], first["put_latency_0_10ms"], first["put_slow_100ms"]) == (
        "broker-a", 8695, 810, 8)
    assert sum(first[c] for c in first if c.startswith("put_latency_")) == 9537  # TotalPut
    assert minutes[1]["put_tps"] is not None and minutes[1]["put_tps"] > 100  # 124.46 logged with it
    assert events(result, "store_tps")[0]["value"] is None  # the first window is empty


def test_broker_log_membership_and_the_first_dead_letter():
    result = parse_log(LOGS / "broker.log", "DefaultCluster", broker="broker-a")
    joined = events(result, "consumer_registered")
    assert {r["group"] for r in joined} == {"stuckGroup", "healthyGroup", "slowGroup", "failGroup"}
    assert {r["client_id"] for r in joined if r["group"] == "stuckGroup"} == {"192.0.2.2@5764#7903510994656"}
    (dlq,) = events(result, "dlq_topic_created")
    assert dlq["group"] == "failGroup" and dlq["ts"] == datetime(2026, 11, 21, 23, 36, 29, tzinfo=UTC)
