"""The native-metrics decoder on the real RocketMQ 5.3.3 pages (shared/fixtures/rocketmq-5.3.3/metrics-*.txt):
the rows rocketwatch keeps hold the README's ground-truth figures."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from daemon.collectors.native_map import NativePageError, native_rows, parse_native_page
from tests.fixtures_path import CAPTURE_5 as FIXTURES

# README "Ground truth": per scrape metrics-1 / -2 / -3.
GROUND_TRUTH = {
    ("payGroup", "PayTopic"): {"lag": (2563, 2582, 2599), "inflight": (2506, 2506, 2505), "ready": (57, 76, 94),
                               "lag_latency_ms": (145232, 175671, 205018),
                               "queueing_latency_ms": (93722, 124160, 153506)},
    ("popGroup", "PopTopic"): {"lag": (0, 42, 100), "inflight": (0, 0, 0), "ready": (0, 42, 100),
                               "lag_latency_ms": (0, 20820, 50169), "queueing_latency_ms": (0, 20823, 50169)},
    ("auditGroup", "MailTopic"): {"lag": (4, 4, 4), "inflight": (4, 4, 4), "ready": (0, 0, 0),
                                  "lag_latency_ms": (1567, 1690, 1736)},
    ("ledgerGroup", "PayTopic"): {"lag": (2, 5, 7), "lag_latency_ms": (1118, 1454, 1553)},
    ("mailGroup", "MailTopic"): {"lag": (4, 3, 4), "lag_latency_ms": (1567, 1692, 1737)},
    ("timerGroup", "TimerTopic"): {"lag": (0, 0, 0)},
    ("txGroup", "TxTopic"): {"lag": (0, 0, 0)},
}
SCRAPED_AT = (datetime(2026, 11, 27, 0, 31, 31, 500000, tzinfo=UTC), datetime(2026, 11, 27, 0, 32, 1, 900000, tzinfo=UTC),
              datetime(2026, 11, 27, 0, 32, 31, 200000, tzinfo=UTC))


def _rows(i: int) -> dict[str, list[dict]]:
    text = (FIXTURES / f"metrics-{i + 1}.txt").read_text()
    return native_rows(parse_native_page(text), "DefaultCluster", "127.0.0.1:5557", SCRAPED_AT[i])


@pytest.mark.parametrize("i", [0, 1, 2])
def test_consumer_gauges_per_group_and_topic_are_the_brokers_figures(i: int) -> None:
    rows = _rows(i)["native_consumer"]
    by_key = {(r["group"], r["topic"]): r for r in rows if not r["is_retry"]}
    for key, columns in GROUND_TRUTH.items():
        for column, values in columns.items():
            assert by_key[key][column] == values[i], (key, column)
    # Series are keyed by the scrape address; node_id is the broker name.
    assert {(r["target"], r["broker"], r["cluster"]) for r in rows} == {("127.0.0.1:5557", "broker-a", "DefaultCluster")}
    assert not any(r["is_system"] for r in by_key.values() if r["group"] in {g for g, _ in GROUND_TRUTH})


@pytest.mark.parametrize(("i", "dlq", "revived"), [(0, 266, 2), (1, 326, 10), (2, 384, 69)])
def test_dead_letters_and_pop_revives_are_counted_per_group(i: int, dlq: int, revived: int) -> None:
    by_key = {(r["group"], r["topic"]): r for r in _rows(i)["native_consumer"]}
    assert by_key[("auditGroup", "MailTopic")]["dlq_total"] == dlq
    assert by_key[("popGroup", "PopTopic")]["revive_retry_total"] == revived
    assert by_key[("payGroup", "PayTopic")]["dlq_total"] is None


@pytest.mark.parametrize(("i", "revive_log"), [(0, 164), (1, 77), (2, 17)])
def test_half_messages_and_timer_backlog_per_topic(i: int, revive_log: int) -> None:
    by_topic = {r["topic"]: r for r in _rows(i)["native_topic"]}
    tx, timer = by_topic["TxTopic"], by_topic["TimerTopic"]
    assert (tx["half_messages"], tx["commit_total"], tx["rollback_total"]) == (30, 20, 5)
    assert (timer["timing_messages"], timer["timer_enqueue_total"], timer["timer_dequeue_total"]) == (300, 340, 40)
    assert by_topic["rmq_sys_REVIVE_LOG_DefaultCluster"]["timing_messages"] == revive_log


@pytest.mark.parametrize(("i", "flush"), [(0, 622), (1, 11473), (2, 9703)])
def test_broker_row_holds_store_figures_inventory_and_what_was_not_read(i: int, flush: int) -> None:
    (row,) = _rows(i)["native_broker"]
    assert (row["broker"], row["dispatch_behind_bytes"], row["flush_behind_bytes"]) == ("broker-a", 0, flush)
    assert (row["permission"], row["topics"], row["consumer_groups"]) == (6, 27, 15)
    assert (row["producer_connections"], row["consumer_connections"]) == (15, 7)
    # The page's millisecond timestamps are read: each scrape was taken within 2 s of its sample time.
    assert row["sample_age_s"] is not None and abs(row["sample_age_s"]) < 60
    # 61 sample names on the page; target_info/otel_scope_info lead it; the rest is counted, not read.
    assert row["unknown_families"] == 61 - 2 - len({
        "rocketmq_consumer_lag_messages", "rocketmq_consumer_inflight_messages", "rocketmq_consumer_ready_messages",
        "rocketmq_consumer_lag_latency_milliseconds", "rocketmq_consumer_queueing_latency_milliseconds",
        "rocketmq_send_to_dlq_messages_total", "rocketmq_pop_revive_retry_messages_total", "rocketmq_half_messages",
        "rocketmq_timing_messages", "rocketmq_timer_enqueue_total", "rocketmq_timer_dequeue_total",
        "rocketmq_commit_messages_total", "rocketmq_rollback_messages_total", "rocketmq_storage_dispatch_behind_bytes",
        "rocketmq_storage_flush_behind_bytes", "rocketmq_timer_enqueue_lag", "rocketmq_timer_dequeue_lag",
        "rocketmq_timer_enqueue_latency_milliseconds", "rocketmq_timer_dequeue_latency_milliseconds",
        "rocketmq_pop_revive_lag_milliseconds", "rocketmq_pop_revive_latency_milliseconds",
        "rocketmq_broker_permission", "rocketmq_topic_number", "rocketmq_consumer_group_number",
        "rocketmq_producer_connections", "rocketmq_consumer_connections"})


def test_the_samples_carry_the_unit_suffix_the_type_lines_leave_out() -> None:
    text = (FIXTURES / "metrics-3.txt").read_text()
    assert "# TYPE rocketmq_consumer_lag_latency gauge" in text
    page = parse_native_page(text)
    assert "rocketmq_consumer_lag_latency_milliseconds" in page.samples
    assert page.newest_ms == max(s.ts_ms for v in page.samples.values() for s in v if s.ts_ms is not None)
    assert page.newest_ms is not None and page.newest_ms // 1000 == 1795739551


def test_a_page_without_rocketmq_samples_is_refused_with_a_reason() -> None:
    with pytest.raises(NativePageError, match="metricsExporterType=PROM"):
        parse_native_page("# TYPE up gauge\nup 1\n")
