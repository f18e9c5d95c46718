"""Each group's member set per sample, kept per store file between evaluations (churn rules).

A churn rule (spark/kinds/churn.py) counts, per `by` group, the samples of its `over` window whose
set of members differs from the sample before. The full plan reads and sorts the whole window at
every cycle: RebalanceChurn read 10 minutes of every ProcessQueue (3.4M rows at 160k queue series,
1.2 s of a 9 s evaluation; 34M rows at 1.6M). A file's sets do not change once it is written, so
this summarises each store file once, per group and sample time: a hash of the sorted member set
(the set as text too, for the `members` template value), the largest level of its rows, and the
template columns. Each cycle then reads only the new files, and counts the changes in Arrow over
the summaries of the files in the window, filtered to [now - over, now]: exact whatever the order
files arrive in, `now` going backwards included.

A file is known by its path, size and modification time: one rewritten (compaction) is read
again, one gone (recovery) is forgotten. A group with one sample time in two files (a cycle
written in two parts) cannot be summed from per-file sets; that rule is judged from the whole
window that cycle (ChurnSets.candidates raises SplitSample). Only rules that judge each sample on
its own qualify (`keeps_sets`): on a table, with no now() in where or levels.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from pathlib import Path
from urllib.parse import unquote, urlparse

import pyarrow as pa
import pyarrow.compute as pc
from pyspark.sql import Column, DataFrame, SparkSession
from pyspark.sql import functions as F

from rules.kinds.base import RuleBase
from rules.kinds.churn import ChurnRule
from rules.tables import TABLES
from spark.column_cache import per_rule, rule_key
from spark.expressions import compile_expression
from spark.kinds.common import excluded, series_hashes, where_true
from spark.kinds.levels import LEVEL_COLUMNS, level_columns
from spark.newest_state import collect_parts
from spark.schema import stored_schema
from spark.store_reader import window_files, with_derived

# (path, size, mtime_ns): a file rewritten in place is a new file.
FileKey = tuple[str, int, int]
Finish = Callable[[pa.Table | None], list[str]]

# Files summarised per Spark job when a rule has many new ones: a whole window's summaries collected
# at once (with the stall runs' and newest times' first reads) overflowed the driver's 1 GiB heap at
# 160k queue series, and at 1.6M one window's alone would be ~300 MB of results.
CATCH_UP_FILES = 4

_LEVELS = list(LEVEL_COLUMNS.values())


class SplitSample(Exception):
    """One group's sample time is in two files: its set is the union of both, unknown from summaries."""


def keeps_sets(rule: RuleBase) -> bool:
    """True for churn rules whose sets can be kept per file: on a table (not a view), no now()."""
    return isinstance(rule, ChurnRule) and rule.table in TABLES and rule_key(rule) is not None


@dataclass
class _Kept:
    """One rule's per-file summaries, and the declaration they were made for."""

    signature: str
    files: dict[FileKey, pa.Table] = field(default_factory=dict)


def _key(path: Path) -> FileKey:
    stat = path.stat()
    return (str(path), stat.st_size, stat.st_mtime_ns)


def _by_file(found: pa.Table | None) -> dict[str, pa.Table]:
    """Collected rows by the local path of the file they came from (Spark names it as a URI)."""
    if found is None or found.num_rows == 0:
        return {}
    return {unquote(urlparse(uri).path): found.filter(pc.equal(found["_file"], uri))
            for uri in pc.unique(found["_file"]).to_pylist()}


def _others(rule: ChurnRule) -> list[str]:
    return [c for c in rule.template_inputs() if c not in rule.group_by]


