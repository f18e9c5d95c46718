"""Where each series' current stall began, kept between evaluations and extended from the new files.

A stall rule (spark/kinds/stall.py) needs, per series, the first sample of the newest run of
samples that hold the newest value with `while` true. Finding it meant reading and sorting the
rule's whole window (11 or 16 minutes of every series) at every cycle: 27-30 s of a 57 s
evaluation at 1.6M queue series. The daemon evaluates the same growing store cycle after cycle,
so this keeps, per stall rule, each series' run as of the last evaluation and extends it with the
rows of the files written since; the rule's plan then reads only each series' newest sample and
joins it with the few series whose run is at least `over` long. Measured with the built-in pack
(bench/scale.py): 44 s instead of 57 s per evaluation at 1.6M series, 9.5 s instead of 11.7 s at
160k; the two stall rules alone at 160k about 3.3 s instead of 6.0 s.

Kept per series (as its key hashes _h1, _h2), over its samples since the window the runs were
built from: the newest value (`_v`, as a 64-bit hash), the first sample of the run (`_since`,
null when the newest sample ends every run: `while` false), the newest sample (`_last`), and for
`moving:` the newest non-null moving value (`_m_last`, `_m_last_ts`) and where the newest change
of it inside the run was (`_m_prev`: the sample before the change). Beside it, the times of every
sample of the current runs (`times`): a run longer than the window is cut at the window's first
sample, as the full plan does, and that sample is the first of those times in the window. A
healthy series' run is one or two samples long, so they number about one per series.

Exact for a store that only grows, like spark/newest_state.py. A compaction (the files of an hour
merged into one holding exactly their rows) keeps the runs; anything else rebuilds them from the
whole window: `now` going backwards, a file read earlier disappearing (recovery), the rule
changing, and a series receiving a sample older than its newest one (a late write; that cycle is
judged from the whole window). A collection cycle stamped before the last evaluation but written
after it is not late: its samples are still each series' newest.
"""

from __future__ import annotations

import logging
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from functools import reduce
from pathlib import Path

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
from pyspark.sql import Column, DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql.types import DoubleType, FloatType

from rules.expressions import Call, Expression, walk
from rules.kinds.stall import StallRule
from rules.tables import TABLES
from spark.expressions import compile_expression
from spark.kinds.common import excluded, series_hashes
from spark.newest_state import Finish, collect_parts
from spark.schema import stored_schema
from spark.store_reader import window_files, with_derived

log = logging.getLogger(__name__)

_SUMMARY = ("_h1", "_h2", "_v", "_since", "_first", "_last", "_clean", "_m_first", "_m_last", "_m_last_ts", "_m_prev")
_TS = pa.timestamp("us", "UTC")
_STATE = ("_h1", "_h2", "_v", "_since", "_last", "_m_last", "_m_last_ts", "_m_prev")


def keeps_runs(rule: StallRule) -> bool:
    """True when the rule's runs can be extended cycle by cycle: it reads a table (not a view), judges
    each series on its own, and none of value, while, moving depends on now()."""
    expressions: list[Expression | None] = [rule.value, rule.while_, rule.moving]
    return (rule.table in TABLES and not rule.reduces
            and not any(isinstance(n, Call) and n.name == "now" for e in expressions if e is not None for n in walk(e.tree)))


def _signature(rule: StallRule) -> tuple[object, ...]:
    texts = tuple(e.source if e is not None else None for e in (rule.value, rule.while_, rule.moving))
    return (rule.table, texts, tuple(sorted(rule.exclude.items())))


@dataclass
class _Runs:
    """One rule's runs: the table of _STATE columns, their samples' times, the files counted."""

    signature: tuple[object, ...]
    state: pa.Table
    times: pa.Table  # _h1, _h2, ts: the samples of the current runs
    through: datetime
    start: datetime
    # Files whose every row was counted (path -> rows), and files read while they held rows after
    # the `now` of that evaluation (path -> that now).
    done: dict[str, int] = field(default_factory=dict)
    partial: dict[str, datetime] = field(default_factory=dict)


@dataclass(frozen=True)
class _Facts:
    """A Parquet file's rows and smallest and largest ts, from its footer (None without statistics)."""

    rows: int
    low: datetime | None
    high: datetime | None


# Footer facts by (path, size, mtime): files are written once under a new name.
_facts: dict[tuple[str, int, int], _Facts] = {}
_FACTS_MAX = 100_000


def _file_facts(path: str) -> _Facts:
    """The footer facts of one store file (cached)."""
    stat = Path(path).stat()
    key = (path, stat.st_size, stat.st_mtime_ns)
    if key not in _facts:
        if len(_facts) >= _FACTS_MAX:
            _facts.clear()
        _facts[key] = _read_facts(path)
    return _facts[key]


