"""GET_BROKER_RUNTIME_INFO (28) from a real 4.9.7 broker, decoded into the typed `broker` row."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from daemon.collectors.broker_runtime import broker_row, parse_size, parse_tps
from daemon.collectors.remoting.bodies import decode_kv_table
from daemon.collectors.timeconv import ms_to_datetime
from rules.tables import BROKER
from tests.daemon.collectors.wire import body

NOW = datetime(2026, 11, 21, 23, 38, 36, tzinfo=UTC)


def _row(name: str) -> dict:
    return broker_row("DefaultCluster", NOW, "broker-a", 0, "127.0.0.1:10911", decode_kv_table(body(name)))


@pytest.mark.parametrize(
    ("rnd", "le0", "put_total", "flush", "backlog", "max_offset"),
    [("t1", 984, 1016, 7884, (1664 - 1642) + (1642 - 1582), 4699235),
     ("t2", 1168, 1200, 11878, (1792 - 1772) + (1772 - 1712), 5038007)],
)
def test_busy_broker_round(rnd, le0, put_total, flush, backlog, max_offset):
    row = _row(f"{rnd}_28_GET_BROKER_RUNTIME_INFO")
    assert set(row) == {c.name for c in BROKER.stored_columns}
    assert (row["put_latency_le_0ms"], row["put_latency_0_10ms"], row["put_latency_ge_10s"]) == (le0, 32, 0)
    assert sum(row[c] for c in row if c.startswith("put_latency_")) == put_total
    assert row["put_slow_100ms"] == 0
    assert row["put_tps"] == pytest.approx(20.0, abs=0.2) and row["put_tps_1m"] == pytest.approx(19, abs=1.5)
    assert row["put_p99_ms"] == 0.99 and row["put_p999_ms"] == 1.0 and row["put_max_ms"] >= 213
    assert row["remain_to_flush_bytes"] == flush  # "7.7 KiB" is 7884.8 bytes, floored
    assert row["remain_transient_buffers"] is None and row["remain_to_commit_bytes"] is None  # pool not in use
    assert row["schedule_backlog"] == backlog
    assert row["commitlog_max_offset"] == max_offset and row["commitlog_disk_ratio"] == 0.25
    assert row["earliest_message_ts"] is None  # "-1"
    assert row["boot_ts"] == ms_to_datetime(1795304116580)
    assert (row["version"], row["dispatch_behind_bytes"], row["page_cache_lock_ms"]) == ("V4_9_7", 0, 0)
    assert row["send_queue_capacity"] == 10000 and row["pull_queue_capacity"] == 100000


def test_first_minute_after_a_restart_has_no_buckets_and_empty_tps():
    # Both header serializations of the request got the same answer from the freshly restarted broker.
    for name in ("rmqser_envrestart_28_GET_BROKER_RUNTIME_INFO_binaryrequest",
                 "rmqser_envrestart_28_GET_BROKER_RUNTIME_INFO_jsonrequest"):
        row = _row(name)
        assert row["put_latency_le_0ms"] is None and row["put_slow_100ms"] is None  # literal "null"
        assert row["put_tps"] is None and row["put_tps_1m"] is None  # "  ": no samples yet
        assert row["remain_to_flush_bytes"] == 0 and row["schedule_backlog"] is None
        assert row["boot_ts"] == ms_to_datetime(1795304887130)


def test_human_sizes_and_tps_items():
    assert parse_size("12.3 KiB") == 12595 and parse_size("0 B") == 0 and parse_size("1.5 GiB") == 1610612736
    assert parse_size("15.4") is None and parse_size("") is None
    assert parse_tps("1.5 2.0 ") == (1.5, 2.0, None) and parse_tps(None) == (None, None, None)


def test_replication_behind_is_set_on_slaves_from_their_masters_offset() -> None:
    from daemon.collectors.broker_runtime import fill_replication_behind

    rows = [
        {"cluster": "c", "broker": "broker-a", "broker_id": 0, "commitlog_max_offset": 5_000_000},
        {"cluster": "c", "broker": "broker-a", "broker_id": 1, "commitlog_max_offset": 4_000_000},
        {"cluster": "c", "broker": "broker-a", "broker_id": 2, "commitlog_max_offset": 5_000_100},  # read later
        {"cluster": "c", "broker": "broker-b", "broker_id": 1, "commitlog_max_offset": 10},  # master not answering
    ]
    fill_replication_behind(rows)
    assert [r.get("replication_behind_bytes") for r in rows] == [None, 1_000_000, 0, None]
