"""The `peer` plan: each member's newest value against the other members of its peer set.

Semantics:
- Like threshold: each series contributes its newest sample in the lookback, `where` filters it,
  a sample older than stale_after is stale. A member (peers_by + member) is the reduction
  (`reduce:`) of its fresh series; a member with no fresh series is no_data (outlier mode).
- outlier: a member fires when its value crosses a level while the `peer_reduce` of the other
  fresh members is not above the member's lowest level, and it has at least one peer.
- all: a peer set fires when it has at least `min_members` fresh members and every one crosses
  a level; severity is the lowest severity among them, value the smallest member value.
- Template values: peer_value, peers (other members, or all members in mode all), peers_above.
"""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Any

from pyspark.sql import Column, DataFrame, Window
from pyspark.sql import functions as F

from rules.kinds.peer import PeerRule
from spark.column_cache import per_rule
from spark.expressions import compile_expression
from spark.kinds.common import excluded, in_lookback, newest_per_series
from spark.kinds.levels import emit, level_columns, reduce_groups, severity_columns

_EXTRA = ("peer_value", "peers", "peers_above")


def _median(values: Column) -> Column:
    ordered = F.array_sort(values)
    n = F.size(ordered)
    lower = F.element_at(ordered, F.floor((n + 1) / 2).cast("int"))
    upper = F.element_at(ordered, F.floor(n / 2).cast("int") + 1)
    return F.when(n > 0, (lower + upper) / 2)


def _combine(values: Column, how: str) -> Column:
    """The peer value of an array of doubles: median, avg, max or min; null when empty."""
    if how == "median":
        return _median(values)
    if how == "max":
        return F.array_max(values)
    if how == "min":
        return F.array_min(values)
    total = F.aggregate(values, F.lit(0.0), lambda acc, x: acc + x)
    return F.when(F.size(values) > 0, total / F.size(values))


def _members(rule: PeerRule, df: DataFrame, now: datetime, stale_after: timedelta) -> DataFrame:
    """One row per member with _value, _fresh, the level columns and the template inputs."""
    table = rule.table_def
    rows = newest_per_series(excluded(in_lookback(df, now, stale_after), rule), table.key)
    if rule.where is not None:
        rows = rows.where(per_rule(rule, "where", lambda: F.coalesce(compile_expression(rule.where.tree, table, now),
                                                                    F.lit(False))))
    rows = rows.withColumns({
        "_fresh": F.col("ts") >= F.lit(now - stale_after),
        "_value": per_rule(rule, "value", lambda: compile_expression(rule.value.tree, table, now).cast("double")),
        **level_columns(rule, now),
    })
    inputs = tuple(dict.fromkeys((*rule.member_key, *rule.template_inputs())))
    return reduce_groups(rows, rule, rule.member_key, inputs) if rule.reduces else rows


def _outlier_columns(rule: PeerRule) -> dict[str, Any]:
    """plan_peer's Columns in outlier mode, built once per rule declaration (spark/column_cache.py)."""
    severity, threshold = severity_columns(F.col("_value"))
    entry = F.struct(F.col(rule.member).cast("string").alias("m"), F.col("_value").alias("v"))
    fresh_entry = F.when(F.col("_fresh") & F.col("_value").isNotNull(), entry)
    me = F.col(rule.member).cast("string")
    return {
        "judged": {"_sev": severity, "_thr": threshold, "_low": F.coalesce(F.col("_aw"), F.col("_ac"))},
        "all": F.collect_list(fresh_entry).over(Window.partitionBy(*rule.peers_by)),
        "others": F.transform(F.filter(F.col("_all"), lambda e: e["m"] != me), lambda e: e["v"]),
        "peer": {
            "peer_value": _combine(F.col("_others"), rule.peer_reduce),
            "peers": F.size("_others"),
            "peers_above": F.size(F.filter(F.col("_others"), lambda v: v > F.col("_low"))),
        },
    }


def _outlier_judge(value: Column) -> tuple[Column, Column]:
    peers_fine = (F.col("peers") > 0) & F.coalesce(F.col("peer_value") <= F.col("_low"), F.lit(False))
    return F.when(peers_fine, F.col("_sev")), F.when(peers_fine, F.col("_thr"))


def plan_peer(rule: PeerRule, df: DataFrame, now: datetime, stale_after: timedelta) -> DataFrame:
    """Findings of `rule` over the table window `df`, in the normalised output shape."""
    members = _members(rule, df, now, stale_after)
    inputs = rule.template_inputs()
    c = per_rule(rule, "peer", lambda: _outlier_columns(rule))
    members = members.withColumns(c["judged"])
    if rule.mode == "all":
        return _all_mode(rule, members, inputs)
    members = members.withColumn("_all", c["all"]).withColumn("_others", c["others"]).withColumns(c["peer"])
    return emit(members, rule, inputs, _EXTRA, _outlier_judge)


def _all_mode(rule: PeerRule, members: DataFrame, inputs: tuple[str, ...]) -> DataFrame:
    """One row per peer set: fires when every fresh member (at least min_members) crosses a level."""
    fresh = F.col("_fresh") & F.col("_value").isNotNull()
    others = [c for c in inputs if c not in rule.peers_by]
    aggs = [
        F.count(F.when(fresh, True)).alias("peers"),
        F.count(F.when(fresh & F.col("_sev").isNotNull(), True)).alias("peers_above"),
        F.count(F.when(fresh & (F.col("_sev") == "critical"), True)).alias("_critical"),
        F.min(F.when(fresh, F.col("_value"))).alias("_value"),
        F.max(F.when(fresh, F.col("_aw"))).alias("_aw"),
        F.max(F.when(fresh, F.col("_ac"))).alias("_ac"),
        F.max(F.col("_fresh").cast("int")).alias("_has_fresh"),
    ]
    if others:
        aggs.append(F.min_by(F.struct(*others), F.when(fresh, F.col("_value"))).alias("_worst"))
    sets = members.groupBy(*rule.peers_by).agg(*aggs)
    sets = sets.withColumns({
        "_fresh": F.col("_has_fresh") == 1, "peer_value": F.col("_value"),
        **{name: F.col("_worst")[name] for name in others},
    })
    everyone = (F.col("peers") >= rule.min_members) & (F.col("peers_above") == F.col("peers"))
    all_critical = everyone & (F.col("_critical") == F.col("peers"))

    def judge(value: Column) -> tuple[Column, Column]:
        severity = F.when(all_critical, F.lit("critical")).when(everyone, F.lit("warning"))
        threshold = F.when(all_critical, F.col("_ac")).when(everyone, F.coalesce(F.col("_aw"), F.col("_ac")))
        return severity, threshold

    return emit(sets, rule, inputs, _EXTRA, judge)
