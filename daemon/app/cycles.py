"""What the daemon remembers of its last cycles: for logs, STATUS=, /metrics and the status page."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime


@dataclass
class CycleStats:
    """What the last cycles did, for logs, STATUS= and (later) /metrics."""

    collect_cycles: int = 0
    evaluate_cycles: int = 0
    rows_collected: int = 0
    last_collect_s: float = 0.0
    last_evaluate_s: float = 0.0
    firing: int = 0
    failed_calls: dict[str, int] = field(default_factory=dict)


@dataclass(frozen=True)
class CycleRecord:
    """One finished cycle as the status page lists it."""

    kind: str  # "collect" or "evaluate"
    target: str  # the cluster collected, or "rules"
    at: datetime
    seconds: float
    rows: int
    failed_calls: int
