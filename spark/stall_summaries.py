"""What stall runs are made of (spark/stall_runs.py): each series' summary of new rows, from Spark,
and the merge of summaries into the runs kept, in Arrow.

A summary (`SUMMARY` columns, plus `_times`) describes one series' rows in a batch: its newest
value, the run those rows end with (`_since`, null when the newest sample has `while` false,
`_clean` when no sample of the batch broke it), the batch's first and last sample, and the
moving value's first, last and newest change inside that run. Merging a batch into a run that
held the same value with no break in between keeps the run's start; anything else starts anew.
"""

from __future__ import annotations

from datetime import datetime

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F
from pyspark.sql.types import DoubleType, FloatType

from rules.expressions import Expression
from rules.kinds.stall import StallRule
from spark.expressions import compile_expression
from spark.kinds.common import excluded, series_hashes

SUMMARY = ("_h1", "_h2", "_v", "_since", "_first", "_last", "_clean", "_m_first", "_m_last", "_m_last_ts", "_m_prev")
TS = pa.timestamp("us", "UTC")
STATE = ("_h1", "_h2", "_v", "_since", "_last", "_m_last", "_m_last_ts", "_m_prev")



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
    return series.select(*SUMMARY, "_times")


def summarise_one(rule: StallRule, rows: DataFrame, now: datetime) -> DataFrame:
    """summarise() for rows that all share one ts (one collection cycle) and hold one row per series
    (StallRuns checks it on the rows collected, `one_per_series`): each row is its series' summary,
    with no aggregate. Grouping them shuffled every row: at 1.6M queue series ~2 s of CPU per rule."""
    samples = _samples(rule, rows, now)
    # One sample: it is the run when `while` holds on it, and nothing is when it does not.
    moving = F.when(F.col("w"), F.col("m"))
    return samples.select(
        "_h1", "_h2", F.col("v").alias("_v"), F.when(F.col("w"), F.col("ts")).alias("_since"),
        F.col("ts").alias("_first"), F.col("ts").alias("_last"), F.col("w").alias("_clean"),
        moving.alias("_m_first"), moving.alias("_m_last"),
        F.when(moving.isNotNull(), F.col("ts")).alias("_m_last_ts"), F.lit(None).cast("timestamp").alias("_m_prev"),
        F.when(F.col("w"), F.array("ts")).otherwise(F.array().cast("array<timestamp>")).alias("_times"),
    )


def one_per_series(summary: pa.Table) -> bool:
    """True when no series (_h1, _h2) has two rows in `summary`."""
    # The 64-bit _h1 sorted by numpy (12 ms at 1.6M series, where Arrow's distinct count took
    # 0.12-0.38 s) settles it when no two are equal; the rare tie (a row written twice, or two
    # series sharing _h1) is decided on both hashes.
    first = np.sort(summary["_h1"].to_numpy())
    if not (first[1:] == first[:-1]).any():
        return True
    return summary.group_by(["_h1", "_h2"]).aggregate([]).num_rows == summary.num_rows


def pick(condition: pa.Array, yes: pa.Array, no: pa.Array) -> pa.Array:
    """`yes` where `condition` is true, `no` where it is false or null."""
    return pc.if_else(pc.fill_null(condition, False), yes, no)


