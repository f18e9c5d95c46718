"""Stall runs kept between evaluations (spark/stall_runs.py) give the findings of reading the whole window.

One evaluator lives through a store that grows cycle by cycle, as the daemon's does; at every
step its findings are compared with those of a fresh evaluator that judges the stall rules from
the whole window. The store holds random series (values that freeze and move, work that comes
and goes, a moving value that sometimes stops or is missing, samples missing) plus a few written
to reach every path: runs longer than the window, one with a gap where the window starts, and
the events that make the runs start over (time going backwards, a late sample, a file lost) or
must not (a compaction, a cycle written after an evaluation that came later).
"""

from __future__ import annotations

import logging
import random
from datetime import timedelta
from typing import Any

from daemon.store.writer import ParquetStore
from rules.loader import load_rule_files
from spark.evaluate import Evaluator
from spark.stall_runs import keeps_runs
from tests.spark.kind_samples import NOW, compact, cq_row, findings_of, pq_row, rule_yaml

STEP = timedelta(seconds=30)
START = NOW - 30 * STEP
OFFSET_STALL = {
    "alert": "CommitStalled", "kind": "stall", "table": "consumer_queue", "value": "consumer_offset",
    "while": "lag > 0", "where": "topic_kind == 'normal'", "over": "2m", "critical_after": "4m",
}
STUCK_MESSAGE = {
    "alert": "StuckMessage", "kind": "stall", "table": "process_queue", "value": "cached_min_offset",
    "while": "cached_msg_count > 0 and not dropped", "moving": "last_pull_ts", "over": "90s",
    "critical_after": "3m",
}


def _cycle(rng: random.Random, state: dict[str, Any], index: int) -> tuple[list[dict], list[dict]]:
    """One collection cycle of every series: consumer_queue rows and process_queue rows."""
    ts = START + index * STEP
    queues, caches = [], []
    for n in range(12):
        offset = state.setdefault(("offset", n), 100)
        if rng.random() < 0.2:
            offset = state[("offset", n)] = offset + rng.randint(1, 50)
        if rng.random() < 0.92:  # a missed sample now and then
            lag = 0 if rng.random() < 0.08 else rng.randint(1, 500)
            queues.append(cq_row(ts, f"g{n}", n % 4, broker_offset=offset + lag, consumer_offset=offset))
        low = state.setdefault(("low", n), 1000)
        if rng.random() < 0.15:
            low = state[("low", n)] = low + rng.randint(1, 9)
        pull = state.setdefault(("pull", n), ts)
        if rng.random() < 0.3:
            pull = state[("pull", n)] = ts
        if rng.random() < 0.93:
            caches.append(pq_row(ts, f"g{n}", n % 4, "c1@1", cached_msg_count=0 if rng.random() < 0.07 else 5,
                                 cached_min_offset=low, cached_max_offset=low + 40,
                                 last_pull_ts=None if rng.random() < 0.1 else pull))
    # Frozen with work waiting from the first sample: runs longer than any window.
    queues.append(cq_row(ts, "forever", 0, broker_offset=900, consumer_offset=100))
    caches.append(pq_row(ts, "forever", 0, "c1@1", cached_msg_count=5, cached_min_offset=7, last_pull_ts=ts))
    # Frozen cache, and the client stopped pulling at cycle 15: the moving value stands still after.
    caches.append(pq_row(ts, "stopped", 0, "c1@1", cached_msg_count=5, cached_min_offset=7,
                         last_pull_ts=START + min(index, 15) * STEP))
    # Frozen with work waiting, except for one sample of cycle 28: the one written after a later
    # evaluation ("slow" below); without it the run would look 14 minutes long.
    queues.append(cq_row(ts, "moved-once", 0, broker_offset=900, consumer_offset=50 if index == 28 else 100))
    # The same, with no sample for 3 minutes: the window's start falls in the gap at some step.
    if not 14 <= index < 20:
        queues.append(cq_row(ts, "gap", 0, broker_offset=900, consumer_offset=100))
    return queues, caches


