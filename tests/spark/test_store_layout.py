"""The store's commit log on real files: a cycle is committed whole or not at all, found by time range,
and its rows are read back after compaction, per cluster."""

from __future__ import annotations

import os
import subprocess
import sys
from datetime import UTC, datetime, timedelta, timezone
from pathlib import Path

import pytest

from config.models import MaintenanceConfig
from daemon.store.compaction import compact_partition
from daemon.store.layout import hour_partitions
from daemon.store.maintenance import maintain_store
from daemon.store.writer import ParquetStore
from rules.tables import TABLES
from spark import store_layout
from spark.store_layout import (
    COMMITS,
    CommitLog,
    commit_dir,
    committed_files,
    hours_between,
    list_commits,
    newest_committed,
    partition_dir,
)

CQ = TABLES["consumer_queue"]
T0 = datetime(2026, 11, 22, 9, 0, tzinfo=UTC)
STEP = timedelta(minutes=5)


def _queues(ts: datetime, cluster: str = "prod", queues: int = 3, offset: int = 1000) -> list[dict]:
    return [{"ts": ts, "cluster": cluster, "group": "orderGroup", "topic": "OrderTopic", "broker": "broker-a",
             "queue_id": q, "broker_offset": offset + q, "consumer_offset": 900, "topic_kind": "normal"}
            for q in range(queues)]


def _health(ts: datetime, cluster: str = "prod") -> list[dict]:
    return [{"ts": ts, "cluster": cluster, "target": "10.0.0.1:10911", "call": "GET_CONSUME_STATS", "ok": True,
             "latency_ms": 2.0}]


def _cycle(store: ParquetStore, ts: datetime, cluster: str = "prod", offset: int = 1000) -> None:
    store.append_all({"consumer_queue": _queues(ts, cluster, offset=offset), "collector_health": _health(ts, cluster),
                      "process_queue": []}, ts)


def _seen(df) -> list[tuple]:
    """(cluster, ts, queue_id, broker_offset, lag) of a frame, sorted; ts as UTC (the session's time zone)."""
    return sorted((r["cluster"], r["ts"].replace(tzinfo=UTC), r["queue_id"], r["broker_offset"], r["lag"])
                  for r in df.select("cluster", "ts", "queue_id", "broker_offset", "lag").collect())


def _expected(ts: datetime, cluster: str = "prod", offset: int = 1000) -> list[tuple]:
    return [(cluster, ts, q, offset + q, offset + q - 900) for q in range(3)]


def test_a_cycle_is_listed_once_with_all_its_tables(tmp_path: Path) -> None:
    store = ParquetStore(tmp_path)
    # 17:05 at GMT+8 is 09:05 UTC: the marker's hour follows UTC like the data's.
    ts = datetime(2026, 11, 22, 17, 5, tzinfo=timezone(timedelta(hours=8)))
    written = store.append_all({"consumer_queue": _queues(ts), "collector_health": _health(ts),
                                "process_queue": []}, ts)

    commits = list_commits(tmp_path, T0, T0 + timedelta(hours=1))

    assert len(commits) == 1
    commit = commits[0]
    assert commit.ts == T0 + STEP and commit.clusters == ("prod",)
    assert commit.rows == written == {"consumer_queue": 3, "collector_health": 1, "process_queue": 0}
    assert commit.files["process_queue"] == ()
    for table in ("consumer_queue", "collector_health"):
        (path,) = committed_files(tmp_path, commit, table)
        assert path.parent == partition_dir(tmp_path, table, T0) and path.is_file()
    assert next(commit_dir(tmp_path, T0).iterdir()).name == f"{commit.name}.json"


def test_append_commits_its_one_table_and_an_empty_cycle_commits_nothing(tmp_path: Path) -> None:
    store = ParquetStore(tmp_path)
    path = store.append("consumer_queue", _queues(T0), T0)
    store.append_all({"consumer_queue": [], "collector_health": []}, T0 + STEP)
    assert store.append("collector_health", [], T0 + 2 * STEP) is None

    (commit,) = list_commits(tmp_path, T0, T0 + timedelta(hours=1))
    assert commit.ts == T0 and set(commit.files) == {"consumer_queue"}
    assert committed_files(tmp_path, commit, "consumer_queue") == [path]


