"""Store maintenance on real Parquet files: compaction of closed hours, retention, crash recovery."""

from __future__ import annotations

import logging
import os
import time
from datetime import UTC, datetime, timedelta

import pyarrow.parquet as pq
import pytest

from config.models import MaintenanceConfig
from daemon.store.layout import QUARANTINE
from daemon.store.maintenance import maintain_store, recover_store
from daemon.store.writer import ParquetStore, partition_dir
from spark.store_layout import commit_dir, list_commits

NOW = datetime(2026, 11, 22, 12, 20, tzinfo=UTC)


def _rows(ts, n=3):
    return [
        {"ts": ts, "cluster": "prod", "group": "orderGroup", "topic": "OrderTopic", "broker": "broker-a",
         "queue_id": q, "broker_offset": 1000 + q, "consumer_offset": 900, "topic_kind": "normal"}
        for q in range(n)
    ]


def _health(ts):
    return [{"ts": ts, "cluster": "prod", "target": "10.0.0.1:10911", "call": "GET_CONSUME_STATS", "ok": True,
             "latency_ms": 2.0}]


def _fill(store, start, cycles, step=timedelta(minutes=5)):
    """`cycles` collection cycles from `start`, each writing consumer_queue and collector_health."""
    for i in range(cycles):
        ts = start + i * step
        store.append_all({"consumer_queue": _rows(ts), "collector_health": _health(ts)}, ts)


def _parquet(root, table, ts):
    return sorted(p for p in partition_dir(root, table, ts).glob("*.parquet") if not p.name.startswith("."))


def _settings(**kw):
    return MaintenanceConfig.model_validate({"retention": "7d", "compact_after": "10m", **kw})


def test_closed_hours_become_one_sorted_file_and_the_open_hour_is_left_alone(tmp_path):
    store = ParquetStore(tmp_path)
    closed = datetime(2026, 11, 22, 10, 0, tzinfo=UTC)
    _fill(store, closed, 12)  # 10:00 .. 10:55
    _fill(store, datetime(2026, 11, 22, 12, 0, tzinfo=UTC), 3)  # the hour being written
    # 11:xx ended 20 min ago, more than compact_after (10m): closed too.
    _fill(store, datetime(2026, 11, 22, 11, 0, tzinfo=UTC), 2)

    report = maintain_store(tmp_path, NOW, _settings())

    files = _parquet(tmp_path, "consumer_queue", closed)
    assert len(files) == 1
    table = pq.read_table(files[0])
    assert table.num_rows == 36
    stamps = table.column("ts").to_pylist()
    assert stamps == sorted(stamps) and stamps[0] == closed
    assert len(_parquet(tmp_path, "consumer_queue", datetime(2026, 11, 22, 11, 0, tzinfo=UTC))) == 1
    assert len(_parquet(tmp_path, "consumer_queue", NOW)) == 3  # the open hour keeps its cycle files
    assert {(c.partition.table, c.files_before) for c in report.compacted} == {
        ("consumer_queue", 12), ("collector_health", 12), ("consumer_queue", 2), ("collector_health", 2)}
    # No staging or replaced directories are left behind.
    assert not [p for p in tmp_path.rglob(".*")]


def test_an_hour_that_just_ended_waits_for_late_cycles(tmp_path):
    store = ParquetStore(tmp_path)
    _fill(store, datetime(2026, 11, 22, 11, 0, tzinfo=UTC), 4)
    maintain_store(tmp_path, NOW, _settings(compact_after="30m"))
    assert len(_parquet(tmp_path, "consumer_queue", datetime(2026, 11, 22, 11, 0, tzinfo=UTC))) == 4


@pytest.mark.spark
def test_rules_see_the_same_samples_after_compaction(spark, tmp_path):
    from rules.tables import CONSUMER_QUEUE
    from spark.store_reader import read_window

    store = ParquetStore(tmp_path)
    _fill(store, datetime(2026, 11, 22, 9, 30, tzinfo=UTC), 20)
    start, end = datetime(2026, 11, 22, 9, 0, tzinfo=UTC), NOW

    def seen():
        df = read_window(spark, tmp_path, CONSUMER_QUEUE, start, end)
        return sorted(tuple(r) for r in df.select("ts", "queue_id", "broker_offset", "lag").collect())

    before = seen()
    report = maintain_store(tmp_path, NOW, _settings())
    assert report.compacted
    assert seen() == before and len(before) == 60


def test_retention_drops_hours_past_the_age_limit(tmp_path):
    store = ParquetStore(tmp_path)
    _fill(store, datetime(2026, 11, 10, 3, 0, tzinfo=UTC), 2)  # 12 days old
    _fill(store, datetime(2026, 11, 20, 3, 0, tzinfo=UTC), 2)  # 2 days old
    report = maintain_store(tmp_path, NOW, _settings(retention="7d"))
    assert not (tmp_path / "consumer_queue" / "date=2026-11-10").exists()
    assert (tmp_path / "consumer_queue" / "date=2026-11-20" / "hour=03").is_dir()
    assert {(d.partition.table, d.reason) for d in report.dropped} == {("consumer_queue", "age"),
                                                                        ("collector_health", "age")}


