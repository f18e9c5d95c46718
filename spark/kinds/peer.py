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

from datetime import timedelta

from rules.kinds.peer import PeerRule
from spark.expressions import compile_expression
from spark.kinds.common import fresh, in_lookback, newest_per_series, not_excluded, select, sub, true, unpack
from spark.kinds.levels import emit, level, level_columns, reduce_groups, severity_columns
from spark.sql import name, names, struct

_EXTRA = ("peer_value", "peers", "peers_above")


def _median(values: str) -> str:
    ordered = f"array_sort({values})"
    n = f"size({values})"
    lower = f"element_at({ordered}, CAST(floor(({n} + 1) / 2) AS INT))"
    upper = f"element_at({ordered}, CAST(floor({n} / 2) AS INT) + 1)"
    return f"CASE WHEN {n} > 0 THEN ({lower} + {upper}) / 2 END"


def _combine(values: str, how: str) -> str:
    """The peer value of an array of doubles: median, avg, max or min; null when empty."""
    if how == "median":
        return _median(values)
    if how == "max":
        return f"array_max({values})"
    if how == "min":
        return f"array_min({values})"
    return f"CASE WHEN size({values}) > 0 THEN aggregate({values}, 0.0D, (acc, x) -> acc + x) / size({values}) END"


def _members(rule: PeerRule, source: str, stale_after: timedelta, one_row_per_series: bool) -> str:
    """One row per member with _value, _fresh, the level columns and the template inputs."""
    table = rule.table_def
    if one_row_per_series:
        newest = select(["*"], source, in_lookback(stale_after), not_excluded(rule))
    else:
        newest = newest_per_series(source, table.key, f"{in_lookback(stale_after)} AND {not_excluded(rule)}")
    where = compile_expression(rule.where.tree, table) if rule.where is not None else None
    computed = {
        "_fresh": fresh(stale_after),
        "_value": f"CAST({compile_expression(rule.value.tree, table)} AS DOUBLE)",
        **level_columns(rule),
    }
    rows = select(["*", *(f"{sql} AS {name(column)}" for column, sql in computed.items())], sub(newest), true(where))
    inputs = tuple(dict.fromkeys((*rule.member_key, *rule.template_inputs())))
    return reduce_groups(sub(rows), rule, rule.member_key, inputs) if rule.reduces else rows


def plan_peer(rule: PeerRule, source: str, stale_after: timedelta, one_row_per_series: bool = False) -> str:
    """Findings of `rule` over the rows of `source` (the table window, or each series' newest row
    when `one_row_per_series`), in the normalised output shape."""
    members = _members(rule, source, stale_after, one_row_per_series)
    inputs = rule.template_inputs()
    present = tuple(level_columns(rule))
    severity, threshold = severity_columns("`_value`", present)
    low = f"coalesce({level('_aw', present)}, {level('_ac', present)})"
    judged = select(["*", f"{severity} AS `_sev`", f"{threshold} AS `_thr`", f"{low} AS `_low`"], sub(members))
    if rule.mode == "all":
        return _all_mode(rule, sub(judged), inputs, present)
    me = f"CAST({name(rule.member)} AS STRING)"
    entry = struct({"m": me, "v": "`_value`"})
    peers = select(["*", f"collect_list(CASE WHEN `_fresh` AND `_value` IS NOT NULL THEN {entry} END) "
                         f"OVER (PARTITION BY {names(rule.peers_by)}) AS `_all`"], sub(judged))
    others = select(["*", f"transform(filter(`_all`, e -> e.m <> {me}), e -> e.v) AS `_others`"], sub(peers))
    compared = select(["*", f"{_combine('`_others`', rule.peer_reduce)} AS `peer_value`",
                       "size(`_others`) AS `peers`", "size(filter(`_others`, v -> v > `_low`)) AS `peers_above`"],
                      sub(others))

    def judge(value: str) -> tuple[str, str]:
        peers_fine = "(`peers` > 0 AND coalesce(`peer_value` <= `_low`, FALSE))"
        return f"CASE WHEN {peers_fine} THEN `_sev` END", f"CASE WHEN {peers_fine} THEN `_thr` END"

    return emit(sub(compared), rule, inputs, _EXTRA, judge)


def _all_mode(rule: PeerRule, members: str, inputs: tuple[str, ...], present: tuple[str, ...]) -> str:
    """One row per peer set: fires when every fresh member (at least min_members) crosses a level."""
    fresh_value = "(`_fresh` AND `_value` IS NOT NULL)"
    others = [c for c in inputs if c not in rule.peers_by]
    aggs = [
        names(rule.peers_by),
        f"count(CASE WHEN {fresh_value} THEN TRUE END) AS `peers`",
        f"count(CASE WHEN {fresh_value} AND `_sev` IS NOT NULL THEN TRUE END) AS `peers_above`",
        f"count(CASE WHEN {fresh_value} AND `_sev` = 'critical' THEN TRUE END) AS `_critical`",
        f"min(CASE WHEN {fresh_value} THEN `_value` END) AS `_value`",
        f"max(CASE WHEN {fresh_value} THEN {level('_aw', present)} END) AS `_aw`",
        f"max(CASE WHEN {fresh_value} THEN {level('_ac', present)} END) AS `_ac`",
        "max(CAST(`_fresh` AS INT)) AS `_has_fresh`",
    ]
    if others:
        aggs.append(f"min_by({struct({c: name(c) for c in others})}, CASE WHEN {fresh_value} THEN `_value` END) AS `_worst`")
    sets = select(aggs, members, group_by=rule.peers_by)
    sets = select(["* EXCEPT (`_has_fresh`" + (", `_worst`)" if others else ")"), "(`_has_fresh` = 1) AS `_fresh`",
                   "`_value` AS `peer_value`", *unpack(others, "_worst")], sub(sets))
    everyone = f"(`peers` >= {rule.min_members} AND `peers_above` = `peers`)"
    all_critical = f"({everyone} AND `_critical` = `peers`)"

    def judge(value: str) -> tuple[str, str]:
        severity = f"CASE WHEN {all_critical} THEN 'critical' WHEN {everyone} THEN 'warning' END"
        threshold = f"CASE WHEN {all_critical} THEN `_ac` WHEN {everyone} THEN coalesce(`_aw`, `_ac`) END"
        return severity, threshold

    return emit(sub(sets), rule, inputs, _EXTRA, judge)
