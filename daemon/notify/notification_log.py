"""The notification log: per (route, receiver, alert group) what waits to be told and when the
group was last told, persisted, and the decision — with a named reason — whether to send now."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from datetime import datetime

from daemon.alerts.db import StateDB, from_db_time, to_db_time
from daemon.notify.model import AlertSnapshot, Change
from daemon.notify.routing import Route

# Reasons to send, and reasons not to; the not-sent ones are counted, never logged per cycle.
SEND_REASONS = ("first", "new_alerts_in_group", "resolved", "severity_changed", "repeat_interval_elapsed")
HOLD_REASONS = ("group_wait", "group_interval", "unchanged", "acknowledged", "muted_time_interval",
                "outside_active_time_interval", "resolved_before_told")


@dataclass
class Pending:
    """A change not yet told, with the resolved alert's last state when it is a resolve."""

    change: Change
    resolved: AlertSnapshot | None = None


@dataclass
class GroupState:
    """One alert group as one route's receiver sees it."""

    route: str
    receiver: str
    group_key: str
    group_labels: dict[str, str]
    pending: list[Pending] = field(default_factory=list)
    first_change_at: datetime | None = None
    last_sent_at: datetime | None = None
    last_reason: str | None = None


@dataclass(frozen=True)
class Decision:
    """Send or hold, and why."""

    send: bool
    reason: str


def decide(group: GroupState, firing: int, route: Route, now: datetime, acknowledged: bool = False,
           silent_reason: str | None = None) -> Decision:
    """Whether the group is sent now; `firing` is how many of its alerts fire (unmuted) right now."""
    if silent_reason is not None:
        return Decision(False, silent_reason)
    if group.pending:
        if group.last_sent_at is None:
            if not firing:  # fired and resolved before anyone was told: nothing to tell
                return Decision(False, "resolved_before_told")
            assert group.first_change_at is not None
            if now - group.first_change_at < route.group_wait:
                return Decision(False, "group_wait")
            return Decision(True, "first")
        if now - group.last_sent_at < route.group_interval:
            return Decision(False, "group_interval")
        kinds = {p.change.kind for p in group.pending}
        if not firing:
            return Decision(True, "resolved")
        if "firing" in kinds:
            return Decision(True, "new_alerts_in_group")
        return Decision(True, "severity_changed" if "severity_changed" in kinds else "resolved")
    if firing and group.last_sent_at is not None and now - group.last_sent_at >= route.repeat_interval:
        return Decision(False, "acknowledged") if acknowledged else Decision(True, "repeat_interval_elapsed")
    return Decision(False, "unchanged")


class NotificationLog:
    """The notification_groups table."""

    def __init__(self, db: StateDB) -> None:
        self.db = db

    def groups(self) -> list[GroupState]:
        """Every open group."""
        return [_state(r) for r in self.db.query("SELECT * FROM notification_groups ORDER BY route, receiver, group_key")]

    def add_change(self, route: Route, group_key: str, labels: dict[str, str], pending: Pending, now: datetime) -> None:
        """Queue a change for the group (creating the group)."""
        with self.db.transaction() as conn:
            row = conn.execute(
                "SELECT pending, first_change_at FROM notification_groups WHERE route = ? AND receiver = ? "
                "AND group_key = ?", (route.id, route.receiver, group_key),
            ).fetchone()
            items = json.loads(row["pending"]) if row else []
            items.append({"change": pending.change.model_dump(mode="json"),
                          "resolved": pending.resolved.model_dump(mode="json") if pending.resolved else None})
            first = row["first_change_at"] if row and row["first_change_at"] else to_db_time(now)
            conn.execute(
                "INSERT INTO notification_groups (route, receiver, group_key, group_labels, pending, first_change_at) "
                "VALUES (?, ?, ?, ?, ?, ?) ON CONFLICT (route, receiver, group_key) DO UPDATE SET "
                "pending = excluded.pending, first_change_at = excluded.first_change_at",
                (route.id, route.receiver, group_key, json.dumps(labels), json.dumps(items), first),
            )

    def ensure(self, route: Route, group_key: str, labels: dict[str, str]) -> None:
        """Make sure a firing group has a row (a restart with firing alerts, a route added on reload)."""
        with self.db.transaction() as conn:
            conn.execute(
                "INSERT OR IGNORE INTO notification_groups (route, receiver, group_key, group_labels, pending) "
                "VALUES (?, ?, ?, ?, '[]')", (route.id, route.receiver, group_key, json.dumps(labels)),
            )

    def sent(self, group: GroupState, reason: str, now: datetime) -> None:
        """The group was told now: clear what was pending, remember when and why."""
        with self.db.transaction() as conn:
            conn.execute(
                "UPDATE notification_groups SET pending = '[]', first_change_at = NULL, last_sent_at = ?, "
                "last_reason = ? WHERE route = ? AND receiver = ? AND group_key = ?",
                (to_db_time(now), reason, group.route, group.receiver, group.group_key),
            )

    def follow(self, group: GroupState) -> None:
        """Take over what another daemon told (the shared log): its last send, and only what is still news."""
        items = [{"change": p.change.model_dump(mode="json"),
                  "resolved": p.resolved.model_dump(mode="json") if p.resolved else None} for p in group.pending]
        with self.db.transaction() as conn:
            conn.execute(
                "UPDATE notification_groups SET pending = ?, first_change_at = ?, last_sent_at = ?, last_reason = ? "
                "WHERE route = ? AND receiver = ? AND group_key = ?",
                (json.dumps(items), to_db_time(group.first_change_at) if group.first_change_at else None,
                 to_db_time(group.last_sent_at) if group.last_sent_at else None, group.last_reason,
                 group.route, group.receiver, group.group_key),
            )

    def drop_pending(self, group: GroupState) -> None:
        """Forget changes nobody needs to hear about (resolved before they were told)."""
        with self.db.transaction() as conn:
            conn.execute(
                "UPDATE notification_groups SET pending = '[]', first_change_at = NULL "
                "WHERE route = ? AND receiver = ? AND group_key = ?", (group.route, group.receiver, group.group_key),
            )

    def close(self, group: GroupState) -> None:
        """The group has nothing firing and nothing pending: forget it (a new incident starts fresh)."""
        with self.db.transaction() as conn:
            conn.execute("DELETE FROM notification_groups WHERE route = ? AND receiver = ? AND group_key = ?",
                         (group.route, group.receiver, group.group_key))

    def muted(self) -> set[str]:
        """Fingerprints muted at the last dispatch."""
        return {r["fingerprint"] for r in self.db.query("SELECT fingerprint FROM muted_alerts")}

    def set_muted(self, fingerprints: set[str]) -> None:
        """Remember what is muted now."""
        with self.db.transaction() as conn:
            conn.execute("DELETE FROM muted_alerts")
            conn.executemany("INSERT INTO muted_alerts (fingerprint) VALUES (?)", [(f,) for f in sorted(fingerprints)])


def _state(r) -> GroupState:
    pending = [
        Pending(Change.model_validate(p["change"]),
                AlertSnapshot.model_validate(p["resolved"]) if p["resolved"] else None)
        for p in json.loads(r["pending"])
    ]
    return GroupState(r["route"], r["receiver"], r["group_key"], json.loads(r["group_labels"]), pending,
                      from_db_time(r["first_change_at"]), from_db_time(r["last_sent_at"]), r["last_reason"])