def _summary_columns(rule: ChurnRule) -> tuple[dict[str, Column], list[Column], list[Column]]:
    """Per row: hashes of `by`, the member and the levels; per (by, ts, member) and per (by, ts): aggregates."""
    table = rule.table_def
    levels = level_columns(rule, datetime.min)  # rule_key is not None: no now() to evaluate
    rows = {**series_hashes(rule.group_by), "_member": F.col(rule.member).cast("string"), **levels}
    carried = [*[F.max(c).alias(c) for c in _LEVELS], *[F.first(c).alias(c) for c in _others(rule)]]
    members = F.array_sort(F.collect_set("_member"))
    # Nullable (a set is never empty): a part's struct is null in the other parts' rows, and the
    # collected Arrow table cannot hold a null struct with non-nullable fields.
    some = F.size(members) > 0
    per_sample = [F.when(some, F.xxhash64(members)).alias("_set"),
                  F.when(some, F.array_join(members, ",")).alias("members"), *carried]
    if rule.where is not None:
        rows["_where"] = F.coalesce(compile_expression(rule.where.tree, table), F.lit(False))
    return rows, carried, per_sample


class ChurnSets:
    """Per churn rule, the per-file summaries of its table's files in the window."""

    def __init__(self, spark: SparkSession, root: str | Path) -> None:
        self.spark = spark
        self.root = Path(root)
        self._kept: dict[str, _Kept] = {}

    def _new(self, rule: ChurnRule, now: datetime) -> list[FileKey]:
        """The files of the rule's window not summarised yet (oldest first), forgetting those gone."""
        signature = rule_key(rule) or ""
        kept = self._kept.get(rule.alert)
        if kept is None or kept.signature != signature:
            kept = self._kept[rule.alert] = _Kept(signature)
        listed = {_key(p) for p in window_files(self.root, TABLES[rule.table], now - rule.over, now)}
        # Files that left the window (or were rewritten, or removed) are forgotten.
        kept.files = {key: summary for key, summary in kept.files.items() if key in listed}
        return sorted(listed - kept.files.keys())

    def prepare(self, rules: Sequence[ChurnRule], now: datetime,
                limit: int | None = None) -> tuple[list[DataFrame], Finish]:
        """Summarise the files of each rule's window not summarised yet, in two steps so the Spark job
        is shared (spark/newest_state.py collect_parts): the parts to collect (rows tagged by a
        non-null `_churn_rule`), and what stores them, returning the alerts whose summaries are
        current; `limit` caps the files read per rule."""
        current = {rule.alert for rule in rules}
        self._kept = {alert: kept for alert, kept in self._kept.items() if alert in current}
        reads: list[tuple[ChurnRule, dict[str, FileKey]]] = []
        parts: list[DataFrame] = []
        for rule in rules:
            new = {key[0]: key for key in self._new(rule, now)[:limit]}
            if new:
                parts.append(self._summarise(rule, list(new), f"_churn{len(reads)}")
                             .withColumn("_churn_rule", F.lit(len(reads))))
            reads.append((rule, new))

        def finish(found: pa.Table | None) -> list[str]:
            ours = found is not None and "_churn_rule" in found.column_names
            for index, (rule, new) in enumerate(reads):
                if not new:
                    continue
                mine = found.filter(pc.fill_null(pc.equal(found["_churn_rule"], index), False)) if ours else None
                by_file = {next(iter(new)): mine} if len(new) == 1 else _by_file(mine)
                for path, key in new.items():
                    self._kept[rule.alert].files[key] = self._unpack(by_file.get(path), f"_churn{index}")
            return [rule.alert for rule in rules]

        return parts, finish

    def catch_up(self, rules: Sequence[ChurnRule], now: datetime) -> None:
        """Summarise what prepare() would read beyond one new file per rule, CATCH_UP_FILES files per
        Spark job (the first evaluation, a catch-up, a compaction)."""
        backlog = max((len(self._new(rule, now)) for rule in rules), default=0)
        # Bounded: files that keep changing under it are left to prepare().
        for _ in range(-(-backlog // CATCH_UP_FILES) if backlog > 1 else 0):
            parts, finish = self.prepare(rules, now, limit=CATCH_UP_FILES)
            finish(collect_parts(parts))

    def _summarise(self, rule: ChurnRule, paths: list[str], name: str) -> DataFrame:
        """The sets of the files `paths`: one row per file and (by, ts) with _file, _h1, _h2, ts and
        the struct `name` of the rest (a struct per rule, so parts of rules with different columns
        union by name)."""
        table = TABLES[rule.table]
        schema = stored_schema(table)
        rows_columns, carried, per_sample = per_rule(rule, "churn-summary", lambda: _summary_columns(rule))
        rows = self.spark.read.schema(schema).parquet(*paths)
        # One file (the usual cycle) needs no name per row: grouping by it cost ~0.2 s at 160k series.
        source = F.lit("") if len(paths) == 1 else F.col("_metadata.file_path")
        rows = with_derived(rows.withColumn("_file", source), table)
        rows = excluded(rows, rule).withColumns(rows_columns)
        rows = where_true(rows, F.col("_where") if rule.where is not None else None)
        by = ["_file", "_h1", "_h2", *rule.group_by, "ts"]
        # Members repeat on every row they hold (one per queue): a plain hash aggregate drops the
        # repeats first, as plan_churn does.
        members = rows.groupBy(*by, "_member").agg(*carried)
        sets = members.groupBy(*by).agg(*per_sample)
        payload = [c for c in sets.columns if c not in ("_file", "_h1", "_h2", "ts")]
        return sets.select("_file", "_h1", "_h2", "ts", F.struct(*payload).alias(name))

    @staticmethod
    def _unpack(found: pa.Table | None, name: str) -> pa.Table | None:
        """The collected rows of one file as a flat table (None when the file had no member rows)."""
        if found is None or found.num_rows == 0:
            return None
        payload = found[name].combine_chunks()
        columns = {"_h1": found["_h1"], "_h2": found["_h2"], "ts": found["ts"]}
        columns.update({payload.type.field(i).name: payload.field(i) for i in range(payload.type.num_fields)})
        return pa.table(columns)

    def candidates(self, rule: ChurnRule, now: datetime, stale: timedelta) -> pa.Table:
        """The groups that give a finding at `now` (stale, or changed more than a level), one row each:
        the by columns, `_value` (changes), `_last` (newest sample), the levels, `members` and the
        template columns of the newest sample."""
        summaries = [t for t in self._kept[rule.alert].files.values() if t is not None]
        if not summaries:
            return pa.table({})
        samples = pa.concat_tables(summaries, promote_options="permissive")
        ts = samples["ts"]
        inside = pc.and_(pc.greater_equal(ts, pa.scalar(now - rule.over, ts.type)),
                         pc.less_equal(ts, pa.scalar(now, ts.type)))
        samples = samples.filter(inside).sort_by([("_h1", "ascending"), ("_h2", "ascending"), ("ts", "ascending")])
        if samples.num_rows == 0:
            return samples
        h1, h2, ts = (samples[c].combine_chunks() for c in ("_h1", "_h2", "ts"))
        sets = samples["_set"].combine_chunks()
        # same[i]: rows i and i+1 are samples of one group.
        same = pc.and_(pc.equal(h1[1:], h1[:-1]), pc.equal(h2[1:], h2[:-1]))
        if pc.any(pc.and_(same, pc.equal(ts[1:], ts[:-1]))).as_py():
            raise SplitSample("a sample time of one group is in two files")
        changed = pa.concat_arrays([pa.array([0], pa.int64()),
                                    pc.and_(same, pc.not_equal(sets[1:], sets[:-1])).cast(pa.int64())])
        last = pa.concat_arrays([pc.invert(same), pa.array([True])])
        # Changes per group: the running count at its last row minus the one at the group before's.
        running = pc.cumulative_sum(changed).filter(last)
        before = pa.concat_arrays([pa.array([0], pa.int64()), running[:-1]])
        newest = samples.filter(last)
        newest = newest.append_column("_value", pc.subtract(running, before).cast(pa.float64()))
        newest = newest.append_column("_last", newest["ts"])
        value = newest["_value"]

        def crosses(level: str, above: bool) -> pa.ChunkedArray:
            return pc.fill_null((pc.greater if above else pc.less)(value, newest[level].cast(pa.float64())), False)

        stale_since = pa.scalar(now - stale, newest["_last"].type)
        keep = pc.less(newest["_last"], stale_since)
        for (side, _), level in LEVEL_COLUMNS.items():
            keep = pc.or_(keep, crosses(level, side == "above"))
        return newest.filter(keep)
