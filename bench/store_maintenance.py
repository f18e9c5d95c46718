"""Benchmark: one `maintain` run over a day of 30 s cycles (recovery check, compaction, retention).

Not a test: numbers depend on the machine. Writes bench/results/store_maintenance.json.
Sizes via env: BENCH_HOURS (24), BENCH_QUEUES (rows per cycle, 256), BENCH_CYCLE_S (30).
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

from config.models import MaintenanceConfig  # noqa: E402
from daemon.store.maintenance import maintain_store  # noqa: E402
from daemon.store.writer import ParquetStore  # noqa: E402


def _rows(ts: datetime, queues: int) -> list[dict]:
    return [
        {"ts": ts, "cluster": "bench", "group": f"group-{q % 16}", "topic": f"topic-{q % 8}", "broker": "broker-a",
         "queue_id": q, "broker_offset": 10_000 + q, "consumer_offset": 9_000 + q, "topic_kind": "normal"}
        for q in range(queues)
    ]


def main() -> None:
    """Fill a store, run maintenance twice (work to do, then nothing to do), print and save the figures."""
    hours = int(os.environ.get("BENCH_HOURS", "24"))
    queues = int(os.environ.get("BENCH_QUEUES", "256"))
    step = timedelta(seconds=int(os.environ.get("BENCH_CYCLE_S", "30")))
    now = datetime(2026, 11, 22, 12, 30, tzinfo=UTC)
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        store = ParquetStore(root)
        ts = now - timedelta(hours=hours)
        files = 0
        while ts < now:
            store.append("consumer_queue", _rows(ts, queues), ts)
            files += 1
            ts += step
        before = sum(p.stat().st_size for p in root.rglob("*.parquet"))
        started = time.monotonic()
        report = maintain_store(root, now, MaintenanceConfig())
        first = time.monotonic() - started
        started = time.monotonic()
        maintain_store(root, now, MaintenanceConfig())
        idle = time.monotonic() - started
        result = {
            "hours": hours, "rows_per_cycle": queues, "files_before": files,
            "files_after": len(list(root.rglob("*.parquet"))), "bytes_before": before,
            "bytes_after": report.store_bytes, "hours_compacted": len(report.compacted),
            "first_run_s": round(first, 2), "idle_run_s": round(idle, 3),
            "machine": f"{platform.machine()} {os.cpu_count()} cpu", "python": platform.python_version(),
        }
    print(json.dumps(result, indent=2))
    out = Path(__file__).resolve().parent / "results" / "store_maintenance.json"
    out.write_text(json.dumps(result, indent=2) + "\n")


if __name__ == "__main__":
    main()
