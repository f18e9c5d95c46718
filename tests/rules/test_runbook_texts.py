"""Rendered alert texts say what the row says, and only that: orderly or concurrent, flow control
on or off, the retry limit the clients report (issue 34, defects 3, 5, 6)."""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest

from daemon.store.case_input import START, write_case_input
from daemon.store.writer import ParquetStore
from rules.findings import Finding
from rules.loader import load_rule_files
from rules.testing import RuleTestCase

pytestmark = pytest.mark.spark
PACK = load_rule_files(["builtin"])
INTERVAL = timedelta(seconds=30)
LIMITS = {"pull_threshold_for_queue": 1000, "pull_threshold_size_mib": 100, "max_span": 2000,
          "consume_timeout_min": 15}


def _alert(spark: Any, tmp_path: Path, rule: str, at: timedelta, inputs: dict[str, Any]) -> Finding:
    """The one firing finding of built-in `rule` at START + `at` over `inputs` (rule-test series)."""
    from spark.reference import evaluate_reference

    case = RuleTestCase.model_validate({"input": inputs, "alert_rule_test": [{"eval_time": "1m", "alertname": rule}]})
    store = ParquetStore(tmp_path / "store")
    write_case_input(store, case, INTERVAL)
    found = [f for f in evaluate_reference(spark, store.root, [PACK.get(rule)], START + at, 2 * INTERVAL)
             if f.severity is not None]
    assert len(found) == 1, found
    return found[0]


def _text(finding: Finding) -> str:
    return " ".join(finding.annotations[f] for f in ("summary", "diagnosis", "next_steps"))


def _blocked_queue(**static: Any) -> dict[str, Any]:
    return {"process_queue": [{
        "labels": {"cluster": "prod", "group": "pay", "topic": "Pay", "broker": "broker-a", "queue_id": 0,
                   "client_id": "10.0.0.7@100"},
        "values": {"cached_msg_count": "7x6", "last_consume_ts": "30+30x6"},
        "static": {**LIMITS, "commit_offset": 812, **static}}]}


def test_a_blocked_concurrent_consumer_is_not_explained_as_an_orderly_one(spark, tmp_path):
    text = _text(_alert(spark, tmp_path, "ConsumptionBlocked", timedelta(seconds=90),
                        _blocked_queue(orderly=False, max_reconsume_times=16)))
    assert "consumes concurrently" in text and "sent back to %RETRY%pay" in text
    for orderly_only in ("orderly", "one thread at a time", "suspendCurrentQueueTimeMillis", "unlimited"):
        assert orderly_only not in text


def test_a_blocked_orderly_consumer_is_not_explained_as_a_concurrent_one(spark, tmp_path):
    text = _text(_alert(spark, tmp_path, "ConsumptionBlocked", timedelta(seconds=90),
                        _blocked_queue(orderly=True, locked=False, max_reconsume_times=3)))
    assert "consumes orderly" in text and "which it does not hold now" in text
    assert "up to maxReconsumeTimes (3) times" in text and "unlimited" not in text
    for concurrent_only in ("concurrently", "maybe blocked", "consumeThreadMax"):
        assert concurrent_only not in text


def _stuck(span_to: int, **static: Any) -> dict[str, Any]:
    return {"process_queue": [{
        "labels": {"cluster": "prod", "group": "pay", "topic": "Pay", "broker": "broker-a", "queue_id": 1,
                   "client_id": "10.0.0.8@4242"},
        "values": {"cached_min_offset": "1000x14", "cached_max_offset": f"{span_to}x14", "cached_msg_count": "40x14",
                   "last_pull_ts": "0x14", "last_consume_ts": "0x14"},
        "static": {**LIMITS, **static}}]}


def test_a_stuck_message_under_flow_control_does_not_say_the_client_keeps_consuming(spark, tmp_path):
    finding = _alert(spark, tmp_path, "StuckMessage", timedelta(minutes=5), _stuck(3100))
    text = _text(finding)
    assert "stopped pulling this queue (flow control)" in finding.annotations["summary"]
    assert "keeps consuming" not in text and "keeps pulling" not in text
    assert "sees this only in bursts" not in text  # the span is past the limit now


def test_a_stuck_message_without_flow_control_says_the_client_keeps_consuming(spark, tmp_path):
    finding = _alert(spark, tmp_path, "StuckMessage", timedelta(minutes=5), _stuck(1100))
    assert "while the client keeps consuming the messages after it" in finding.annotations["summary"]
    assert "flow control" not in finding.annotations["summary"] + finding.annotations["diagnosis"]


def _dead_letters(**pq_static: Any) -> dict[str, Any]:
    inputs: dict[str, Any] = {"topic_queue": [{
        "labels": {"cluster": "prod", "topic": "%DLQ%audit", "broker": "broker-a", "queue_id": 0},
        "values": {"max_offset": "0+5x24"}, "static": {"topic_kind": "dlq", "group": "audit", "min_offset": 0}}]}
    if pq_static:
        inputs["process_queue"] = [{
            "labels": {"cluster": "prod", "group": "audit", "topic": "AuditTopic", "broker": "broker-a",
                       "queue_id": q, "client_id": client},
            "values": {"cached_msg_count": "0x24"}, "static": {**LIMITS, **settings}}
            for q, (client, settings) in enumerate(pq_static.items())]
    return inputs


def test_dead_letters_state_the_clients_max_reconsume_times_not_the_default(spark, tmp_path):
    text = _text(_alert(spark, tmp_path, "DeadLetterQueueGrowing", timedelta(minutes=11),
                        _dead_letters(**{"10.0.0.9@300": {"max_reconsume_times": 1}})))
    assert "maxReconsumeTimes 1" in text and "retried once" in text
    assert "16 by default" not in text and "4 h 46 m" not in text


def test_dead_letters_of_clients_configured_differently_say_so(spark, tmp_path):
    text = _text(_alert(spark, tmp_path, "DeadLetterQueueGrowing", timedelta(minutes=11), _dead_letters(**{
        "10.0.0.9@300": {"max_reconsume_times": 1}, "10.0.0.10@301": {"max_reconsume_times": 16}})))
    assert "range from 1 to 16" in text and "4 h 46 m" not in text


def test_dead_letters_without_a_reporting_client_call_16_the_default_not_a_fact(spark, tmp_path):
    text = _text(_alert(spark, tmp_path, "DeadLetterQueueGrowing", timedelta(minutes=11), _dead_letters()))
    assert "no client reported its maxReconsumeTimes" in text and "16 unless the application set" in text
