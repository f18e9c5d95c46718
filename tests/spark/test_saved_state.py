"""Kept state saved beside the store (spark/saved_state.py): a restarted Evaluator loads it and folds
only the cycles committed since, judging as one that never stopped; edits that change no frame's
folding rebuild nothing; a damaged save is rebuilt, and the log says why."""

from __future__ import annotations

import json
import logging
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from daemon.store.writer import ParquetStore
from rules.loader import load_rule_files
from spark.evaluate import Evaluator
from spark.saved_state import state_directory
from tests.spark.kind_samples import NOW, STALE, comparable, cq_row, rule_yaml

pytestmark = pytest.mark.spark

STALL = {"alert": "CommitStalled", "kind": "stall", "table": "consumer_queue", "value": "consumer_offset",
         "while": "lag > 0", "over": "4m", "summary": "{group} frozen {value}s"}
LAG = {"alert": "Lagging", "kind": "threshold", "table": "consumer_queue", "value": "lag",
       "above": {"warning": 100}, "summary": "{group} lag {value}"}
START = NOW - timedelta(minutes=10)
STEP = timedelta(seconds=30)


def _rules(tmp_path: Path, *rules: dict[str, Any]) -> list:
    path = tmp_path / f"rules-{len(list(tmp_path.glob('rules-*')))}.yaml"
    path.write_text(rule_yaml(*rules))
    return list(load_rule_files([path]).rules)


def _commit(store: ParquetStore, n: int) -> datetime:
    """Cycle n: group `stuck` freezes at cycle 6 with messages waiting, `moving` keeps consuming."""
    ts = START + n * STEP
    store.append("consumer_queue", [
        cq_row(ts, "stuck", 0, broker_offset=5000 + n, consumer_offset=100 * min(n, 6)),
        cq_row(ts, "moving", 0, broker_offset=5000 + n, consumer_offset=4900 + n),
    ], ts)
    return ts


def test_a_restarted_evaluator_fires_the_stall_at_the_same_cycle(spark: Any, tmp_path: Path) -> None:
    root = tmp_path / "store"
    store, rules = ParquetStore(root), _rules(tmp_path, STALL, LAG)
    kept = Evaluator(spark, root)
    restarted = Evaluator(spark, root, saved_state=state_directory(root))
    for n in range(4):
        ts = _commit(store, n)
        restarted.evaluate(rules, ts + timedelta(seconds=2), STALE)
    restarted.save()
    restarted = Evaluator(spark, root, saved_state=state_directory(root))  # the daemon started again
    fired: dict[str, int] = {}
    for n in range(4, 20):
        now = _commit(store, n) + timedelta(seconds=2)
        kept_found = kept.evaluate(rules, now, STALE)
        found = restarted.evaluate(rules, now, STALE)
        if n == 4:
            assert restarted.last_cycle == "loaded the saved state; folded 1 cycle(s)", restarted.last_cycle
        assert comparable(found) == comparable(kept_found), f"cycle {n}"
        for who, findings in (("kept", kept_found), ("restarted", found)):
            if who not in fired and any(f.rule == "CommitStalled" and f.severity for f in findings):
                fired[who] = n
    # Frozen from cycle 6, `over` 4 minutes: fires at cycle 14, after the restart, in both.
    assert fired == {"kept": 14, "restarted": 14}


def test_edits_to_texts_and_threshold_levels_rebuild_nothing(spark: Any, tmp_path: Path) -> None:
    root = tmp_path / "store"
    store = ParquetStore(root)
    evaluator = Evaluator(spark, root, saved_state=state_directory(root))
    for n in range(3):
        ts = _commit(store, n)
        evaluator.evaluate(_rules(tmp_path, STALL, LAG), ts + timedelta(seconds=2), STALE)
    evaluator.save()
    edited = _rules(tmp_path, {**STALL, "summary": "{group} stuck for {value}s", "runbook_url": "https://wiki/stall",
                               "first_step": "Look at {group}'s consumer threads."},
                    {**LAG, "above": {"warning": 50, "critical": 4000}, "summary": "lag of {group}: {value}"})
    now = _commit(store, 3) + timedelta(seconds=2)
    restarted = Evaluator(spark, root, saved_state=state_directory(root))
    found = restarted.evaluate(edited, now, STALE)
    assert restarted.last_cycle == "loaded the saved state; folded 1 cycle(s)"
    assert {(f.labels["group"], f.severity) for f in found if f.rule == "Lagging"} == {("stuck", "critical"),
                                                                                      ("moving", "warning")}
    assert evaluator.evaluate(edited, now, STALE) == found  # a reload in the same process: nothing re-folded
    assert evaluator.last_cycle == "folded 1 cycle(s)"
    # A stall's `over:` is folded: its table's frame is folded again from the window, and only that one.
    longer = _rules(tmp_path, {**STALL, "over": "6m"}, LAG)
    evaluator.evaluate(longer, _commit(store, 4) + timedelta(seconds=2), STALE)
    assert evaluator.last_cycle == "folded 1 cycle(s), re-folded 1 frame(s) from 5 cycle(s)"


def _saved_after_three_cycles(spark: Any, tmp_path: Path) -> tuple[Path, ParquetStore, list, Evaluator, Path]:
    """A store of three cycles, and the Evaluator that judged them and saved its state (the save's directory)."""
    root = tmp_path / "store"
    store, rules = ParquetStore(root), _rules(tmp_path, STALL, LAG)
    evaluator = Evaluator(spark, root, saved_state=state_directory(root))
    for n in range(3):
        evaluator.evaluate(rules, _commit(store, n) + timedelta(seconds=2), STALE)
    evaluator.save()
    (saved,) = state_directory(root).iterdir()
    return root, store, rules, evaluator, saved


def test_a_truncated_save_is_rebuilt_and_says_why(spark: Any, tmp_path: Path,
                                                  caplog: pytest.LogCaptureFixture) -> None:
    root, store, rules, evaluator, saved = _saved_after_three_cycles(spark, tmp_path)
    biggest = max(saved.glob("*/*.parquet"), key=lambda p: p.stat().st_size)
    biggest.write_bytes(biggest.read_bytes()[: biggest.stat().st_size // 2])  # a save cut short
    now = _commit(store, 3) + timedelta(seconds=2)
    restarted = Evaluator(spark, root, saved_state=state_directory(root))
    with caplog.at_level(logging.WARNING, logger="spark.saved_state"):
        found = restarted.evaluate(rules, now, STALE)
    assert restarted.last_cycle == "rebuilt (first evaluation) from 4 cycle(s)"
    assert any("is unusable" in r.message and biggest.name in r.message for r in caplog.records), caplog.text
    assert comparable(found) == comparable(Evaluator(spark, root).evaluate(rules, now, STALE))


def test_a_save_from_before_the_manifest_held_schemas_still_loads(spark: Any, tmp_path: Path) -> None:
    root, store, rules, evaluator, saved = _saved_after_three_cycles(spark, tmp_path)
    manifest = json.loads((saved / "manifest.json").read_text())
    assert set(manifest["schemas"]) == set(manifest["frames"])
    del manifest["schemas"]  # as an older rocketwatch wrote it: the frames' schemas are read from their files
    (saved / "manifest.json").write_text(json.dumps(manifest))
    now = _commit(store, 3) + timedelta(seconds=2)
    restarted = Evaluator(spark, root, saved_state=state_directory(root))
    found = restarted.evaluate(rules, now, STALE)
    assert restarted.last_cycle == "loaded the saved state; folded 1 cycle(s)"
    assert comparable(found) == comparable(evaluator.evaluate(rules, now, STALE))
