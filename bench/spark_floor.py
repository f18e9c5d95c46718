"""Benchmark: the floor under one evaluation cycle on this machine, apart from what the rules compute.

Issues 12 and 16 set per-evaluation targets (16k queue series < 1 s, 160k < 3 s). This measures
what Spark itself costs here, so the targets can be read against the machine:
- an empty Spark job (`spark.range(1).collect()`);
- one rule-shaped branch (a table's newest cycle, ranked per series, filtered against a level):
  built anew, as every cycle builds its plan, and the same DataFrame collected again (its analysis,
  optimisation and generated code reused, so only execution is left);
- BRANCHES such branches in one union, collected again: execution alone of a pack of that many
  scans (the built-in pack plans about 20);
- the built-in pack, as the daemon evaluates it each cycle (after WARM_CYCLES untimed ones): the
  plan step (the kept-state jobs and building the DataFrames), its collect, and the same plan
  collected again;
- DuckDB's reference queries on the same Parquet (bench/scale.py's duckdb_reference).
Sizes via BENCH_SIZES (default 16,16000,160000 queue series); BENCH_RUNS cycles each (default 5).
Run with `make bench` or directly; writes bench/results/spark_floor.{json,md}.
"""

from __future__ import annotations

import os
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from datetime import UTC, datetime
from itertools import islice
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from pyspark.sql import DataFrame, SparkSession, Window  # noqa: E402
from pyspark.sql import functions as F  # noqa: E402

from bench.report import run_facts, write_results  # noqa: E402
from bench.scale import CYCLES, STALE, WARM_CYCLES, daemon_cycles, duckdb_reference  # noqa: E402
from bench.store_gen import STEP, write_store  # noqa: E402
from rules.kinds.base import RuleBase  # noqa: E402
from rules.loader import load_rule_files  # noqa: E402
from rules.tables import TABLES  # noqa: E402
from spark.evaluate import Evaluator, window_starts  # noqa: E402
from spark.session import get_session  # noqa: E402
from spark.store_reader import read_at  # noqa: E402

BRANCHES = 20


def _median_s(action: Callable[[], object], runs: int) -> float:
    """Median wall seconds of `action` over `runs` calls."""
    timings = []
    for _ in range(runs):
        t0 = time.monotonic()
        action()
        timings.append(time.monotonic() - t0)
    return round(statistics.median(timings), 3)


def _branch(spark: SparkSession, root: Path, newest: datetime) -> DataFrame:
    """A threshold rule's shape: process_queue's newest cycle, each series' newest row, over a level."""
    table = TABLES["process_queue"]
    rows = read_at(spark, root, table, [newest], one_partition=True)
    newest_first = Window.partitionBy(*table.key).orderBy(F.col("ts").desc())
    return (rows.withColumn("_rank", F.row_number().over(newest_first)).where(F.col("_rank") == 1)
            .where(F.col("cached_msg_count") > F.col("pull_threshold_for_queue")))


def _pack_cycles(spark: SparkSession, root: Path, series: int, start: datetime, runs: int,
                 rules: list[RuleBase]) -> dict[str, float]:
    """The built-in pack's steady cycles: plan step, collect, and the same plan collected again."""
    evaluator = Evaluator(spark, root)
    evaluator.evaluate(rules, start, STALE)  # the first evaluation builds the kept state
    cycles = daemon_cycles(root, series, start, WARM_CYCLES + runs)
    for cycle in islice(cycles, WARM_CYCLES):
        evaluator.evaluate(rules, cycle, STALE)
    plan_s, collect_s, again_s = [], [], []
    for cycle in cycles:
        t0 = time.monotonic()
        with evaluator.planned(rules, cycle, STALE) as plan:
            t1 = time.monotonic()
            plan.collect()
            t2 = time.monotonic()
            plan.collect()
            t3 = time.monotonic()
        plan_s.append(t1 - t0)
        collect_s.append(t2 - t1)
        again_s.append(t3 - t2)
    median = statistics.median
    return {"pack_plan_s": round(median(plan_s), 3), "pack_collect_s": round(median(collect_s), 3),
            "pack_cycle_s": round(median([p + c for p, c in zip(plan_s, collect_s, strict=True)]), 3),
            "pack_collect_again_s": round(median(again_s), 3)}


def measure(spark: SparkSession, series: int, runs: int) -> dict:
    """Every floor of one store of `series` queue series, 15 minutes at 30 s."""
    now = datetime.now(UTC).replace(microsecond=0)
    rules = list(load_rule_files(["builtin"]).rules)
    with tempfile.TemporaryDirectory(prefix="rw-floor-") as tmp:
        root = Path(tmp)
        write_store(root, series, CYCLES, now)
        branch = _branch(spark, root, now)
        union = branch
        for _ in range(BRANCHES - 1):
            union = union.unionByName(branch)
        branch.collect()
        union.collect()  # warm: the JIT, the generated code, the OS page cache
        result = {
            "series": series,
            "empty_job_s": _median_s(lambda: spark.range(1).collect(), runs),
            "branch_built_each_time_s": _median_s(lambda: _branch(spark, root, now).collect(), runs),
            "branch_collected_again_s": _median_s(branch.collect, runs),
            f"union_of_{BRANCHES}_collected_again_s": _median_s(union.collect, runs),
            **_pack_cycles(spark, root, series, now, runs, rules),
        }
        last = now + STEP * (WARM_CYCLES + runs)
        duck = duckdb_reference(root, runs, window_starts(rules, last, STALE), last)
        result["duckdb_reference_s"] = duck["median_s"] if isinstance(duck, dict) else duck
    return result


def _markdown(result: dict) -> str:
    lines = [f"# The floor under an evaluation cycle ({result['when']})", "",
             f"Machine: {result['machine']}, load average {result['load_average_1m']} at the end. Medians of "
             f"{result['runs']} runs, seconds, warm session (local[2]); the pack after {WARM_CYCLES} untimed cycles.", "",
             f"| series | empty job | one branch, built | one branch, again | {BRANCHES} branches, again "
             "| pack: plan step | pack: collect | pack: cycle | pack: same plan again | DuckDB reference |",
             "|---|---|---|---|---|---|---|---|---|---|"]
    for r in result["sizes"]:
        lines.append(f"| {r['series']:,} | {r['empty_job_s']} | {r['branch_built_each_time_s']} | "
                     f"{r['branch_collected_again_s']} | {r[f'union_of_{BRANCHES}_collected_again_s']} | "
                     f"{r['pack_plan_s']} | {r['pack_collect_s']} | {r['pack_cycle_s']} | "
                     f"{r['pack_collect_again_s']} | {r['duckdb_reference_s']} |")
    lines += ["", "\"again\": the same DataFrame collected a second time, its plan and generated code reused, so "
              "only execution is left (and the plan's broadcasts, the small tables of kept candidates, are reused "
              "with it, so that floor is slightly low). A cycle's plan changes each time (new files, a new `now`), "
              "so it pays for planning as well; even so, the pack's execution alone is \"pack: same plan again\"."]
    return "\n".join(lines) + "\n"


def main() -> None:
    """Measure each size in one warm session; write bench/results/spark_floor.{json,md}."""
    sizes = [int(s) for s in os.environ.get("BENCH_SIZES", "16,16000,160000").split(",") if s]
    runs = int(os.environ.get("BENCH_RUNS", "5"))
    spark = get_session("local[2]")
    result = {"runs": runs, "sizes": [measure(spark, n, runs) for n in sizes]}
    result.update(run_facts())
    write_results("spark_floor", result, _markdown(result))


if __name__ == "__main__":
    main()
