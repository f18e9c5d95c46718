"""diagnose against the real 4.9.7 captures served in their original bytes (fixtures README, stuckGroup)."""

from __future__ import annotations

import contextlib
import io
import json
from typing import Any

import pytest

from daemon.cli import main
from tests.daemon.diagnose.fixture_broker import fixture_cluster

STUCK_CLIENT = "192.0.2.2@5764#7903510994656"


def run_diagnose(group: str, *extra: str) -> tuple[int, str]:
    """`rocketwatch diagnose` in this process (the suite's one SparkSession) against the captures, t1 then t2."""
    out = io.StringIO()
    with fixture_cluster() as cluster, contextlib.redirect_stdout(out):
        code = main(["diagnose", "--namesrv", cluster.namesrv_addr, "--group", group,
                     "--samples", "2", "--every", "0.2", *extra])
    return code, out.getvalue()


@pytest.fixture(scope="module")
def stuck(spark: object) -> tuple[int, dict[str, Any]]:
    code, text = run_diagnose("stuckGroup", "--jstack", "--format", "json")
    return code, json.loads(text)


def test_stuck_group_verdict_is_queue_3_of_client_5764(stuck: tuple[int, dict[str, Any]]) -> None:
    code, verdict = stuck
    assert code == 1
    assert verdict["status"] == "problem" and verdict["side"] == "consumer" and verdict["scope"] == "one queue"
    assert verdict["queues"] == ["OrderTopic/broker-a/3"]
    assert verdict["clients"] == [STUCK_CLIENT]


def test_stuck_queue_evidence_matches_the_readme(stuck: tuple[int, dict[str, Any]]) -> None:
    rows = {e["queue"]: e for e in stuck[1]["evidence"]}
    q3 = rows["OrderTopic/broker-a/3"]
    # t2 numbers: broker offset 3772, committed 0, cache {0, 3626} against consumeConcurrentlyMaxSpan 2000.
    assert (q3["broker_offset"], q3["committed"], q3["lag"]) == (3772, 0, 3772)
    assert (q3["cached_count"], q3["cached_span"], q3["limit_span"], q3["cached_min_offset"]) == (2, 3626, 2000, 0)
    assert {"SPAN", "FROZEN"} <= set(q3["marks"])
    assert q3["owner"] == STUCK_CLIENT
    # A 4.9.7 broker reports no pull offset: the cache only tells that the client pulled past 3626.
    assert (q3["pulled"], q3["pulled_at_least"]) == (None, 3627)
    others = [e for k, e in rows.items() if k != "OrderTopic/broker-a/3"]
    assert len(others) == 7 and all(not e["marks"] and e["lag"] <= 1 for e in others)


def test_the_text_gives_the_pull_offset_as_a_floor_where_the_broker_does_not_report_it(spark: object) -> None:
    code, text = run_diagnose("stuckGroup")
    row = next(line for line in text.splitlines() if line.strip().startswith("OrderTopic/broker-a/3 "))
    assert ">=3627" in row.split()
    judged = text.split("Judged on: ", 1)[1].split("\n\n", 1)[0]
    assert judged.startswith("ProcessQueue") and STUCK_CLIENT in judged and "StuckMessage" in judged


def test_the_verdict_says_what_the_group_is_judged_on_and_why(stuck: tuple[int, dict[str, Any]]) -> None:
    basis = stuck[1]["judged_on"]
    assert basis["group"] == "stuckGroup" and basis["checks"] == ["ProcessQueue"]
    assert "ProcessQueue" in basis["why"][0] and STUCK_CLIENT in basis["why"][0]
    assert {"StuckMessage", "ProcessQueueSpanTooLong", "ConsumerOffsetStalled"} <= set(basis["rules"])
    assert "PopConsumerStuck" not in basis["rules"] and basis["skipped"] == []


def test_stuck_threads_2_and_3_with_their_blocking_frame(stuck: tuple[int, dict[str, Any]]) -> None:
    threads = stuck[1]["threads"]
    assert [t["thread"] for t in threads] == ["ConsumeMessageThread_stuckGroup_2", "ConsumeMessageThread_stuckGroup_3"]
    assert all(t["top_frame"].startswith("java.lang.Thread.sleep") and t["dumps"] == 2 for t in threads)
    assert all(t["app_frame"] == "cap.Cons.lambda$main$0(Cons.java:34)" for t in threads)


def test_stuck_peer_and_runbook(stuck: tuple[int, dict[str, Any]]) -> None:
    verdict = stuck[1]
    assert verdict["peers"] == [{"group": "healthyGroup", "online_clients": 1, "lag": 0, "lagging": False}]
    rules = [s["rule"] for s in verdict["next_steps"]]
    assert "ProcessQueueSpanTooLong" in rules
    span_steps = next(s["text"] for s in verdict["next_steps"] if s["rule"] == "ProcessQueueSpanTooLong")
    assert "queueId=3" in span_steps and "offset 0" in span_steps  # rendered for this queue, not a template
    assert "ProcessQueueSpanTooLong" in [f["rule"] for f in verdict["findings"]]


def test_healthy_group_on_the_same_topic_is_healthy_and_names_the_lagging_peer(spark: object) -> None:
    code, text = run_diagnose("healthyGroup")
    assert code == 0, text
    first = text.splitlines()[0]
    assert first.startswith("HEALTHY: group healthyGroup is healthy")
    assert "stuckGroup" in first
    # README t2: Σ(broker − consumer) of stuckGroup on OrderTopic is 3778.
    assert "stuckGroup: lag 3778, 1 client(s) online, LAGGING" in text


def test_fail_group_is_failing_messages_with_its_dead_letters(spark: object) -> None:
    code, text = run_diagnose("failGroup", "--format", "json")
    verdict = json.loads(text)
    assert code == 1 and (verdict["side"], verdict["scope"]) == ("consumer", "failing messages")
    # README: %DLQ%failGroup max offset 1582 at t1, 1712 at t2; %RETRY%failGroup 3484/3482 at t2.
    assert verdict["dlq_growth"] == 130
    assert "%RETRY%failGroup holds 2 waiting" in verdict["headline"]
    assert "fail " in verdict["headline"] and verdict["clients"] == ["192.0.2.2@5776#7903726802336"]
    assert [s["rule"] for s in verdict["next_steps"]][:1] == ["DeadLetterQueueGrowing"]


def test_stuck_clients_brokers_and_retry_are_reported(stuck: tuple[int, dict[str, Any]]) -> None:
    verdict = stuck[1]
    # README: the 307 statusTable for OrderTopic shows consumeOKTPS 7.0 and no failures.
    [client] = verdict["client_status"]
    assert client["client_id"] == STUCK_CLIENT and client["consume_ok_tps"] >= 7.0
    assert client["consume_failed_tps"] == 0.0
    [broker] = verdict["brokers"]
    assert (broker["broker"], broker["addr"], broker["version"]) == ("broker-a", "127.0.0.1:10911", "V4_9_7")
    assert verdict["dlq_total"] == 0 and verdict["dlq_growth"] == 0
