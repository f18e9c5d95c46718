"""Whether an evaluation compiles its operators into Java (whole-stage codegen) or interprets them.

Every cycle's plans hold that cycle's `now` as literals, and Spark writes long and timestamp
literals into the generated source: each cycle's code is new, so Janino compiles it again and the
JIT compiles the new classes again, on the same two cores as the evaluation. On small windows that
costs more than compiled operators save; on big ones compiled operators win by far.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

from pyspark.sql import SparkSession

WHOLE_STAGE = "spark.sql.codegen.wholeStage"

# From this many rows in the evaluation's largest table window, operators are compiled.
# Measured on 2 cores, the built-in pack, cycles alternating between the two settings in one
# process: at 16k queue series (0.5M rows a window) a median of 4.6 s interpreted vs 5.7 s compiled;
# at 160k (5M) 8.8 s vs 8.5 s; at 1.6M (50M) the collect took 16.8-17.7 s interpreted vs 8.7-9.9 s.
WHOLE_STAGE_MIN_ROWS = 2_000_000


@contextmanager
def whole_stage_for(spark: SparkSession, window_rows: int, min_rows: int | None) -> Iterator[bool]:
    """Compile operators for the duration of the block when `window_rows` reaches `min_rows`, else
    interpret them; the session's own setting is restored afterwards. None leaves the session alone."""
    if min_rows is None:
        yield spark.conf.get(WHOLE_STAGE, "true") == "true"
        return
    before = spark.conf.get(WHOLE_STAGE, None)
    compiled = window_rows >= min_rows
    spark.conf.set(WHOLE_STAGE, "true" if compiled else "false")
    try:
        yield compiled
    finally:
        if before is None:
            spark.conf.unset(WHOLE_STAGE)
        else:
            spark.conf.set(WHOLE_STAGE, before)
