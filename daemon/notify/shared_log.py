"""A daemon's local notification log kept in step with the shared one: when another daemon told a group
since this one last did, the local record takes over its last send and keeps only what is still news."""

from __future__ import annotations

from collections.abc import Collection, Sequence

from daemon.alerts.model import AlertInstance
from daemon.coordination.model import LogGroup, Told
from daemon.coordination.pending import PendingChange, pending_changes, told_by
from daemon.notify.model import Change
from daemon.notify.notification_log import GroupState, Pending


def told_elsewhere(group: GroupState, record: LogGroup | None) -> bool:
    """The shared log records a send of this group newer than this daemon's last one (another daemon sent)."""
    if record is None or record.last_sent_at is None:
        return False
    if record.closed:
        # Its message is done (resolved). Only a group this daemon still holds as told follows it there; one
        # it has not told is a new message, which waits its group_wait like any first one.
        return group.last_sent_at is not None and record.last_sent_at > group.last_sent_at
    return group.last_sent_at is None or record.last_sent_at > group.last_sent_at


def follow(group: GroupState, record: LogGroup, alerts: Sequence[AlertInstance], muted: Collection[str]) -> None:
    """Bring `group` to the shared record: its last send and reason, and pending only what the record lacks
    (the local change where this daemon saw it, else one made from the record's difference)."""
    changes = pending_changes(record, {a.fingerprint: a.severity for a in alerts}, muted)
    news = {(c.kind, c.fingerprint) for c in changes}
    kept = [p for p in group.pending if (p.change.kind, p.change.fingerprint) in news]
    seen = {(p.change.kind, p.change.fingerprint) for p in kept}
    kept += [Pending(_change(c)) for c in changes if (c.kind, c.fingerprint) not in seen]
    group.pending = kept
    # A closed record told its resolve: what fires from now on is a new message (first, after group_wait).
    group.last_sent_at = None if record.closed else record.last_sent_at
    group.last_reason = record.last_reason
    if not kept:
        group.first_change_at = None
    elif record.first_pending_at is not None:
        group.first_change_at = record.first_pending_at


def told_now(alerts: Sequence[AlertInstance], group: GroupState, record: LogGroup | None,
             muted: Collection[str]) -> Told:
    """What a notification of the group sent now tells, as the shared log records it."""
    firing = {a.fingerprint: a.severity for a in alerts}
    resolved = [PendingChange("resolved", p.change.fingerprint, p.change.severity) for p in group.pending
                if p.change.kind == "resolved" and p.change.fingerprint not in firing]
    return told_by(firing, resolved, muted, record)


def _change(change: PendingChange) -> Change:
    return Change(kind=change.kind, fingerprint=change.fingerprint, severity=change.severity,
                  previous_severity=change.previous_severity, reason="told by the shared log's difference")