def test_a_crash_between_files_and_marker_leaves_nothing_committed(spark, tmp_path: Path, monkeypatch) -> None:
    from spark.store_reader import read_commits, read_window

    store = ParquetStore(tmp_path)
    _cycle(store, T0)

    def crash(*args, **kwargs):
        raise KeyboardInterrupt("killed before the marker")

    monkeypatch.setattr("daemon.store.writer.write_commit", crash)
    with pytest.raises(KeyboardInterrupt):
        _cycle(store, T0 + STEP, offset=2000)
    monkeypatch.undo()

    commits = list_commits(tmp_path, T0, T0 + timedelta(hours=1))
    assert [c.ts for c in commits] == [T0]
    assert _seen(read_commits(spark, tmp_path, CQ, commits)) == _expected(T0)
    # The uncommitted cycle's file is there and readable: only the commit log leaves it out.
    assert len(_seen(read_window(spark, tmp_path, CQ, T0, T0 + STEP))) == 6


def test_listing_a_range_opens_only_that_range_and_each_marker_once(tmp_path: Path, monkeypatch) -> None:
    store = ParquetStore(tmp_path)
    stamps = [T0 + timedelta(minutes=10), T0 + timedelta(hours=1, minutes=10), T0 + timedelta(hours=2, minutes=10),
              T0 + timedelta(hours=2, minutes=45), T0 + timedelta(hours=3, minutes=10)]
    for ts in stamps:
        store.append("consumer_queue", _queues(ts), ts)
    listed: list[Path] = []
    opened: list[Path] = []
    real_scandir, real_read = os.scandir, store_layout.read_commit
    monkeypatch.setattr(store_layout.os, "scandir", lambda d: listed.append(Path(d)) or real_scandir(d))
    monkeypatch.setattr(store_layout, "read_commit", lambda p: opened.append(p) or real_read(p))
    log = CommitLog(tmp_path)
    start, end = T0 + timedelta(hours=1), T0 + timedelta(hours=2, minutes=30)

    found = log.between(start, end)

    assert [c.ts for c in found] == stamps[1:3]
    assert set(listed) == {commit_dir(tmp_path, h) for h in hours_between(start, end)}
    # 11:45 lies in a listed hour but past the range: its name says so, it is never opened.
    assert sorted(p.parent for p in opened) == [commit_dir(tmp_path, s) for s in stamps[1:3]]
    opened.clear()
    assert log.between(start, end) == found and not opened  # markers never change: parsed once


def test_commits_are_ordered_by_time_then_name(tmp_path: Path) -> None:
    store = ParquetStore(tmp_path)
    for ts in (T0 + 2 * STEP, T0, T0 + STEP, T0):  # written out of order, twice at T0
        store.append("collector_health", _health(ts), ts)
    commits = CommitLog(tmp_path).between(T0, T0 + timedelta(hours=1))
    assert [(c.ts, c.name) for c in commits] == sorted((c.ts, c.name) for c in commits)
    assert [c.ts for c in commits] == [T0, T0, T0 + STEP, T0 + 2 * STEP]


def test_a_broken_marker_is_skipped_with_a_warning_and_the_rest_listed(tmp_path: Path, caplog) -> None:
    store = ParquetStore(tmp_path)
    store.append("collector_health", _health(T0), T0)
    broken = commit_dir(tmp_path, T0) / "20261122T090500000000-deadbeef.json"
    broken.write_text("")  # renamed into place, then power lost before its bytes reached the disk
    commits = CommitLog(tmp_path).between(T0, T0 + timedelta(hours=1))
    assert [c.ts for c in commits] == [T0]
    assert str(broken) in caplog.text


@pytest.mark.spark
def test_a_compacted_hour_still_yields_each_commits_rows(spark, tmp_path: Path, monkeypatch) -> None:
    from spark.store_reader import read_commits

    store = ParquetStore(tmp_path)
    for i in range(3):
        _cycle(store, T0 + i * STEP, offset=1000 * (i + 1))
    # A cycle that crashed before its marker: compaction merges its rows into the hour's file too.
    monkeypatch.setattr("daemon.store.writer.write_commit", lambda *a, **k: None)
    _cycle(store, T0 + 3 * STEP, offset=9000)
    monkeypatch.undo()
    commits = list_commits(tmp_path, T0, T0 + timedelta(hours=1))
    middle = commits[1]
    before = _seen(read_commits(spark, tmp_path, CQ, [middle]))

    compacted = [compact_partition(p) for p in hour_partitions(tmp_path) if p.table == "consumer_queue"]

    assert [c.files_before for c in compacted if c] == [4]
    (merged,) = committed_files(tmp_path, middle, "consumer_queue")
    assert "compacted" in merged.name and merged.name not in middle.files["consumer_queue"][0]
    assert _seen(read_commits(spark, tmp_path, CQ, [middle])) == before == _expected(T0 + STEP, offset=2000)
    both = _seen(read_commits(spark, tmp_path, CQ, [commits[0], commits[2]], one_partition=True))
    assert both == _expected(T0, offset=1000) + _expected(T0 + 2 * STEP, offset=3000)