def _read_facts(path: str) -> _Facts:
    meta = pq.read_metadata(path)
    index = meta.schema.to_arrow_schema().get_field_index("ts")
    low = high = None
    for group in range(meta.num_row_groups):
        stats = meta.row_group(group).column(index).statistics
        if stats is None or not stats.has_min_max or not isinstance(stats.max, datetime):
            return _Facts(meta.num_rows, None, None)
        lo, hi = (v.replace(tzinfo=UTC) if v.tzinfo is None else v for v in (stats.min, stats.max))
        low = lo if low is None or lo < low else low
        high = hi if high is None or hi > high else high
    return _Facts(meta.num_rows, low, high)


def _fingerprint(column: Column, rows: DataFrame) -> Column:
    """A value as a 64-bit hash, null when it is null: equal values give equal hashes (as eqNullSafe),
    and two different values of one series collide once in 2^64 comparisons."""
    kind = rows.select(column.alias("_probe")).schema["_probe"].dataType
    # -0.0 + 0.0 is 0.0: the two zeros compare equal in Spark and must hash the same.
    value = column + F.lit(0.0) if isinstance(kind, (DoubleType, FloatType)) else column
    # Hashes travel to Python and sort in 8 bytes where offsets as text took 20 or more.
    return F.when(value.isNotNull(), F.xxhash64(value))


def _samples(rule: StallRule, rows: DataFrame, now: datetime) -> DataFrame:
    """Each row as its series' hashes, ts, and the rule's value (v), while (w) and moving (m)."""
    table = rule.table_def
    rows = excluded(rows, rule)

    def compiled(expr: Expression | None) -> Column:
        return compile_expression(expr.tree, table, now) if expr is not None else F.lit(None)

    return rows.select(
        *[column.alias(name) for name, column in series_hashes(table.key).items()], "ts",
        _fingerprint(compiled(rule.value), rows).alias("v"),
        F.coalesce(compiled(rule.while_) if rule.while_ is not None else F.lit(True), F.lit(False)).alias("w"),
        (_fingerprint(compiled(rule.moving), rows) if rule.moving is not None
         else F.lit(None).cast("long")).alias("m"),
    )


def summarise(rule: StallRule, rows: DataFrame, now: datetime) -> DataFrame:
    """Per series (_h1, _h2) of `rows`: the newest value, the run it ends and the moving changes in it."""
    sample = F.struct("ts", "v", "w", "m")
    series = _samples(rule, rows, now).groupBy("_h1", "_h2").agg(F.sort_array(F.collect_list(sample)).alias("_s"))
    newest = F.try_element_at(F.col("_s"), F.lit(-1))
    series = series.withColumns({"_v": newest["v"], "_last": newest["ts"],
                                 "_first": F.try_element_at(F.col("_s"), F.lit(1))["ts"]})
    broken = F.filter("_s", lambda s: ~s["v"].eqNullSafe(F.col("_v")) | ~s["w"])
    series = series.withColumn("_broken_at", F.array_max(F.transform(broken, lambda s: s["ts"])))
    run = F.filter("_s", lambda s: F.col("_broken_at").isNull() | (s["ts"] > F.col("_broken_at")))
    series = series.withColumn("_nm", F.filter(run, lambda s: s["m"].isNotNull())).withColumns({
        "_since": F.try_element_at(run, F.lit(1))["ts"],
        "_clean": F.col("_broken_at").isNull(),
    })
    moved = F.filter(F.sequence(F.lit(2), F.greatest(F.size("_nm"), F.lit(2))),
                     lambda i: F.try_element_at("_nm", i)["m"] != F.try_element_at("_nm", i - 1)["m"])
    series = series.withColumns({
        "_times": F.transform(run, lambda s: s["ts"]),
        "_m_first": F.try_element_at("_nm", F.lit(1))["m"],
        "_m_last": F.try_element_at("_nm", F.lit(-1))["m"],
        "_m_last_ts": F.try_element_at("_nm", F.lit(-1))["ts"],
        "_m_prev": F.try_element_at("_nm", F.array_max(moved) - 1)["ts"],
    })
    return series.select(*_SUMMARY, "_times")


