"""Pieces every kind's SQL shares: the lookback, the newest sample per series, the output shape.

A kind's plan is one SELECT over a relation (`source`: a `{frame}` placeholder of spark.sql.run or
a parenthesised subquery) returning OUTPUT_COLUMNS, so that every rule of a cycle is one branch of
one UNION ALL statement.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from datetime import timedelta

from rules.expressions import columns_used
from rules.kinds.base import RuleBase
from rules.tables import STRING, Table
from spark.expressions import compile_expression
from spark.schema import SQL_TYPES
from spark.sql import NOW, ago, literal, name, names, string_map, struct

# The one shape every plan returns, so all rules of a cycle union into one job.
OUTPUT_COLUMNS = ("rule", "labels", "severity", "value", "threshold", "no_data", "inputs")
MIN_LOOKBACK = timedelta(minutes=10)


def lookback(stale_after: timedelta) -> timedelta:
    """How far back a series is still remembered: stale (no_data) rather than gone.

    Ten times stale_after, at least 10 minutes: a collector outage of a few cycles reports
    no_data; a series gone for longer (a client that left) simply disappears.
    """
    return max(10 * stale_after, MIN_LOOKBACK)


def in_window(over: timedelta) -> str:
    """Condition: now - over <= ts <= now (the samples of an `over:` window)."""
    return f"(`ts` >= {ago(over)} AND `ts` <= {NOW})"


def in_lookback(stale_after: timedelta) -> str:
    """Condition: the row is within the lookback of stale_after (the table window may be wider)."""
    return in_window(lookback(stale_after))


def fresh(stale_after: timedelta, column: str = "ts") -> str:
    """Condition: the sample time `column` is within stale_after of now."""
    return f"({name(column)} >= {ago(stale_after)})"


def true(condition: str | None) -> str:
    """Condition: `condition` is true (null counts as false); TRUE when there is none."""
    return "TRUE" if condition is None else f"coalesce({condition}, FALSE)"


def not_excluded(rule: RuleBase) -> str:
    """Condition: no column of the row fully matches one of the rule's `exclude` regexes."""
    # The pattern is a regex argument of RLIKE, a literal; anchored so `test` != `latest`.
    terms = [f"NOT coalesce(CAST({name(column)} AS STRING) RLIKE {literal(f'^(?:{pattern})$')}, FALSE)"
             for column, pattern in rule.exclude.items()]
    return " AND ".join(terms) if terms else "TRUE"


def sample_conditions(rule: RuleBase) -> list[str]:
    """Conditions a sample meets to count for a rule with `exclude` and an optional `where` (growth, absent)."""
    where = getattr(rule, "where", None)
    compiled = compile_expression(where.tree, rule.table_def) if where is not None else None
    return [not_excluded(rule), true(compiled)]


def where(*conditions: str) -> str:
    """A WHERE clause of the conditions that are not TRUE."""
    kept = [c for c in conditions if c != "TRUE"]
    return f" WHERE {' AND '.join(kept)}" if kept else ""


def newest_per_series(source: str, key: Iterable[str], condition: str = "TRUE") -> str:
    """The newest row of each series (one value of `key`) among the rows of `source` meeting `condition`."""
    # row_number over a window measured the same as groupBy + max_by(struct(...), ts) and keeps the
    # columns flat.
    return (f"SELECT * EXCEPT (`_rn`) FROM (SELECT *, row_number() OVER (PARTITION BY {names(key)} "
            f"ORDER BY `ts` DESC) AS `_rn` FROM {source}{where(condition)}) WHERE `_rn` = 1")


def newest_of(columns: Iterable[str], alias: str = "_newest", order: str = "`ts`") -> str:
    """Aggregate: the struct of `columns` from the row with the largest `order` (unpack with unpack)."""
    return f"max_by({struct({c: name(c) for c in columns})}, {order}) AS {name(alias)}"


