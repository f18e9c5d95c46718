"""Benchmark: one collection cycle of a 3 brokers x 300 topics x 100 groups x 8 queues cluster.

The simulator runs as operators would point a tool at it (`rocketwatch simulate --scenario scale`,
its own process), and this process runs BENCH_RUNS cycles (default 5) of the real collector over
the wire. Each cycle then scrapes BENCH_NATIVE_BROKERS (default 3: one per broker) native /metrics
endpoints on loopback serving the real 5.3.3 page (bench/native_scrape.py's), after the remoting
part as the daemon does (daemon/collectors/sources.py). Writes bench/results/collect_cycle.{json,md}:
cycle seconds (and the native part's), calls, rows per table and rows per second, with the machine
and its load. Target: a cycle under 5 s on 2 cores.
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

from bench.native_scrape import serve_pages  # noqa: E402
from config.native_metrics import NativeMetricsConfig  # noqa: E402
from daemon.collectors.cluster import collect_cluster  # noqa: E402
from daemon.collectors.native_metrics import collect_native  # noqa: E402
from daemon.collectors.remoting.admin import AdminClient  # noqa: E402
from daemon.collectors.remoting.client import RemotingClient  # noqa: E402
from daemon.common.judged_on import judged_on  # noqa: E402
from rules.loader import BUILTIN_DIR, load_rule_files  # noqa: E402
from tests.fixtures_path import CAPTURE_5  # noqa: E402
from tests.helpers.daemon_proc import free_port  # noqa: E402

TARGET_S = 5.0
RUNS = int(os.environ.get("BENCH_RUNS", "5"))
NATIVE_BROKERS = int(os.environ.get("BENCH_NATIVE_BROKERS", "3"))


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
    runners, urls = await serve_pages(NATIVE_BROKERS, (CAPTURE_5 / "metrics-3.txt").read_text())
    native = NativeMetricsConfig(urls=urls, brokers=False)
    rules = list(load_rule_files([BUILTIN_DIR]).rules)
    try:
        async with RemotingClient(default_timeout=10.0, connect_timeout=5.0) as client:
            admin = AdminClient(client)
            for _ in range(RUNS + 1):  # the first cycle opens the connections: a warm-up, not reported
                t0 = time.perf_counter()
                now = datetime.now(UTC)
                result = await collect_cluster(admin, "DefaultCluster", [namesrv], now,
                                               call_timeout=10.0, concurrency=8)
                t1 = time.perf_counter()
                scraped = await collect_native("DefaultCluster", native, result.rows.get("broker", []), now)
                elapsed = time.perf_counter() - t0
                assert scraped.failed_calls == 0, scraped.summary
                # What the daemon then works out for the status page, on the event loop (daemon/app/after_collection.py).
                t2 = time.perf_counter()
                groups = len(judged_on({**result.rows, **scraped.rows}, rules))
                judged_s = time.perf_counter() - t2
                rows = {table: len(r) for table, r in result.rows.items()}
                for table, r in scraped.rows.items():
                    rows[table] = rows.get(table, 0) + len(r)
                runs.append({"cycle_s": round(elapsed, 3), "native_s": round(elapsed - (t1 - t0), 3),
                             "judged_on_s": round(judged_s, 4), "judged_groups": groups,
                             "calls": result.calls + scraped.calls,
                             "failed_calls": result.failed_calls + scraped.failed_calls,
                             "rows": rows, "rows_per_s": round(sum(rows.values()) / elapsed)})
    finally:
        for runner in runners:
            await runner.cleanup()
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
        "native": f"{NATIVE_BROKERS} native /metrics endpoint(s), the real 5.3.3 page (metrics-3.txt)",
        "target_s": TARGET_S, "cycle_median_s": times[len(times) // 2],
        "native_median_s": sorted(r["native_s"] for r in runs)[len(runs) // 2],
        "judged_on_median_s": sorted(r["judged_on_s"] for r in runs)[len(runs) // 2], "runs": runs,
    }
    out = ROOT / "bench" / "results"
    (out / "collect_cycle.json").write_text(json.dumps(result, indent=2) + "\n")
    last = runs[-1]
    md = (f"# Collection cycle at scale ({result['when']})\n\n{result['cluster']}; then {result['native']}; "
          f"{result['machine']}, load {result['load_average_1m']}.\n\n"
          "| median s | of which native s | target s | calls | rows | rows/s |\n|---|---|---|---|---|---|\n"
          f"| {result['cycle_median_s']} | {result['native_median_s']} | {TARGET_S} | {last['calls']} | "
          f"{sum(last['rows'].values()):,} | "
          f"{last['rows_per_s']:,} |\n\nRows per table: "
          + ", ".join(f"{k} {v:,}" for k, v in sorted(last["rows"].items()))
          + f"\n\nWhat each of the {last['judged_groups']} groups is judged on (status page), worked out after "
          f"the cycle: median {result['judged_on_median_s']} s.\n")
    (out / "collect_cycle.md").write_text(md)
    print(md)


if __name__ == "__main__":
    main()
