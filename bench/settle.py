"""Benchmark: how a daemon's steady cycle settles over its first hour, and where its time goes.

bench/scale.py times a steady cycle after a few warm cycles. This runs one daemon's worth of
steady cycles per size (BENCH_CYCLES, default 120: an hour at 30 s) in a fresh process and JVM,
and writes bench/results/settle.json and settle.md:
- the median cycle of each block of 10, from the first evaluation after the rebuild: HotSpot
  keeps compiling Spark's code for a long time (Catalyst has tens of thousands of methods, each
  compiled once it has run often enough), so the cycle shortens for most of the hour;
- per cycle over the last block, the CPU of the JVM's threads from /proc: the thread that runs
  pyspark's calls (parsing, analysing and planning the statements), the executor tasks (folding
  and judging), the JIT compilers, the garbage collector (the serial collector's pauses stop
  every other thread), and the Python process itself.
Sizes via BENCH_SIZES (default 16,16000,160000). Linux only (/proc).
"""

from __future__ import annotations

import json
import os
import resource
import statistics
import sys
import tempfile
import time
from collections import Counter
from datetime import UTC, datetime
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.scale import (  # noqa: E402
    CYCLES,
    DRIVER_CONF,
    STALE,
    TARGETS_S,
    bench_sizes,
    daemon_cycles,
    in_fresh_process,
    run_header,
    write_results,
)
from bench.store_gen import write_store  # noqa: E402
from rules.loader import load_rule_files  # noqa: E402
from spark.evaluate import Evaluator  # noqa: E402
from spark.session import get_session  # noqa: E402

BLOCK = 10
# Thread names (as /proc shows them, 15 characters) -> the part of the cycle they do.
ROLES = (("Thread-", "driver: parse, analyse, plan"), ("Executor task", "executor tasks"),
         ("C2 CompilerThre", "JIT (C2)"), ("C1 CompilerThre", "JIT (C1)"), ("VM Thread", "garbage collector"))


def jvm_cpu_by_role(pid: int) -> Counter[str]:
    """CPU seconds the JVM's threads have used, by ROLES (the rest as "other"), and the whole process's."""
    tick = os.sysconf("SC_CLK_TCK")
    seconds: Counter[str] = Counter()
    for task in Path(f"/proc/{pid}/task").iterdir():
        try:
            thread = (task / "comm").read_text().strip()
            fields = (task / "stat").read_text().rsplit(")", 1)[1].split()
        except OSError:  # the thread ended meanwhile: its CPU stays in the process's figure
            continue
        role = next((r for prefix, r in ROLES if thread.startswith(prefix)), "other threads")
        seconds[role] += (int(fields[11]) + int(fields[12])) / tick
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    seconds["JVM process"] = (int(fields[11]) + int(fields[12])) / tick
    return seconds


def python_cpu() -> float:
    """CPU seconds this Python process has used."""
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def settle(series: int, cycles: int, spark) -> dict:
    """`cycles` steady cycles at `series` queue series after the rebuild: medians per block, CPU by role."""
    pid = spark.sparkContext._jvm.java.lang.ProcessHandle.current().pid()
    now = datetime.now(UTC).replace(microsecond=0)
    rules = list(load_rule_files(["builtin"]).rules)
    with tempfile.TemporaryDirectory(prefix="rw-bench-") as tmp:
        root = Path(tmp)
        write_store(root, series, CYCLES, now)
        evaluator = Evaluator(spark, root)
        evaluator.evaluate(rules, now, STALE)
        timings: list[float] = []
        cpu: Counter[str] = Counter()
        for i, cycle in enumerate(daemon_cycles(root, series, now, cycles)):
            last_block = i >= cycles - BLOCK
            before, python_before = jvm_cpu_by_role(pid), python_cpu()
            t0 = time.monotonic()
            evaluator.evaluate(rules, cycle, STALE)
            timings.append(time.monotonic() - t0)
            assert evaluator.last_cycle.startswith("folded 1 cycle(s)"), evaluator.last_cycle
            if last_block:
                after = jvm_cpu_by_role(pid)
                cpu.update({role: after[role] - before.get(role, 0.0) for role in after})
                cpu["Python process"] += python_cpu() - python_before
    blocks = [timings[i:i + BLOCK] for i in range(0, len(timings), BLOCK)]
    return {"series": series, "cycles": cycles, "target_s": TARGETS_S.get(series),
            "block_medians_s": [round(statistics.median(b), 3) for b in blocks],
            "first_block_median_s": round(statistics.median(blocks[0]), 3),
            "last_block_median_s": round(statistics.median(blocks[-1]), 3),
            "last_block_cpu_s_per_cycle": {role: round(s / BLOCK, 3) for role, s in cpu.most_common()}}


def _markdown(result: dict) -> str:
    lines = [f"# How a steady cycle settles over a daemon's first hour ({result['when']})", "",
             f"Machine: {result['machine']}, load average {result['load_average_1m']} at the end. Each size "
             "runs in a fresh process: store written, state rebuilt, then one steady cycle after another "
             "(bench/settle.py).", "",
             "| series | cycles | target s | first 10 cycles s (median) | last 10 cycles s (median) | medians of each 10 s |",
             "|---|---|---|---|---|---|"]
    for r in result["sizes"]:
        lines.append(f"| {r['series']:,} | {r['cycles']} | {r['target_s']} | {r['first_block_median_s']} | "
                     f"{r['last_block_median_s']} | {r['block_medians_s']} |")
    roles = [role for _, role in ROLES] + ["other threads", "JVM process", "Python process"]
    lines += ["", "CPU seconds per cycle over the last 10 cycles, by what the threads do (from /proc; the "
              "serial garbage collector's time is a pause of every other thread):", "",
              "| series | " + " | ".join(roles) + " |", "|---|" + "---|" * len(roles)]
    for r in result["sizes"]:
        cpu = r["last_block_cpu_s_per_cycle"]
        lines.append(f"| {r['series']:,} | " + " | ".join(str(cpu.get(role, 0.0)) for role in roles) + " |")
    return "\n".join(lines) + "\n"


def _settle_apart(series: int, cycles: int) -> dict:
    """settle() in a fresh process (a cold JVM, as after a daemon's start), sized as bench/scale.py sizes it."""
    return in_fresh_process(__file__, {"--size": series, "--cycles": cycles})


def _settle_here(argv: list[str]) -> None:
    """The child of _settle_apart: `--size N --cycles C --out FILE`."""
    options = dict(zip(argv[::2], argv[1::2], strict=True))
    series = int(options["--size"])
    spark = get_session("local[2]", DRIVER_CONF.get(series))
    Path(options["--out"]).write_text(json.dumps(settle(series, int(options["--cycles"]), spark)))


def main() -> None:
    """Run every configured size and write bench/results/settle.{json,md}."""
    cycles = int(os.environ.get("BENCH_CYCLES", "120"))
    result = {**run_header(), "sizes": [_settle_apart(n, cycles) for n in bench_sizes("16,16000,160000")],
              "load_average_1m": round(os.getloadavg()[0], 2)}
    write_results("settle", result, _markdown(result))


if __name__ == "__main__":
    if len(sys.argv) > 1:
        _settle_here(sys.argv[1:])
    else:
        main()