@pytest.mark.spark
def test_two_clusters_committed_at_the_same_time_are_told_apart(spark, tmp_path: Path) -> None:
    from spark.store_reader import read_commits

    store = ParquetStore(tmp_path)
    t1, t2 = T0 + STEP, T0 + 2 * STEP
    for ts, offset in ((t1, 1000), (t2, 2000)):
        _cycle(store, ts, "east", offset)
        _cycle(store, ts, "west", offset + 500)
    commits = list_commits(tmp_path, T0, T0 + timedelta(hours=1))
    assert sorted((c.ts, c.clusters) for c in commits) == [(t1, ("east",)), (t1, ("west",)), (t2, ("east",)),
                                                          (t2, ("west",))]
    assert newest_committed(commits) == {"east": t2, "west": t2}
    east_t1 = next(c for c in commits if c.ts == t1 and c.clusters == ("east",))
    west_t2 = next(c for c in commits if c.ts == t2 and c.clusters == ("west",))
    want = _expected(t1, "east", 1000) + _expected(t2, "west", 2500)

    assert _seen(read_commits(spark, tmp_path, CQ, [east_t1, west_t2])) == want
    for part in hour_partitions(tmp_path):
        compact_partition(part)
    # Now one file holds all four cycles: east@t2 and west@t1 match a cluster and a time of the
    # commits asked for, but not as a pair.
    assert _seen(read_commits(spark, tmp_path, CQ, [east_t1, west_t2])) == want


@pytest.mark.spark
def test_no_commits_read_as_an_empty_typed_frame(spark, tmp_path: Path) -> None:
    from spark.store_reader import read_commits

    df = read_commits(spark, tmp_path, CQ, [])
    assert df.count() == 0 and "lag" in df.columns and "broker_offset" in df.columns


def _settings(**kw) -> MaintenanceConfig:
    return MaintenanceConfig.model_validate({"retention": "7d", "compact_after": "10m", **kw})


def test_retention_drops_the_markers_of_hours_past_the_age_limit(tmp_path: Path) -> None:
    store = ParquetStore(tmp_path)
    now = datetime(2026, 11, 22, 12, 20, tzinfo=UTC)
    old, recent = datetime(2026, 11, 10, 3, 0, tzinfo=UTC), datetime(2026, 11, 20, 3, 0, tzinfo=UTC)
    for ts in (old, old + STEP, recent, recent + STEP):
        _cycle(store, ts)

    maintain_store(tmp_path, now, _settings(retention="7d"))

    assert not (tmp_path / COMMITS / "date=2026-11-10").exists()
    assert [c.ts for c in list_commits(tmp_path, old, now)] == [recent, recent + STEP]


def test_hours_dropped_for_size_lose_their_markers_too(tmp_path: Path) -> None:
    store = ParquetStore(tmp_path)
    now = datetime(2026, 11, 22, 12, 20, tzinfo=UTC)
    for hour in (9, 10, 11, 12):
        _cycle(store, now.replace(hour=hour, minute=0))
    per_hour = sum(p.stat().st_size for p in tmp_path.rglob("*.parquet")) // 4

    report = maintain_store(tmp_path, now, _settings(max_size=2 * per_hour + 100))

    gone = sorted({d.partition.start for d in report.dropped})
    assert gone == [now.replace(hour=9, minute=0), now.replace(hour=10, minute=0)]
    assert [c.ts.hour for c in list_commits(tmp_path, now - timedelta(hours=4), now)] == [11, 12]


def test_the_layout_module_needs_neither_pyspark_nor_the_daemon() -> None:
    code = ("import sys, spark.store_layout; "
            "print(sorted(m for m in sys.modules if m.split('.')[0] in ('pyspark', 'daemon', 'rules', 'py4j')))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True,
                         cwd=Path(__file__).resolve().parents[2])
    assert out.stdout.strip() == "[]"