def unpack(columns: Iterable[str], alias: str = "_newest") -> list[str]:
    """Select items that take the fields of newest_of's struct back to top-level columns."""
    return [f"{name(alias)}.{name(c)} AS {name(c)}" for c in columns]


def seconds_between(later: str, earlier: str) -> str:
    """later - earlier in seconds (double), for timestamp expressions."""
    return f"(CAST(unix_micros({later}) - unix_micros({earlier}) AS DOUBLE) / 1000000)"


def label_map(rule: RuleBase) -> str:
    """The alert's labels: the `by` columns as strings plus the rule's static labels.

    A `by` column that is null on the row is left out, not sent as a null label: a nullable column
    (collector_health's `broker`, null for a name server) is a label only where it has a value.
    """
    pairs = [(column, _as_string(rule, column)) for column in rule.group_by]
    pairs += [(label, literal(value)) for label, value in rule.labels.items()]
    return f"map_filter({string_map(pairs)}, (`_label`, `_value`) -> `_value` IS NOT NULL)"


def inputs_map(rule: RuleBase, columns: Iterable[str]) -> str:
    """The template inputs: `columns` of the row (as strings) by name."""
    return string_map((column, _as_string(rule, column)) for column in columns)


def _as_string(rule: RuleBase, column: str) -> str:
    # A column the catalog declares a string needs no cast (every cast is more plan to analyse).
    declared = rule.table_def.column(column)
    return name(column) if declared is not None and declared.type == STRING else f"CAST({name(column)} AS STRING)"


def select(items: Iterable[str], source: str, *conditions: str, group_by: Iterable[str] = ()) -> str:
    """SELECT items FROM source [WHERE conditions] [GROUP BY columns]."""
    grouped = list(group_by)
    tail = f" GROUP BY {names(grouped)}" if grouped else ""
    return f"SELECT {', '.join(items)} FROM {source}{where(*conditions)}{tail}"


def sub(query: str) -> str:
    """`query` as a relation of a FROM clause."""
    return f"({query})"


@dataclass(frozen=True)
class Part:
    """One rule's state inside a kept frame (spark/frames.py), whose rows are the series of one key.

    A frame is folded by one statement: the new rows (with `rows` computed on each) are grouped by
    the key into `new` aggregates (n.*), in one aggregate with the kept row (s.*); `fold` computes
    the part's columns from both, `finish` (if any) from fold's; a part that is not `alive`
    afterwards is nulled, and a series none of whose parts is alive is dropped. `types` gives each
    kept column's SQL type (for the first fold's empty state); `view(frame)` reads the part's rows
    back in the shape its kind's judge reads.
    """

    key: tuple[str, ...]
    types: dict[str, str]
    new: dict[str, str]
    fold: dict[str, str]
    alive: str
    view: Callable[[str], str]
    rows: dict[str, str] = field(default_factory=dict)
    finish: dict[str, str] = field(default_factory=dict)


def sql_type(table: Table, column: str) -> str:
    """The SQL type the catalog declares for a column of `table`."""
    declared = table.column(column)
    if declared is None:
        raise ValueError(f"unknown column {column!r} in table {table.name}")
    return SQL_TYPES[declared.type]


def columns_read(rule: RuleBase) -> list[str]:
    """The columns of its table a rule reads (its expressions', templates', labels' and exclusions'),
    in the table's order."""
    read = {c for expression in rule.expressions().values() for c in columns_used(expression.tree)}
    read |= {*rule.template_inputs(), *rule.group_by, *rule.exclude}
    for attribute in ("member", "peers_by"):  # peer and churn rules
        value = getattr(rule, attribute, None)
        read |= {value} if isinstance(value, str) else set(value or ())
    return [c for c in rule.table_def.column_names if c in read]


def renamed(prefix: str, columns: Iterable[str]) -> list[str]:
    """Select items reading part columns `prefix`_c back as c."""
    return [f"{name(prefix + c)} AS {name(c)}" for c in columns]
