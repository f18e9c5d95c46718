"""exporter_rows on a /metrics page in the exact form apache/rocketmq-exporter writes it.

data/exporter_metrics.txt follows the exporter's own writer (RMQMetricsServiceImpl.writeEscapedHelp):
no HELP/TYPE lines, families in RMQMetricsCollector.collect() order, label names and order of its
*_LABEL_NAMES lists, a trailing comma after the last label, Java Double.toString numbers. The
cluster behind it: broker-a (master 10.0.1.11, slave 10.0.1.12) and broker-b (10.0.1.21, V4_9_3);
order-consumer (2 clients, lagging on broker-a, a %RETRY% backlog, 37 dead letters),
payment-consumer (caught up), audit-consumer (offline: count 0, yet its client's gauges linger),
bcast-consumer (BROADCASTING), and the system group CID_RMQ_SYS_TRANS.
"""

from __future__ import annotations

from collections import defaultdict
from datetime import UTC, datetime
from pathlib import Path

import pytest

from daemon.collectors.exporter import exporter_rows
from daemon.collectors.exporter_parse import ExpositionError, parse_exposition

PAGE = (Path(__file__).parent / "data" / "exporter_metrics.txt").read_text()
NOW = datetime(2026, 11, 22, 0, 0, 15, tzinfo=UTC)


@pytest.fixture(scope="module")
def rows() -> dict[str, list[dict]]:
    return exporter_rows(PAGE, "prod", NOW)


def _by(rows: list[dict], *key: str) -> dict[tuple, dict]:
    return {tuple(r[k] for k in key): r for r in rows}


def test_every_row_carries_the_configured_cluster_and_the_scrape_time(rows):
    # The exporter's own cluster label is the first cluster it saw at startup ("DefaultCluster").
    for table, table_rows in rows.items():
        assert table_rows, table
        assert {r["cluster"] for r in table_rows} == {"prod"}
        assert {r["ts"] for r in table_rows} == {NOW}


def test_consumer_queue_has_one_row_per_group_topic_broker_for_all_queues(rows):
    cq = _by(rows["consumer_queue"], "group", "topic", "broker")
    assert {r["queue_id"] for r in cq.values()} == {-1}
    order_a = cq[("order-consumer", "OrderTopic", "broker-a")]
    assert (order_a["broker_offset"], order_a["consumer_offset"]) == (12345678, 12300000)
    assert order_a["consume_delay_ms"] == 183000
    assert order_a["topic_kind"] == "normal"
    assert order_a["pull_offset"] is None and order_a["last_consumed_store_ts"] is None
    retry_a = cq[("order-consumer", "%RETRY%order-consumer", "broker-a")]
    assert (retry_a["broker_offset"], retry_a["consumer_offset"], retry_a["topic_kind"]) == (
        1520,
        1500,
        "retry",
    )
    # An offline group keeps its broker-side rows: its lag is what the offline-with-lag rule reads.
    audit_b = cq[("audit-consumer", "OrderTopic", "broker-b")]
    assert (audit_b["broker_offset"], audit_b["consumer_offset"], audit_b["consume_delay_ms"]) == (
        9876543,
        9000000,
        12000000,
    )
    assert sorted(cq) == sorted(
        [
            ("audit-consumer", "OrderTopic", "broker-a"),
            ("audit-consumer", "OrderTopic", "broker-b"),
            ("order-consumer", "%RETRY%order-consumer", "broker-a"),
            ("order-consumer", "%RETRY%order-consumer", "broker-b"),
            ("order-consumer", "OrderTopic", "broker-a"),
            ("order-consumer", "OrderTopic", "broker-b"),
            ("payment-consumer", "%RETRY%payment-consumer", "broker-a"),
            ("payment-consumer", "PaymentTopic", "broker-a"),
        ]
    ), "no rows for the broadcasting group nor the system group"


