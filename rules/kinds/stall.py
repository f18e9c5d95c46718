"""Kind `stall`: a value that should move has not, for the whole of `over`, while work was waiting.

    - alert: ConsumerOffsetStalled
      kind: stall
      table: consumer_queue
      value: consumer_offset          # should move
      while: lag > 0                  # work is waiting (Burrow's STALL); lag 0 is idle, not an alert
      over: 5m                        # frozen this long -> warning
      critical_after: 15m             # frozen this long -> critical

    - alert: StuckMessage
      kind: stall
      table: process_queue
      value: cached_min_offset
      while: cached_msg_count > 0
      moving: last_pull_ts            # ...and the client kept pulling meanwhile (ref §9)
      over: 3m
"""

from __future__ import annotations

from datetime import timedelta
from typing import Literal

from pydantic import Field, model_validator

from rules.durations import Duration
from rules.expressions import Expression, ExpressionField
from rules.findings import Severity
from rules.kinds.base import RuleBase


class StallRule(RuleBase):
    """Fires for a series whose value stayed the same for at least `over` with `while` true on every sample.

    The alert's value is how long (seconds) the value has been frozen with work waiting, as far
    back as the window read; `threshold` is the duration that fired it. A sample where `while` is
    false (no work: idle) ends the stall, so an idle series never fires.
    """

    kind: Literal["stall"] = "stall"
    folded_fields = ("value", "while", "moving", "where")  # computed at the fold (spark/kinds/stall.py)
    value: ExpressionField = Field(description="the number that should move, e.g. consumer_offset")
    while_: ExpressionField | None = Field(
        None, alias="while", description="work is waiting on this sample, e.g. lag > 0; default: always"
    )
    moving: ExpressionField | None = Field(
        None, description="optional: a value that must have changed during the stall (e.g. last_pull_ts)"
    )
    where: ExpressionField | None = Field(None, description="only series whose newest sample matches are watched")
    over: Duration = Field(description="frozen at least this long (with work waiting) fires")
    severity: Severity = Field("warning", description="severity of a stall of at least `over`")
    critical_after: Duration | None = Field(None, description="frozen at least this long is critical")

    @model_validator(mode="after")
    def _durations(self) -> StallRule:
        if self.over <= timedelta(0):
            raise ValueError("`over` must be a positive duration, e.g. 5m")
        if self.critical_after is not None and self.critical_after < self.over:
            raise ValueError("`critical_after` must not be shorter than `over`")
        return self

    def window(self) -> timedelta:
        """The longest stall the rule measures."""
        return max(self.over, self.critical_after or self.over)

    def expressions(self) -> dict[tuple[str | int, ...], Expression]:
        """value, while, moving and where."""
        found: dict[tuple[str | int, ...], Expression] = {("value",): self.value}
        for path, expr in ((("while",), self.while_), (("moving",), self.moving), (("where",), self.where)):
            if expr is not None:
                found[path] = expr
        return found
