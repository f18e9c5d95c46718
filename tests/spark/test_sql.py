"""Constants written into the engine's SQL text (spark/sql.py) reach Spark as the values they were.

A rule file's thresholds, labels, `exclude` patterns and template text become literals of the
statements spark.sql analyses: a quote, a backslash or a brace in them must not end a string early,
start a placeholder of the statement's formatter, or change any other part of the statement.
"""

from datetime import UTC, datetime, timedelta

import pytest

from spark.sizing import cycle_settings
from spark.sql import ago, literal, name, run

HOSTILE = [
    "",
    "plain",
    "it's",
    "'; SELECT 1; --",
    'double "quoted"',
    "back\\slash",
    "ends with a backslash\\",
    "\\'",
    "{now}",
    "{rows}}{{",
    "line\nbreak\rreturn\ttab",
    "\\u0027 not an escape",
    "/* comment */ -- dash",
    "`backtick`",
    "unicode: 消费者组 ✓",
    "$1 ${x} %s",
]


@pytest.mark.parametrize("text", HOSTILE)
def test_a_string_literal_round_trips_through_spark(spark, text):
    row = run(spark, f"SELECT {literal(text)} AS {name('v')}, 1 AS {name('after')}").collect()[0]
    assert (row["v"], row["after"]) == (text, 1)


@pytest.mark.parametrize("value", [0, 7, -7, 2**40, -(2**40), 0.25, -1.5, 1e300, float("inf"), float("-inf"),
                                   True, False, None])
def test_a_number_literal_is_the_value_and_type_pyspark_gives_it(spark, value):
    row = run(spark, f"SELECT {literal(value)} AS {name('v')}").collect()[0]
    assert row["v"] == value
    assert type(row["v"]) is type(value)


def test_nan_stays_nan(spark):
    row = run(spark, f"SELECT isnan({literal(float('nan'))}) AS {name('v')}").collect()[0]
    assert row["v"] is True


def test_a_column_name_with_a_backtick_is_one_name(spark):
    odd = "a`b c"
    row = run(spark, f"SELECT 5 AS {name(odd)}").collect()[0]
    assert row.asDict() == {odd: 5}


@pytest.mark.parametrize("delta", [timedelta(0), timedelta(seconds=90), timedelta(microseconds=1500001),
                                   timedelta(seconds=-30), timedelta(days=40)])
@pytest.mark.parametrize("interpreted", [True, False])
def test_ago_is_the_moment_delta_before_now(spark, delta, interpreted):
    # Generated cycles evaluate it per row (constant folding off), interpreted ones fold it.
    now = datetime(2026, 11, 26, 12, 0, tzinfo=UTC)
    with cycle_settings(spark, 1, interpreted):
        row = run(spark, f"SELECT {ago(delta)} AS {name('v')}", now).collect()[0]
    assert row["v"].replace(tzinfo=UTC) == now - delta
