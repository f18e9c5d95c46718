"""Member sets kept per store file (spark/churn_sets.py) give the findings of reading the whole window.

One evaluator lives through a store that grows cycle by cycle, as the daemon's does; at every step
its churn findings are compared with those of a fresh evaluator reading the whole window. Groups
gain and lose clients at random (each client holding several queues, some dropped), one group
stops reporting; the steps add catch-up, time going backwards, a sample written late, a
compaction, a lost file, and a cycle written in two files (judged from the whole window).
"""

from __future__ import annotations

import logging
import random
from datetime import timedelta
from typing import Any

from daemon.store.writer import ParquetStore
from rules.loader import load_rule_files
from spark import evaluate
from spark.churn_sets import ChurnSets, keeps_sets
from spark.evaluate import Evaluator
from tests.spark.kind_samples import NOW, compact, findings_of, pq_row, rule_yaml

STEP = timedelta(seconds=30)
START = NOW - 30 * STEP
CHURN = {
    "alert": "Churn", "kind": "churn", "table": "process_queue", "member": "client_id", "where": "not dropped",
    "by": ["cluster", "group"], "over": "4m", "above": {"warning": 2, "critical": 4},
    "summary": "{group}: {value} changes, now {members}",
}


def _cycle(rng: random.Random, clients: dict[str, set[str]], index: int) -> list[dict[str, Any]]:
    """One collection cycle of process_queue: every client of every group, each holding 3 queues."""
    ts = START + index * STEP
    rows = []
    for g in range(8):
        group = f"g{g}"
        members = clients.setdefault(group, {"c0@1"})
        if rng.random() < 0.25:
            members.add(f"c{rng.randint(1, 4)}@1")
        if rng.random() < 0.2 and len(members) > 1:
            members.discard(sorted(members)[rng.randint(0, len(members) - 1)])
        if group == "g7" and index >= 20:
            continue  # stopped reporting: stale, then gone from the window
        for client in sorted(members):
            for queue in range(3):
                rows.append(pq_row(ts, group, queue, client, dropped=rng.random() < 0.05))
    return rows


def test_sets_kept_per_file_give_the_findings_of_the_whole_window(spark, tmp_path, caplog):
    path = tmp_path / "rules.yaml"
    path.write_text(rule_yaml(CHURN))
    rules = list(load_rule_files([path]).rules)
    assert all(keeps_sets(r) for r in rules)
    root = tmp_path / "store"
    store = ParquetStore(root)
    rng, clients = random.Random(20261124), {}
    cycles = [_cycle(rng, clients, i) for i in range(40)]
    written = 0

    def write_through(index: int) -> None:
        nonlocal written
        while written <= index:
            store.append("process_queue", cycles[written], START + written * STEP)
            written += 1

    kept = Evaluator(spark, root, prune_min_rows=0, one_partition_max_rows=0)
    steps: list[tuple[int, str | None]] = [
        (10, None), (11, None), (14, None), (15, None), (16, None), (14, "back"), (18, None), (19, "late"),
        (20, None), (21, "compact"), (22, None), (23, "slow"), (24, None), (25, "lost"), (26, None),
        (27, "split"), (28, None), (36, None),
    ]
    fired: set[str] = set()
    for index, event in steps:
        if event == "late":
            # A sample between two cycles, written after both: it counts where it belongs in time.
            late = START + 17.5 * STEP
            store.append("process_queue", [pq_row(late, "g0", 0, "late@1")], late)
        if event == "lost":
            stamp = f"{START + 22 * STEP:%Y%m%dT%H%M%S}"  # summarised at cycle 22
            next((root / "process_queue").glob(f"date=*/hour=*/{stamp}*.parquet")).unlink()
        if event == "compact":
            compact(root, "process_queue", f"{(START + 19 * STEP).hour:02d}")
        if event == "split":
            # The cycle's rows of g1 land in two files: its set is the union, unknown per file.
            store.append("process_queue", [pq_row(START + 27 * STEP, "g1", 9, "extra@1")], START + 27 * STEP)
        if event == "slow":
            write_through(index - 1)
        elif event != "back":
            write_through(index)
        now = START + index * STEP + (timedelta(seconds=5) if event == "slow" else timedelta(0))
        caplog.clear()
        with caplog.at_level(logging.INFO, logger="spark"):
            got = findings_of(kept, rules, now)
        assert not [r for r in caplog.records if r.levelno >= logging.ERROR], (index, event)
        whole_window = [r.getMessage() for r in caplog.records if "judged from the whole window" in r.getMessage()]
        # Until the sample written in two files leaves the 4-minute window (after cycle 35).
        assert bool(whole_window) == (27 <= index <= 35), (index, event, whole_window)
        expected = findings_of(Evaluator(spark, root, prune_min_rows=None, one_partition_max_rows=0), rules, now)
        assert got == expected, f"cycle {index} ({event or 'next cycle'})"
        fired.update(f"{f[2]}:{f[5]}" for f in expected)
    # Both levels and a stale group were compared.
    assert {"warning:False", "critical:False", "None:True"} <= fired


def test_a_rule_that_calls_now_is_judged_from_the_whole_window(tmp_path):
    path = tmp_path / "rules.yaml"
    path.write_text(rule_yaml({**CHURN, "where": "now() - last_pull_ts < 60000"}))
    (rule,) = load_rule_files([path]).rules
    assert not keeps_sets(rule)


def test_a_failed_update_is_retried_after_a_pause(spark, tmp_path, caplog, monkeypatch):
    path = tmp_path / "rules.yaml"
    path.write_text(rule_yaml(CHURN))
    rules = list(load_rule_files([path]).rules)
    root = tmp_path / "store"
    store = ParquetStore(root)
    rng, clients = random.Random(7), {}
    for index in range(14):
        store.append("process_queue", _cycle(rng, clients, index), START + index * STEP)
    monkeypatch.setattr(evaluate, "RETRY_AFTER_CYCLES", 2)
    asked: list[int] = []
    real = ChurnSets.prepare

    def prepare(self, churn, now, limit=None):
        if churn:
            asked.append(round((now - START) / STEP))
            if len(asked) == 1:
                raise OSError("store unreadable")
        return real(self, churn, now, limit)

    monkeypatch.setattr(ChurnSets, "prepare", prepare)
    kept = Evaluator(spark, root, prune_min_rows=0, one_partition_max_rows=0)
    logged: list[str] = []
    for index in (9, 10, 11, 12, 13):
        now = START + index * STEP
        caplog.clear()
        with caplog.at_level(logging.INFO, logger="spark"):
            got = findings_of(kept, rules, now)
        errors = [r.getMessage() for r in caplog.records if r.levelno >= logging.ERROR]
        assert bool(errors) == (index == 9), (index, errors)
        logged += errors
        expected = findings_of(Evaluator(spark, root, prune_min_rows=None, one_partition_max_rows=0), rules, now)
        assert got == expected, f"cycle {index}"
    # Failed at 9, whole windows at 10 and 11, rebuilt at 12 and kept at 13.
    assert asked[0] == 9 and 10 not in asked and 11 not in asked and 12 in asked and asked[-1] == 13
    assert "judging them from the whole window for 3 cycles, then rebuilding it" in logged[0]
