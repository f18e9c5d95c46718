"""Each series' newest sample time, kept between evaluations and updated from the new files only.

Newest-sample pruning (spark/newest.py) needs, per table or view, the times that are some
series' newest sample in the lookback. Finding them by scanning the lookback every cycle cost
1.9 s of a 9 s evaluation at 16k series (six tables and views, 336k rows each). The daemon
evaluates the same store cycle after cycle, so this keeps, per table or view, every series'
newest time seen so far (at or before `now`) and reads only the files it has not read yet: one
cycle's file per table.

The kept times are exact for a store that only grows: a series' newest time at or before `now`
is the largest of its rows' times, and every row of a file read counts once it is not after
`now`. Anything else starts over from the whole lookback: `now` going backwards (replay, a
clock step), or a file that was read disappearing (compaction rewrote its hour, recovery moved
it aside).
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from functools import reduce
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from rules.tables import TABLES
from spark.kinds.common import series_hashes
from spark.schema import stored_schema
from spark.store_reader import file_facts, one_cycle, window_files, with_derived
from spark.views import VIEW_DEFS

log = logging.getLogger(__name__)


@dataclass
class _Kept:
    """What is known of one table or view: each series' newest time, and the files it came from."""

    # Columns _h1, _h2 (two hashes of the series key: 96 bits, no collision in any real fleet, and
    # 20 bytes a series where the key as text took ~100) and ts.
    newest: pa.Table | None = None
    files: set[str] = field(default_factory=set)
    # Series whose newest time was before this were dropped (they left the lookback): a longer
    # lookback asked later (rules reloaded) has to read the store again.
    dropped_before: datetime | None = None


# Turns the rows collected for a prepare()'s parts (None when there were none) into its result.
Finish = Callable[[pa.Table | None], Any]


def collect_parts(parts: Sequence[DataFrame]) -> pa.Table | None:
    """The rows of every part, in one Spark job (columns a part lacks are null); None without parts."""
    if not parts:
        return None
    return reduce(lambda a, b: a.unionByName(b, allowMissingColumns=True), parts).toArrow()


@dataclass(frozen=True)
class Wanted:
    """One table or view whose newest times are wanted: its series key and lookback start."""

    name: str
    key: tuple[str, ...]
    start: datetime


def _source(name: str) -> str:
    # A view's rows (ViewDef.rows) come from its first source alone.
    return VIEW_DEFS[name].sources[0] if name in VIEW_DEFS else name


