"""Benchmark: a daemon restart with the kept state saved beside the store (spark/saved_state.py).

Run with `make bench` (or `python bench/restart.py`); writes bench/results/restart.json and
restart.md. Sizes via BENCH_SIZES (queue series, default 16000,160000); BENCH_LARGE=1 adds 1.6M.
Per size, each phase a process of its own (its JVM sized as bench/scale.py sizes it):
1. the daemon before the restart: the whole built-in pack's first evaluation folds the window
   (the rebuild, what every start cost before the state was saved), two steady cycles, then the
   save made at SIGTERM;
2. two collection cycles committed while it was down (a minute at 30 s);
3. the daemon after the restart: the session started (from the class archive written for its JVM
   options, when `python -m daemon.diagnose.warmup --daemon [--options …]` wrote one), then the
   first evaluation, which loads the saved state and folds the two cycles; timed from the session
   being ready, as the daemon logs "spark session ready" before its first evaluation.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.scale import CYCLES, DRIVER_CONF, STALE, bench_sizes, run_header, write_results  # noqa: E402
from bench.store_gen import STEP, write_cycle, write_store  # noqa: E402
from daemon.diagnose.warmup import daemon_session_conf  # noqa: E402
from rules.loader import load_rule_files  # noqa: E402
from spark.evaluate import Evaluator  # noqa: E402
from spark.saved_state import state_directory  # noqa: E402
from spark.session import get_session  # noqa: E402

TARGETS_S = {160_000: 30.0, 1_600_000: 60.0}
DOWN_CYCLES = 2


def _before(root: Path, series: int, now: datetime) -> dict:
    """Phase 1: rebuild, two steady cycles, the save at shutdown."""
    spark = get_session("local[2]", DRIVER_CONF.get(series))
    rules = list(load_rule_files(["builtin"]).rules)
    evaluator = Evaluator(spark, root, saved_state=state_directory(root))
    t0 = time.monotonic()
    evaluator.evaluate(rules, now, STALE)
    rebuild = time.monotonic() - t0
    assert evaluator.last_cycle.startswith("rebuilt"), evaluator.last_cycle
    for step in (1, 2):
        write_cycle(root, series, CYCLES + step - 1, now + STEP * step)
        evaluator.evaluate(rules, now + STEP * step, STALE)
    t0 = time.monotonic()
    evaluator.save()
    saved = time.monotonic() - t0
    size = sum(p.stat().st_size for p in state_directory(root).rglob("*") if p.is_file())
    return {"rebuild_s": round(rebuild, 2), "save_s": round(saved, 2), "saved_mib": round(size / 2**20, 1)}


def _after(root: Path, series: int, now: datetime) -> dict:
    """Phase 3: session start, then the first evaluation from the saved state."""
    t0 = time.monotonic()
    # As the daemon starts it: from the class archive written for its JVM options, when there is one.
    spark = get_session("local[2]", daemon_session_conf("local[2]", DRIVER_CONF.get(series) or {}))
    session = time.monotonic() - t0
    rules = list(load_rule_files(["builtin"]).rules)
    t0 = time.monotonic()
    evaluator = Evaluator(spark, root, saved_state=state_directory(root))
    evaluator.evaluate(rules, now, STALE)
    first = time.monotonic() - t0
    return {"session_start_s": round(session, 2), "first_evaluation_s": round(first, 2),
            "first_cycle": evaluator.last_cycle}


def measure(series: int) -> dict:
    """Both phases for `series` queue series, in processes of their own."""
    now = datetime.now(UTC).replace(microsecond=0)
    with tempfile.TemporaryDirectory(prefix="rw-restart-") as tmp:
        root = Path(tmp) / "store"
        t0 = time.monotonic()
        write_store(root, series, CYCLES, now)
        written = time.monotonic() - t0
        result = {"series": series, "store_write_s": round(written, 1), **_phase("before", root, series, now)}
        up = now + STEP * (2 + DOWN_CYCLES)
        for step in range(3, 3 + DOWN_CYCLES):
            write_cycle(root, series, CYCLES + step - 1, now + STEP * step)
        result.update(_phase("after", root, series, up + timedelta(seconds=15)))
    result["target_s"] = TARGETS_S.get(series)
    return result


def _phase(phase: str, root: Path, series: int, now: datetime) -> dict:
    with tempfile.TemporaryDirectory(prefix="rw-restart-out-") as tmp:
        out = Path(tmp) / "phase.json"
        subprocess.run([sys.executable, __file__, phase, str(root), str(series), now.isoformat(), str(out)],
                       check=True)
        return json.loads(out.read_text())


def _markdown(result: dict) -> str:
    lines = [f"# A restart with the saved evaluation state ({result['when']})", "",
             f"Machine: {result['machine']}; load average (1 min) {result['load_before']} before, "
             f"{result['load_after']} after (a shared machine: figures are inflated by other work). "
             f"{DOWN_CYCLES} cycles were committed while the daemon was down. `first evaluation after start s` "
             "runs from the session being ready (the daemon's \"spark session ready\" line) to the first "
             "evaluation's findings; `rebuild s` is the same first evaluation without a saved state (every "
             "start before).", "",
             "| series | first evaluation after start s | rebuild s | target s | session start s | save s "
             "| saved MiB | first cycle ran |",
             "|---|---|---|---|---|---|---|---|"]
    for r in result["sizes"]:
        lines.append(f"| {r['series']:,} | {r['first_evaluation_s']} | {r['rebuild_s']} | {r['target_s']} | "
                     f"{r['session_start_s']} | {r['save_s']} | {r['saved_mib']} | {r['first_cycle']} |")
    return "\n".join(lines) + "\n"


def main() -> None:
    """Measure every configured size and write bench/results/restart.{json,md}."""
    result = {**run_header(), "load_before": round(os.getloadavg()[0], 2)}
    result["sizes"] = [measure(n) for n in bench_sizes("16000,160000")]
    result["load_after"] = round(os.getloadavg()[0], 2)
    write_results("restart", result, _markdown(result))


if __name__ == "__main__":
    if len(sys.argv) > 1:
        phase, root, series, now, out = sys.argv[1:]
        run = _before if phase == "before" else _after
        Path(out).write_text(json.dumps(run(Path(root), int(series), datetime.fromisoformat(now))))
    else:
        main()
