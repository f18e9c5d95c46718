"""The `stall` kind: how long each series' value has been frozen with work waiting.

Semantics:
- Samples are the series' rows in [now - (longest stall measured) - stale_after, now].
- A sample is "stalled" when its value equals the newest value and `while` is true on it.
  The stall began at the first sample after the last non-stalled one (or at the oldest sample
  read); its length is newest sample ts - that sample's ts, in seconds (the alert's value).
- `moving`, when given, must have taken more than one value during the stall (the client kept
  pulling while its cache stood still).
- Fires with `severity` when the stall is at least `over`, critical at least `critical_after`.
- `where` filters series on their newest sample; a series whose newest sample is older than
  stale_after is no_data. `by` coarser than the key reduces the stall lengths (`reduce:`).

Kept state (one row per series): the newest sample's template columns and `where`, its time
(`_last`), and the current run: its value (`_rv`), whether `while` held on it (`_rok`) and the
time and moving value of each of its samples still inside the window (`_run`). A new sample
extends the run when it holds the run's value with `while` true, starts a new run when `while`
holds on another value, and breaks it otherwise: exactly the suffix plan_stall finds.
"""

from __future__ import annotations

from datetime import datetime, timedelta

from pyspark.sql import Column, DataFrame, Window
from pyspark.sql import functions as F

from rules.expressions import Expression
from rules.kinds.stall import StallRule
from spark.column_cache import per_rule
from spark.expressions import compile_expression
from spark.kinds.common import excluded, in_window, newest_of, seconds_between, unpack_newest
from spark.kinds.levels import Judge, duration_judge, finish, level_columns


def _sample_columns(rule: StallRule, now: datetime) -> dict[str, Column]:
    """Per sample: the value (_v), while (_w), moving value (_m) and where (_where)."""
    table = rule.table_def

    def compiled(expr: Expression | None, default: bool | None) -> Column:
        return compile_expression(expr.tree, table, now) if expr is not None else F.lit(default)

    return {
        "_v": compiled(rule.value, None).cast("double"),
        "_w": F.coalesce(compiled(rule.while_, True), F.lit(False)),
        "_m": compiled(rule.moving, None).cast("double"),
        "_where": F.coalesce(compiled(rule.where, True), F.lit(False)),
    }


def _judge(rule: StallRule) -> Judge:
    critical = rule.critical_after.total_seconds() if rule.critical_after is not None else None
    return duration_judge(rule.over.total_seconds(), critical, rule.severity)


def _carried(rule: StallRule) -> list[str]:
    """Columns of the newest sample the output needs: template inputs and `where`."""
    return [c for c in (*rule.template_inputs(), "_where") if c not in rule.table_def.key]


def _window_start(rule: StallRule, now: datetime, stale_after: timedelta) -> datetime:
    return now - rule.window() - stale_after


def _output(rule: StallRule, series: DataFrame, now: datetime, stale_after: timedelta) -> DataFrame:
    """Findings from one row per series holding `_since`, `_last`, `_moves` and the carried columns."""
    series = series.where(F.col("_where"))
    stalled = seconds_between("_last", "_since")
    if rule.moving is not None:
        stalled = F.when(F.col("_moves") > 1, stalled)
    series = series.withColumns({
        "_fresh": F.col("_last") >= F.lit(now - stale_after),
        "_value": stalled,
        **level_columns(rule, now),
    })
    return finish(series, rule, rule.template_inputs(), judge=_judge(rule))


def plan_stall(rule: StallRule, df: DataFrame, now: datetime, stale_after: timedelta) -> DataFrame:
    """Reference: findings of `rule` over the table window `df`, in the normalised output shape."""
    key = rule.table_def.key
    rows = excluded(in_window(df, _window_start(rule, now, stale_after), now), rule)
    rows = rows.withColumns(per_rule(rule, "stall-samples", lambda: _sample_columns(rule, now)))
    series_window = Window.partitionBy(*key)
    current = F.max_by("_v", "ts").over(series_window)
    broken = ~F.col("_v").eqNullSafe(current) | ~F.col("_w")
    rows = rows.withColumn("_broken_at", F.max(F.when(broken, F.col("ts"))).over(series_window))
    in_stall = F.col("_broken_at").isNull() | (F.col("ts") > F.col("_broken_at"))
    carried = _carried(rule)
    series = rows.groupBy(*key).agg(
        F.min(F.when(in_stall, F.col("ts"))).alias("_since"),
        F.max("ts").alias("_last"),
        F.count_distinct(F.when(in_stall, F.col("_m"))).alias("_moves"),
        newest_of(carried),
    )
    return _output(rule, unpack_newest(series, carried), now, stale_after)


