"""SQL text for the evaluation engine: how names and values are written, and how a statement runs.

Every plan of the engine is SQL text that spark.sql analyses in one call: a DataFrame built
operation by operation costs a JVM round trip and an analysis of the growing plan per operation
(a steady cycle of the built-in pack: ~5,400 round trips and ~730 analyses, 1.3 s of a 2.3 s
cycle at 16 series), one statement costs one.

Nothing a rule file holds reaches SQL as it was written: expressions are parsed into a tree first
(rules/expressions.py) and compiled node by node (spark/expressions.py); names are the catalog's
columns or the engine's own, quoted by `name`; every constant is written by `literal`, which
escapes what could end a string and writes braces as escapes (statements go through pyspark's
formatter, where a brace would start a placeholder). tests/spark/test_sql.py round-trips hostile
strings through Spark's parser.

    text = f"SELECT * FROM {{rows}} WHERE ts >= {ago(timedelta(minutes=5))}"
    frame = run(spark, text, now, rows=new_rows)
"""

from __future__ import annotations

import math
import uuid
from collections.abc import Iterable, Mapping
from datetime import UTC, datetime, timedelta

from pyspark.sql import DataFrame, SparkSession

# The evaluation time in every statement, filled in by `run` (`now` in microseconds). A decimal
# constant, not a BIGINT one: generated code reads a decimal from its references array where it
# would inline a long into its source, so with constant folding off the compiled classes of one
# cycle serve the next (spark/sizing.py GENERATED).
NOW = "timestamp_micros(CAST({now}BD AS BIGINT))"

_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
STRING_MAP = "MAP<STRING, STRING>"


def name(identifier: str) -> str:
    """A column or alias name, quoted."""
    return "`" + identifier.replace("`", "``") + "`"


def names(identifiers: Iterable[str]) -> str:
    """Comma-separated quoted names."""
    return ", ".join(name(i) for i in identifiers)


def literal(value: object) -> str:
    """A SQL constant of the type pyspark's F.lit gives `value` (None, bool, int, float or str)."""
    if value is None:
        return "NULL"
    if isinstance(value, bool):
        return "TRUE" if value else "FALSE"
    if isinstance(value, int):
        # Spark types a bare integer as INT when it fits, else BIGINT: as F.lit does.
        return f"({value})" if value < 0 else str(value)
    if isinstance(value, float):
        if math.isnan(value) or math.isinf(value):
            return f"CAST('{value!r}' AS DOUBLE)".replace("inf", "Infinity").replace("nan", "NaN")
        text = f"{value!r}D".upper()
        return f"({text})" if value < 0 else text
    if isinstance(value, str):
        return _string(value)
    raise TypeError(f"no SQL literal for {value!r}")


def _string(value: str) -> str:
    # Spark's lexer ends a string at an unescaped quote and reads backslash escapes: escaping both
    # leaves nothing that ends the literal early. Braces are written as unicode escapes, which the
    # lexer turns back into braces.
    escaped = (value.replace("\\", "\\\\").replace("'", "\\'").replace("{", "\\u007B").replace("}", "\\u007D")
               .replace("\n", "\\n").replace("\r", "\\r"))
    return f"'{escaped}'"


def ago(delta: timedelta) -> str:
    """The moment `delta` before now."""
    # Subtracted in microseconds, not as `NOW - INTERVAL ...`: generated code evaluates a statement's
    # constants per row (constant folding is off, spark/sizing.py GENERATED), and a timestamp minus
    # an interval goes through java.time (Instant, ZonedDateTime) on every row: 7% of a 160k steady
    # cycle's executor samples in a JFR profile. The microseconds are a literal of the source that
    # does not change with `now`, so the compiled classes still serve every cycle.
    return f"timestamp_micros(CAST({{now}}BD AS BIGINT) - {literal(delta // timedelta(microseconds=1))})"


def string_map(pairs: Iterable[tuple[str, str]]) -> str:
    """A map<string,string> of (key, SQL expression of a string) pairs."""
    args = [f"{literal(key)}, {value}" for key, value in pairs]
    return f"map({', '.join(args)})" if args else f"CAST(map() AS {STRING_MAP})"


def struct(fields: Mapping[str, str]) -> str:
    """named_struct of (field name, SQL expression)."""
    return "named_struct(" + ", ".join(f"{literal(k)}, {v}" for k, v in fields.items()) + ")"


def union_all(selects: Iterable[str]) -> str:
    """Statements joined by UNION ALL, each in parentheses."""
    return "\nUNION ALL\n".join(f"({s})" for s in selects)


def run(spark: SparkSession, text: str, now: datetime | None = None, views: Views | None = None,
        **frames: DataFrame) -> DataFrame:
    """The DataFrame of statement `text`, analysed now: `{key}` in it names frames[key], NOW is `now`.

    With a classic session each frame is a temporary view: `views`' view named by its key (kept
    for later statements, replaced when the key gets another frame), or, without `views`, a view
    of this statement only. With Spark Connect, pyspark sends the frames' plans along instead.
    """
    values: dict[str, object] = {}
    if now is not None:
        values["now"] = (now - _EPOCH) // timedelta(microseconds=1)
    if getattr(spark, "_jsparkSession", None) is None:  # Spark Connect: pyspark's formatter sends the plans
        values.update({key: "{" + key + "}" for key in frames})
        return spark.sql(text.format(**values), **frames)
    once = views is None
    views = views or Views(spark, f"rw_{uuid.uuid4().hex}")
    try:
        return spark.sql(text.format(**values, **{key: views.name(key, frame) for key, frame in frames.items()}))
    finally:
        if once:
            views.drop()


class Views:
    """Temporary views of DataFrames, one per key (`prefix`_key); `drop` removes them."""

    def __init__(self, spark: SparkSession, prefix: str) -> None:
        self.spark = spark
        self.prefix = prefix
        self._frames: dict[str, DataFrame] = {}

    def name(self, key: str, frame: DataFrame) -> str:
        """The view of `frame` under `key`, registered now unless it already shows that frame."""
        view = f"{self.prefix}_{key}"
        if self._frames.get(key) is not frame:
            frame.createOrReplaceTempView(view)
            self._frames[key] = frame
        return name(view)

    def drop(self) -> None:
        """Drop every view."""
        for key in self._frames:
            self.spark.catalog.dropTempView(f"{self.prefix}_{key}")
        self._frames.clear()


def with_ctes(ctes: Mapping[str, str], query: str) -> str:
    """`query` preceded by WITH name AS (definition), ... (none: `query` itself)."""
    if not ctes:
        return query
    return "WITH " + ",\n".join(f"{name(n)} AS ({q})" for n, q in ctes.items()) + "\n" + query
