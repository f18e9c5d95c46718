"""Registry of rule-kind plans: the YAML `kind:` value -> function building its DataFrame.

Each plan is `plan(rule, table_window_df, now, stale_after) -> DataFrame` in the shape of
spark.kinds.common.OUTPUT_COLUMNS. rules.kinds.KINDS lists the same kinds (a test checks).
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime, timedelta
from typing import Any

from pyspark.sql import DataFrame

from spark.kinds.threshold import plan_threshold

Plan = Callable[[Any, DataFrame, datetime, timedelta], DataFrame]

KINDS: dict[str, Plan] = {"threshold": plan_threshold}

__all__ = ["KINDS", "Plan"]