_RUN = "array<struct<ts:timestamp,m:double>>"


def _next_run(acc: Column, x: Column) -> Column:
    """The run after sample `x`: extended, restarted on a new value, or broken (`while` false)."""
    entry = F.array(F.struct(x["ts"].alias("ts"), x["m"].alias("m")))
    extend = x["w"] & x["v"].eqNullSafe(acc["v"]) & acc["ok"]
    return (F.when(extend, F.struct(acc["v"].alias("v"), acc["ok"].alias("ok"),
                                    F.concat(acc["run"], entry).alias("run")))
            .when(x["w"], F.struct(x["v"].alias("v"), F.lit(True).alias("ok"), entry.alias("run")))
            .otherwise(F.struct(x["v"].alias("v"), F.lit(False).alias("ok"),
                                F.array().cast(_RUN).alias("run"))))


def fold_stall(rule: StallRule, state: DataFrame | None, rows: DataFrame, now: datetime,
               stale_after: timedelta, partitions: int) -> DataFrame:
    """The kept runs after folding `rows` (samples newer than every kept one) into `state`."""
    key = list(rule.table_def.key)
    carried = _carried(rule)
    start = _window_start(rule, now, stale_after)
    new = excluded(rows, rule).withColumns(per_rule(rule, "stall-samples", lambda: _sample_columns(rule, now)))
    new = new.groupBy(*key).agg(
        F.array_sort(F.collect_list(F.struct(F.col("ts").alias("ts"), F.col("_v").alias("v"),
                                             F.col("_w").alias("w"), F.col("_m").alias("m")))).alias("_new"),
        F.max("ts").alias("_new_last"),
        newest_of(carried, "_new_newest"),
    )
    if state is None:
        state = new.sparkSession.createDataFrame([], _state_schema(rule, new))
    joined = state.coalesce(partitions).join(new.coalesce(partitions), key, "full_outer")
    begin = F.struct(F.col("_rv").alias("v"), F.coalesce(F.col("_rok"), F.lit(False)).alias("ok"),
                     F.coalesce(F.col("_run"), F.array().cast(_RUN)).alias("run"))
    run = F.aggregate(F.coalesce(F.col("_new"), F.array().cast("array<struct<ts:timestamp,v:double,w:boolean,"
                                                                "m:double>>")), begin, _next_run)
    has_new = F.col("_new_last").isNotNull()
    folded = joined.withColumn("_fold", run).select(
        *key,
        *[F.when(has_new, F.col("_new_newest")[c]).otherwise(F.col(c)).alias(c) for c in carried],
        F.greatest("_last", "_new_last").alias("_last"),
        F.col("_fold")["v"].alias("_rv"),
        F.col("_fold")["ok"].alias("_rok"),
        F.filter(F.col("_fold")["run"], lambda e: e["ts"] >= F.lit(start)).alias("_run"),
    )
    # A series with no sample left in the window is gone (the reference no longer reads it).
    return folded.where(F.col("_last") >= F.lit(start))


def _state_schema(rule: StallRule, new: DataFrame) -> str:
    """The DDL of an empty state frame, typed like the one fold_stall builds."""
    fields = {f.name: f.dataType.simpleString() for f in new.schema.fields}
    newest = {f.name: f.dataType.simpleString() for f in new.schema["_new_newest"].dataType.fields}
    columns = [f"`{c}` {fields[c]}" for c in rule.table_def.key]
    columns += [f"`{c}` {newest[c]}" for c in _carried(rule)]
    columns += ["_last timestamp", "_rv double", "_rok boolean", f"_run {_RUN}"]
    return ", ".join(columns)


def judge_stall(rule: StallRule, state: DataFrame, now: datetime, stale_after: timedelta) -> DataFrame:
    """Findings of `rule` from its kept runs: the same as plan_stall's over the window."""
    start = _window_start(rule, now, stale_after)
    run = F.filter(F.col("_run"), lambda e: e["ts"] >= F.lit(start))
    series = state.where((F.col("_last") >= F.lit(start)) & (F.col("_last") <= F.lit(now))).withColumns({
        "_since": F.when(F.col("_rok"), F.array_min(F.transform(run, lambda e: e["ts"]))),
        "_moves": F.size(F.array_distinct(F.filter(F.transform(run, lambda e: e["m"]), lambda m: m.isNotNull()))),
    })
    return _output(rule, series, now, stale_after)
