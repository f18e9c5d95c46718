"""Kind `absent`: a series (or a target, by `by`) seen in the `over:` window stopped reporting.

    - alert: BrokerStoppedReporting
      kind: absent
      table: broker
      by: [cluster, broker, broker_id]
      over: 30m                      # seen in the last 30 minutes...
      stale_after: 2m                # ...but no sample for 2 minutes -> fires
      critical_after: 10m

    - alert: CollectorTargetUnreachable
      kind: absent
      table: collector_health
      where: ok                      # only successful calls count as samples
      by: [cluster, target]
      over: 1h
"""

from __future__ import annotations

from datetime import timedelta
from typing import Literal

from pydantic import Field, model_validator

from rules.durations import Duration
from rules.expressions import Expression, ExpressionField
from rules.findings import Severity
from rules.kinds.base import RuleBase


class AbsentRule(RuleBase):
    """Fires for each `by` group with a sample in `over` but none within `stale_after`.

    The alert's value is the seconds since the group's newest sample; `threshold` the silence that
    fired it (stale_after, or critical_after). A group never seen in `over` is not reported: it is
    gone, not silent. An absent finding is never no_data: the absence is the finding.
    """

    kind: Literal["absent"] = "absent"
    folded_fields = ("where",)  # computed at the fold (spark/kinds/absent.py)
    where: ExpressionField | None = Field(None, description="only rows where this is true count as samples")
    over: Duration = Field(description="how far back a series must have been seen to be missed")
    severity: Severity = Field("warning", description="severity once silent for stale_after")
    critical_after: Duration | None = Field(None, description="silent at least this long is critical")

    @model_validator(mode="after")
    def _durations(self) -> AbsentRule:
        if self.over <= timedelta(0):
            raise ValueError("`over` must be a positive duration, e.g. 30m")
        if self.critical_after is not None and self.critical_after >= self.over:
            raise ValueError("`critical_after` must be shorter than `over`, or the series is forgotten first")
        return self

    def window(self) -> timedelta:
        """The `over` window."""
        return self.over

    def expressions(self) -> dict[tuple[str | int, ...], Expression]:
        """where."""
        return {("where",): self.where} if self.where is not None else {}
