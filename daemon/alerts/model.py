"""Alert instances and the state changes the tracker reports; plain dataclasses."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from enum import StrEnum
from typing import Literal

AlertState = Literal["pending", "firing", "resolved"]


class EventKind(StrEnum):
    """What happened to an alert instance in one tracker update."""

    FIRING = "firing"
    RESOLVED = "resolved"
    SEVERITY_CHANGED = "severity_changed"


@dataclass
class AlertInstance:
    """One alert: a rule and one label set, with its current state and latest values."""

    fingerprint: str
    rule: str
    labels: dict[str, str]
    severity: str | None
    value: float | None
    threshold: float | None
    annotations: dict[str, str]
    state: AlertState
    active_at: datetime
    fired_at: datetime | None = None
    resolved_at: datetime | None = None
    last_seen_at: datetime | None = None
    no_data: bool = False

    def describe(self) -> str:
        """`Rule{k="v",...}` for logs."""
        labels = ",".join(f'{k}="{v}"' for k, v in sorted(self.labels.items()))
        return f"{self.rule}{{{labels}}}"


@dataclass(frozen=True)
class AlertEvent:
    """A transition worth telling someone about; `alert` is a snapshot taken at the transition."""

    kind: EventKind
    alert: AlertInstance
    previous_severity: str | None = None
    reason: str = field(default="")

    @property
    def fingerprint(self) -> str:
        """The instance's id."""
        return self.alert.fingerprint

    @property
    def rule(self) -> str:
        """The rule's name."""
        return self.alert.rule

    @property
    def labels(self) -> dict[str, str]:
        """The instance's label set."""
        return self.alert.labels

    @property
    def severity(self) -> str | None:
        """The severity at the transition."""
        return self.alert.severity

    def __str__(self) -> str:
        change = f" {self.previous_severity}->{self.alert.severity}" if self.previous_severity else ""
        why = f" ({self.reason})" if self.reason else ""
        return f"{self.kind.value.upper()}{change} {self.alert.describe()} severity={self.alert.severity}{why}"
