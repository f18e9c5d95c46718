"""Benchmark: one collection cycle of a 3 brokers x 300 topics x 100 groups x 8 queues cluster.

The simulator runs as operators would point a tool at it (`rocketwatch simulate --scenario scale`,
its own process), and this process runs BENCH_RUNS cycles (default 5) of the real collector over
the wire. Writes bench/results/collect_cycle.{json,md}: cycle seconds, calls, rows per table and
rows per second, with the machine and its load. Target: a cycle under 5 s on 2 cores.
"""

from __future__ import annotations

import asyncio
import json
import os
import platform
import re
import subprocess
import sys
import tempfile
import time
from datetime import UTC, datetime
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from daemon.collectors.cluster import collect_cluster  # noqa: E402
from daemon.collectors.remoting.admin import AdminClient  # noqa: E402
from daemon.collectors.remoting.client import RemotingClient  # noqa: E402
from tests.helpers.daemon_proc import free_port  # noqa: E402

TARGET_S = 5.0
RUNS = int(os.environ.get("BENCH_RUNS", "5"))


def _start_simulator(log: Path) -> tuple[subprocess.Popen[bytes], str]:
    port = free_port()
    # Its output goes to a file: an undrained pipe would block the simulator once full.
    proc = subprocess.Popen(
        [sys.executable, "-m", "daemon.cli", "simulate", "--scenario", "scale", "--listen", f"127.0.0.1:{port}"],
        cwd=ROOT, stdout=log.open("wb"), stderr=subprocess.STDOUT,
    )
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline and proc.poll() is None:
        found = re.search(r"scenario scale: namesrv (\S+)", log.read_text(errors="replace"))
        if found:
            return proc, found.group(1)
        time.sleep(0.1)
    proc.kill()
    raise RuntimeError(f"the simulator did not start serving; its output:\n{log.read_text(errors='replace')[-2000:]}")


async def _cycles(namesrv: str) -> list[dict]:
    runs = []
    async with RemotingClient(default_timeout=10.0, connect_timeout=5.0) as client:
        admin = AdminClient(client)
        for _ in range(RUNS + 1):  # the first cycle opens the connections: a warm-up, not reported
            t0 = time.perf_counter()
            result = await collect_cluster(admin, "DefaultCluster", [namesrv], datetime.now(UTC),
                                           call_timeout=10.0, concurrency=8)
            elapsed = time.perf_counter() - t0
            rows = {table: len(r) for table, r in result.rows.items()}
            runs.append({"cycle_s": round(elapsed, 3), "calls": result.calls, "failed_calls": result.failed_calls,
                         "rows": rows, "rows_per_s": round(sum(rows.values()) / elapsed)})
    return runs[1:]


def main() -> None:
    """Run the cycles against a separate simulator process and write the results."""
    log = Path(tempfile.mkstemp(prefix="rw-bench-sim-", suffix=".log")[1])
    proc, namesrv = _start_simulator(log)
    try:
        runs = asyncio.run(_cycles(namesrv))
    finally:
        proc.terminate()
        proc.wait(10)
        log.unlink(missing_ok=True)
    times = sorted(r["cycle_s"] for r in runs)
    result = {
        "when": datetime.now(UTC).isoformat(timespec="seconds"),
        "machine": f"{platform.machine()} {os.cpu_count()} cpu, Python {platform.python_version()}",
        "load_average_1m": round(os.getloadavg()[0], 2),
        "cluster": "3 brokers x 300 topics x 100 groups x 8 queues, 2 clients per group",
        "target_s": TARGET_S, "cycle_median_s": times[len(times) // 2], "runs": runs,
    }
    out = ROOT / "bench" / "results"
    (out / "collect_cycle.json").write_text(json.dumps(result, indent=2) + "\n")
    last = runs[-1]
    md = (f"# Collection cycle at scale ({result['when']})\n\n{result['cluster']}; {result['machine']}, "
          f"load {result['load_average_1m']}.\n\n| median s | target s | calls | rows | rows/s |\n|---|---|---|---|---|\n"
          f"| {result['cycle_median_s']} | {TARGET_S} | {last['calls']} | {sum(last['rows'].values()):,} | "
          f"{last['rows_per_s']:,} |\n\nRows per table: "
          + ", ".join(f"{k} {v:,}" for k, v in sorted(last["rows"].items())) + "\n")
    (out / "collect_cycle.md").write_text(md)
    print(md)


if __name__ == "__main__":
    main()
