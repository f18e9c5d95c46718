"""The rule expression language: a safe, small subset of Python syntax, parsed with `ast`.

Allowed: numbers, strings, `true`/`false`, column names, `+ - * / %`, unary minus, comparisons
(`< <= > >= == !=`, chained), `and or not`, and the calls `now()`, `coalesce(a, b, ...)`,
`abs(x)`, `greatest(a, b, ...)`, `least(a, b, ...)`. Nothing is ever evaluated by Python or
pasted into SQL: the tree is compiled to Spark Columns by spark/expressions.py.

Timestamps used in arithmetic or comparisons are epoch milliseconds, so
`now() - last_consume_ts > 60000` reads "no consumption for a minute".

Usage:
    expr = parse_expression("cached_max_offset - cached_min_offset")
    columns_used(expr.tree)                 # frozenset({"cached_max_offset", "cached_min_offset"})
    validate(expr.tree, PROCESS_QUEUE)      # [] or ["unknown column 'spam' ..."]
"""

from __future__ import annotations

import ast
import difflib
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Annotated, Any

from pydantic import PlainSerializer, PlainValidator, WithJsonSchema

from rules.tables import Table


class ExpressionError(ValueError):
    """An expression uses syntax or names outside the rule language."""


@dataclass(frozen=True)
class Literal:
    """A number, string or boolean constant."""

    value: int | float | str | bool


@dataclass(frozen=True)
class ColumnRef:
    """A column of the rule's table (stored or derived)."""

    name: str


@dataclass(frozen=True)
class BinOp:
    """Arithmetic: op is one of + - * / %."""

    op: str
    left: Node
    right: Node


@dataclass(frozen=True)
class Neg:
    """Unary minus."""

    operand: Node


@dataclass(frozen=True)
class Compare:
    """A comparison chain: `a < b <= c` is (a < b) and (b <= c)."""

    ops: tuple[str, ...]
    operands: tuple[Node, ...]


@dataclass(frozen=True)
class BoolOp:
    """`and` / `or` over two or more operands."""

    op: str
    operands: tuple[Node, ...]


@dataclass(frozen=True)
class Not:
    """Logical negation."""

    operand: Node


@dataclass(frozen=True)
class Call:
    """A call of one of FUNCTIONS."""

    name: str
    args: tuple[Node, ...]


Node = Literal | ColumnRef | BinOp | Neg | Compare | BoolOp | Not | Call

# name -> (min args, max args or None for unbounded)
FUNCTIONS: dict[str, tuple[int, int | None]] = {
    "now": (0, 0),
    "abs": (1, 1),
    "coalesce": (1, None),
    "greatest": (2, None),
    "least": (2, None),
}

_BINOPS: dict[type[ast.operator], str] = {
    ast.Add: "+",
    ast.Sub: "-",
    ast.Mult: "*",
    ast.Div: "/",
    ast.Mod: "%",
}
_CMPOPS: dict[type[ast.cmpop], str] = {
    ast.Lt: "<",
    ast.LtE: "<=",
    ast.Gt: ">",
    ast.GtE: ">=",
    ast.Eq: "==",
    ast.NotEq: "!=",
}
# Friendlier words for the constructs people actually try, so the error says what to do instead.
_REFUSED: dict[type[ast.AST], str] = {
    ast.Attribute: "attribute access (a.b) is not allowed; name a column directly",
    ast.Subscript: "indexing (a[b]) is not allowed",
    ast.Lambda: "lambda is not allowed",
    ast.IfExp: "'x if c else y' is not allowed; use coalesce/greatest/least",
    ast.List: "lists are not allowed",
    ast.Tuple: "tuples are not allowed",
    ast.Dict: "dicts are not allowed",
    ast.Pow: "'**' is not allowed; use * repeatedly",
    ast.FloorDiv: "'//' is not allowed; use /",
    ast.In: "'in' is not allowed; use == with or",
    ast.NotIn: "'not in' is not allowed; use != with and",
    ast.Is: "'is' is not allowed; use ==",
    ast.IsNot: "'is not' is not allowed; use !=",
}
_BOOL_NAMES = {"true": True, "false": False, "True": True, "False": False}


def _refuse(node: ast.AST) -> ExpressionError:
    what = _REFUSED.get(type(node), f"{type(node).__name__} is not part of the rule language")
    return ExpressionError(f"{what} (column {getattr(node, 'col_offset', 0) + 1})")