def test_lag_summed_over_brokers_equals_the_exporters_own_diff(rows):
    lag: dict[tuple[str, str], int] = defaultdict(int)
    for r in rows["consumer_queue"]:
        lag[(r["group"], r["topic"])] += r["broker_offset"] - r["consumer_offset"]
    exporter_diff = {
        (s.labels["group"], s.labels["topic"]): int(s.value)
        for metric in ("rocketmq_group_diff", "rocketmq_group_retrydiff")
        for s in parse_exposition(PAGE)[metric]
        if s.labels["group"] != "CID_RMQ_SYS_TRANS"
    }
    assert dict(lag) == exporter_diff
    assert lag[("order-consumer", "OrderTopic")] == 45721


def test_topic_queue_has_normal_retry_dlq_and_system_topics(rows):
    tq = _by(rows["topic_queue"], "topic", "broker")
    assert {r["queue_id"] for r in tq.values()} == {-1}
    assert {r["min_offset"] for r in tq.values()} == {None}
    assert tq[("OrderTopic", "broker-a")]["max_offset"] == 12345678
    assert tq[("OrderTopic", "broker-a")]["topic_kind"] == "normal"
    dlq = tq[("%DLQ%order-consumer", "broker-a")]
    assert (dlq["topic_kind"], dlq["group"], dlq["max_offset"]) == ("dlq", "order-consumer", 37)
    retry = tq[("%RETRY%order-consumer", "broker-b")]
    assert (retry["topic_kind"], retry["group"], retry["max_offset"]) == ("retry", "order-consumer", 1205)
    system = {t for (t, _), r in tq.items() if r["topic_kind"] == "system"}
    assert system == {
        "TBW102",
        "SCHEDULE_TOPIC_XXXX",
        "RMQ_SYS_TRANS_HALF_TOPIC",
        "DefaultCluster",
        "DefaultCluster_REPLY_TOPIC",
        "broker-a",
        "broker-b",
    }


def test_broker_rows_for_masters_with_exact_meanings_only(rows):
    brokers = _by(rows["broker"], "broker")
    assert sorted(brokers) == [("broker-a",), ("broker-b",)], "the slave has no runtime gauges, so no row"
    a, b = brokers[("broker-a",)], brokers[("broker-b",)]
    assert (a["addr"], a["broker_id"], a["version"]) == ("10.0.1.11:10911", 0, "V4_9_7")
    assert [
        a[c]
        for c in (
            "put_latency_le_0ms",
            "put_latency_0_10ms",
            "put_latency_100_200ms",
            "put_latency_200_500ms",
        )
    ] == [
        48211,
        1502,
        3,
        1,
    ]
    assert a["put_slow_100ms"] == 4
    assert (a["send_queue_size"], a["send_queue_capacity"], a["send_queue_head_wait_ms"]) == (12, 10000, 180)
    assert a["put_tps"] == pytest.approx(19.9860097931448)
    assert a["put_tps_1m"] == pytest.approx(18.78465919499076)
    assert (a["put_p99_ms"], a["put_p999_ms"]) == (0.99, 1.0)
    assert (a["commitlog_min_offset"], a["commitlog_max_offset"]) == (0, 4707117)
    assert a["remain_transient_buffers"] is None, "2147483647 means the pool is not in use"
    assert a["earliest_message_ts"] is None, "the broker reported -1"
    assert a["msg_put_today"] == 18453
    assert b["version"] == "V4_9_3"
    assert (b["put_p99_ms"], b["put_p999_ms"]) == (None, None), "-1: the broker predates putLatency99"
    assert b["commitlog_disk_ratio"] is None and b["consume_queue_disk_ratio"] == 0.91
    assert b["remain_transient_buffers"] == 4
    assert (b["page_cache_lock_ms"], b["dispatch_behind_bytes"]) == (650, 52428800)
    assert b["earliest_message_ts"] == datetime(2026, 11, 19, 14, 53, 20, 123000, tzinfo=UTC)
    assert b["msg_put_today"] == 2450000 - 2100000
    # The exporter drops the unit of remainHowManyDataToFlush and its boottime label never changes
    # after the first scrape: neither is trusted.
    assert {a["remain_to_flush_bytes"], a["boot_ts"], b["remain_to_flush_bytes"], b["boot_ts"]} == {None}


