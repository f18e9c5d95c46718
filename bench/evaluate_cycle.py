"""Benchmark: one evaluation cycle of the built-in rules over a store of queue samples.

Run with `make bench`; writes bench/results/evaluate_cycle.json. Not a test: numbers depend on
the machine. Sizes via env: BENCH_GROUPS, BENCH_QUEUES, BENCH_CYCLES.

Two figures: the built-in pack over process_queue samples, and the pack plus one rule of every
kind (growth, stall, peer, absent, churn; some on views) over process_queue + consumer_queue.
"""

from __future__ import annotations

import json
import os
import platform
import sys
import tempfile
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from daemon.store.writer import ParquetStore  # noqa: E402
from rules.loader import load_rule_files  # noqa: E402
from spark.evaluate import Evaluator  # noqa: E402
from spark.session import get_session  # noqa: E402


def _process_queue_rows(ts: datetime, groups: int, queues: int) -> list[dict]:
    rows = []
    for g in range(groups):
        for q in range(queues):
            stuck = g == 0 and q == 3
            rows.append({
                "ts": ts, "cluster": "bench", "group": f"group{g}", "client_id": f"10.0.0.{g % 250}@{g}",
                "topic": f"topic{g % 50}", "broker": f"broker-{q % 3}", "queue_id": q // 3,
                "cached_msg_count": 2 if stuck else 10, "cached_msg_size_mib": 0,
                "cached_min_offset": 0 if stuck else 1000, "cached_max_offset": 3626 if stuck else 1010,
                "commit_offset": 1000, "last_pull_ts": ts, "last_consume_ts": ts, "locked": False,
                "dropped": False, "try_unlock_times": 0, "pull_threshold_for_queue": 1000,
                "pull_threshold_size_mib": 100, "max_span": 2000, "consume_timeout_min": 15,
                "max_reconsume_times": 16, "orderly": False,
            })
    return rows


KIND_RULES = """\
groups:
  - name: bench-kinds
    rules:
      - {alert: BenchGrowth, kind: growth, table: consumer_queue, value: broker_offset, over: 10m,
         by: [cluster, group], reduce: sum, above: {warning: 100000}, summary: s, diagnosis: d, next_steps: n}
      - {alert: BenchStall, kind: stall, table: consumer_queue, value: consumer_offset, while: lag > 0,
         over: 5m, summary: s, diagnosis: d, next_steps: n}
      - {alert: BenchPeer, kind: peer, table: consumer_group, value: lag, peers_by: [cluster, topic],
         member: group, above: {warning: 1000}, summary: s, diagnosis: d, next_steps: n}
      - {alert: BenchAbsent, kind: absent, table: consumer_queue, over: 10m, summary: s, diagnosis: d, next_steps: n}
      - {alert: BenchChurn, kind: churn, table: process_queue, member: client_id, by: [cluster, group],
         over: 10m, above: {warning: 3}, summary: s, diagnosis: d, next_steps: n}
      - {alert: BenchQueueTwice, kind: threshold, table: queue_owner, value: owners, above: {critical: 1},
         summary: s, diagnosis: d, next_steps: n}
"""


def _consumer_queue_rows(ts: datetime, groups: int, queues: int, step: int) -> list[dict]:
    rows = []
    for g in range(groups):
        for q in range(queues):
            frozen = g == 1  # one group's committed offsets never move: a stall and a peer outlier
            rows.append({
                "ts": ts, "cluster": "bench", "group": f"group{g}", "topic": f"topic{g % 50}",
                "broker": f"broker-{q % 3}", "queue_id": q // 3, "broker_offset": 10_000 + 100 * step,
                "consumer_offset": 5_000 if frozen else 10_000 + 100 * step - 5, "topic_kind": "normal",
            })
    return rows


def _timed(evaluator: Evaluator, rules: list, now: datetime) -> tuple[list[float], int]:
    evaluator.evaluate(rules, now, timedelta(minutes=1))  # warm-up
    timings = []
    for _ in range(5):
        t0 = time.monotonic()
        findings = evaluator.evaluate(rules, now, timedelta(minutes=1))
        timings.append(time.monotonic() - t0)
    return timings, len(findings)


def main() -> None:
    """Write a store, warm Spark up, time evaluation cycles, record the figures."""
    groups = int(os.environ.get("BENCH_GROUPS", "100"))
    queues = int(os.environ.get("BENCH_QUEUES", "24"))
    cycles = int(os.environ.get("BENCH_CYCLES", "20"))
    now = datetime.now(UTC).replace(microsecond=0)
    with tempfile.TemporaryDirectory() as tmp:
        store = ParquetStore(tmp)
        started = time.monotonic()
        for i in range(cycles):
            ts = now - timedelta(seconds=30 * (cycles - 1 - i))
            store.append("process_queue", _process_queue_rows(ts, groups, queues), ts)
        write_s = time.monotonic() - started
        rules = list(load_rule_files(["builtin"]).rules)
        t0 = time.monotonic()
        spark = get_session("local[2]")
        session_s = time.monotonic() - t0
        evaluator = Evaluator(spark, tmp)
        timings, findings = _timed(evaluator, rules, now)
        for i in range(cycles):
            ts = now - timedelta(seconds=30 * (cycles - 1 - i))
            store.append("consumer_queue", _consumer_queue_rows(ts, groups, queues, i), ts)
        kinds_dir = Path(tmp) / "kinds-rules"
        kinds_dir.mkdir()
        (kinds_dir / "kinds.yaml").write_text(KIND_RULES)
        all_rules = list(load_rule_files(["builtin", kinds_dir]).rules)
        all_timings, all_findings = _timed(evaluator, all_rules, now)
    result = {
        "when": now.isoformat(), "machine": f"{platform.machine()} {os.cpu_count()} cpu",
        "series": groups * queues, "cycles_in_store": cycles, "rows_in_store": groups * queues * cycles,
        "rules": len(rules), "findings": findings, "store_write_s": round(write_s, 3),
        "session_start_s": round(session_s, 2), "evaluate_s": [round(t, 3) for t in timings],
        "evaluate_median_s": round(sorted(timings)[len(timings) // 2], 3),
        "all_kinds": {
            "rules": len(all_rules), "findings": all_findings, "tables": "process_queue + consumer_queue",
            "evaluate_s": [round(t, 3) for t in all_timings],
            "evaluate_median_s": round(sorted(all_timings)[len(all_timings) // 2], 3),
        },
        "load_average_1m": round(os.getloadavg()[0], 2),
    }
    out = Path(__file__).resolve().parent / "results" / "evaluate_cycle.json"
    out.write_text(json.dumps(result, indent=2) + "\n")
    print(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()
