"""Kind `threshold`: the newest value of each series compared with warning and critical levels.

    - alert: ProcessQueueSpanTooLong
      kind: threshold
      table: process_queue
      value: cached_max_offset - cached_min_offset
      where: cached_msg_count > 0
      above: {warning: 1000, critical: max_span}   # strictly greater fires
      for: 1m
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

from rules.expressions import Expression, ExpressionField
from rules.kinds.base import RuleBase


class Levels(BaseModel):
    """Warning and critical levels: each a number or an expression of the row."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    warning: ExpressionField | None = None
    critical: ExpressionField | None = None

    @model_validator(mode="after")
    def _at_least_one(self) -> Levels:
        if self.warning is None and self.critical is None:
            raise ValueError("give at least one of warning, critical")
        return self


class ThresholdRule(RuleBase):
    """Fires when the value is strictly above (or below) a level; severity is the highest level crossed."""

    kind: Literal["threshold"] = "threshold"
    value: ExpressionField = Field(description="the number compared with the levels")
    where: ExpressionField | None = Field(None, description="only rows where this is true are considered")
    above: Levels | None = Field(None, description="fires when value > level")
    below: Levels | None = Field(None, description="fires when value < level")

    @model_validator(mode="after")
    def _has_levels(self) -> ThresholdRule:
        if self.above is None and self.below is None:
            raise ValueError("give `above` or `below` (or both) with a warning and/or critical level")
        return self

    def expressions(self) -> dict[tuple[str | int, ...], Expression]:
        """value, where and every level, keyed by their field path."""
        found: dict[tuple[str | int, ...], Expression] = {("value",): self.value}
        if self.where is not None:
            found[("where",)] = self.where
        found.update(level_expressions(self))
        return found


def level_expressions(rule: object) -> dict[tuple[str | int, ...], Expression]:
    """The `above`/`below` level expressions of any kind that has them, keyed by field path."""
    found: dict[tuple[str | int, ...], Expression] = {}
    for side in ("above", "below"):
        levels: Levels | None = getattr(rule, side, None)
        for level in ("warning", "critical"):
            expr = getattr(levels, level) if levels else None
            if expr is not None:
                found[(side, level)] = expr
    return found
