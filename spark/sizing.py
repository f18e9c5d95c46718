"""Every speed setting of the engine in one place: how a cycle runs for its size (partitions,
interpreted or generated code), the session settings it runs under, and how many partitions the
reference path reads a window in. Nothing here changes a finding; the differential tests run small
stores through the big clusters' ways too (tests/spark/test_incremental.py).

- Interpreted operators (no whole-stage codegen): plans over kept state are small, and whole-stage
  code ran slower than generated expressions even once its classes were reused across cycles
  (160k queue series: 5.09 s against 3.76 s per cycle, the two alternating on one store).
- A small steady cycle's expressions are interpreted too (projections, predicates, orderings:
  `codegen.factoryMode`): generating their code costs a fixed share of every cycle even when the
  classes come from Spark's cache, and at 16 series that is more than interpreting a few hundred
  rows. The interpreter's cost grows with the rows instead, so cycles and rebuilds that fold many
  rows generate (GENERATED_MIN_ROWS).
- Generated code holds `now` by reference, not as a literal in its source (GENERATED): NOW is
  written as a decimal constant (spark/sql.py), which Spark's code generator passes to the class
  it compiles through its references array, and constant folding, which would turn it back into
  a timestamp literal inlined into the source, is off. So a steady cycle's source is the same as
  the cycle before's, and Spark's code cache returns the classes compiled then: with `now` a
  literal every generated cycle compiled its classes anew (58 for the built-in pack; Janino, then
  the JIT), ~0.5 s at 16 series. tests/spark/test_compiled_code.py checks that steady cycles
  compile nothing.
- No broadcast joins: each broadcast is a Spark job of its own, and every kept frame is one
  partition (the COALESCE hint of `coalesced`), so a sort-merge join of two of them needs no shuffle.
- No object hash aggregate in generated cycles: a fold's collect_list/collect_set (stall, growth,
  churn) makes Spark pick ObjectHashAggregate, which hashes the first 128 series and then sorts the
  rest anyway (`objectHashAggregate.sortBased.fallbackThreshold`); the plain sort aggregate does
  the same work without the hash map. Steady cycles of the built-in pack, median of runs
  alternating on one store: 160k queue series 13.8 and 13.2 s against 15.7 and 15.1 s (hashing
  every series, a threshold of 1M, took 22.6 s); 16k 6.82 against 6.85 s. A small interpreted
  cycle keeps it: there the extra sort operators cost more planning than they save (16 series
  5.27 against 4.90 s).
- No constraint propagation: a kept frame is a local checkpoint (a LogicalRDD), which carries the
  constraints of the plan that built it; under a UNION ALL with the new rows Spark 4.3's optimizer
  failed on them (`key not found` in UnionBase.rewriteConstraints: the consumer_group view's newest
  rows, every steady cycle of bench/scale.py), and the filters it infers from them are of no use
  on frames of a few partitions.

Imports nothing from pyspark at run time: `rocketwatch diagnose` reads INTERPRETED before its JVM starts.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from typing import TYPE_CHECKING

from spark.store_layout import Commit, rows_by_table

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession

# A cycle whose new rows hold at most this many rows per table keeps every frame in one partition
# (a steady cycle up to ~4M queue series: one collection cycle), so its folds need no shuffle: at
# 1.6M queue series a steady cycle took 22 s in one partition, 34 s spread over four. Bigger
# folds, a rebuild over a big window, are spread over one partition per PARTITION_ROWS rows of the
# biggest table: at 160k queue series a rebuild folds 5M rows per table, and one partition each
# ran the 1 GiB heap out.
FOLD_ONE_PARTITION_MAX_ROWS = 4_000_000
PARTITION_ROWS = 500_000

# A cycle whose biggest table brings fewer rows to fold than this runs Spark's interpreted
# operators; bigger ones run generated code. The generated classes are compiled once and reused by
# every later cycle (`now` is not in their source, GENERATED), but generating their source and
# finding it in the cache is a fixed cost per cycle; the interpreter costs per row. Steady cycles of
# the built-in pack, the two ways alternating on one store (a shared machine): 1k queue series
# 2.14 s interpreted against 2.45 s generated; 5k 1.71 / 1.90 s; 16k 1.98 / 1.61 s; 160k generated
# 3.5-3.8 s (interpreted 6.56 s, quiet). A rebuild goes by the same measure: a small window's rebuild
# generating code compiled classes its interpreted steady cycles never reuse, and a daemon's first
# evaluation of a 2-broker store (3 cycles, 41 rules, a cold JVM on a loaded machine, two runs each)
# took 72-73 s interpreted against 94-104 s generated.
GENERATED_MIN_ROWS = 10_000


# Up to this many rows a table window is read as one partition by the reference path: every plan
# above it then runs without a shuffle (diagnose, rule tests and small clusters read a few hundred rows).
WINDOW_ONE_PARTITION_MAX_ROWS = 1_000_000

CYCLE_SETTINGS = {
    "spark.sql.codegen.wholeStage": "false",
    "spark.sql.autoBroadcastJoinThreshold": "-1",
    "spark.sql.constraintPropagation.enabled": "false",
}
INTERPRETED = {
    "spark.sql.codegen.wholeStage": "false",
    "spark.sql.codegen.factoryMode": "NO_CODEGEN",
    # Interpreted projections share common subexpressions through a cache cleared for every row
    # (SubExprEvaluationRuntime, a Guava cache): at 160k queue series ~6% of the executors' time in
    # a JFR profile, and the steady cycle's executor CPU fell from 8.2 s to 7.6 s without it.
    "spark.sql.subexpressionElimination.enabled": "false",
}
GENERATED = {
    "spark.sql.execution.useObjectHashAggregateExec": "false",
    # Folded, `timestamp_micros(CAST(<now> AS BIGINT))` becomes a timestamp literal, which the
    # generator writes into the source (`1764180000000000L`); unfolded, the decimal constant is
    # a reference object and the source does not change with `now`.
    "spark.sql.optimizer.excludedRules": "org.apache.spark.sql.catalyst.optimizer.ConstantFolding",
}



def biggest_table_rows(commits: Sequence[Commit]) -> int:
    """The most rows any one table holds in `commits`."""
    return max(rows_by_table(commits).values(), default=0)


@dataclass(frozen=True)
class Sizing:
    """Where a cycle changes how it runs, by the rows its new commits bring (the defaults above;
    the differential tests run small stores through the big clusters' ways too)."""

    one_partition_max_rows: int = FOLD_ONE_PARTITION_MAX_ROWS
    partition_rows: int = PARTITION_ROWS
    generated_min_rows: int = GENERATED_MIN_ROWS

    def partitions(self, commits: Sequence[Commit]) -> int:
        """How many partitions each kept frame gets when `commits` are folded (1 for a steady cycle)."""
        biggest = biggest_table_rows(commits)
        return 1 if biggest <= self.one_partition_max_rows else -(-biggest // self.partition_rows)

    def interpreted(self, commits: Sequence[Commit]) -> bool:
        """Whether folding `commits` runs interpreted operators: few rows to fold (a small cluster's cycle or window)."""
        return biggest_table_rows(commits) < self.generated_min_rows


@contextmanager
def cycle_settings(spark: SparkSession, partitions: int = 1, interpreted: bool = True) -> Iterator[None]:
    """CYCLE_SETTINGS, and INTERPRETED or GENERATED, for the duration of the block, and
    `partitions` shuffle partitions when a fold is spread over more than one; the session's own
    settings are restored afterwards."""
    settings = {**CYCLE_SETTINGS, **(INTERPRETED if interpreted else GENERATED)}
    if partitions > 1:
        settings["spark.sql.shuffle.partitions"] = str(partitions)
    before = {name: spark.conf.get(name, None) for name in settings}
    for name, value in settings.items():
        spark.conf.set(name, value)
    try:
        yield
    finally:
        for name, value in before.items():
            if value is None:
                spark.conf.unset(name)
            else:
                spark.conf.set(name, value)


def coalesced(relation: str, partitions: int) -> str:
    """`relation` in `partitions` partitions, without a shuffle: a fold's rows before its aggregate,
    which then needs no exchange in a steady cycle (one partition)."""
    return f"(SELECT /*+ COALESCE({partitions}) */ * FROM {relation})"


def cores(spark: SparkSession) -> int | None:
    """How many tasks Spark runs at once; None with Spark Connect (the server plans as it sees fit)."""
    try:
        return max(1, spark.sparkContext.defaultParallelism)
    except Exception:  # a Spark Connect client has no SparkContext
        return None


def one_task_per_core(spark: SparkSession, plan: DataFrame) -> DataFrame:
    """`plan` computed by as many tasks as Spark has cores, whatever the number of its union's branches."""
    # Each task deserializes the whole stage's binary, every rule's branch included: one task per
    # branch: the cycle's 24 tasks spent 1.1-1.2 s of a 16-series cycle deserializing, and 0.2 s once
    # this stage ran two (6 tasks in all; task metrics, a loaded machine). The folds' own stages,
    # below the checkpoints, keep their partitions.
    tasks = cores(spark)
    return plan if tasks is None else plan.coalesce(tasks)


def dealt_evenly(weights: Mapping[str, int], tasks: int | None) -> list[str]:
    """The keys of `weights` (a union's branches) ordered so that the `tasks` runs of consecutive
    branches one_task_per_core's coalesce makes (the first n // tasks branches to the first task,
    and so on) carry about the same weight: each branch, heaviest first, joins the lightest run."""
    # A branch computes the fold of the frame it reads, if no other branch has yet: in rule order,
    # 160k queue series put every big table's branches in the first task (2.3 s of CPU against the
    # other's 1.4 s per cycle); dealt, 1.8 and 2.0 s, and the cycle ~0.3 s shorter.
    count = tasks or 1
    sizes = [(run + 1) * len(weights) // count - run * len(weights) // count for run in range(count)]
    runs: list[list[str]] = [[] for _ in sizes]
    load = [0] * count
    for key in sorted(weights, key=lambda k: weights[k], reverse=True):
        run = min((r for r in range(count) if len(runs[r]) < sizes[r]), key=lambda r: load[r])
        runs[run].append(key)
        load[run] += weights[key]
    return [key for run in runs for key in run]
