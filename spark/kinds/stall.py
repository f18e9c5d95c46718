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

from datetime import timedelta

from rules.expressions import Expression
from rules.kinds.stall import StallRule
from spark.expressions import compile_expression
from spark.kinds.common import (
    Part,
    in_window,
    newest_of,
    not_excluded,
    renamed,
    seconds_between,
    select,
    sql_type,
    sub,
    unpack,
)
from spark.kinds.levels import Judge, duration_judge, finish, level_columns
from spark.sql import NOW, ago, literal, name, names, struct

_RUN = "ARRAY<STRUCT<ts: TIMESTAMP, m: DOUBLE>>"
_SAMPLES = "ARRAY<STRUCT<ts: TIMESTAMP, v: DOUBLE, w: BOOLEAN, m: DOUBLE>>"


def _sample_columns(rule: StallRule) -> dict[str, str]:
    """Per sample: the value (_v), while (_w), moving value (_m) and where (_where)."""
    table = rule.table_def

    def compiled(expr: Expression | None, default: bool | None) -> str:
        return compile_expression(expr.tree, table) if expr is not None else literal(default)

    return {
        "_v": f"CAST({compiled(rule.value, None)} AS DOUBLE)",
        "_w": f"coalesce({compiled(rule.while_, True)}, FALSE)",
        "_m": f"CAST({compiled(rule.moving, None)} AS DOUBLE)",
        "_where": f"coalesce({compiled(rule.where, True)}, FALSE)",
    }


def _samples(rule: StallRule, source: str, *conditions: str) -> str:
    """The rows of `source` passing `exclude` and `conditions`, with the sample columns."""
    computed = [f"{sql} AS {name(column)}" for column, sql in _sample_columns(rule).items()]
    return select(["*", *computed], source, not_excluded(rule), *conditions)


def _judge(rule: StallRule) -> Judge:
    critical = rule.critical_after.total_seconds() if rule.critical_after is not None else None
    return duration_judge(rule.over.total_seconds(), critical, rule.severity)


def _carried(rule: StallRule) -> list[str]:
    """Columns of the newest sample the output needs: template inputs and `where`."""
    return [c for c in (*rule.template_inputs(), "_where") if c not in rule.table_def.key]


def _window(rule: StallRule, stale_after: timedelta) -> timedelta:
    """How far back from now the samples are read."""
    return rule.window() + stale_after


def _output(rule: StallRule, series: str, stale_after: timedelta) -> str:
    """Findings from one row per series holding `_since`, `_last`, `_moves` and the carried columns."""
    stalled = seconds_between("`_last`", "`_since`")
    if rule.moving is not None:
        stalled = f"CASE WHEN `_moves` > 1 THEN {stalled} END"
    computed = {"_fresh": f"(`_last` >= {ago(stale_after)})", "_value": stalled, **level_columns(rule)}
    rows = select(["*", *(f"{sql} AS {name(column)}" for column, sql in computed.items())], series, "`_where`")
    return finish(sub(rows), rule, rule.template_inputs(), judge=_judge(rule))


def plan_stall(rule: StallRule, source: str, stale_after: timedelta) -> str:
    """Reference: findings of `rule` over the table window `source`, in the normalised output shape."""
    key = names(rule.table_def.key)
    rows = _samples(rule, source, in_window(_window(rule, stale_after)))
    rows = select(["*", f"max_by(`_v`, `ts`) OVER (PARTITION BY {key}) AS `_current`"], sub(rows))
    broken = "(NOT (`_v` <=> `_current`) OR NOT `_w`)"
    rows = select(["*", f"max(CASE WHEN {broken} THEN `ts` END) OVER (PARTITION BY {key}) AS `_broken_at`"], sub(rows))
    in_stall = "(`_broken_at` IS NULL OR `ts` > `_broken_at`)"
    carried = _carried(rule)
    series = select([
        key,
        f"min(CASE WHEN {in_stall} THEN `ts` END) AS `_since`",
        "max(`ts`) AS `_last`",
        f"count(DISTINCT CASE WHEN {in_stall} THEN `_m` END) AS `_moves`",
        newest_of(carried),
    ], sub(rows), group_by=rule.table_def.key)
    return _output(rule, sub(select(["* EXCEPT (`_newest`)", *unpack(carried)], sub(series))), stale_after)


