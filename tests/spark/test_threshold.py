"""Threshold rules evaluated by real Spark over a real Parquet store, at a fixed `now`."""

from datetime import UTC, datetime, timedelta

import pytest

from daemon.store.writer import ParquetStore
from rules.loader import load_rule_files
from rules.overrides import RuleOverride, apply_overrides
from spark.evaluate import Evaluator

NOW = datetime(2026, 11, 21, 23, 38, 36, tzinfo=UTC)
STALE = timedelta(seconds=30)
CLIENT = "192.0.2.2@5764#7903510994656"

CUSTOM_RULES = """\
groups:
  - name: test
    rules:
      - alert: SpanLevels
        kind: threshold
        table: process_queue
        value: span
        where: cached_msg_count > 0
        above: {warning: 1000, critical: max_span}
        summary: "{group} q{queue_id}: {value} > {threshold} ({severity})"
        diagnosis: "d"
        next_steps: "n"
      - alert: GroupCachedMax
        kind: threshold
        table: process_queue
        value: cached_msg_count
        by: [cluster, group]
        above: {critical: 50}
        summary: "{group}: {value} cached, worst queue {queue_id}"
        diagnosis: "d"
        next_steps: "n"
      - alert: GroupCachedSum
        kind: threshold
        table: process_queue
        value: cached_msg_count
        by: [cluster, group]
        reduce: sum
        above: {critical: 50}
        summary: "{group}: {value} cached in total"
        diagnosis: "d"
        next_steps: "n"
      - alert: ConsumeStalled
        kind: threshold
        table: process_queue
        value: (now() - last_consume_ts) / 1000
        where: cached_msg_count > 0 and group == 'stuckGroup'
        above: {warning: 60}
        summary: "no consumption for {value}s (last {last_consume_ts})"
        diagnosis: "d"
        next_steps: "n"
      - alert: LagHigh
        kind: threshold
        table: consumer_queue
        value: lag
        above: {critical: 1000}
        summary: "{group} lag {value}"
        diagnosis: "d"
        next_steps: "n"
"""


def pq_row(group, queue_id, *, ts, count=0, min_offset=0, max_offset=0, max_span=2000, client=CLIENT, **extra):
    row = dict(
        ts=ts, cluster="DefaultCluster", group=group, client_id=client, topic="OrderTopic", broker="broker-a",
        queue_id=queue_id, cached_msg_count=count, cached_msg_size_mib=0, cached_min_offset=min_offset,
        cached_max_offset=max_offset, commit_offset=min_offset, last_pull_ts=ts, last_consume_ts=ts,
        locked=True, dropped=False, try_unlock_times=0, pull_threshold_for_queue=1000,
        pull_threshold_size_mib=100, max_span=max_span, consume_timeout_min=15, max_reconsume_times=16,
        orderly=False,
    )
    row.update(extra)
    return row


def _cycle(ts):
    """One collection cycle of the scenario: the fixture's stuck consumer plus a few constructed cases."""
    rows = [
        # stuckGroup / OrderTopic queue 3 as captured from 4.9.7: cachedMsgCount 2, min 0, max 3626.
        pq_row("stuckGroup", q, ts=ts, count=2 if q == 3 else 0, max_offset=3626 if q == 3 else 0,
               last_consume_ts=NOW - timedelta(minutes=2) if q == 3 else ts)
        for q in range(8)
    ]
    rows += [pq_row("healthyGroup", q, ts=ts, client="192.0.2.2@5770#1") for q in range(8)]
    rows += [pq_row("warnGroup", 0, ts=ts, count=5, min_offset=100, max_offset=1600),
             pq_row("warnGroup", 1, ts=ts, count=5, min_offset=100, max_offset=2600)]
    rows += [pq_row("perRowGroup", 0, ts=ts, count=3, max_offset=800, max_span=500)]
    rows += [pq_row("sumGroup", q, ts=ts, count=20, min_offset=0, max_offset=19) for q in range(4)]
    return rows


@pytest.fixture(scope="module")
def scenario(tmp_path_factory):
    store = ParquetStore(tmp_path_factory.mktemp("scenario"))
    for age in (65, 35, 5):
        ts = NOW - timedelta(seconds=age)
        rows = _cycle(ts)
        if age == 65:
            # Older samples must lose to newer ones: this queue was over its span a minute ago.
            rows.append(pq_row("newerGroup", 0, ts=ts, count=5, max_offset=5000))
        rows.append(pq_row("newerGroup", 0, ts=ts, count=1, max_offset=10) if age != 65 else rows.pop())
        store.append("process_queue", rows, ts)
    # A series whose newest sample is 3 minutes old: stale, so no_data rather than a silent resolve.
    old = NOW - timedelta(minutes=3)
    store.append("process_queue", [pq_row("staleGroup", 0, ts=old, count=4, max_offset=5000)], old)
    return store


@pytest.fixture(scope="module")
def findings(spark, scenario, tmp_path_factory):
    rules_dir = tmp_path_factory.mktemp("rules")
    (rules_dir / "custom.yaml").write_text(CUSTOM_RULES)
    # The built-in span rule plus the custom ones: other built-in rules have their own tests.
    rules = [r for r in load_rule_files(["builtin", rules_dir]).rules
             if r.alert == "ProcessQueueSpanTooLong" or r.alert in CUSTOM_RULES]
    return Evaluator(spark, scenario.root).evaluate(rules, NOW, STALE)


