"""A window is read from the store files holding its samples only, not every file of its hours."""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path

from rules.tables import TABLES
from spark.store_reader import read_window, window_rows
from tests.spark.kind_samples import NOW, at, cq_row

CONSUMER_QUEUE = TABLES["consumer_queue"]


def _hour_of_cycles(write) -> None:
    """An hour partition as the collector leaves it at NOW (12:00 is its first minute, so the hour
    before): one file per 30 s cycle, two queues each."""
    write("consumer_queue", [cq_row(at(30 * k), "g", q, broker_offset=100 + k, consumer_offset=100)
                             for k in range(1, 120) for q in (0, 1)])


def _names(paths) -> set[str]:
    return {Path(p).name for p in paths}


def test_a_window_opens_only_the_files_of_its_cycles(spark, write, tmp_path):
    _hour_of_cycles(write)
    root = tmp_path / "store"
    start = NOW - timedelta(minutes=15)
    frame = read_window(spark, root, CONSUMER_QUEUE, start, NOW)
    opened = _names(frame.inputFiles())
    # 30 of the hour's 119 cycles are in the last 15 minutes (12:00 itself has no sample).
    assert len(opened) == 30
    assert frame.count() == 60
    assert window_rows(root, CONSUMER_QUEUE, start, NOW) == 60
    assert {row["ts"] for row in frame.select("ts").distinct().collect()} == {at(30 * k).replace(tzinfo=None)
                                                                           for k in range(1, 31)}
