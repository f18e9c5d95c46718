"""diagnose's rehearsal: the pack planned on the first sample while the others are taken, never past sampling."""

import time
from datetime import UTC, datetime, timedelta

import pytest

import spark.reference
from daemon.collectors.group_sample import Sample
from daemon.diagnose.rules_eval import builtin_rules, judgeable, rehearse

TS = datetime(2026, 11, 21, 12, 0, tzinfo=UTC)


def _first_sample() -> Sample:
    sample = Sample(TS)
    sample.rows["consumer_queue"].append({
        "ts": TS, "cluster": "c", "group": "G", "topic": "T", "broker": "broker-a", "queue_id": 0,
        "broker_offset": 100, "consumer_offset": 40, "pull_offset": None, "consume_delay_ms": 0,
        "topic_kind": "normal"})
    return sample


@pytest.fixture
def planned(monkeypatch) -> list[tuple[str, bool]]:
    """(table, planned something) for every plan the rehearsal asks Spark for."""
    calls: list[tuple[str, bool]] = []
    real = spark.reference.plan_reference

    def plan(session, root, rules, now, stale_after):
        result = real(session, root, rules, now, stale_after)
        calls.append((rules[0].table, result is not None))
        return result

    monkeypatch.setattr(spark.reference, "plan_reference", plan)
    return calls


def test_a_rehearsal_plans_every_table_of_the_rules_with_the_biggest_first(spark, planned):
    rules = judgeable(builtin_rules(), timedelta(seconds=4))
    rehearse(spark, rules, _first_sample(), until=time.monotonic() + 600)
    tables = [table for table, _ in planned]
    assert sorted(tables) == sorted({r.table for r in rules})
    counts = [sum(r.table == t for r in rules) for t in tables]
    assert counts == sorted(counts, reverse=True)
    # The sample's table and the views built on it are planned for real (the JVM warms up on them).
    assert ("consumer_queue", True) in planned and ("consumer_group", True) in planned


def test_a_rehearsal_that_would_outlast_the_sampling_plans_nothing_more(spark, planned):
    rehearse(spark, builtin_rules(), _first_sample(), until=time.monotonic())
    assert planned == []
