"""Kind `growth`: how much a value rose over a window, or how fast, compared with levels.

    - alert: DeadLetterQueueGrowing
      kind: growth
      table: topic_queue
      value: max_offset
      where: topic_kind == 'dlq'
      over: 10m
      measure: increase            # or rate (per second)
      by: [cluster, group]
      reduce: sum                  # increases of the group's DLQ queues add up
      above: {warning: 0, critical: 100}
"""

from __future__ import annotations

from datetime import timedelta
from typing import Literal

from pydantic import Field, model_validator

from rules.durations import Duration
from rules.expressions import Expression, ExpressionField
from rules.kinds.base import RuleBase
from rules.kinds.threshold import Levels, level_expressions


class GrowthRule(RuleBase):
    """Fires when a series' increase (or per-second rate) over `over` is beyond a level.

    With `counter: true` (the default) the value is a counter: a drop is a reset (a broker
    restart, a queue recreated) and the samples after it count from zero, as Prometheus'
    increase(). With `counter: false` the value is a gauge (a backlog) and the growth is the
    newest minus the oldest sample of the window, negative when it shrank.
    """

    kind: Literal["growth"] = "growth"
    folded_fields = ("where",)  # computed at the fold (spark/kinds/growth.py)
    value: ExpressionField = Field(description="the number whose growth is measured, per sample")
    where: ExpressionField | None = Field(None, description="only rows where this is true are samples")
    over: Duration = Field(description="the window the growth is measured over, e.g. 10m")
    measure: Literal["increase", "rate"] = Field(
        "increase", description="compare the increase over the window, or the increase per second"
    )
    counter: bool = Field(True, description="true: a drop is a counter reset; false: a gauge, growth = newest - oldest")
    above: Levels | None = Field(None, description="fires when the growth > level")
    below: Levels | None = Field(None, description="fires when the growth < level (e.g. a gauge that shrinks)")

    @model_validator(mode="after")
    def _has_levels(self) -> GrowthRule:
        if self.above is None and self.below is None:
            raise ValueError("give `above` or `below` with a warning and/or critical level")
        if self.over <= timedelta(0):
            raise ValueError("`over` must be a positive duration, e.g. 10m")
        return self

    def window(self) -> timedelta:
        """The `over` window."""
        return self.over

    def expressions(self) -> dict[tuple[str | int, ...], Expression]:
        """value, where and the levels."""
        found: dict[tuple[str | int, ...], Expression] = {("value",): self.value}
        if self.where is not None:
            found[("where",)] = self.where
        found.update(level_expressions(self))
        return found
