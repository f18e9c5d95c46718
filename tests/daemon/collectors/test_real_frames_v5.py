"""Decoders against the real 5.3.3 remoting captures (shared/fixtures/rocketmq-5.3.3/wire, README there)."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from daemon.collectors.broker_runtime import broker_row
from daemon.collectors.remoting import bodies, frame
from tests.fixtures_path import WIRE_5

NOW = datetime(2026, 11, 27, 0, 47, 29, tzinfo=UTC)


def body(name: str) -> bytes:
    """The body of the real response frame `<name>.frame`."""
    path = WIRE_5 / f"{name}.frame"
    assert path.exists(), f"fixture {path} missing: set ROCKETWATCH_FIXTURES to the shared fixtures dir"
    return frame.decode(path.read_bytes()).body


@pytest.mark.parametrize(("rnd", "congest", "enqueue_tps", "dequeue_tps"),
                         [("t1", 404, 2.0011947, 4.127391), ("t2", 300, 0.0, 0.0)])
def test_runtime_info_carries_the_timer_backlog_over_remoting(rnd: str, congest: int, enqueue_tps: float,
                                                              dequeue_tps: float) -> None:
    kv = bodies.decode_kv_table(body(f"{rnd}_28_GET_BROKER_RUNTIME_INFO"))
    row = broker_row("DefaultCluster", NOW, "broker-a", 0, "127.0.0.1:10911", kv)
    assert row["version"] == "V5_3_3"
    assert row["timer_congest_num"] == congest
    assert (row["timer_read_behind_s"], row["timer_offset_behind"]) == (0, 0)
    assert row["timer_enqueue_tps"] == pytest.approx(enqueue_tps)
    assert row["timer_dequeue_tps"] == pytest.approx(dequeue_tps)


@pytest.mark.parametrize("rnd", ["t1", "t2"])
def test_the_pop_mode_clients_running_info_yields_its_wait_ack_count_and_pop_settings(rnd: str) -> None:
    from daemon.collectors.client_rows import pop_queue_rows, process_queue_rows

    info = bodies.decode_consumer_running_info(body(f"{rnd}_307_GET_CONSUMER_RUNNING_INFO_popGroup_539"))
    (row,) = pop_queue_rows("DefaultCluster", NOW, "popGroup", "192.0.2.2@539", info)
    assert (row["topic"], row["broker"], row["queue_id"]) == ("PopTopic", "broker-a", -1)
    assert row["wait_ack_count"] == 97 and not row["dropped"]
    assert (row["pop_threshold_for_queue"], row["pop_invisible_time_ms"], row["pop_batch_nums"]) == (96, 60000, 8)
    assert row["wait_ack_count"] > row["pop_threshold_for_queue"]  # the client stopped popping
    # Its mqTable holds only the classic retry topic's queue: no ProcessQueue of PopTopic.
    assert {r["topic"] for r in process_queue_rows("DefaultCluster", NOW, "popGroup", "c", info)} == {"%RETRY%popGroup"}


def test_a_push_clients_running_info_has_no_pop_table() -> None:
    info = bodies.decode_consumer_running_info(body("t1_307_GET_CONSUMER_RUNNING_INFO_payGroup_32694"))
    assert info.mq_pop_table == {} and info.mq_table


@pytest.mark.parametrize("group", ["payGroup", "popGroup"])
def test_the_connection_list_says_consume_passively_for_push_and_pop_mode_alike(group: str) -> None:
    conn = bodies.decode_consumer_connection(body(f"t1_203_GET_CONSUMER_CONNECTION_LIST_{group}"))
    assert conn.consume_type == "CONSUME_PASSIVELY"


def test_the_pop_retry_topic_is_filed_under_its_group() -> None:
    from daemon.collectors.client_rows import topic_kind
    from daemon.collectors.topic_list import groups_of_retry_topics

    assert topic_kind("%RETRY%popGroup_PopTopic", {"popGroup", "payGroup"}) == ("retry", "popGroup")
    assert topic_kind("%RETRY%popGroup+PopTopic") == ("retry", "popGroup")
    assert topic_kind("%RETRY%order_sync", {"order_sync", "order"}) == ("retry", "order_sync")
    stats = bodies.decode_consume_stats(body("t2_208_GET_CONSUME_STATS_popGroup"))
    assert {mq.topic for mq in stats.offsets} >= {"PopTopic", "%RETRY%popGroup_PopTopic"}
    topics = ["PopTopic", "%RETRY%popGroup", "%RETRY%popGroup_PopTopic", "%RETRY%pay_v2", "%RETRY%payGroup"]
    assert groups_of_retry_topics(topics) == {"popGroup", "pay_v2", "payGroup"}
