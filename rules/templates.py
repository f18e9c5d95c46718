"""The annotation templates of a rule (summary, diagnosis, next_steps): placeholders and conditionals.

A template is text with:
- `{name}`: the value of `name` for the alert's row (a column of the rule's table, a `by` column,
  `value`, `threshold`, `severity`, or a value the kind computes), formatted for reading: 3626
  not 3626.0, "n/a" for a null. `{{` and `}}` are literal braces.
- `{if CONDITION}...{elif CONDITION}...{else}...{end}`: the text of the first branch whose
  condition is true, or of `{else}` (or nothing) when none is. CONDITION is an expression of the
  rule language (rules/expressions.py) over the same names a placeholder may use; a null operand
  makes a comparison or arithmetic null, and a null condition is not true (as in `where:`).
  `now()` is refused: the text is rendered after the evaluation, when "now" has passed. Blocks
  nest; `{elif}` and `{else}` are optional.

So a diagnosis states what the row says, never both cases:

    {if orderly}An orderly consumer retries the message in place ...{else}A concurrent
    consumer sends it back to %RETRY%{group} ...{end}

`parse_template` checks a template once (TemplateError says which tag is wrong and where);
`render_template` fills a parsed one from typed values.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from rules.expressions import (
    BinOp,
    BoolOp,
    Call,
    ColumnRef,
    Compare,
    ExpressionError,
    Literal,
    Neg,
    Node,
    Not,
    calls_now,
    columns_used,
    parse,
)


class TemplateError(ValueError):
    """A template does not parse: an unbalanced block, a bad condition or placeholder."""


@dataclass(frozen=True)
class Text:
    """Literal text (braces already unescaped)."""

    text: str


@dataclass(frozen=True)
class Placeholder:
    """`{name}`."""

    name: str


@dataclass(frozen=True)
class Branch:
    """One `{if}` / `{elif}` condition (None for `{else}`) and the parts it selects."""

    condition: Node | None
    parts: tuple[Part, ...]


@dataclass(frozen=True)
class Conditional:
    """`{if ...}...{end}`: the first branch whose condition is true is rendered."""

    branches: tuple[Branch, ...]


Part = Text | Placeholder | Conditional

_TAG = re.compile(r"\{\{|\}\}|\{([^{}]*)\}|[{}]")
_NOT_END = ("endif", "end if", "fi", "/if", "else if", "elseif", "elsif")
_KEYWORD = re.compile(r"^(if|elif)(?:\s+(.*))?$", re.DOTALL)


def _where(template: str, start: int) -> str:
    """A short quote of the template around a position, for error messages."""
    before = template[max(0, start - 25):start]
    after = template[start:start + 35]
    return f'at "{"…" if start > 25 else ""}{before}{after}{"…" if start + 35 < len(template) else ""}"'


def _condition(text: str, tag: str, template: str, start: int) -> Node:
    if not text.strip():
        raise TemplateError(f"{{{tag}}} needs a condition, e.g. {{{tag} orderly}} ({_where(template, start)})")
    try:
        node = parse(text)
    except ExpressionError as exc:
        raise TemplateError(f"condition of {{{tag} {text}}}: {exc} ({_where(template, start)})") from None
    if calls_now(node):
        raise TemplateError(f"condition of {{{tag} {text}}} may not call now(): the text is rendered after the "
                            f"evaluation; compare a column the rule computes instead ({_where(template, start)})")
    return node


def parse_template(template: str) -> tuple[Part, ...]:
    """The parts of `template`; TemplateError names the first misuse and quotes where it is."""
    # Each open block: (its branches so far, the condition and parts of the branch being read, where it began).
    stack: list[tuple[list[Branch], Node | None, list[Part], int]] = []
    parts: list[Part] = []
    seen_else: list[bool] = []
    pos = 0
    for match in _TAG.finditer(template):
        if match.start() > pos:
            parts.append(Text(template[pos:match.start()]))
        pos = match.end()
        token = match.group(0)
        if token in ("{{", "}}"):
            parts.append(Text(token[0]))
            continue
        if match.group(1) is None:
            raise TemplateError(f"single {token!r}; write a literal brace as {token * 2} ({_where(template, match.start())})")
        tag = match.group(1).strip()
        keyword = _KEYWORD.match(tag)
        if keyword is not None and keyword.group(1) == "if":
            stack.append(([], _condition(keyword.group(2) or "", "if", template, match.start()), parts,
                          match.start()))
            seen_else.append(False)
            parts = []
        elif keyword is not None or tag == "else":
            name = "elif" if keyword is not None else "else"
            if not stack:
                raise TemplateError(f"{{{name}}} without an {{if}} before it ({_where(template, match.start())})")
            if seen_else[-1]:
                raise TemplateError(f"{{{name}}} after {{else}}: {{else}} is the last branch of an {{if}} "
                                    f"({_where(template, match.start())})")
            branches, condition, outer, begun = stack.pop()
            branches.append(Branch(condition, tuple(parts)))
            new = (_condition(keyword.group(2) or "", "elif", template, match.start())
                   if keyword is not None else None)
            seen_else[-1] = keyword is None
            stack.append((branches, new, outer, begun))
            parts = []
        elif tag == "end":
            if not stack:
                raise TemplateError(f"{{end}} without an {{if}} before it ({_where(template, match.start())})")
            branches, condition, outer, _ = stack.pop()
            seen_else.pop()
            branches.append(Branch(condition, tuple(parts)))
            outer.append(Conditional(tuple(branches)))
            parts = outer
        else:
            parts.append(_placeholder(tag, template, match.start()))
    if pos < len(template):
        parts.append(Text(template[pos:]))
    if stack:
        raise TemplateError(f"{{if}} without its {{end}} ({_where(template, stack[-1][3])})")
    return tuple(parts)


def _placeholder(tag: str, template: str, start: int) -> Placeholder:
    if tag in _NOT_END:
        raise TemplateError(f"{{{tag}}}: a block ends with {{end}} ({_where(template, start)})")
    if tag.isidentifier():
        return Placeholder(tag)
    name = re.split(r"[:!.\[]", tag, maxsplit=1)[0]
    if name.isidentifier() and tag[len(name):len(name) + 1] in (":", "!"):
        raise TemplateError(f"placeholder {{{tag}}} may not use a format or conversion: values are already "
                            f"formatted for reading ({_where(template, start)})")
    # `{value.__class__}` or `{x[0]}` would reach into Python objects: plain names only.
    raise TemplateError(f"placeholder {{{tag}}} must be a plain column name, or one of {{if ...}}, "
                        f"{{elif ...}}, {{else}}, {{end}} ({_where(template, start)})")


def names(parts: Sequence[Part]) -> list[str]:
    """Every name the template reads (placeholders and conditions), in order of first use."""
    out: list[str] = []

    def add(name: str) -> None:
        if name not in out:
            out.append(name)

    for part in parts:
        if isinstance(part, Placeholder):
            add(part.name)
        elif isinstance(part, Conditional):
            for branch in part.branches:
                if branch.condition is not None:
                    for name in sorted(columns_used(branch.condition)):
                        add(name)
                for name in names(branch.parts):
                    add(name)
    return out


def _placeholders(parts: Sequence[Part]) -> list[str]:
    out: list[str] = []
    for part in parts:
        if isinstance(part, Placeholder):
            out.append(part.name)
        elif isinstance(part, Conditional):
            for branch in part.branches:
                out.extend(_placeholders(branch.parts))
    return out


def template_names(template: str) -> list[str]:
    """The names a template reads; [] for a template that does not parse (its check reports it)."""
    try:
        return names(parse_template(template))
    except TemplateError:
        return []


def template_problems(template: str, allowed: set[str]) -> list[str]:
    """Why `template` cannot be rendered from the names in `allowed` ([] when it can)."""
    try:
        parts = parse_template(template)
    except TemplateError as exc:
        # Still report the plain placeholders it cannot fill: every error of the field at once.
        plain = dict.fromkeys(m.group(1) for m in _PLAIN.finditer(template) if m.group(1) not in ("else", "end"))
        return [str(exc)] + [f"unknown placeholder {{{name}}}; allowed: value, threshold, severity and the "
                             "table's columns" for name in plain if name not in allowed]
    problems = []
    placeholders = set(_placeholders(parts))
    for name in names(parts):
        if name not in allowed:
            where = f"placeholder {{{name}}}" if name in placeholders else f"name {name!r} in a condition"
            problems.append(f"unknown {where}; allowed: value, threshold, severity and the table's columns")
    return problems


# ---- rendering ---------------------------------------------------------------------------------

def format_number(value: float | int | None) -> str:
    """A number as an operator reads it: 3626 not 3626.0, 0.123, 12.3, 1235 (no exponent)."""
    if value is None:
        return "n/a"
    number = float(value)
    if math.isnan(number) or math.isinf(number):
        return str(number)
    if number.is_integer():
        return str(int(number))
    # Three significant digits, but never drop integer digits: 1234.5 -> 1235, not 1.23e+03.
    if abs(number) >= 100:
        return str(round(number))
    return f"{number:.3g}"


def format_value(value: Any) -> str:
    """A typed value as the text of a placeholder."""
    if value is None:
        return "n/a"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int | float):
        return format_number(value)
    if isinstance(value, datetime):
        return value.strftime("%Y-%m-%d %H:%M:%S")
    return str(value)


def tidy(text: str) -> str:
    """`text` without the doubled spaces a branch left out leaves behind, nor leading/trailing ones."""
    return _SPACES.sub(" ", text).strip()


_PLAIN = re.compile(r"(?<!\{)\{([A-Za-z_][A-Za-z0-9_]*)\}")
_SPACES = re.compile(r"[ \t]{2,}")


def render_template(parts: Sequence[Part], values: Mapping[str, Any]) -> str:
    """The text of parsed `parts` for typed `values`; a name without a value stays `{name}`."""
    out: list[str] = []
    for part in parts:
        if isinstance(part, Text):
            out.append(part.text)
        elif isinstance(part, Placeholder):
            out.append(format_value(values[part.name]) if part.name in values else "{" + part.name + "}")
        else:
            for branch in part.branches:
                if branch.condition is None or evaluate(branch.condition, values) is True:
                    out.append(render_template(branch.parts, values))
                    break
    return "".join(out)


def _null_safe(op: Callable[[Any, Any], Any]) -> Callable[[Any, Any], Any]:
    return lambda a, b: None if a is None or b is None else op(a, b)


def _divide(a: Any, b: Any) -> Any:
    return None if b == 0 else a / b


def _modulo(a: Any, b: Any) -> Any:
    return None if b == 0 else math.fmod(a, b)


_ARITHMETIC = {"+": lambda a, b: a + b, "-": lambda a, b: a - b, "*": lambda a, b: a * b, "/": _divide, "%": _modulo}
_COMPARE = {"<": lambda a, b: a < b, "<=": lambda a, b: a <= b, ">": lambda a, b: a > b,
            ">=": lambda a, b: a >= b, "==": lambda a, b: a == b, "!=": lambda a, b: a != b}


def _epoch_ms(value: Any) -> Any:
    # Timestamps take part in arithmetic and comparisons as epoch milliseconds, as in `where:`.
    return value.timestamp() * 1000 if isinstance(value, datetime) else value


def evaluate(node: Node, values: Mapping[str, Any]) -> Any:
    """The value of a condition for typed `values`, with SQL's nulls (None): what `where:` would give."""
    if isinstance(node, Literal):
        return node.value
    if isinstance(node, ColumnRef):
        return _epoch_ms(values.get(node.name))
    if isinstance(node, Neg):
        operand = evaluate(node.operand, values)
        return None if operand is None else -operand
    if isinstance(node, BinOp):
        return _null_safe(_ARITHMETIC[node.op])(evaluate(node.left, values), evaluate(node.right, values))
    if isinstance(node, Compare):
        operands = [evaluate(o, values) for o in node.operands]
        results = [_null_safe(_COMPARE[op])(a, b) for op, a, b in zip(node.ops, operands, operands[1:], strict=False)]
        return _and(results)
    if isinstance(node, BoolOp):
        results = [evaluate(o, values) for o in node.operands]
        return _and(results) if node.op == "and" else _or(results)
    if isinstance(node, Not):
        operand = evaluate(node.operand, values)
        return None if operand is None else not operand
    if isinstance(node, Call):
        return _call(node, values)
    raise TemplateError(f"cannot evaluate {node!r} in a template condition")


def _and(results: Sequence[Any]) -> Any:
    if any(r is False for r in results):
        return False
    return None if any(r is None for r in results) else True


def _or(results: Sequence[Any]) -> Any:
    if any(r is True for r in results):
        return True
    return None if any(r is None for r in results) else False


def _call(node: Call, values: Mapping[str, Any]) -> Any:
    args = [evaluate(a, values) for a in node.args]
    if node.name == "coalesce":
        return next((a for a in args if a is not None), None)
    if node.name == "abs":
        return None if args[0] is None else abs(args[0])
    present = [a for a in args if a is not None]
    # Spark's greatest/least skip nulls; null only when every argument is null.
    if node.name == "greatest":
        return max(present) if present else None
    if node.name == "least":
        return min(present) if present else None
    raise TemplateError(f"{node.name}() cannot be used in a template condition")
