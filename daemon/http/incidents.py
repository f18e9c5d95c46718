"""Incidents as daemon/http shows them: which ones, their alerts in reading order, their group keys, their JSON.

The status page and /api/alerts show the same incidents in the same order: the open ones, oldest first,
then those resolved within the last hour, the most recent first. Inside one, the root alert leads; the
alerts it explains follow, then the other alerts of the incident (explained by another member, or
there because they happen at the same place); firing before resolved, then as they joined.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import datetime, timedelta
from typing import Any, Literal

from daemon.alerts.incidents import INCIDENT_LABEL
from daemon.alerts.model import AlertInstance
from daemon.http.view import IncidentMemberView, IncidentView
from daemon.notify.dispatcher import group_key

RECENTLY_RESOLVED = timedelta(hours=1)  # how long a resolved incident stays on the page and in /api/alerts

Role = Literal["root", "explained", "other"]  # the root; explained by the root; any other member


def shown(incidents: Sequence[IncidentView], now: datetime) -> list[IncidentView]:
    """Open incidents, oldest first, then those resolved within RECENTLY_RESOLVED, most recent first."""
    opened = sorted((i for i in incidents if i.open), key=lambda i: (i.opened_at, i.id))
    resolved = sorted((i for i in incidents if i.resolved_at is not None and now - i.resolved_at <= RECENTLY_RESOLVED),
                      key=lambda i: (i.resolved_at, i.id), reverse=True)
    return opened + resolved


def reading_order(incident: IncidentView) -> list[tuple[IncidentMemberView, Role]]:
    """The root, then the alerts it explains, then the others; firing before resolved, then as they joined."""

    def order(member: IncidentMemberView) -> tuple[bool, datetime, str]:
        return (member.resolved_at is not None, member.joined_at, member.rule)

    root = incident.member(incident.root)
    rest = [m for m in incident.members if m.fingerprint != incident.root]
    explained = sorted((m for m in rest if m.cause == incident.root), key=order)
    others = sorted((m for m in rest if m.cause != incident.root), key=order)
    return ([(root, "root")] if root is not None else []) + [(m, "explained") for m in explained] + [
        (m, "other") for m in others]


def cause_known(incident: IncidentView) -> bool:
    """True when the root explains some alert of the incident (else it is only the first to fire)."""
    return any(m.cause == incident.root for m in incident.members)


def placed(incidents: Sequence[IncidentView]) -> dict[str, IncidentView]:
    """Fingerprint -> open incident, for every alert still firing in one."""
    return {m.fingerprint: i for i in incidents if i.open for m in i.members if m.resolved_at is None}


def group_keys(incident: IncidentView, group_by: Sequence[str]) -> list[str]:
    """The notification group keys the incident's alerts are filed under (one, `{incident="<id>"}`, by default)."""
    keys: list[str] = []
    for m in incident.members:
        key = group_key({name: incident.id if name == INCIDENT_LABEL else m.rule if name == "alertname"
                         else m.labels.get(name, "") for name in group_by})
        if key not in keys:
            keys.append(key)
    return keys


def _when(t: datetime | None) -> str | None:
    return t.isoformat() if t else None


def alert_json(alert: AlertInstance) -> dict[str, Any]:
    """One active alert as /api/alerts lists it."""
    return {
        "fingerprint": alert.fingerprint,
        "rule": alert.rule,
        "labels": alert.labels,
        "state": alert.state,
        "severity": alert.severity,
        "value": alert.value,
        "threshold": alert.threshold,
        "no_data": alert.no_data,
        "active_at": _when(alert.active_at),
        "fired_at": _when(alert.fired_at),
        "annotations": alert.annotations,
    }


def member_json(member: IncidentMemberView, role: Role, alert: AlertInstance | None) -> dict[str, Any]:
    """One alert of an incident: what links it to the others, and its alert fields while it is active."""
    body: dict[str, Any] = {
        "fingerprint": member.fingerprint,
        "rule": member.rule,
        "labels": dict(member.labels),
        "state": "resolved" if member.resolved_at else (alert.state if alert is not None else "firing"),
        "role": role,
        "cause": member.cause,
        "why": member.why,
        "joined_at": _when(member.joined_at),
        "resolved_at": _when(member.resolved_at),
    }
    if alert is not None and member.resolved_at is None:
        body |= {k: v for k, v in alert_json(alert).items() if k not in body}
    return body


def incident_json(incident: IncidentView, active: Mapping[str, AlertInstance]) -> dict[str, Any]:
    """One incident with its alerts nested in reading order."""
    return {
        "id": incident.id,
        "state": "open" if incident.open else "resolved",
        "opened_at": _when(incident.opened_at),
        "resolved_at": _when(incident.resolved_at),
        "locus": dict(incident.locus),
        "root": incident.root,
        "cause_known": cause_known(incident),
        "ended_by": incident.ended_by,
        "alerts": [member_json(m, role, active.get(m.fingerprint)) for m, role in reading_order(incident)],
    }