def summarise_one(rule: StallRule, rows: DataFrame, now: datetime) -> DataFrame:
    """summarise() for rows that all share one ts (one collection cycle): a plain aggregate, no sort."""
    series = _samples(rule, rows, now).groupBy("_h1", "_h2").agg(
        F.first("v").alias("_v"), F.first("w").alias("w"), F.first("m").alias("m"), F.max("ts").alias("_last"))
    # One sample: it is the run when `while` holds on it, and nothing is when it does not.
    moving = F.when(F.col("w"), F.col("m"))
    return series.select(
        "_h1", "_h2", "_v", F.when(F.col("w"), F.col("_last")).alias("_since"), F.col("_last").alias("_first"),
        "_last", F.col("w").alias("_clean"),
        moving.alias("_m_first"), moving.alias("_m_last"),
        F.when(moving.isNotNull(), F.col("_last")).alias("_m_last_ts"), F.lit(None).cast("timestamp").alias("_m_prev"),
        F.when(F.col("w"), F.array("_last")).otherwise(F.array().cast("array<timestamp>")).alias("_times"),
    )


def _pick(condition: pa.Array, yes: pa.Array, no: pa.Array) -> pa.Array:
    return pc.if_else(pc.fill_null(condition, False), yes, no)


def merge(old: pa.Table, new: pa.Table) -> tuple[pa.Table, pa.Table]:
    """The runs of `old` extended by `new`, the summaries of the rows that came after them, and the
    series (_h1, _h2) whose run `new` ended (a new one began, or none runs)."""
    keys = ["_h1", "_h2"]
    new = new.rename_columns([c if c in keys else c + "_n" for c in new.column_names])
    old = old.rename_columns([c if c in keys else c + "_o" for c in old.column_names])
    joined = new.join(old, keys=keys, join_type="full outer", coalesce_keys=True)
    n = {c: joined[c + "_n"] for c in _SUMMARY[2:]}
    o = {c: joined[c + "_o"] for c in _STATE[2:]}
    has_new = pc.is_valid(n["_last"])
    if pc.any(pc.fill_null(pc.less_equal(n["_first"], o["_last"]), False)).as_py():
        raise _OutOfOrder("samples older than a series' newest one arrived (a late write)")
    same = pc.or_(pc.fill_null(pc.equal(o["_v"], n["_v"]), False), pc.and_(pc.is_null(o["_v"]), pc.is_null(n["_v"])))
    continues = pc.and_(pc.and_(has_new, pc.fill_null(n["_clean"], False)),
                        pc.and_(pc.is_valid(o["_since"]), same))
    crossed = pc.fill_null(pc.not_equal(o["_m_last"], n["_m_first"]), False)
    m_prev = _pick(pc.is_valid(n["_m_prev"]), n["_m_prev"], _pick(crossed, o["_m_last_ts"], o["_m_prev"]))
    merged = {
        "_h1": joined["_h1"], "_h2": joined["_h2"],
        "_v": _pick(has_new, n["_v"], o["_v"]),
        "_since": _pick(continues, o["_since"], _pick(has_new, n["_since"], o["_since"])),
        "_last": _pick(has_new, n["_last"], o["_last"]),
        "_m_last": _pick(continues, pc.coalesce(n["_m_last"], o["_m_last"]), _pick(has_new, n["_m_last"], o["_m_last"])),
        "_m_last_ts": _pick(continues, pc.coalesce(n["_m_last_ts"], o["_m_last_ts"]),
                            _pick(has_new, n["_m_last_ts"], o["_m_last_ts"])),
        "_m_prev": _pick(continues, m_prev, _pick(has_new, n["_m_prev"], o["_m_prev"])),
    }
    ended = pa.table({"_h1": joined["_h1"], "_h2": joined["_h2"]}).filter(pc.and_(has_new, pc.invert(continues)))
    return pa.table(merged), ended


class _OutOfOrder(Exception):
    """New rows of a series are not all newer than what its run has counted: only a rebuild is exact."""


def _run_times(summary: pa.Table) -> pa.Table:
    """The summaries' run sample times, one row each (_h1, _h2, ts)."""
    summary = summary.combine_chunks()
    if not summary.num_rows:
        return _empty_times()
    lists = summary["_times"].chunk(0)
    parents = pc.list_parent_indices(lists)
    return pa.table({"_h1": pc.take(summary["_h1"], parents), "_h2": pc.take(summary["_h2"], parents),
                     "ts": pc.list_flatten(lists).cast(_TS)})


def _before(table: pa.Table, column: str, moment: datetime) -> pa.Array:
    values = table[column]
    return pc.fill_null(pc.less(values, pa.scalar(moment, values.type)), False)


