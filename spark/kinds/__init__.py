"""Registry of rule kinds: the YAML `kind:` value -> how Spark computes it, in both paths.

Each kind's module (spark/kinds/<kind>.py) holds, side by side:
- `plan(rule, window, now, stale_after)`: the reference, findings over the table's full window;
- `fold(rule, state, new_rows, now, stale_after, partitions)`: the kept state after the newly
  committed cycles' rows, in at most `partitions` partitions (None: the kind reads only each series' newest row, kept once per table);
- `judge(rule, state, now, stale_after)`: findings from the kept state, equal to plan's.
Every function returns rows in the shape of spark.kinds.common.OUTPUT_COLUMNS (fold returns its
state). rules.kinds.KINDS lists the same kinds (a test checks).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from pyspark.sql import DataFrame

from spark.kinds.absent import fold_absent, judge_absent, plan_absent
from spark.kinds.churn import fold_churn, judge_churn, plan_churn
from spark.kinds.growth import fold_growth, judge_growth, plan_growth
from spark.kinds.peer import plan_peer
from spark.kinds.stall import fold_stall, judge_stall, plan_stall
from spark.kinds.threshold import plan_threshold

Plan = Callable[[Any, DataFrame, datetime, timedelta], DataFrame]
Fold = Callable[[Any, DataFrame | None, DataFrame, datetime, timedelta, int], DataFrame]


@dataclass(frozen=True)
class Kind:
    """How one rule kind is computed: over the full window, and from kept state."""

    plan: Plan
    fold: Fold | None  # None: judged from each series' newest row (CycleState.newest)
    judge: Plan


KINDS: dict[str, Kind] = {
    # threshold and peer look at nothing but each series' newest row: their plans, fed the kept
    # newest rows instead of the window, are their judges.
    "threshold": Kind(plan_threshold, None, plan_threshold),
    "peer": Kind(plan_peer, None, plan_peer),
    "growth": Kind(plan_growth, fold_growth, judge_growth),
    "stall": Kind(plan_stall, fold_stall, judge_stall),
    "absent": Kind(plan_absent, fold_absent, judge_absent),
    "churn": Kind(plan_churn, fold_churn, judge_churn),
}

__all__ = ["KINDS", "Fold", "Kind", "Plan"]
