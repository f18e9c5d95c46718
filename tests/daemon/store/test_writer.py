"""The Parquet sample store: partitions by UTC date/hour, schema from the table catalog, atomic files."""

from datetime import UTC, datetime, timedelta, timezone

import pyarrow.parquet as pq
import pytest

from daemon.store.writer import ParquetStore, arrow_schema
from rules.tables import CONSUMER_QUEUE


def _row(ts, queue_id=3, **extra):
    row = {
        "ts": ts, "cluster": "DefaultCluster", "group": "stuckGroup", "topic": "OrderTopic",
        "broker": "broker-a", "queue_id": queue_id, "broker_offset": 3708, "consumer_offset": 0,
        "topic_kind": "normal",
    }
    row.update(extra)
    return row


def test_rows_land_in_the_utc_hour_partition_of_the_cycle(tmp_path):
    store = ParquetStore(tmp_path)
    # 07:38 at GMT+8 is 23:38 UTC of the previous day: the partition follows UTC.
    ts = datetime(2026, 11, 22, 7, 38, 36, tzinfo=timezone(timedelta(hours=8)))
    path = store.append("consumer_queue", [_row(ts), _row(ts, queue_id=4)], ts)
    assert path.parent == tmp_path / "consumer_queue" / "date=2026-11-21" / "hour=23"
    table = pq.read_table(path)
    assert table.num_rows == 2
    assert table.column("broker_offset").to_pylist() == [3708, 3708]
    assert table.column("pull_offset").to_pylist() == [None, None]  # nullable, absent on 4.9.x


def test_schema_has_stored_columns_only(tmp_path):
    names = arrow_schema(CONSUMER_QUEUE).names
    assert "lag" not in names and "inflight" not in names  # derived in Spark, never stored
    assert names[:2] == ["ts", "cluster"]


def test_a_missing_required_column_names_table_row_and_column(tmp_path):
    ts = datetime(2026, 11, 21, 23, 38, tzinfo=UTC)
    bad = _row(ts)
    del bad["consumer_offset"]
    with pytest.raises(ValueError, match=r"consumer_queue row 1: column 'consumer_offset' is required"):
        ParquetStore(tmp_path).append("consumer_queue", [_row(ts), bad], ts)
    # Nothing half-written is left behind for a reader to trip on.
    assert not list(tmp_path.rglob("*.parquet")) and not list(tmp_path.rglob("*.tmp"))


def test_each_cycle_appends_a_new_file(tmp_path):
    store = ParquetStore(tmp_path)
    ts = datetime(2026, 11, 21, 23, 38, tzinfo=UTC)
    written = store.append_all({"consumer_queue": [_row(ts)], "process_queue": []}, ts)
    store.append_all({"consumer_queue": [_row(ts + timedelta(seconds=5))]}, ts + timedelta(seconds=5))
    assert written == {"consumer_queue": 1, "process_queue": 0}
    assert len(list((tmp_path / "consumer_queue").rglob("*.parquet"))) == 2
    assert not (tmp_path / "process_queue").exists()


def test_a_cycle_with_one_invalid_table_writes_no_file_and_no_marker(tmp_path):
    ts = datetime(2026, 11, 21, 23, 38, tzinfo=UTC)
    bad = _row(ts)
    del bad["broker_offset"]
    health = [{"ts": ts, "cluster": "DefaultCluster", "target": "t", "call": "c", "ok": True, "latency_ms": 1.0}]
    with pytest.raises(ValueError, match="broker_offset"):
        ParquetStore(tmp_path).append_all({"collector_health": health, "consumer_queue": [bad]}, ts)
    # Checked before anything is written: no file of the cycle's valid table either.
    assert not [p for p in tmp_path.rglob("*") if p.is_file()]