def _next_run(acc: str, x: str) -> str:
    """The run after sample `x`: extended, restarted on a new value, or broken (`while` false)."""
    entry = f"array({struct({'ts': f'{x}.ts', 'm': f'{x}.m'})})"
    extend = f"({x}.w AND ({x}.v <=> {acc}.v) AND {acc}.ok)"
    return (f"CASE WHEN {extend} THEN {struct({'v': f'{acc}.v', 'ok': f'{acc}.ok', 'run': f'concat({acc}.run, {entry})'})} "
            f"WHEN {x}.w THEN {struct({'v': f'{x}.v', 'ok': 'TRUE', 'run': entry})} "
            f"ELSE {struct({'v': f'{x}.v', 'ok': 'FALSE', 'run': f'CAST(array() AS {_RUN})'})} END")


def part_stall(rule: StallRule, prefix: str, stale_after: timedelta) -> Part:
    """The rule's runs in a frame of the table's series (prefix_ + the names judge_stall reads): the newest
    matching sample's carried columns, its time (_last) and the run (_rv, _rok, _run), folded sample
    by sample (_next_run)."""
    table = rule.table_def
    carried = _carried(rule)
    start = ago(_window(rule, stale_after))

    def col(c: str) -> str:
        return name(prefix + c)

    sample = struct({"ts": "`ts`", "v": col("_v"), "w": col("_w"), "m": col("_m")})
    ok = col("_ok")
    begin = struct({"v": f"s.{col('_rv')}", "ok": f"coalesce(s.{col('_rok')}, FALSE)",
                    "run": f"coalesce(s.{col('_run')}, CAST(array() AS {_RUN}))"})
    run = f"aggregate(coalesce(n.{col('_new')}, CAST(array() AS {_SAMPLES})), {begin}, (acc, x) -> {_next_run('acc', 'x')})"
    return Part(
        key=table.key,
        types={**{prefix + c: "BOOLEAN" if c == "_where" else sql_type(table, c) for c in carried},
               prefix + "_last": "TIMESTAMP", prefix + "_rv": "DOUBLE", prefix + "_rok": "BOOLEAN", prefix + "_run": _RUN},
        rows={prefix + "_ok": not_excluded(rule), **{prefix + c: sql for c, sql in _sample_columns(rule).items()}},
        new={
            prefix + "_new": f"array_sort(collect_list(CASE WHEN {ok} THEN {sample} END))",
            prefix + "_new_last": f"max(CASE WHEN {ok} THEN `ts` END)",
            prefix + "_new_newest": f"max_by(CASE WHEN {ok} THEN {struct({c: col(c) if c == '_where' else name(c) for c in carried})} "
                                    f"END, CASE WHEN {ok} THEN `ts` END)",
        },
        fold={
            **{prefix + c: f"CASE WHEN n.{col('_new_last')} IS NOT NULL THEN n.{col('_new_newest')}.{name(c)} "
                           f"ELSE s.{col(c)} END" for c in carried},
            prefix + "_last": f"greatest(s.{col('_last')}, n.{col('_new_last')})",
            prefix + "_fold": run,
        },
        finish={prefix + "_rv": f"{col('_fold')}.v", prefix + "_rok": f"{col('_fold')}.ok",
                prefix + "_run": f"filter({col('_fold')}.run, e -> e.ts >= {start})"},
        # A series with no sample left in the window is gone (the reference no longer reads it).
        alive=f"{col('_last')} >= {start}",
        view=lambda frame: sub(select([names(table.key), *renamed(prefix, [*carried, "_last", "_rv", "_rok", "_run"])],
                                      frame, f"{col('_last')} IS NOT NULL")),
    )


def judge_stall(rule: StallRule, state: str, stale_after: timedelta) -> str:
    """Findings of `rule` from its kept runs: the same as plan_stall's over the window."""
    start = ago(_window(rule, stale_after))
    run = f"filter(`_run`, e -> e.ts >= {start})"
    series = select([
        "*",
        f"CASE WHEN `_rok` THEN array_min(transform({run}, e -> e.ts)) END AS `_since`",
        f"size(array_distinct(filter(transform({run}, e -> e.m), m -> m IS NOT NULL))) AS `_moves`",
    ], state, f"`_last` >= {start}", f"`_last` <= {NOW}")
    return _output(rule, sub(series), stale_after)
