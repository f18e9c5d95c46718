"""Compile a rules expression tree to SQL text: node by node, names from the catalog, constants by
spark.sql.literal; never the rule's text itself.

Timestamps in expressions are epoch milliseconds: a TIMESTAMP column compiles to
`unix_millis(col)` and `now()` to the evaluation time in ms, so `now() - last_consume_ts` is a
duration in ms and `last_pull_ts < now() - 60000` compares like with like.
Arithmetic uses Spark's try_* functions: a division by zero or an overflow in one row gives
null for that row (no finding) instead of failing the whole evaluation under ANSI mode.
"""

from __future__ import annotations

from rules.expressions import BinOp, BoolOp, Call, ColumnRef, Compare, Literal, Neg, Node, Not
from rules.tables import TIMESTAMP, Table
from spark.sql import NOW, literal, name

_ARITH = {"+": "try_add", "-": "try_subtract", "*": "try_multiply", "/": "try_divide", "%": "try_mod"}
_COMPARE = {"<": "<", "<=": "<=", ">": ">", ">=": ">=", "==": "=", "!=": "<>"}
_CALLS = {"abs": "abs", "coalesce": "coalesce", "greatest": "greatest", "least": "least"}


def compile_expression(node: Node, table: Table) -> str:
    """The SQL expression computing `node` on rows of `table`; `now()` reads the statement's NOW."""
    if isinstance(node, Literal):
        return literal(node.value)
    if isinstance(node, ColumnRef):
        column = table.column(node.name)
        if column is None:
            raise ValueError(f"unknown column {node.name!r} in table {table.name}")
        return f"unix_millis({name(node.name)})" if column.type == TIMESTAMP else name(node.name)
    if isinstance(node, BinOp):
        return f"{_ARITH[node.op]}({compile_expression(node.left, table)}, {compile_expression(node.right, table)})"
    if isinstance(node, Neg):
        return f"(- {compile_expression(node.operand, table)})"
    if isinstance(node, Not):
        return f"(NOT {compile_expression(node.operand, table)})"
    if isinstance(node, BoolOp):
        joiner = " AND " if node.op == "and" else " OR "
        return "(" + joiner.join(compile_expression(v, table) for v in node.operands) + ")"
    if isinstance(node, Compare):
        values = [compile_expression(v, table) for v in node.operands]
        pairs = [f"({values[i]} {_COMPARE[op]} {values[i + 1]})" for i, op in enumerate(node.ops)]
        return pairs[0] if len(pairs) == 1 else "(" + " AND ".join(pairs) + ")"
    if isinstance(node, Call):
        if node.name == "now":
            return f"unix_millis({NOW})"
        if node.name not in _CALLS:
            raise ValueError(f"unknown function {node.name}()")
        return f"{_CALLS[node.name]}({', '.join(compile_expression(a, table) for a in node.args)})"
    raise TypeError(f"not an expression node: {node!r}")