def _convert(node: ast.AST) -> Node:
    if isinstance(node, ast.Constant):
        if isinstance(node.value, bool | int | float | str):
            return Literal(node.value)
        raise ExpressionError(f"constant {node.value!r} is not allowed")
    if isinstance(node, ast.Name):
        if node.id.startswith("_"):
            # No column starts with '_'; this is someone reaching for Python internals.
            raise ExpressionError(f"name {node.id!r} is not allowed: names may not start with '_'")
        if node.id in _BOOL_NAMES:
            return Literal(_BOOL_NAMES[node.id])
        return ColumnRef(node.id)
    if isinstance(node, ast.BinOp):
        op = _BINOPS.get(type(node.op))
        if op is None:
            raise _refuse(node.op) from None
        return BinOp(op, _convert(node.left), _convert(node.right))
    if isinstance(node, ast.UnaryOp):
        if isinstance(node.op, ast.USub):
            return Neg(_convert(node.operand))
        if isinstance(node.op, ast.UAdd):
            return _convert(node.operand)
        if isinstance(node.op, ast.Not):
            return Not(_convert(node.operand))
        raise ExpressionError("'~' is not allowed; use not")
    if isinstance(node, ast.Compare):
        ops = []
        for op in node.ops:
            name = _CMPOPS.get(type(op))
            if name is None:
                raise _refuse(op)
            ops.append(name)
        return Compare(tuple(ops), tuple(_convert(n) for n in [node.left, *node.comparators]))
    if isinstance(node, ast.BoolOp):
        return BoolOp("and" if isinstance(node.op, ast.And) else "or", tuple(_convert(v) for v in node.values))
    if isinstance(node, ast.Call):
        if not isinstance(node.func, ast.Name):
            raise ExpressionError("only plain function calls are allowed: " + ", ".join(f"{f}()" for f in FUNCTIONS))
        if node.func.id.startswith("_"):
            raise ExpressionError(
                f"{node.func.id}() is not allowed; functions: " + ", ".join(f"{f}()" for f in FUNCTIONS)
            )
        if node.keywords:
            raise ExpressionError(f"{node.func.id}() takes no keyword arguments")
        if any(isinstance(a, ast.Starred) for a in node.args):
            raise ExpressionError(f"{node.func.id}() does not take *arguments")
        return Call(node.func.id, tuple(_convert(a) for a in node.args))
    raise _refuse(node)


def parse(text: str) -> Node:
    """Parse an expression into a tree; ExpressionError says what is not allowed and where."""
    if not isinstance(text, str) or not text.strip():
        raise ExpressionError("expression is empty")
    try:
        tree = ast.parse(text.strip(), mode="eval")
    except SyntaxError as exc:
        raise ExpressionError(f"invalid syntax at column {exc.offset or 0}: {text.strip()!r}") from None
    return _convert(tree.body)


def walk(node: Node) -> Iterator[Node]:
    """Every node of the tree, parents before children."""
    yield node
    children: tuple[Node, ...] = ()
    if isinstance(node, BinOp):
        children = (node.left, node.right)
    elif isinstance(node, Neg | Not):
        children = (node.operand,)
    elif isinstance(node, Compare | BoolOp):
        children = node.operands
    elif isinstance(node, Call):
        children = node.args
    for child in children:
        yield from walk(child)


def calls_now(node: Node) -> bool:
    """True when the expression reads the evaluation time (`now()`)."""
    return any(isinstance(n, Call) and n.name == "now" for n in walk(node))


def columns_used(node: Node) -> frozenset[str]:
    """Names of the columns the expression reads."""
    return frozenset(n.name for n in walk(node) if isinstance(n, ColumnRef))


def _suggest(name: str, known: list[str]) -> str:
    close = difflib.get_close_matches(name, known, n=3, cutoff=0.6)
    if close:
        return "did you mean " + " or ".join(repr(c) for c in close) + "?"
    return "known: " + ", ".join(known)


def validate(node: Node, table: Table) -> list[str]:
    """Problems with the names in the tree: unknown columns of `table`, unknown functions, arity."""
    errors: list[str] = []
    known_columns = list(table.column_names)
    for n in walk(node):
        if isinstance(n, ColumnRef) and table.column(n.name) is None:
            errors.append(
                f"unknown column {n.name!r} in table {table.name}; {_suggest(n.name, known_columns)}"
            )
        elif isinstance(n, Call):
            arity = FUNCTIONS.get(n.name)
            if arity is None:
                errors.append(f"unknown function {n.name}(); {_suggest(n.name, list(FUNCTIONS))}")
                continue
            low, high = arity
            if len(n.args) < low or (high is not None and len(n.args) > high):
                want = str(low) if low == high else f"at least {low}"
                errors.append(f"{n.name}() takes {want} argument(s), got {len(n.args)}")
    return errors


@dataclass(frozen=True)
class Expression:
    """An expression as written (kept for messages and serialisation) and its parsed tree."""

    source: str
    tree: Node

    def __str__(self) -> str:
        return self.source


def parse_expression(value: Any) -> Expression:
    """Parse a rule field that holds an expression or a plain number (`2000`, `max_span * 0.8`)."""
    if isinstance(value, Expression):
        return value
    if isinstance(value, bool) or not isinstance(value, int | float | str):
        raise ExpressionError(f"expected a number or an expression; got {value!r}")
    if isinstance(value, int | float):
        return Expression(repr(value), Literal(value))
    return Expression(value.strip(), parse(value))


ExpressionField = Annotated[
    Expression,
    PlainValidator(parse_expression),
    PlainSerializer(lambda e: e.source, return_type=str),
    WithJsonSchema({"type": ["string", "number"], "description": "a rule expression or a number"}),
]
"""A pydantic field type holding a parsed expression."""
