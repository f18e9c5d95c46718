"""Kind `churn`: how many times a set of members changed over `over:` (rebalances, flapping owners).

    - alert: RebalanceChurn
      kind: churn
      table: process_queue
      member: client_id             # the set tracked: clients holding the group's queues
      where: not dropped
      by: [cluster, group]          # one set per group per sample
      over: 10m
      above: {warning: 3, critical: 10}
"""

from __future__ import annotations

from datetime import timedelta
from typing import Literal

from pydantic import Field, model_validator

from rules.durations import Duration
from rules.expressions import Expression, ExpressionField
from rules.kinds.base import Problem, RuleBase
from rules.kinds.threshold import Levels, level_expressions


class ChurnRule(RuleBase):
    """Fires when the set of `member` values of a `by` group changed more than a level within `over`.

    Per sample time (one collection cycle) the members of each `by` group form a set; the value
    is the number of consecutive samples whose set differs from the one before. Template value
    `members`: the newest set, comma separated.
    """

    kind: Literal["churn"] = "churn"
    folded_fields = ("where", "above", "below")  # computed at the fold (spark/kinds/churn.py)
    extra_template_values = ("members",)
    member: str = Field(description="the column whose distinct values form the set, e.g. client_id")
    where: ExpressionField | None = Field(None, description="only rows where this is true are members")
    over: Duration = Field(description="the window the changes are counted over, e.g. 10m")
    above: Levels = Field(description="fires when the number of changes > level")

    @model_validator(mode="after")
    def _window(self) -> ChurnRule:
        if self.over <= timedelta(0):
            raise ValueError("`over` must be a positive duration, e.g. 10m")
        return self

    def window(self) -> timedelta:
        """The `over` window."""
        return self.over

    def expressions(self) -> dict[tuple[str | int, ...], Expression]:
        """where and the levels."""
        found: dict[tuple[str | int, ...], Expression] = {}
        if self.where is not None:
            found[("where",)] = self.where
        found.update(level_expressions(self))
        return found

    def check(self) -> list[Problem]:
        """Base checks plus: `member` is a column and not one of `by`."""
        problems = super().check()
        if self.table_def.column(self.member) is None:
            problems.append((("member",), f"unknown column {self.member!r} in {self.table}"))
        elif self.member in self.group_by:
            problems.append((("member",), "`member` must not be one of `by`: the set would never change"))
        return problems
