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
from datetime import datetime, timedelta
from functools import reduce
from pathlib import Path

import pyarrow as pa
import pyarrow.compute as pc
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from rules.expressions import Expression, calls_now
from rules.kinds.stall import StallRule
from rules.tables import TABLES
from spark.newest_state import Finish
from spark.schema import stored_schema
from spark.stall_summaries import (
    STATE,
    SUMMARY,
    OutOfOrder,
    empty_state,
    empty_times,
    merge,
    one_per_series,
    pick,
    run_times,
    summarise,
    summarise_one,
)
from spark.store_reader import file_facts, one_cycle, window_files, with_derived

log = logging.getLogger(__name__)

def keeps_runs(rule: StallRule) -> bool:
    """True when the rule's runs can be extended cycle by cycle: it reads a table (not a view), judges
    each series on its own, and none of value, while, moving depends on now()."""
    expressions: list[Expression | None] = [rule.value, rule.while_, rule.moving]
    return (rule.table in TABLES and not rule.reduces
            and not any(calls_now(e.tree) for e in expressions if e is not None))


def _signature(rule: StallRule) -> tuple[object, ...]:
    texts = tuple(e.source if e is not None else None for e in (rule.value, rule.while_, rule.moving))
    return (rule.table, texts, tuple(sorted(rule.exclude.items())))


@dataclass
class _Runs:
    """One rule's runs: the table of STATE columns, their samples' times, the files counted."""

    signature: tuple[object, ...]
    state: pa.Table
    times: pa.Table  # _h1, _h2, ts: the samples of the current runs
    through: datetime
    start: datetime
    # Files whose every row was counted (path -> rows), and files read while they held rows after
    # the `now` of that evaluation (path -> that now).
    done: dict[str, int] = field(default_factory=dict)
    partial: dict[str, datetime] = field(default_factory=dict)


def _before(table: pa.Table, column: str, moment: datetime) -> pa.Array:
    values = table[column]
    return pc.fill_null(pc.less(values, pa.scalar(moment, values.type)), False)


class StallRuns:
    """Per stall rule, each series' current run, extended at every evaluation from the new files."""

    def __init__(self, spark: SparkSession, root: str | Path) -> None:
        self.spark = spark
        self.root = Path(root)
        self._runs: dict[str, _Runs] = {}

    def prepare(self, rules: Sequence[tuple[StallRule, timedelta]], now: datetime) -> tuple[list[DataFrame], Finish]:
        """Bring the runs of each (rule, stale_after) up to `now`, in two steps so the Spark job is shared
        (spark/newest_state.py collect_parts): the parts to collect (rows tagged by a non-null
        `_rule`), and what merges the collected rows, returning the alerts whose runs are current
        (the others start over next time)."""
        # Runs of rules no longer judged from runs (removed on reload, store shrunk) are dropped.
        current = {rule.alert for rule, _ in rules}
        self._runs = {alert: runs for alert, runs in self._runs.items() if alert in current}
        plans: list[tuple[StallRule, datetime, list[str], bool, bool]] = []
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
            one = False
            if paths:
                if rebuild or kept is None:
                    rows = self._read(rule, paths).where((F.col("ts") >= F.lit(start)) & (F.col("ts") <= F.lit(now)))
                    summary = summarise(rule, rows, now)
                else:
                    rows = self._new_rows(rule, kept, paths, now)
                    # The usual update: one new collection cycle, every row stamped with one ts.
                    one = one_cycle(paths)
                    summary = (summarise_one if one else summarise)(rule, rows, now)
                parts.append(summary.withColumn("_rule", F.lit(index)))
            plans.append((rule, start, paths, rebuild, one))

        def finish(found: pa.Table | None) -> list[str]:
            ours = found is not None and "_rule" in found.column_names
            current: list[str] = []
            for index, (rule, start, paths, rebuild, one) in enumerate(plans):
                mine = found.filter(pc.fill_null(pc.equal(found["_rule"], index), False)) if ours else None
                try:
                    if one and mine is not None and not one_per_series(mine):
                        raise OutOfOrder("a series has two rows at one sample time (a cycle written twice)")
                    self._apply(rule, start, paths, rebuild, mine, now)
                    current.append(rule.alert)
                except OutOfOrder as exc:
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
                  and (high := file_facts(f).high) is not None and high <= kept.through]
        facts = [file_facts(f) for f in merged]
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
            state, times = ((empty_state(), empty_times()) if summary is None
                            else (summary.select(list(STATE)), run_times(summary)))
            kept = self._runs[rule.alert] = _Runs(_signature(rule), state, times, now, start)
        elif summary is not None and summary.num_rows:
            old = kept.state.cast(pa.schema([summary.schema.field(c) for c in STATE]))
            kept.state, ended = merge(old, summary.select(list(SUMMARY)))
            kept.times = kept.times.join(ended.cast(kept.times.select(["_h1", "_h2"]).schema), keys=["_h1", "_h2"],
                                         join_type="left anti")
            kept.times = pa.concat_tables([kept.times, run_times(summary).cast(kept.times.schema)])
        kept.state = kept.state.filter(pc.invert(_before(kept.state, "_last", start)))
        kept.times = kept.times.filter(pc.invert(_before(kept.times, "ts", start)))
        kept.through = now
        for path in paths:
            facts = file_facts(path)
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
            since = pick(long, state["_first_in"], state["_since"])
        else:
            since = state["_since"]
        ripe = pc.fill_null(pc.less_equal(since, pa.scalar(now - rule.over, since.type)), False)
        if rule.moving is not None:
            ripe = pc.and_(ripe, pc.fill_null(pc.greater_equal(state["_m_prev"], pa.scalar(start, since.type)), False))
        return pa.table({"_h1": state["_h1"], "_h2": state["_h2"], "_since": since}).filter(ripe)