class StallRuns:
    """Per stall rule, each series' current run, extended at every evaluation from the new files."""

    def __init__(self, spark: SparkSession, root: str | Path) -> None:
        self.spark = spark
        self.root = Path(root)
        self._runs: dict[str, _Runs] = {}

    def update(self, rules: Sequence[tuple[StallRule, timedelta]], now: datetime) -> list[str]:
        """Bring the runs of each (rule, stale_after) up to `now`, in one Spark job over the new rows;
        returns the alerts of the rules whose runs are current (the others start over next time)."""
        parts, finish = self.prepare(rules, now)
        current: list[str] = finish(collect_parts(parts))
        return current

    def prepare(self, rules: Sequence[tuple[StallRule, timedelta]], now: datetime) -> tuple[list[DataFrame], Finish]:
        """update() in two steps, so its Spark job can be shared (spark/newest_state.py collect_parts):
        the parts to collect (rows tagged by a non-null `_rule`), and what merges the collected rows."""
        # Runs of rules no longer judged from runs (removed on reload, store shrunk) are dropped.
        current = {rule.alert for rule, _ in rules}
        self._runs = {alert: runs for alert, runs in self._runs.items() if alert in current}
        plans: list[tuple[StallRule, datetime, list[str], bool]] = []
        parts: list[DataFrame] = []
        for index, (rule, stale) in enumerate(rules):
            start = now - rule.window() - stale
            listed = [str(p) for p in window_files(self.root, TABLES[rule.table], start, now)]
            kept = self._runs.get(rule.alert)
            reason = self._rebuild_reason(kept, rule, listed, start, now)
            rebuild = reason is not None
            if rebuild and kept is not None:
                log.info("stall rule %s: %s; reading its whole window again", rule.alert, reason)
            paths = listed if rebuild or kept is None else [f for f in listed if f not in kept.done]
            plans.append((rule, start, paths, rebuild))
            if paths:
                if rebuild or kept is None:
                    rows = self._read(rule, paths).where((F.col("ts") >= F.lit(start)) & (F.col("ts") <= F.lit(now)))
                    summary = summarise(rule, rows, now)
                else:
                    rows = self._new_rows(rule, kept, paths, now)
                    # The usual update: one new collection cycle, every row stamped with one ts.
                    bounds = {(facts.low, facts.high) for facts in map(_file_facts, paths)}
                    low, high = next(iter(bounds))
                    one = len(bounds) == 1 and low is not None and low == high
                    summary = (summarise_one if one else summarise)(rule, rows, now)
                parts.append(summary.withColumn("_rule", F.lit(index)))

        def finish(found: pa.Table | None) -> list[str]:
            ours = found is not None and "_rule" in found.column_names
            current: list[str] = []
            for index, (rule, start, paths, rebuild) in enumerate(plans):
                mine = found.filter(pc.fill_null(pc.equal(found["_rule"], index), False)) if ours else None
                try:
                    self._apply(rule, start, paths, rebuild, mine, now)
                    current.append(rule.alert)
                except _OutOfOrder as exc:
                    del self._runs[rule.alert]
                    log.info("stall rule %s: %s; judged from the whole window this cycle, and reading its "
                             "whole window again next cycle", rule.alert, exc)
            return current

        return parts, finish

    def _new_rows(self, rule: StallRule, kept: _Runs, paths: list[str], now: datetime) -> DataFrame:
        """The rows of `paths` not counted yet, up to `now`: all of a new file's, and a file read
        earlier only after the `now` it was read at."""
        since: dict[datetime | None, list[str]] = defaultdict(list)
        for path in paths:
            since[kept.partial.get(path)].append(path)
        parts = []
        for moment, files in since.items():
            rows = self._read(rule, files).where(F.col("ts") <= F.lit(now))
            parts.append(rows if moment is None else rows.where(F.col("ts") > F.lit(moment)))
        return reduce(DataFrame.unionByName, parts)

    def _rebuild_reason(self, kept: _Runs | None, rule: StallRule, listed: list[str], start: datetime,
                        now: datetime) -> str | None:
        if kept is None:
            return "first evaluation"
        if kept.signature != _signature(rule):
            return "the rule changed"
        if now < kept.through:
            return "time went backwards"
        if start < kept.start:
            return "its window grew"
        present = set(listed)
        dirs = {str(Path(f).parent) for f in listed}
        kept.done = {f: rows for f, rows in kept.done.items() if str(Path(f).parent) in dirs}
        kept.partial = {f: at for f, at in kept.partial.items() if str(Path(f).parent) in dirs}
        if set(kept.partial) - present:
            return "a file read earlier is gone (recovery)"
        new = present - set(kept.done) - set(kept.partial)
        gone = set(kept.done) - present
        if gone and not self._compacted(kept, gone, new):
            return "a file read earlier is gone (recovery)"
        # A new file may hold samples older than the last evaluation (a collection cycle that was
        # still being written): each series' rows must only be newer than its own (merge() checks).
        return None

    @staticmethod
    def _compacted(kept: _Runs, gone: set[str], new: set[str]) -> bool:
        """True when files counted earlier were merged into new ones holding exactly their rows, as
        compaction does (daemon/store/compaction.py): the new files are then counted already."""
        folders = {str(Path(f).parent) for f in gone}
        # Cycles written since the last evaluation land beside the merged file: they are new rows.
        merged = [f for f in new if str(Path(f).parent) in folders
                  and (high := _file_facts(f).high) is not None and high <= kept.through]
        facts = [_file_facts(f) for f in merged]
        if not merged:
            return False
        if sum(f.rows for f in facts) != sum(kept.done[f] for f in gone):
            return False
        for path in gone:
            del kept.done[path]
        kept.done.update((path, f.rows) for path, f in zip(merged, facts, strict=True))
        return True

    def _read(self, rule: StallRule, paths: list[str]) -> DataFrame:
        table = TABLES[rule.table]
        schema = stored_schema(table)
        return with_derived(self.spark.read.schema(schema).parquet(*paths).select(*schema.fieldNames()), table)

    def _apply(self, rule: StallRule, start: datetime, paths: list[str], rebuild: bool,
               summary: pa.Table | None, now: datetime) -> None:
        """Merge one rule's summaries into its runs; drop series with no sample left in the window."""
        kept = self._runs.get(rule.alert)
        if rebuild or kept is None:
            state, times = ((_empty_state(), _empty_times()) if summary is None
                            else (summary.select(list(_STATE)), _run_times(summary)))
            kept = self._runs[rule.alert] = _Runs(_signature(rule), state, times, now, start)
        elif summary is not None and summary.num_rows:
            old = kept.state.cast(pa.schema([summary.schema.field(c) for c in _STATE]))
            kept.state, ended = merge(old, summary.select(list(_SUMMARY)))
            kept.times = kept.times.join(ended.cast(kept.times.select(["_h1", "_h2"]).schema), keys=["_h1", "_h2"],
                                         join_type="left anti")
            kept.times = pa.concat_tables([kept.times, _run_times(summary).cast(kept.times.schema)])
        kept.state = kept.state.filter(pc.invert(_before(kept.state, "_last", start)))
        kept.times = kept.times.filter(pc.invert(_before(kept.times, "ts", start)))
        kept.through = now
        for path in paths:
            facts = _file_facts(path)
            if facts.high is None or facts.high > now:
                kept.partial[path] = now
            else:
                kept.done[path] = facts.rows
                kept.partial.pop(path, None)

    def candidates(self, rule: StallRule, now: datetime, stale: timedelta) -> pa.Table:
        """The series of `rule` that may have stalled for `over`, with where their stall began in the
        window (_h1, _h2, _since); every other series' stall, if any, is shorter."""
        kept = self._runs[rule.alert]
        state = kept.state
        start = now - rule.window() - stale
        long = _before(state, "_since", start)
        if pc.any(long).as_py():
            # A run longer than the window starts, for the rule, at its first sample in the window.
            firsts = kept.times.group_by(["_h1", "_h2"]).aggregate([("ts", "min")])
            state = state.join(firsts.rename_columns(["_h1", "_h2", "_first_in"]), keys=["_h1", "_h2"],
                               join_type="left outer")
            long = _before(state, "_since", start)
            since = _pick(long, state["_first_in"], state["_since"])
        else:
            since = state["_since"]
        ripe = pc.fill_null(pc.less_equal(since, pa.scalar(now - rule.over, since.type)), False)
        if rule.moving is not None:
            ripe = pc.and_(ripe, pc.fill_null(pc.greater_equal(state["_m_prev"], pa.scalar(start, since.type)), False))
        return pa.table({"_h1": state["_h1"], "_h2": state["_h2"], "_since": since}).filter(ripe)


def _empty_times() -> pa.Table:
    return pa.table({"_h1": pa.array([], pa.int64()), "_h2": pa.array([], pa.int32()), "ts": pa.array([], _TS)})


def _empty_state() -> pa.Table:
    ts = _TS
    return pa.table({"_h1": pa.array([], pa.int64()), "_h2": pa.array([], pa.int32()),
                     "_v": pa.array([], pa.int64()), "_since": pa.array([], ts), "_last": pa.array([], ts),
                     "_m_last": pa.array([], pa.int64()), "_m_last_ts": pa.array([], ts),
                     "_m_prev": pa.array([], ts)})
