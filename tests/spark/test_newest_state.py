"""Newest sample times kept between evaluations: always what a full scan of the lookback finds."""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from daemon.store.writer import ParquetStore
from spark.newest_state import NewestTimes, Wanted
from tests.spark.kind_samples import at, pq_row

KEY = ("cluster", "group", "topic", "broker", "queue_id", "client_id")
LOOKBACK = timedelta(minutes=10)


def _scanned(root: Path, now, *, held_only: bool = False) -> list:
    """The newest times by brute force: every file read, grouped by series."""
    table = pq.ParquetDataset(root / "process_queue").read()
    table = table.filter(pc.and_(pc.less_equal(table["ts"], pa.scalar(now, table["ts"].type)),
                                 pc.greater_equal(table["ts"], pa.scalar(now - LOOKBACK, table["ts"].type))))
    if held_only:
        table = table.filter(pc.invert(table["dropped"]))
    newest = table.group_by(list(KEY)).aggregate([("ts", "max")])
    return sorted(set(newest["ts_max"].to_pylist()))


def _newest(times: NewestTimes, now) -> list:
    """The newest times of process_queue's series over the lookback before `now`."""
    return times.times([Wanted("process_queue", KEY, now - LOOKBACK)], now)["process_queue"]


def _cycle(store: ParquetStore, seconds_ago: float, queues: range, **extra) -> None:
    ts = at(seconds_ago)
    store.append("process_queue", [pq_row(ts, "g", q, "a@1", **extra) for q in queues], ts)


def test_kept_times_follow_the_store_cycle_by_cycle(spark, tmp_path):
    store, times = ParquetStore(tmp_path), NewestTimes(spark, tmp_path)
    want = [Wanted("process_queue", KEY, at(0) - LOOKBACK)]
    checked = 0
    # Queues 0-3 every cycle until queue 3 stops reporting; queue 5 reports once, long ago.
    _cycle(store, 900, range(5, 6))
    for i, ago in enumerate((300, 270, 240, 210, 180)):
        _cycle(store, ago, range(4) if i < 3 else range(3))
        now = at(ago - 1)
        got = _newest(times, now)
        assert got == _scanned(tmp_path, now)
        checked += 1
    assert got == [at(240), at(180)]  # queue 3's last cycle, everyone else's newest; queue 5 is out of the lookback
    assert times.times(want, at(0))["process_queue"] == _scanned(tmp_path, at(0))
    assert checked == 5


def test_time_going_backwards_and_future_files_start_over_or_wait(spark, tmp_path):
    store, times = ParquetStore(tmp_path), NewestTimes(spark, tmp_path)
    for ago in (120, 90, 60):
        _cycle(store, ago, range(2))
    # Asked about a moment before the last cycle: its file must not count yet...
    early = at(75)
    assert _newest(times, early) == [at(90)]
    # ...and it does once `now` passes it.
    late = at(30)
    assert _newest(times, late) == [at(60)]
    # Replaying an earlier moment again (time went backwards) starts over rather than answering 60 s ago.
    assert _newest(times, early) == [at(90)]


def test_a_compacted_hour_is_read_again(spark, tmp_path):
    store, times = ParquetStore(tmp_path), NewestTimes(spark, tmp_path)
    _cycle(store, 120, range(3))
    _cycle(store, 90, range(2))
    now = at(80)
    assert _newest(times, now) == [at(120), at(90)]
    # Compaction: both files rewritten as one, without queue 2's old row (as if recovery dropped it).
    files = sorted((tmp_path / "process_queue").rglob("*.parquet"))
    merged = pa.concat_tables([pq.read_table(f) for f in files])
    merged = merged.filter(pc.not_equal(merged["queue_id"], 2))
    pq.write_table(merged, files[0].parent / "compacted.parquet")
    for f in files:
        f.unlink()
    assert _newest(times, now) == [at(90)]


def test_a_view_takes_its_times_from_the_rows_that_make_its_rows(spark, tmp_path):
    store, times = ParquetStore(tmp_path), NewestTimes(spark, tmp_path)
    _cycle(store, 60, range(2))
    _cycle(store, 30, range(1))
    _cycle(store, 30, range(1, 2), dropped=True)  # queue 1 dropped in the last cycle: its owner row is older
    now = at(10)
    key = ("cluster", "group", "topic", "broker", "queue_id")
    got = times.times([Wanted("queue_owner", key, now - LOOKBACK), Wanted("process_queue", KEY, now - LOOKBACK)], now)
    assert got == {"queue_owner": [at(60), at(30)], "process_queue": [at(30)]}
    assert got["queue_owner"] == _scanned(tmp_path, now, held_only=True)


def test_a_longer_lookback_reads_the_store_again(spark, tmp_path):
    store, times = ParquetStore(tmp_path), NewestTimes(spark, tmp_path)
    _cycle(store, 900, range(5, 6))
    _cycle(store, 60, range(2))
    now = at(30)
    assert _newest(times, now) == [at(60)]  # queue 5, 15 minutes old, left the 10-minute lookback
    # Rules reloaded with a 20-minute lookback: the series dropped from what was kept count again.
    longer = times.times([Wanted("process_queue", KEY, now - timedelta(minutes=20))], now)["process_queue"]
    assert longer == [at(900), at(60)]
