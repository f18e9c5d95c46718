"""Registry of rule-kind plans: the YAML `kind:` value -> function building its DataFrame.

Each plan is `plan(rule, table_window_df, now, stale_after) -> DataFrame` in the shape of
spark.kinds.common.OUTPUT_COLUMNS. rules.kinds.KINDS lists the same kinds (a test checks).
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime, timedelta
from typing import Any

from pyspark.sql import DataFrame

from spark.kinds.absent import plan_absent
from spark.kinds.churn import plan_churn
from spark.kinds.growth import plan_growth
from spark.kinds.peer import plan_peer
from spark.kinds.stall import plan_stall
from spark.kinds.threshold import plan_threshold

Plan = Callable[[Any, DataFrame, datetime, timedelta], DataFrame]

KINDS: dict[str, Plan] = {
    "threshold": plan_threshold,
    "growth": plan_growth,
    "stall": plan_stall,
    "peer": plan_peer,
    "absent": plan_absent,
    "churn": plan_churn,
}

__all__ = ["KINDS", "Plan"]