def _of(findings, rule):
    return {(f.labels["group"], f.labels.get("queue_id")): f for f in findings if f.rule == rule}


def test_stuck_consumer_from_the_fixture_is_critical_with_a_runbook(findings):
    span = _of(findings, "ProcessQueueSpanTooLong")
    stuck = span[("stuckGroup", "3")]
    assert stuck.severity == "critical" and stuck.value == 3626 and stuck.threshold == 2000
    assert stuck.labels == {
        "cluster": "DefaultCluster", "group": "stuckGroup", "topic": "OrderTopic", "broker": "broker-a",
        "queue_id": "3", "client_id": CLIENT, "category": "consumer",
    }
    summary = stuck.annotations["summary"]
    assert "stuckGroup" in summary and "broker-a/3" in summary and "3626" in summary and "2000" in summary
    assert "3626.0" not in summary
    assert "ConsumeMessageThread_stuckGroup_N" in stuck.annotations["next_steps"]
    assert "offset 0" in stuck.annotations["diagnosis"]


def test_healthy_peer_and_resolved_series_give_nothing(findings):
    groups = {f.labels["group"] for f in findings}
    assert "healthyGroup" not in groups
    # newerGroup was over the span 65 s ago; its newest sample (5 s ago) is fine.
    assert "newerGroup" not in groups


def test_per_row_threshold_is_the_clients_own_max_span(findings):
    per_row = _of(findings, "ProcessQueueSpanTooLong")[("perRowGroup", "0")]
    assert (per_row.severity, per_row.value, per_row.threshold) == ("critical", 800, 500)


def test_stale_series_is_no_data_not_resolved(findings):
    stale = [f for f in findings if f.labels["group"] == "staleGroup"]
    assert {f.rule for f in stale} == {"ProcessQueueSpanTooLong", "SpanLevels", "GroupCachedMax", "GroupCachedSum"}
    assert all(f.no_data and f.severity is None and f.value is None for f in stale)
    assert all(not f.no_data for f in findings if f.labels["group"] != "staleGroup")


def test_warning_and_critical_levels(findings):
    levels = _of(findings, "SpanLevels")
    assert (levels[("warnGroup", "0")].severity, levels[("warnGroup", "0")].threshold) == ("warning", 1000)
    assert (levels[("warnGroup", "1")].severity, levels[("warnGroup", "1")].threshold) == ("critical", 2000)
    assert levels[("warnGroup", "1")].annotations["summary"] == "warnGroup q1: 2500 > 2000 (critical)"
    # Strictly greater: sumGroup's span 19 and an empty cache never fire.
    assert ("sumGroup", "0") not in levels


def test_by_coarser_than_key_reduces_max_and_sum(findings):
    by_max = _of(findings, "GroupCachedMax")
    by_sum = _of(findings, "GroupCachedSum")
    assert ("sumGroup", None) not in by_max  # max of 20s stays under 50
    total = by_sum[("sumGroup", None)]
    assert (total.severity, total.value, total.threshold) == ("critical", 80, 50)
    assert total.labels == {"cluster": "DefaultCluster", "group": "sumGroup"}
    assert total.annotations["summary"] == "sumGroup: 80 cached in total"


def test_now_minus_timestamp_is_milliseconds(findings):
    (stalled,) = _of(findings, "ConsumeStalled").values()
    assert (stalled.severity, stalled.value) == ("warning", 120)
    assert stalled.annotations["summary"].startswith("no consumption for 120s (last 2026-11-21 23:36:36")


def test_table_without_files_gives_no_findings(findings):
    assert not [f for f in findings if f.rule == "LagHigh"]


def test_exclude_override_and_empty_store(spark, scenario, tmp_path):
    pack = load_rule_files(["builtin"])
    tuned, errors = apply_overrides(
        pack, {"ProcessQueueSpanTooLong": RuleOverride.model_validate({"exclude": {"group": "stuck.*|perRow.*"}})}
    )
    assert errors == []
    found = Evaluator(spark, scenario.root).evaluate([tuned.get("ProcessQueueSpanTooLong")], NOW, STALE)
    assert {f.labels["group"] for f in found} == {"warnGroup", "staleGroup"}
    assert Evaluator(spark, tmp_path / "empty").evaluate(pack.rules, NOW, STALE) == []


def test_fused_pass_gives_the_same_findings_as_one_plan_per_rule(spark, scenario, findings, tmp_path):
    from rules.tables import PROCESS_QUEUE
    from spark.kinds.threshold import plan_threshold
    from spark.render import to_finding
    from spark.sql import run, union_all
    from spark.store_reader import read_window

    rules_dir = tmp_path / "rules"
    rules_dir.mkdir()
    (rules_dir / "custom.yaml").write_text(CUSTOM_RULES)
    rules = [r for r in load_rule_files(["builtin", rules_dir]).rules
             if r.alert == "ProcessQueueSpanTooLong" or r.alert in CUSTOM_RULES]
    window = read_window(spark, scenario.root, PROCESS_QUEUE, NOW - timedelta(minutes=10), NOW)
    plans = [plan_threshold(r, "{window}", STALE) for r in rules if r.table == "process_queue"]
    by_name = {r.alert: r for r in rules}
    one_by_one = [to_finding(by_name[row["rule"]], row.asDict())
                  for row in run(spark, union_all(plans), NOW, window=window).collect()]
    one_by_one.sort(key=lambda f: (f.rule, sorted(f.labels.items())))
    assert one_by_one == findings and len(findings) > 10
