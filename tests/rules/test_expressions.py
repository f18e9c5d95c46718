"""The rule expression language: what it accepts, and how it refuses everything else."""

import pytest

from rules.expressions import (
    BinOp,
    BoolOp,
    Call,
    ColumnRef,
    Compare,
    ExpressionError,
    Literal,
    Not,
    columns_used,
    parse,
    parse_expression,
    validate,
)
from rules.tables import CONSUMER_QUEUE, PROCESS_QUEUE


def test_parses_arithmetic_comparisons_and_logic_into_a_tree():
    tree = parse("cached_msg_count > 0 and not (cached_max_offset - cached_min_offset <= max_span * 0.8)")
    assert tree == BoolOp(
        "and",
        (
            Compare((">",), (ColumnRef("cached_msg_count"), Literal(0))),
            Not(
                Compare(
                    ("<=",),
                    (
                        BinOp("-", ColumnRef("cached_max_offset"), ColumnRef("cached_min_offset")),
                        BinOp("*", ColumnRef("max_span"), Literal(0.8)),
                    ),
                )
            ),
        ),
    )


def test_chained_comparison_and_calls():
    tree = parse("0 < coalesce(pull_offset, consumer_offset) <= greatest(broker_offset, 1)")
    assert isinstance(tree, Compare) and tree.ops == ("<", "<=")
    assert columns_used(tree) == {"pull_offset", "consumer_offset", "broker_offset"}
    assert validate(tree, CONSUMER_QUEUE) == []


def test_now_and_strings_and_booleans():
    tree = parse("now() - last_consume_ts > 60000 and group != 'test' and locked == true")
    assert Call("now", ()) in _nodes(tree)
    assert Literal("test") in _nodes(tree) and Literal(True) in _nodes(tree)
    assert validate(tree, PROCESS_QUEUE) == []


def _nodes(tree):
    from rules.expressions import walk

    return list(walk(tree))


def test_derived_column_is_a_column_like_any_other():
    assert validate(parse("span > max_span"), PROCESS_QUEUE) == []
    assert validate(parse("lag - inflight"), CONSUMER_QUEUE) == []


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("__import__('os')", r"__import__\(\) is not allowed"),
        ("__builtins__", "may not start with '_'"),
        ("().__class__", "attribute access"),
        ("group.upper()", "only plain function calls"),
        ("os.system", "attribute access"),
        ("lambda: 1", "lambda is not allowed"),
        ("span ** 2", r"'\*\*' is not allowed"),
        ("span if locked else 0", "'x if c else y' is not allowed"),
        ("group in ['a']", "'in' is not allowed"),
        ("[1, 2]", "lists are not allowed"),
        ("span >", "invalid syntax"),
        ("", "empty"),
    ],
)
def test_refuses_anything_outside_the_whitelist(text, message):
    with pytest.raises(ExpressionError, match=message):
        parse(text)


def test_unknown_column_is_named_with_a_suggestion():
    errors = validate(parse("cached_msg_cont > 0"), PROCESS_QUEUE)
    assert len(errors) == 1
    assert "'cached_msg_cont'" in errors[0] and "did you mean 'cached_msg_count'" in errors[0]


def test_unknown_function_and_wrong_arity():
    errors = validate(parse("max(span, 1) + abs(span, 2) + greatest(span)"), PROCESS_QUEUE)
    assert any("unknown function max()" in e for e in errors)
    assert any("abs() takes 1 argument" in e for e in errors)
    assert any("greatest() takes at least 2" in e for e in errors)


def test_numbers_are_expressions_too():
    assert parse_expression(2000).tree == Literal(2000)
    assert parse_expression("max_span").tree == ColumnRef("max_span")
    with pytest.raises(ExpressionError):
        parse_expression(True)
