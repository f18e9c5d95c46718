"""Compile a rules expression tree to a pyspark Column: names become F.col, never SQL text.

Timestamps in expressions are epoch milliseconds: a TIMESTAMP column compiles to
`unix_millis(col)` and `now()` to the evaluation time in ms, so `now() - last_consume_ts`
is a duration in ms and `last_pull_ts < now() - 60000` compares like with like.
Arithmetic uses Spark's try_* functions: a division by zero or an overflow in one row gives
null for that row (no finding) instead of failing the whole evaluation under ANSI mode.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from functools import reduce

from pyspark.sql import Column
from pyspark.sql import functions as F

from rules.expressions import BinOp, BoolOp, Call, ColumnRef, Compare, Literal, Neg, Node, Not, calls_now
from rules.tables import TIMESTAMP, Table
from spark.column_cache import cached

_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)

_ARITH: dict[str, Callable[[Column, Column], Column]] = {
    "+": F.try_add,
    "-": F.try_subtract,
    "*": F.try_multiply,
    "/": F.try_divide,
    "%": F.try_mod,
}
_COMPARE: dict[str, Callable[[Column, Column], Column]] = {
    "<": lambda a, b: a < b,
    "<=": lambda a, b: a <= b,
    ">": lambda a, b: a > b,
    ">=": lambda a, b: a >= b,
    "==": lambda a, b: a == b,
    "!=": lambda a, b: a != b,
}


def epoch_millis(moment: datetime) -> int:
    """`moment` as epoch milliseconds (a naive datetime is taken as UTC)."""
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=UTC)
    return (moment - _EPOCH) // timedelta(milliseconds=1)


def compile_expression(node: Node, table: Table, now: datetime | None = None) -> Column:
    """The Spark Column computing `node` on rows of `table`; `now()` is `now`, never the wall clock."""
    if not calls_now(node):
        # repr, not the node: Literal(1) == Literal(True) == Literal(1.0) in Python, not in Spark.
        return cached(("expression", table.name, repr(node)), lambda: _compile(node, table, None))
    return _compile(node, table, now)


def _compile(node: Node, table: Table, now: datetime | None) -> Column:

    def build(n: Node) -> Column:
        if isinstance(n, Literal):
            return F.lit(n.value)
        if isinstance(n, ColumnRef):
            column = table.column(n.name)
            if column is None:
                raise ValueError(f"unknown column {n.name!r} in table {table.name}")
            if column.type == TIMESTAMP:
                return F.unix_millis(F.col(n.name))
            return F.col(n.name)
        if isinstance(n, BinOp):
            return _ARITH[n.op](build(n.left), build(n.right))
        if isinstance(n, Neg):
            return -build(n.operand)
        if isinstance(n, Not):
            return ~build(n.operand)
        if isinstance(n, BoolOp):
            parts = [build(v) for v in n.operands]
            return reduce((lambda a, b: a & b) if n.op == "and" else (lambda a, b: a | b), parts)
        if isinstance(n, Compare):
            values = [build(v) for v in n.operands]
            pairs = [_COMPARE[op](values[i], values[i + 1]) for i, op in enumerate(n.ops)]
            return reduce(lambda a, b: a & b, pairs)
        if isinstance(n, Call):
            return build_call(n)
        raise TypeError(f"not an expression node: {n!r}")

    def build_call(n: Call) -> Column:
        if n.name == "now":
            if now is None:
                raise ValueError("now() is not available here (derived columns cannot use it)")
            return F.lit(epoch_millis(now))
        args = [build(a) for a in n.args]
        if n.name == "abs":
            return F.abs(args[0])
        if n.name == "coalesce":
            return F.coalesce(*args)
        if n.name == "greatest":
            return F.greatest(*args)
        if n.name == "least":
            return F.least(*args)
        raise ValueError(f"unknown function {n.name}()")

    return build(node)
