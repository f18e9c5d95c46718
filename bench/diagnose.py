"""Benchmark: `rocketwatch diagnose` on a group with 64 queues and 4 clients, five samples one second apart.

Run with `make bench` or directly; writes bench/results/diagnose.json. Not a test: the figure
depends on the machine and its load (the 1-minute load average is recorded with it). The command
runs as an operator runs it, in its own process, so the total includes Python, the JVM start
(overlapping the samples) and the rule evaluation. Target: under 10 s. The first run on a machine
(no Spark class archive yet, daemon/diagnose/class_archive.py) is reported apart from the others.
"""

from __future__ import annotations

import json
import os
import platform
import subprocess
import sys
import tempfile
import threading
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import IO

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from daemon.simulator import SimulatorThread  # noqa: E402
from daemon.simulator.consumer import ConsumerSettings  # noqa: E402
from daemon.simulator.model import PERSIST_INTERVAL_S, ClusterModel, Producer  # noqa: E402
from daemon.simulator.scenario import Scenario  # noqa: E402

GROUP, PEER, TOPIC = "benchGroup", "benchPeer", "BenchTopic"
QUEUES_PER_BROKER = 32  # two brokers: 64 queues
CLIENTS = 4
RUNS = int(os.environ.get("BENCH_RUNS", "3"))


def scenario() -> Scenario:
    """Two brokers, one 64-queue topic under steady traffic, the benchmarked group (4 clients) and a peer."""
    model = ClusterModel(cluster="DefaultCluster", start=0.0, persist_interval_s=PERSIST_INTERVAL_S)
    model.add_topic(TOPIC, queues_per_broker=QUEUES_PER_BROKER)
    queues = [(mq.broker, mq.queue_id) for mq in model.queues_of(TOPIC)]
    model.add_producer(Producer(TOPIC, queues, 2.0, start=model.start))
    settings = ConsumerSettings(consume_thread_min=4, consume_thread_max=4,
                                consume_from_where="CONSUME_FROM_FIRST_OFFSET")
    model.add_group(GROUP, [TOPIC], settings, clients=CLIENTS)
    model.add_group(PEER, [TOPIC], settings)
    return Scenario("bench-diagnose", "64 queues, 4 clients", model, {})


def _wait_for_archive(directory: Path, timeout: float = 300.0) -> None:
    """Until the warm-up the first run started has put its archive in place."""
    deadline = time.monotonic() + timeout
    while not list(directory.glob("*.jsa")):
        if time.monotonic() > deadline:
            raise RuntimeError(f"no Spark class archive in {directory} after {timeout:.0f} s")
        time.sleep(1.0)


def _read_into(stream: IO[str], output: list[str]) -> None:
    output.append(stream.read())


def main() -> None:
    """Run diagnose RUNS times against the simulated cluster and write the timings."""
    runs = []
    with SimulatorThread(scenario()) as sim, tempfile.TemporaryDirectory(prefix="rw-bench-cache-") as cache:
        time.sleep(2.0)
        # A cache of its own: the first run on a machine has no Spark class archive yet and leaves a
        # warm-up writing one (daemon/diagnose/class_archive.py); it is reported apart, the later runs use it.
        env = {**os.environ, "XDG_CACHE_HOME": cache}
        for i in range(RUNS + 1):
            if i == 1:
                _wait_for_archive(Path(cache) / "rocketwatch")
            start = time.perf_counter()
            proc = subprocess.Popen(
                [sys.executable, "-m", "daemon.cli", "diagnose", "--namesrv", sim.namesrv_addr, "--group", GROUP,
                 "--samples", "5", "--every", "1s", "--format", "json"],
                stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True, cwd=ROOT, env=env,
            )
            output: list[str] = []
            reader = threading.Thread(target=_read_into, args=(proc.stdout, output))
            reader.start()
            returncode = proc.wait(timeout=300)
            command = time.perf_counter() - start  # the shell prompt is back
            reader.join(timeout=60)
            # The pipe ends when the Spark JVM, which shares it, has shut down too (`| jq` waits that long).
            total = time.perf_counter() - start
            verdict = json.loads(output[0])
            runs.append({"total_s": round(total, 3), "command_s": round(command, 3), "exit_code": returncode,
                         "status": verdict["status"],
                         "queues": len(verdict["evidence"]), "phases_s": verdict.get("timings_s"),
                         "class_archive": "none yet (starts the warm-up)" if i == 0 else "used"})
            print(f"diagnose: {command:.1f} s (pipe closed at {total:.1f} s), {verdict['status']}, "
                  f"{len(verdict['evidence'])} queues", flush=True)
    first, runs = runs[0], runs[1:]
    totals = sorted(r["total_s"] for r in runs)
    commands = sorted(r["command_s"] for r in runs)
    out = {
        "when": datetime.now(UTC).isoformat(timespec="seconds"),
        "machine": f"{platform.machine()} {os.cpu_count()} cpu",
        "load_average_1m": round(os.getloadavg()[0], 2),
        "queues": 2 * QUEUES_PER_BROKER, "clients": CLIENTS, "samples": 5, "every_s": 1.0,
        "target_s": 10.0, "first_run_on_the_machine": first, "runs": runs, "total_median_s": totals[len(totals) // 2],
        "command_median_s": commands[len(commands) // 2],
    }
    path = ROOT / "bench" / "results" / "diagnose.json"
    path.write_text(json.dumps(out, indent=2) + "\n")
    print(f"wrote {path}: median {out['command_median_s']} s until the command exits, {out['total_median_s']} s "
          "until its output pipe closes (target 10 s)")


if __name__ == "__main__":
    main()