def test_over_the_size_limit_the_oldest_hours_go_first_for_every_table_and_the_open_hour_stays(tmp_path):
    store = ParquetStore(tmp_path)
    for hour in (7, 8, 9, 10, 11):
        _fill(store, datetime(2026, 11, 22, hour, 0, tzinfo=UTC), 1)
    _fill(store, datetime(2026, 11, 22, 12, 0, tzinfo=UTC), 1)
    per_hour = sum(p.stat().st_size for p in (tmp_path / "consumer_queue").rglob("*.parquet")) // 6
    health_per_hour = sum(p.stat().st_size for p in (tmp_path / "collector_health").rglob("*.parquet")) // 6
    limit = 3 * (per_hour + health_per_hour) + 100  # room for three hours

    report = maintain_store(tmp_path, NOW, _settings(max_size=limit))

    kept = sorted(p.name for p in (tmp_path / "consumer_queue" / "date=2026-11-22").iterdir())
    assert kept == ["hour=10", "hour=11", "hour=12"]
    assert sorted(p.name for p in (tmp_path / "collector_health" / "date=2026-11-22").iterdir()) == kept
    assert {d.reason for d in report.dropped} == {"size"}

    # A limit too small for even one hour never deletes the hour being written.
    maintain_store(tmp_path, NOW, _settings(max_size=10))
    assert [p.name for p in (tmp_path / "consumer_queue" / "date=2026-11-22").iterdir()] == ["hour=12"]


def test_partial_files_left_by_a_crash_are_moved_aside_and_logged(tmp_path, caplog):
    store = ParquetStore(tmp_path)
    _fill(store, datetime(2026, 11, 22, 12, 0, tzinfo=UTC), 2)
    hour = partition_dir(tmp_path, "consumer_queue", NOW)
    empty = hour / "20261122T120900000000-deadbeef.parquet"
    empty.touch()
    garbage = hour / "20261122T121000000000-cafecafe.parquet"
    garbage.write_bytes(b"PAR1 this is not a parquet file")
    stale_tmp = hour / ".20261122T121100000000-0badf00d.parquet.tmp"
    stale_tmp.write_bytes(b"PAR1 half")
    os.utime(stale_tmp, (time.time() - 3600, time.time() - 3600))
    writing = hour / ".20261122T121900000000-12345678.parquet.tmp"  # a write in flight right now
    writing.write_bytes(b"PAR1 in progress")

    with caplog.at_level(logging.WARNING):
        report = recover_store(tmp_path)

    assert sorted(m.path.name for m in report.moved_aside) == sorted([empty.name, garbage.name, stale_tmp.name])
    for moved in report.moved_aside:
        assert moved.moved_to.is_file() and QUARANTINE in moved.moved_to.parts
        assert str(moved.path) in caplog.text
    assert "zero-length" in caplog.text and "unreadable Parquet file" in caplog.text
    assert writing.exists()
    # What is left reads: the two good cycles.
    assert sum(pq.read_table(p).num_rows for p in _parquet(tmp_path, "consumer_queue", NOW)) == 6


def _crash_states(tmp_path):
    store = ParquetStore(tmp_path)
    start = datetime(2026, 11, 22, 9, 0, tzinfo=UTC)
    _fill(store, start, 4)
    live = partition_dir(tmp_path, "consumer_queue", start)
    return live, live.parent / ".hour=09.compact", live.parent / ".hour=09.old"


def _rows_in(directory):
    return sum(pq.read_table(p).num_rows for p in directory.glob("*.parquet"))


def test_a_compaction_cut_before_the_swap_leaves_the_original_files(tmp_path):
    live, staged, _ = _crash_states(tmp_path)
    staged.mkdir()
    (staged / "half-written.parquet").write_bytes(b"")
    report = recover_store(tmp_path)
    assert not staged.exists() and _rows_in(live) == 12 and report.recovered


def test_a_compaction_cut_between_the_renames_is_completed_without_doubling_rows(tmp_path):
    live, staged, old = _crash_states(tmp_path)
    staged.mkdir()
    merged = [pq.read_table(p) for p in sorted(live.glob("*.parquet"))]
    import pyarrow as pa
    pq.write_table(pa.concat_tables(merged), staged / "compacted.parquet")
    os.rename(live, old)  # the crash came here: hour=09 is missing
    recover_store(tmp_path)
    assert live.is_dir() and not staged.exists() and not old.exists()
    assert _rows_in(live) == 12 and len(list(live.glob("*.parquet"))) == 1


def test_a_commit_cut_short_leaves_its_files_and_loses_only_its_marker_temp(tmp_path, caplog):
    store = ParquetStore(tmp_path)
    _fill(store, datetime(2026, 11, 22, 12, 0, tzinfo=UTC), 2)
    markers = commit_dir(tmp_path, NOW)
    stale = markers / ".20261122T121000000000-0badf00d.json.tmp"
    stale.write_text('{"ts": ')
    os.utime(stale, (time.time() - 3600, time.time() - 3600))
    writing = markers / ".20261122T121900000000-12345678.json.tmp"  # a cycle committing right now
    writing.write_text('{"ts": ')
    empty = markers / "20261122T121500000000-cafecafe.json"  # renamed, then power lost
    empty.touch()
    files_before = sorted(tmp_path.rglob("*.parquet"))

    with caplog.at_level(logging.WARNING):
        report = recover_store(tmp_path)

    assert not stale.exists() and writing.exists() and not empty.exists()
    assert (tmp_path / QUARANTINE / empty.relative_to(tmp_path)).is_file()
    assert len(report.markers) == 2 and str(stale) in caplog.text
    assert sorted(tmp_path.rglob("*.parquet")) == files_before  # data files are never touched
    assert len(list_commits(tmp_path, NOW.replace(minute=0), NOW)) == 2