def test_consumer_status_and_clients_of_online_groups_only(rows):
    status = _by(rows["consumer_status"], "client_id", "topic")
    assert {r["group"] for r in status.values()} == {"order-consumer", "payment-consumer", "bcast-consumer"}
    busy = status[("10.0.2.15@12345#8421337401234", "OrderTopic")]
    assert {k: busy[k] for k in busy if k not in ("ts", "cluster")} == {
        "group": "order-consumer",
        "client_id": "10.0.2.15@12345#8421337401234",
        "topic": "OrderTopic",
        "pull_rt_ms": 1.2,
        "pull_tps": 48.0,
        "consume_rt_ms": 2103.6,
        "consume_ok_tps": 47.5,
        "consume_failed_tps": 0.95,
        "consume_failed_msgs_1h": 114,
    }
    clients = _by(rows["consumer_client"], "group", "client_id")
    assert sorted(clients) == [
        ("bcast-consumer", "10.0.2.19@4242#8421337412222"),
        ("order-consumer", "10.0.2.15@12345#8421337401234"),
        ("order-consumer", "10.0.2.16@23456#8421337405678"),
        ("payment-consumer", "10.0.2.17@3456#8421337409012"),
    ], "audit-consumer counts 0 clients: its lingering client gauges are not an online client"
    order = clients[("order-consumer", "10.0.2.16@23456#8421337405678")]
    assert (order["client_addr"], order["message_model"]) == ("10.0.2.16:41877", "CLUSTERING")
    assert order["language"] is None and order["subscriptions"] is None


def _with_help_and_type(page: str) -> str:
    """The page as exporters before 2020 wrote it: Java TextFormat.write004 with HELP/TYPE lines."""
    out, seen = [], set()
    for line in page.splitlines():
        name = line.split("{", 1)[0]
        if name not in seen:
            seen.add(name)
            out += [f"# HELP {name} {name}", f"# TYPE {name} gauge"]
        out.append(line)
    return "\n".join(out) + "\n"


def test_pages_with_help_and_type_lines_give_the_same_rows(rows):
    assert exporter_rows(_with_help_and_type(PAGE), "prod", NOW) == rows


def test_a_broker_without_name_gauges_is_named_by_its_address():
    page = "\n".join(
        line
        for line in PAGE.splitlines()
        if not line.startswith(("rocketmq_broker_tps", "rocketmq_broker_qps"))
    )
    brokers = exporter_rows(page, "prod", NOW)["broker"]
    assert sorted(r["broker"] for r in brokers) == ["10.0.1.11:10911", "10.0.1.21:10911"]


def test_consumer_offsets_without_the_topics_offsets_give_no_row():
    # The exporter's cache dropped broker-b's OrderTopic offsets (its stats call failed for a minute).
    page = "\n".join(
        line
        for line in PAGE.splitlines()
        if not line.startswith(
            'rocketmq_producer_offset{cluster="DefaultCluster",broker="broker-b",topic="OrderTopic"'
        )
    )
    cq = exporter_rows(page, "prod", NOW)["consumer_queue"]
    assert ("OrderTopic", "broker-b") not in {(r["topic"], r["broker"]) for r in cq}
    assert len(cq) == 6


@pytest.mark.parametrize(
    ("page", "expected"),
    [
        ("<html><body><h1>Whitelabel Error Page</h1></body></html>\n", "not Prometheus text format: line 1:"),
        ('{"status": 500, "error": "Internal Server Error"}\n', "not Prometheus text format: line 1:"),
        (
            "# HELP node_load1 1m load average.\n# TYPE node_load1 gauge\nnode_load1 0.21\n",
            "none named rocketmq_*",
        ),
        ("", "no rocketmq_* metrics yet"),
    ],
)
def test_unusable_pages_say_why(page, expected):
    with pytest.raises(ExpositionError) as err:
        exporter_rows(page, "prod", NOW)
    assert expected in str(err.value)
