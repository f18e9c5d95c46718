"""Benchmark: the daemon's resident memory (Python and the Spark JVM) with 160k queue series in its store.

Target (issue 16): under 2 GiB at 160k series. `rocketwatch run` runs as a subprocess with the
production cadence (collect and evaluate every 30 s) and the built-in pack. Its store holds:
- 16,032 queue series collected live over the wire from the simulator (the cluster of
  bench/detection_latency.py, served from this process), and
- 143,968 synthetic queue series (bench/store_gen.py, cluster `bench`): a 15-minute history
  written before the daemon starts, then one cycle every 30 s beside the daemon's own.
The simulator cannot serve 160k series on 2 cores (its ProcessQueues are stepped in Python), so
collection here is that of 16k series; evaluation, retention and compaction see all 160k.

Every 5 s the resident memory of the daemon's Python process and of its JVM is read from /proc;
the figures are the peaks over BENCH_CYCLES evaluations (default 8) after the first two. Run with
`make bench` or directly; writes bench/results/daemon_memory.{json,md}.
"""

from __future__ import annotations

import os
import re
import sys
import tempfile
import threading
import time
from datetime import UTC, datetime
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench.daemon_run import metric, production_config  # noqa: E402
from bench.proc_memory import descendants, rss_mib  # noqa: E402
from bench.report import run_facts, write_results  # noqa: E402
from bench.store_gen import STEP, write_cycle, write_store  # noqa: E402
from daemon.simulator import SimulatorThread  # noqa: E402
from daemon.simulator.scenario_scale import scale  # noqa: E402
from spark.session import DEFAULTS  # noqa: E402
from tests.helpers.daemon_proc import free_port, log_tail, start_daemon, wait_until  # noqa: E402

BROKERS, TOPICS, GROUPS, QUEUES, TOPICS_PER_GROUP = 4, 300, 167, 8, 3
LIVE = BROKERS * QUEUES * GROUPS * TOPICS_PER_GROUP
TOTAL = int(os.environ.get("BENCH_SERIES", "160000"))
SYNTHETIC = TOTAL - LIVE
HISTORY_CYCLES = 31  # 15 minutes at 30 s: the longest window a built-in rule reads
WARM, CYCLES = 2, int(os.environ.get("BENCH_CYCLES", "8"))
TARGET_MIB = 2048


def _evaluations(base: str) -> tuple[float, float]:
    """(count, sum) of the daemon's evaluate duration histogram; zeros while it is starting."""
    count = metric(base, "rocketwatch_evaluate_duration_seconds_count") or 0.0
    return count, metric(base, "rocketwatch_evaluate_duration_seconds_sum") or 0.0


class _SyntheticWriter(threading.Thread):
    """Writes one synthetic cycle every 30 s into the daemon's store, as a collector of 144k series would."""

    def __init__(self, store: Path, step: int) -> None:
        super().__init__(daemon=True, name="synthetic-writer")
        self.store, self.step = store, step
        self.stopped = threading.Event()

    def run(self) -> None:
        while not self.stopped.wait(STEP.total_seconds()):
            write_cycle(self.store, SYNTHETIC, self.step, datetime.now(UTC).replace(microsecond=0))
            self.step += 1


def measure() -> dict:
    """Run the daemon over the 160k-series store; the peak memory of its Python process and its JVM."""
    with tempfile.TemporaryDirectory(prefix="rw-bench-memory-") as tmp:
        return _measure_in(Path(tmp))


def _measure_in(tmp: Path) -> dict:
    store = tmp / "state" / "store"
    started = time.monotonic()
    write_store(store, SYNTHETIC, HISTORY_CYCLES, datetime.now(UTC).replace(microsecond=0))
    history_s = time.monotonic() - started
    scenario = scale(brokers=BROKERS, topics=TOPICS, groups=GROUPS, queues=QUEUES, topics_per_group=TOPICS_PER_GROUP)
    writer = _SyntheticWriter(store, HISTORY_CYCLES)
    peaks = {"python": 0.0, "jvm": 0.0, "total": 0.0}
    with SimulatorThread(scenario) as sim:
        port = free_port()
        base = f"http://127.0.0.1:{port}"
        log = tmp / "daemon.log"
        writer.start()
        proc = start_daemon(production_config(tmp, sim.namesrv_addr, port), log, {})
        try:
            wait_until(lambda: _evaluations(base)[0] >= WARM, 900, f"{WARM} evaluations", log)
            before = _evaluations(base)
            while (now := _evaluations(base))[0] < before[0] + CYCLES:
                if proc.poll() is not None:
                    raise AssertionError(f"the daemon exited with {proc.returncode}\n{log_tail(log, 60)}")
                python = rss_mib([proc.pid])
                total = rss_mib([proc.pid, *descendants(proc.pid)])
                peaks = {"python": max(peaks["python"], python), "jvm": max(peaks["jvm"], total - python),
                         "total": max(peaks["total"], total)}
                time.sleep(5)
            text = log.read_text(errors="replace")
        except AssertionError:
            print(log_tail(log, 80), file=sys.stderr)
            raise
        finally:
            writer.stopped.set()
            proc.terminate()
            proc.wait(60)
    collects = sorted(float(s) for s in re.findall(r"collected cluster DefaultCluster in ([0-9.]+)s", text))
    return {
        "history_written_s": round(history_s, 1),
        "evaluations": int(now[0] - before[0]),
        "evaluate_mean_s": round((now[1] - before[1]) / (now[0] - before[0]), 2),
        "collect_cycle_s": collects[len(collects) // 2] if collects else None,
        "peak_python_rss_mib": round(peaks["python"], 1),
        "peak_jvm_rss_mib": round(peaks["jvm"], 1),
        "peak_total_rss_mib": round(peaks["total"], 1),
    }


def _markdown(result: dict) -> str:
    """The results as the Markdown table written beside the JSON."""
    return (f"# Daemon memory at {TOTAL:,} queue series ({result['when']})\n\n{result['store']}; "
            f"{result['machine']}, load {result['load_average_1m']}; the JVM's options: "
            f"`{result['jvm_options']}`.\n\n"
            "| series | evaluations | evaluate mean s | collect cycle s | peak Python RSS MiB | peak JVM RSS MiB "
            "| peak total MiB | target MiB |\n|---|---|---|---|---|---|---|---|\n"
            f"| {TOTAL:,} | {result['evaluations']} | {result['evaluate_mean_s']} | {result['collect_cycle_s']} | "
            f"{result['peak_python_rss_mib']} | {result['peak_jvm_rss_mib']} | {result['peak_total_rss_mib']} | "
            f"{TARGET_MIB} |\n\nPeaks are sampled every 5 s; the total is the largest sum seen at one instant, "
            "so it can be below the sum of the two peaks.\n")


def main() -> None:
    """Measure once and write bench/results/daemon_memory.{json,md}."""
    figures = measure()
    result = {
        **run_facts(),
        "store": f"{LIVE:,} queue series collected live from the simulator + {SYNTHETIC:,} synthetic, "
                 "collect and evaluate every 30 s",
        "series": TOTAL, "target_mib": TARGET_MIB, "jvm_options": DEFAULTS["spark.driver.extraJavaOptions"],
        **figures,
    }
    write_results("daemon_memory", result, _markdown(result))


if __name__ == "__main__":
    main()