def merge(old: pa.Table, new: pa.Table) -> tuple[pa.Table, pa.Table]:
    """The runs of `old` extended by `new`, the summaries of the rows that came after them, and the
    series (_h1, _h2) whose run `new` ended (a new one began, or none runs)."""
    new = new.rename_columns([c if c == "_h1" else c + "_n" for c in new.column_names])
    old = old.rename_columns([c if c == "_h1" else c + "_o" for c in old.column_names])
    joined = _series_outer_join(new, old)
    n = {c: joined[c + "_n"] for c in SUMMARY[2:]}
    o = {c: joined[c + "_o"] for c in STATE[2:]}
    has_new = pc.is_valid(n["_last"])
    if pc.any(pc.fill_null(pc.less_equal(n["_first"], o["_last"]), False)).as_py():
        raise OutOfOrder("samples older than a series' newest one arrived (a late write)")
    same = pc.or_(pc.fill_null(pc.equal(o["_v"], n["_v"]), False), pc.and_(pc.is_null(o["_v"]), pc.is_null(n["_v"])))
    continues = pc.and_(pc.and_(has_new, pc.fill_null(n["_clean"], False)),
                        pc.and_(pc.is_valid(o["_since"]), same))
    crossed = pc.fill_null(pc.not_equal(o["_m_last"], n["_m_first"]), False)
    m_prev = pick(pc.is_valid(n["_m_prev"]), n["_m_prev"], pick(crossed, o["_m_last_ts"], o["_m_prev"]))
    merged = {
        "_h1": joined["_h1"], "_h2": joined["_h2"],
        "_v": pick(has_new, n["_v"], o["_v"]),
        "_since": pick(continues, o["_since"], pick(has_new, n["_since"], o["_since"])),
        "_last": pick(has_new, n["_last"], o["_last"]),
        "_m_last": pick(continues, pc.coalesce(n["_m_last"], o["_m_last"]), pick(has_new, n["_m_last"], o["_m_last"])),
        "_m_last_ts": pick(continues, pc.coalesce(n["_m_last_ts"], o["_m_last_ts"]),
                            pick(has_new, n["_m_last_ts"], o["_m_last_ts"])),
        "_m_prev": pick(continues, m_prev, pick(has_new, n["_m_prev"], o["_m_prev"])),
    }
    ended = pa.table({"_h1": joined["_h1"], "_h2": joined["_h2"]}).filter(pc.and_(has_new, pc.invert(continues)))
    return pa.table(merged), ended


def _series_outer_join(new: pa.Table, old: pa.Table) -> pa.Table:
    """`new` full outer join `old` on the series (_h1 and _h2_n / _h2_o), keys as _h1 and _h2.

    Joined on the 64-bit _h1 alone (at 1.6M series 0.13 s where both hashes took 0.3 s), then
    checked: a row pairing two different series (same _h1) has two different _h2, and then the
    join is done again on both.
    """
    joined = new.join(old, keys="_h1", join_type="full outer", coalesce_keys=True)
    h2n, h2o = joined["_h2_n"], joined["_h2_o"]
    if pc.any(pc.fill_null(pc.not_equal(h2n, h2o), False)).as_py():
        joined = new.rename_columns([c if c != "_h2_n" else "_h2" for c in new.column_names]).join(
            old.rename_columns([c if c != "_h2_o" else "_h2" for c in old.column_names]),
            keys=["_h1", "_h2"], join_type="full outer", coalesce_keys=True)
        return joined
    return joined.append_column("_h2", pc.coalesce(h2n, h2o)).drop_columns(["_h2_n", "_h2_o"])


class OutOfOrder(Exception):
    """New rows of a series are not all newer than what its run has counted: only a rebuild is exact."""


def run_times(summary: pa.Table) -> pa.Table:
    """The summaries' run sample times, one row each (_h1, _h2, ts)."""
    # Only the columns read: the whole summary made contiguous was a copy of a dozen columns.
    summary = summary.select(["_h1", "_h2", "_times"]).combine_chunks()
    if not summary.num_rows:
        return empty_times()
    lists = summary["_times"].chunk(0)
    parents = pc.list_parent_indices(lists)
    return pa.table({"_h1": pc.take(summary["_h1"], parents), "_h2": pc.take(summary["_h2"], parents),
                     "ts": pc.list_flatten(lists).cast(TS)})



def empty_times() -> pa.Table:
    """No run sample times (_h1, _h2, ts)."""
    return pa.table({"_h1": pa.array([], pa.int64()), "_h2": pa.array([], pa.int32()), "ts": pa.array([], TS)})


def empty_state() -> pa.Table:
    """No runs (the STATE columns)."""
    ts = TS
    return pa.table({"_h1": pa.array([], pa.int64()), "_h2": pa.array([], pa.int32()),
                     "_v": pa.array([], pa.int64()), "_since": pa.array([], ts), "_last": pa.array([], ts),
                     "_m_last": pa.array([], pa.int64()), "_m_last_ts": pa.array([], ts),
                     "_m_prev": pa.array([], ts)})
