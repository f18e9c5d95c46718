"""What a notifier is handed: one alert group's notification, stored as JSON in the outbox."""

from __future__ import annotations

from datetime import datetime
from typing import Literal, Protocol

from pydantic import BaseModel, ConfigDict

from daemon.alerts.incidents import Incident
from daemon.alerts.model import AlertEvent, AlertInstance
from rules.findings import SEVERITY_ORDER

Status = Literal["firing", "resolved"]


class _Frozen(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class AlertSnapshot(_Frozen):
    """One alert as it was when the notification was built."""

    fingerprint: str
    rule: str
    labels: dict[str, str]
    severity: str | None
    value: float | None
    threshold: float | None
    annotations: dict[str, str]
    state: Literal["firing", "resolved"]
    active_at: datetime
    fired_at: datetime | None = None
    resolved_at: datetime | None = None
    no_data: bool = False

    @classmethod
    def of(cls, alert: AlertInstance) -> AlertSnapshot:
        """Snapshot a tracker instance (firing or resolved)."""
        return cls(
            fingerprint=alert.fingerprint, rule=alert.rule, labels=dict(alert.labels), severity=alert.severity,
            value=alert.value, threshold=alert.threshold, annotations=dict(alert.annotations),
            state="resolved" if alert.state == "resolved" else "firing", active_at=alert.active_at,
            fired_at=alert.fired_at, resolved_at=alert.resolved_at, no_data=alert.no_data,
        )


class Change(_Frozen):
    """Why this notification exists: one tracker event of the group."""

    kind: Literal["firing", "resolved", "severity_changed"]
    fingerprint: str
    severity: str | None
    previous_severity: str | None = None
    reason: str = ""

    @classmethod
    def of(cls, event: AlertEvent) -> Change:
        """The change a tracker event describes."""
        return cls(
            kind=event.kind.value, fingerprint=event.fingerprint, severity=event.severity,
            previous_severity=event.previous_severity, reason=event.reason,
        )


class IncidentMember(_Frozen):
    """One alert of an incident: which alert explains it, and the link's sentence."""

    fingerprint: str
    rule: str
    labels: dict[str, str] = {}  # where it happens, also once it resolved and left the page's alerts
    cause: str | None = None
    why: str = ""
    joined_at: datetime
    resolved_at: datetime | None = None


class IncidentSnapshot(_Frozen):
    """The incident a notification is about, as it was when the notification was built."""

    id: str
    opened_at: datetime
    resolved_at: datetime | None = None
    root: str  # fingerprint of the alert that explains the others (the earliest, until a cause is known)
    members: list[IncidentMember]  # root first, then as they joined
    ended_by: str | None = None  # fingerprint of the last alert to resolve, once resolved

    @classmethod
    def of(cls, incident: Incident) -> IncidentSnapshot:
        """Snapshot an incident of the incident book."""
        last = incident.last_resolved()
        return cls(
            id=incident.id, opened_at=incident.opened_at, resolved_at=incident.resolved_at, root=incident.root,
            members=[IncidentMember(fingerprint=m.fingerprint, rule=m.rule, labels=dict(m.labels), cause=m.cause, why=m.why,
                                    joined_at=m.joined_at, resolved_at=m.resolved_at) for m in incident.ordered()],
            ended_by=last.fingerprint if last is not None else None,
        )

    def member(self, fingerprint: str) -> IncidentMember | None:
        """The member with that fingerprint."""
        return next((m for m in self.members if m.fingerprint == fingerprint), None)

    @property
    def cause_known(self) -> bool:
        """True when some alert of the incident is explained by its root."""
        return any(m.cause == self.root for m in self.members)


class Notification(_Frozen):
    """One alert group, for one receiver: its current alerts and what changed."""

    group_key: str
    group_labels: dict[str, str]
    status: Status
    alerts: list[AlertSnapshot]
    changes: list[Change]
    is_update: bool
    created_at: datetime
    idempotency_key: str = ""
    reason: str = ""  # why it is sent: first, new_alerts_in_group, resolved, severity_changed, repeat_interval_elapsed
    incident: IncidentSnapshot | None = None  # when grouped by incident
    # Set only on a send that may already be at its receiver: recorded (an intent, an outbox row) and
    # never confirmed, e.g. its sender was killed between the send and its record. Any earlier copy was
    # sent no earlier than this; a receiver that can look for it (Slack: the key in its messages'
    # metadata) does before sending again. None on every first send: no extra call on the hot path.
    unconfirmed_since: datetime | None = None

    @property
    def firing(self) -> list[AlertSnapshot]:
        """Alerts still firing."""
        return [a for a in self.alerts if a.state == "firing"]

    @property
    def resolved(self) -> list[AlertSnapshot]:
        """Alerts resolved in the cycle that built this notification."""
        return [a for a in self.alerts if a.state == "resolved"]

    @property
    def severity(self) -> str | None:
        """The highest severity among firing alerts (or among all when the group resolved)."""
        pool = self.firing or self.alerts
        levels = [a.severity for a in pool if a.severity]
        return max(levels, key=lambda s: SEVERITY_ORDER.get(s, 0)) if levels else None

    @property
    def rule(self) -> str:
        """The group's rule name (alertname), or the rules joined when the group spans several."""
        if "alertname" in self.group_labels:
            return self.group_labels["alertname"]
        return ", ".join(sorted({a.rule for a in self.alerts}))

    def alert(self, fingerprint: str) -> AlertSnapshot | None:
        """The alert with that fingerprint, if it is in the group."""
        return next((a for a in self.alerts if a.fingerprint == fingerprint), None)


class ThreadRef(_Frozen):
    """Where a group's first message lives at a receiver: a Slack channel + ts, an email Message-ID."""

    # A thread ref outlives the daemon that wrote it (SQLite across an upgrade or a rollback, the
    # shared notification log between HA daemons of two versions mid-upgrade): a field a newer
    # version adds is ignored here, never a send that fails on reading it.
    model_config = ConfigDict(extra="ignore", frozen=True)

    id: str
    channel: str | None = None


class Notifier(Protocol):
    """Every receiver integration has this one shape."""

    async def send(self, notification: Notification, thread: ThreadRef | None) -> ThreadRef | None:
        """Deliver the notification (replying to `thread` when given); return the group's thread."""
        ...