class NewestTimes:
    """Per table or view, the sample times that are some series' newest, updated incrementally."""

    def __init__(self, spark: SparkSession, root: str | Path) -> None:
        self.spark = spark
        self.root = Path(root)
        self._kept: dict[str, _Kept] = {}
        self._now: datetime | None = None

    def times(self, wanted: Sequence[Wanted], now: datetime) -> dict[str, list[datetime]]:
        """For each wanted table or view: the newest sample times of its series in [start, now]."""
        parts, finish = self.prepare(wanted, now)
        return finish(collect_parts(parts))

    def prepare(self, wanted: Sequence[Wanted], now: datetime) -> tuple[list[DataFrame], Finish]:
        """times() in two steps, so its Spark job can be shared: the parts to collect (rows tagged by a
        non-null `_name`), and what turns the collected rows into the times."""
        if self._now is not None and now < self._now:
            self._kept.clear()  # time went backwards: what was kept may be newer than `now`
        self._now = now
        reads: dict[str, list[str]] = {}
        for want in wanted:
            listed = window_files(self.root, TABLES[_source(want.name)], want.start, now)
            files, dirs = {str(p) for p in listed}, {str(p.parent) for p in listed}
            kept = self._kept.setdefault(want.name, _Kept())
            # Files of hours the lookback has left are forgotten; their series' times stay.
            kept.files = {f for f in kept.files if str(Path(f).parent) in dirs}
            if kept.files - files or (kept.dropped_before is not None and want.start < kept.dropped_before):
                log.info("%s: a file read earlier is gone (compaction, recovery) or the lookback grew; "
                         "reading the lookback again", want.name)
                kept = self._kept[want.name] = _Kept()
            reads[want.name] = sorted(files - kept.files)
        parts = self._new_parts(wanted, reads, now)

        def finish(found: pa.Table | None) -> dict[str, list[datetime]]:
            if found is not None and "_name" in found.column_names:
                self._merge_new(wanted, reads, found.filter(pc.is_valid(found["_name"])), now)
            return self._out(wanted)

        return parts, finish

    def _out(self, wanted: Sequence[Wanted]) -> dict[str, list[datetime]]:
        out: dict[str, list[datetime]] = {}
        for want in wanted:
            kept = self._kept[want.name]
            if kept.newest is None:
                out[want.name] = []
                continue
            # Series gone from the lookback are dropped: client ids change with every restart of a
            # consumer, and what is kept must not grow with them.
            kept.newest = kept.newest.filter(
                pc.greater_equal(kept.newest["ts"], pa.scalar(want.start, kept.newest["ts"].type)))
            kept.dropped_before = want.start
            out[want.name] = sorted(v for v in pc.unique(kept.newest["ts"]).to_pylist() if v is not None)
        return out

    def series(self, name: str) -> int:
        """How many series of `name` are kept: those with a sample in its lookback at the last times() call."""
        kept = self._kept.get(name)
        return 0 if kept is None or kept.newest is None else kept.newest.num_rows

    def quiet(self, name: str, start: datetime, since: datetime) -> pa.Table:
        """Series of `name` (as _h1, _h2) whose newest sample is in [start, since), as of the last
        times() call, which must have asked for `name` from `start` or earlier."""
        kept = self._kept.get(name)
        if kept is None or kept.newest is None:
            return pa.table({"_h1": pa.array([], pa.int64()), "_h2": pa.array([], pa.int32())})
        ts = kept.newest["ts"]
        inside = pc.and_(pc.greater_equal(ts, pa.scalar(start, ts.type)), pc.less(ts, pa.scalar(since, ts.type)))
        return kept.newest.filter(inside).select(["_h1", "_h2"])

    def _new_parts(self, wanted: Sequence[Wanted], reads: Mapping[str, list[str]], now: datetime) -> list[DataFrame]:
        """Per wanted name with new files: each series' newest time in them (_name, _h1, _h2, ts), `_name`
        being the name's index in `wanted` (a number: as text it was ~18 bytes more per row collected,
        ~250 MB on a first read at 1.6M series)."""
        parts: list[DataFrame] = []
        for index, want in enumerate(wanted):
            paths = reads[want.name]
            if not paths:
                continue
            source = TABLES[_source(want.name)]
            schema = stored_schema(source)
            df = with_derived(self.spark.read.schema(schema).parquet(*paths).select(*schema.fieldNames()), source)
            rows = VIEW_DEFS[want.name].rows({source.name: df}) if want.name in VIEW_DEFS else df
            hashes = [column.alias(name) for name, column in series_hashes(want.key).items()]
            rows = rows.where(F.col("ts") <= F.lit(now))
            if want.name in VIEW_DEFS or not one_cycle(paths):
                newest = rows.groupBy(*hashes).agg(F.max("ts").alias("ts"))
            else:
                # One cycle of a table holds one row per series (a repeat is merged away in Arrow):
                # grouping them shuffled every row, ~1.5 s of CPU per table at 1.6M queue series.
                newest = rows.select(*hashes, "ts")
            parts.append(newest.select(F.lit(index).alias("_name"), "_h1", "_h2", "ts"))
        return parts

    def _merge_new(self, wanted: Sequence[Wanted], reads: Mapping[str, list[str]], found: pa.Table,
                   now: datetime) -> None:
        """Merge the newest times read from the new files into what is kept."""
        for index, want in enumerate(wanted):
            paths = reads[want.name]
            if not paths:
                continue
            mine = found.filter(pc.equal(found["_name"], index)).select(["_h1", "_h2", "ts"])
            kept = self._kept[want.name]
            merged = mine if kept.newest is None else pa.concat_tables([kept.newest, mine.cast(kept.newest.schema)])
            newest = merged.group_by(["_h1", "_h2"]).aggregate([("ts", "max")])
            kept.newest = pa.table({"_h1": newest["_h1"], "_h2": newest["_h2"], "ts": newest["ts_max"]})
            # A file with rows after `now` is read again next time, when they count.
            kept.files.update(p for p in paths if (file_facts(p).high or now) <= now)
