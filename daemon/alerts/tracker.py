"""The alert state machine (Prometheus semantics), persisted in SQLite so timers survive restarts.

    new finding            -> pending (active_at = now); fires at once when for_ == 0
    pending, held >= for_  -> firing (FIRING)
    pending, finding gone  -> dropped silently (it never fired)
    firing, finding gone   -> keeps firing until now - last_seen_at >= keep_firing_for, then RESOLVED
    firing, new severity   -> same instance, SEVERITY_CHANGED (an escalation is never a second alert)
    no_data finding        -> instance kept as it is, marked no_data (stale data never resolves)
    rule gone from config  -> its instances resolve (firing) or drop (pending)
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import replace
from datetime import datetime

from daemon.alerts.db import StateDB, from_db_time, to_db_time
from daemon.alerts.model import AlertEvent, AlertInstance, EventKind
from rules.findings import SEVERITY_ORDER, Finding, RuleTiming

_COLUMNS = (
    "fingerprint, rule, labels, severity, value, threshold, annotations, state, no_data, "
    "active_at, fired_at, last_seen_at"
)


class AlertTracker:
    """Turns each evaluation's findings into alert instances and the events worth notifying."""

    def __init__(self, db: StateDB) -> None:
        self.db = db
        # The table is the truth; this dict mirrors it so a cycle does not re-read every row.
        self._alerts: dict[str, AlertInstance] = {
            row["fingerprint"]: _from_row(row) for row in db.query(f"SELECT {_COLUMNS} FROM alerts")
        }

    def update(
        self, evaluated: Mapping[str, RuleTiming], findings: Sequence[Finding], now: datetime,
        only_evaluated: bool = False,
    ) -> list[AlertEvent]:
        """Advance every instance to `now` given the rules evaluated and what they found.

        With `only_evaluated`, instances of rules not in `evaluated` are left as they are instead of
        resolving as removed rules: a partial evaluation (the self rules after a failed cycle).
        """
        events: list[AlertEvent] = []
        changed: dict[str, AlertInstance] = {}
        removed: set[str] = set()
        by_fp = _merge(findings)

        for fp, finding in by_fp.items():
            timing = evaluated.get(finding.rule) or RuleTiming(finding.rule)
            # Work on a copy: if the write below fails, memory still matches the table.
            current = self._alerts.get(fp)
            current = _snapshot(current) if current is not None else None
            if current is None:
                if finding.no_data:
                    continue  # nothing to hold: a stale series never starts an alert
                current = AlertInstance(
                    fingerprint=fp, rule=finding.rule, labels=dict(finding.labels),
                    severity=finding.severity, value=finding.value, threshold=finding.threshold,
                    annotations=dict(finding.annotations), state="pending", active_at=now, last_seen_at=now,
                )
                changed[fp] = current
            elif finding.no_data:
                # Keep the state and values; refresh last_seen_at so keep_firing_for counts from
                # when the data was last trustworthy or stale, not from before the outage.
                if not current.no_data or current.last_seen_at != now:
                    current.no_data = True
                    current.last_seen_at = now
                    changed[fp] = current
                continue
            else:
                previous = current.severity
                current.severity = finding.severity
                current.value, current.threshold = finding.value, finding.threshold
                current.annotations = dict(finding.annotations)
                current.last_seen_at, current.no_data = now, False
                changed[fp] = current
                if current.state == "firing" and previous != finding.severity:
                    events.append(
                        AlertEvent(EventKind.SEVERITY_CHANGED, _snapshot(current), previous_severity=previous,
                                   reason=_direction(previous, finding.severity))
                    )
            if current.state == "pending" and now - current.active_at >= timing.for_:
                current.state, current.fired_at = "firing", now
                events.append(AlertEvent(EventKind.FIRING, _snapshot(current)))

        for fp, alert in self._alerts.items():
            if fp in by_fp:
                continue
            timing = evaluated.get(alert.rule)
            if timing is None and only_evaluated:
                continue
            if timing is None:
                reason = "rule removed"
            elif alert.state == "pending":
                reason = "condition cleared before for"
            elif now - (alert.last_seen_at or alert.active_at) >= timing.keep_firing_for:
                reason = "condition cleared"
            else:
                continue  # keep_firing_for holds it
            removed.add(fp)
            if alert.state == "firing":
                resolved = replace(_snapshot(alert), state="resolved", resolved_at=now)
                events.append(AlertEvent(EventKind.RESOLVED, resolved, reason=reason))

        self._persist(changed, removed)
        for fp in removed:
            del self._alerts[fp]
        self._alerts.update(changed)
        return events

    def active_alerts(self) -> list[AlertInstance]:
        """Current pending and firing instances (copies), oldest first."""
        alerts = sorted(self._alerts.values(), key=lambda a: (a.active_at, a.fingerprint))
        return [_snapshot(a) for a in alerts]

    def _persist(self, changed: Mapping[str, AlertInstance], removed: set[str]) -> None:
        if not changed and not removed:
            return
        with self.db.transaction() as conn:
            conn.executemany("DELETE FROM alerts WHERE fingerprint = ?", [(fp,) for fp in removed])
            conn.executemany(
                f"INSERT OR REPLACE INTO alerts ({_COLUMNS}) VALUES (?,?,?,?,?,?,?,?,?,?,?,?)",
                [_to_row(a) for fp, a in changed.items() if fp not in removed],
            )


def _merge(findings: Sequence[Finding]) -> dict[str, Finding]:
    # One instance per fingerprint: a real finding beats a no_data one, then the higher severity,
    # so two rows reduced to the same label set never flap between them.
    merged: dict[str, Finding] = {}
    for f in findings:
        old = merged.get(f.fingerprint)
        if old is None or _rank(f) > _rank(old):
            merged[f.fingerprint] = f
    return merged


def _rank(f: Finding) -> tuple[int, int]:
    return (0 if f.no_data else 1, SEVERITY_ORDER.get(f.severity or "", 0))


def _direction(before: str | None, after: str | None) -> str:
    up = SEVERITY_ORDER.get(after or "", 0) > SEVERITY_ORDER.get(before or "", 0)
    return "escalated" if up else "de-escalated"


def _snapshot(alert: AlertInstance) -> AlertInstance:
    return replace(alert, labels=dict(alert.labels), annotations=dict(alert.annotations))


def _to_row(a: AlertInstance) -> tuple:
    return (
        a.fingerprint, a.rule, json.dumps(a.labels, sort_keys=True), a.severity, a.value, a.threshold,
        json.dumps(a.annotations, sort_keys=True), a.state, int(a.no_data), to_db_time(a.active_at),
        to_db_time(a.fired_at) if a.fired_at else None, to_db_time(a.last_seen_at or a.active_at),
    )


def _from_row(row) -> AlertInstance:
    return AlertInstance(
        fingerprint=row["fingerprint"], rule=row["rule"], labels=json.loads(row["labels"]),
        severity=row["severity"], value=row["value"], threshold=row["threshold"],
        annotations=json.loads(row["annotations"]), state=row["state"], no_data=bool(row["no_data"]),
        active_at=from_db_time(row["active_at"]), fired_at=from_db_time(row["fired_at"]),
        last_seen_at=from_db_time(row["last_seen_at"]),
    )
