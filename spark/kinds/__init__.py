"""Registry of rule kinds: the YAML `kind:` value -> how Spark computes it, in both paths.

Each kind's module (spark/kinds/<kind>.py) holds, side by side, SQL text builders (spark/sql.py):
- `plan(rule, source, stale_after)`: the reference, findings over the table's full window;
- its kept state, either a `part(rule, prefix, stale_after)` of the frame of its table's series
  (or of its `by` groups) that spark/frames.py folds with the other rules' parts, or a `fold(rule,
  state, new_rows, stale_after)` of a frame of its own (state None: nothing kept yet);
  neither: the kind reads only each series' newest row, kept once per table (spark/frames.py);
- `judge(rule, state, stale_after)`: findings from the kept state (the part's view, the frame, or
  the newest rows), equal to plan's.
`source` and `state` are relations of a FROM clause; NOW is the evaluation time. plan and judge
return rows in the shape of spark.kinds.common.OUTPUT_COLUMNS. rules.kinds.KINDS lists the same
kinds (a test checks).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from datetime import timedelta
from typing import Any

from spark.kinds.absent import judge_absent, part_absent, plan_absent
from spark.kinds.churn import fold_churn, judge_churn, plan_churn
from spark.kinds.common import Part
from spark.kinds.growth import judge_growth, part_growth, plan_growth
from spark.kinds.peer import plan_peer
from spark.kinds.stall import judge_stall, part_stall, plan_stall
from spark.kinds.threshold import judge_threshold, plan_threshold

Plan = Callable[[Any, str, timedelta], str]
MakePart = Callable[[Any, str, timedelta], Part]
Fold = Callable[[Any, str | None, str, timedelta], str]


@dataclass(frozen=True)
class Kind:
    """How one rule kind is computed: over the full window, and from kept state."""

    plan: Plan
    judge: Plan
    part: MakePart | None = None  # state kept in the frame of its series (or groups)
    fold: Fold | None = None  # state kept in a frame of its own

    @property
    def reads_newest(self) -> bool:
        """True for kinds judged from each series' newest row."""
        return self.part is None and self.fold is None


KINDS: dict[str, Kind] = {
    # threshold and peer look at nothing but each series' newest row: peer's plan, fed the kept
    # newest rows instead of the window, is its judge; the threshold rules of one table are judged
    # together (spark/evaluate.py gives judge_threshold all of them): those judging each series
    # alone in one pass.
    "threshold": Kind(plan_threshold, lambda rule, state, stale: judge_threshold([rule], state, stale)),
    "peer": Kind(plan_peer, lambda rule, state, stale: plan_peer(rule, state, stale, True)),
    "growth": Kind(plan_growth, judge_growth, part=part_growth),
    "stall": Kind(plan_stall, judge_stall, part=part_stall),
    "absent": Kind(plan_absent, judge_absent, part=part_absent),
    "churn": Kind(plan_churn, judge_churn, fold=fold_churn),
}

__all__ = ["KINDS", "Fold", "Kind", "MakePart", "Plan"]