def test_runs_kept_between_cycles_give_the_findings_of_the_whole_window(spark, tmp_path, caplog):
    path = tmp_path / "rules.yaml"
    path.write_text(rule_yaml(OFFSET_STALL, STUCK_MESSAGE))
    rules = list(load_rule_files([path]).rules)
    assert all(keeps_runs(r) for r in rules)
    root = tmp_path / "store"
    store = ParquetStore(root)
    rng, state = random.Random(20261123), {}
    cycles = [_cycle(rng, state, i) for i in range(40)]
    written = 0

    def write_through(index: int) -> None:
        nonlocal written
        while written <= index:
            queues, caches = cycles[written]
            store.append("consumer_queue", queues, START + written * STEP)
            store.append("process_queue", caches, START + written * STEP)
            written += 1

    kept = Evaluator(spark, root, prune_min_rows=0, one_partition_max_rows=0)
    # (cycle evaluated, what happens first): one cycle at a time, several at once, time going back.
    steps: list[tuple[int, str | None]] = [
        (12, None), (13, None), (14, None), (17, None), (18, None), (19, None), (20, None), (21, None),
        (19, "back"), (23, None), (24, "late"), (25, None), (26, "compact"), (27, None), (28, "slow"),
        (29, None), (30, "lost"), (31, None), (32, None), (33, "twice"), (34, None),
    ]
    fired: set[str] = set()
    for index, event in steps:
        if event == "late":
            # A sample written after the evaluation of its time breaks a run: the runs read their window again.
            late = START + 22.5 * STEP
            store.append("consumer_queue", [cq_row(late, "forever", 0, broker_offset=900, consumer_offset=99)], late)
        if event == "lost":
            # A file read earlier disappears (recovery moved it aside): its samples no longer count.
            stamp = f"{START + 27 * STEP:%Y%m%dT%H%M%S}"  # read at cycle 27
            for table in ("consumer_queue", "process_queue"):
                next((root / table).glob(f"date=*/hour=*/{stamp}*.parquet")).unlink()
        if event == "twice":
            # A cycle written twice (a collector that retried a write it thought had failed): every
            # series has two rows at one time, which one summary per series cannot say.
            write_through(index)
            store.append("consumer_queue", cycles[index][0], START + index * STEP)
        if event == "compact":
            compact(root, "consumer_queue", f"{(START + 25 * STEP).hour:02d}")
        if event == "slow":
            # Evaluated while the cycle stamped before it is still being collected: that file lands
            # after this evaluation, holding samples older than its `now` (the daemon's usual overlap).
            write_through(index - 1)
        elif event != "back":
            write_through(index)
        now = START + index * STEP + (timedelta(seconds=5) if event == "slow" else timedelta(0))
        caplog.clear()
        with caplog.at_level(logging.INFO, logger="spark"):
            got = findings_of(kept, rules, now)
        # The evaluator falls back to the whole window on any error in the runs: none may happen.
        assert not [r for r in caplog.records if r.levelno >= logging.ERROR], (index, event)
        rebuilt = [r.getMessage() for r in caplog.records if "whole window again" in r.getMessage()]
        # A compaction keeps the runs (same rows, new files); the other events start them over.
        assert bool(rebuilt) == (event in ("back", "late", "lost", "twice")), (index, event, rebuilt)
        whole = Evaluator(spark, root, prune_min_rows=0, one_partition_max_rows=0, stall_runs=False)
        expected = findings_of(whole, rules, now)
        assert got == expected, f"cycle {index} ({event or 'next cycle'})"
        fired.update(f"{f[0]}:{f[2]}" for f in expected)
    # The comparison covered both rules at both levels, and stale series.
    assert {"CommitStalled:critical", "CommitStalled:warning", "StuckMessage:critical"} <= fired
    assert "CommitStalled:None" in fired


def test_a_rule_that_calls_now_is_judged_from_the_whole_window(tmp_path):
    path = tmp_path / "rules.yaml"
    path.write_text(rule_yaml({**STUCK_MESSAGE, "while": "now() - last_consume_ts < 600000"}))
    (rule,) = load_rule_files([path]).rules
    assert not keeps_runs(rule)
