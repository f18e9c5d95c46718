"""Replay rules over a stored history: the alert timeline the daemon would have produced.

Evaluation is a pure function of (rules, store, now), so stepping `now` through the past and
feeding each step's findings to a fresh in-memory tracker gives exactly the pending, firing,
severity and resolved transitions the daemon would have made with these rules.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from daemon.alerts.db import StateDB
from daemon.alerts.model import AlertInstance, EventKind
from daemon.alerts.tracker import AlertTracker
from rules.findings import RuleTiming


@dataclass(frozen=True)
class Transition:
    """One change of one alert instance at one evaluation time."""

    at: datetime
    state: str  # pending, firing, resolved, inactive (pending cleared before `for`), severity
    rule: str
    labels: dict[str, str]
    severity: str | None
    summary: str
    detail: str = ""
    diagnosis: str = ""
    next_steps: str = ""

    def as_json(self) -> dict[str, Any]:
        """A JSON-ready dict (times as ISO UTC)."""
        return {
            "at": _iso(self.at), "state": self.state, "rule": self.rule, "labels": self.labels,
            "severity": self.severity, "summary": self.summary, "detail": self.detail,
        }

    def as_text(self) -> str:
        """One timeline line an operator reads top to bottom."""
        labels = ",".join(f'{k}="{v}"' for k, v in sorted(self.labels.items()))
        detail = f" ({self.detail})" if self.detail else ""
        line = f"{_iso(self.at)}  {self.state.upper():<9}{self.severity or 'no data':<9}{self.rule}{{{labels}}}{detail}"
        return f"{line}\n    {self.summary}" if self.summary else line


def _iso(moment: datetime) -> str:
    return moment.astimezone(UTC).isoformat().replace("+00:00", "Z")


def steps(start: datetime, end: datetime, step: timedelta) -> Iterator[datetime]:
    """Evaluation times from `start` to `end` inclusive, `step` apart."""
    if step <= timedelta(0):
        raise ValueError(f"step must be positive, got {step}")
    moment = start
    while moment <= end:
        yield moment
        moment += step


def replay(
    evaluate: Any, rules: Sequence[Any], timings: Mapping[str, RuleTiming],
    times: Sequence[datetime], stale_after: timedelta,
) -> list[Transition]:
    """Run `evaluate(rules, now, stale_after)` at each time through an in-memory tracker; the transitions."""
    db = StateDB(":memory:")
    try:
        tracker = AlertTracker(db)
        before: dict[str, AlertInstance] = {}
        timeline: list[Transition] = []
        for now in times:
            events = tracker.update(timings, evaluate(rules, now, stale_after), now)
            after = {a.fingerprint: a for a in tracker.active_alerts()}
            timeline.extend(_transitions(now, before, after, events))
            before = after
        return timeline
    finally:
        db.close()


def _transitions(
    now: datetime, before: Mapping[str, AlertInstance], after: Mapping[str, AlertInstance], events: Sequence[Any]
) -> list[Transition]:
    out: list[Transition] = []

    def add(alert: AlertInstance, state: str, detail: str = "") -> None:
        out.append(Transition(now, state, alert.rule, dict(alert.labels), alert.severity,
                              alert.annotations.get("summary", ""), detail, alert.annotations.get("diagnosis", ""),
                              alert.annotations.get("next_steps", "")))

    fired = {e.fingerprint for e in events if e.kind == EventKind.FIRING}
    for fp, alert in after.items():
        # An instance with `for: 0` goes straight to firing; it was never pending to anyone.
        if fp not in before and fp not in fired:
            add(alert, "pending")
    for event in events:
        if event.kind == EventKind.FIRING:
            add(event.alert, "firing")
        elif event.kind == EventKind.SEVERITY_CHANGED:
            add(event.alert, "severity", f"{event.previous_severity} -> {event.alert.severity}")
        elif event.kind == EventKind.RESOLVED:
            add(event.alert, "resolved", event.reason)
    for fp, alert in before.items():
        if fp not in after and alert.state == "pending":
            add(alert, "inactive", "condition cleared before `for`")
    return out


def store_exists(root: str | Path) -> bool:
    """True when `root` is a directory (a local store); remote URLs are left to Spark to judge."""
    text = str(root)
    if "://" in text and not text.startswith("file://"):
        return True
    return Path(text.removeprefix("file://")).is_dir()
