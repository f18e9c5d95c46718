"""What one process evaluates never outlives the rules it was built from.

One process evaluates the same store again after an operator edits a rule, after the global
stale_after changes, and at a later `now` for a rule reading now(): each evaluation must give
what a fresh process would.
"""

from datetime import timedelta

from tests.spark.kind_samples import NOW, at, pq_row

SPAN = {"alert": "SpanHigh", "kind": "threshold", "table": "process_queue", "value": "span",
        "above": {"warning": 1000}, "summary": "{group} q{queue_id}: span {value}"}


def _spans(write):
    write("process_queue", [pq_row(at(age), "orders", queue_id, "c1@1", cached_msg_count=10,
                                   cached_min_offset=0, cached_max_offset=span, last_consume_ts=at(age + 600))
                            for age in (0, 30) for queue_id, span in ((0, 1500), (1, 2500))])


def test_an_edited_rule_is_judged_by_its_new_levels(write, evaluate):
    _spans(write)
    assert {f.labels["queue_id"]: f.severity for f in evaluate(SPAN)} == {"0": "warning", "1": "warning"}
    edited = {**SPAN, "above": {"warning": 2000, "critical": 2400}, "labels": {"team": "payments"}}
    found = evaluate(edited)
    assert [(f.labels["queue_id"], f.severity, f.threshold, f.labels["team"]) for f in found] == [
        ("1", "critical", 2400, "payments")]


def test_a_rule_reading_now_is_judged_at_each_evaluation_time(write, evaluate):
    _spans(write)
    idle = {"alert": "Idle", "kind": "threshold", "table": "process_queue",
            "value": "(now() - last_consume_ts) / 1000", "above": {"warning": 500},
            "summary": "{group} q{queue_id} idle {value}s"}
    assert {f.value for f in evaluate(idle, now=NOW)} == {600.0}
    assert {f.value for f in evaluate(idle, now=NOW + timedelta(seconds=20))} == {620.0}


def test_absent_follows_a_changed_stale_after(write, evaluate):
    write("broker", [dict(ts=at(age), cluster="c1", broker="broker-a", broker_id=0, addr="10.0.0.1:10911")
                     for age in range(90, 1200, 30)])
    silent = {"alert": "BrokerSilent", "kind": "absent", "table": "broker", "over": "30m",
              "summary": "{broker} silent for {value}s"}
    (found,) = evaluate(silent, stale_after=timedelta(seconds=60))
    assert (found.value, found.threshold) == (90, 60)
    assert evaluate(silent, stale_after=timedelta(seconds=120)) == []
