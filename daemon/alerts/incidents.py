"""Incidents: the alerts that share a cause, under one id from the first firing to the last resolve.

An alert joins an incident when it starts firing, and stays in it until it resolves:
  1. an open incident holds an alert that explains it (a rule's `explains:` link, labels equal):
     it joins that incident, as a consequence of that alert;
  2. it explains an alert of an open incident (a cause that fired after its consequences, e.g. a
     broker-side cause of consumer-side alerts): it joins that incident and becomes its root;
  3. an open incident opened where it happens (cluster + consumer group, else cluster + broker,
     else cluster + topic) holds it: it joins that one;
  4. otherwise it opens an incident of its own, keyed by where it happens.
The first incident opened wins when several qualify, so an alert belongs to one incident. An
incident's id never changes; its root does when a cause arrives. It resolves when every alert in it
has resolved, and is kept for a day after (the resolve message and the status page read it).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import TYPE_CHECKING, Protocol

from config.matchers import alert_labels
from daemon.alerts.db import StateDB, from_db_time, to_db_time
from daemon.alerts.model import AlertEvent, AlertInstance, EventKind

if TYPE_CHECKING:
    from daemon.coordination.incident_ids import IncidentIds

INCIDENT_LABEL = "incident"  # the reserved group_by label holding an alert's incident id
KEEP_RESOLVED = timedelta(days=1)
# Where an alert happens, most specific first: the labels that key an incident it opens.
_LOCI: tuple[tuple[str, ...], ...] = (("cluster", "group"), ("cluster", "broker"), ("cluster", "topic"))


class Link(Protocol):
    """One causal link of the rule set (rules/links.py)."""

    @property
    def why(self) -> str: ...


class CausalLinks(Protocol):
    """What incidents need of the rule set's links (rules/links.py CausalLinks)."""

    def explains(self, cause_alert: str, cause_labels: Mapping[str, str], effect_alert: str,
                 effect_labels: Mapping[str, str]) -> Link | None: ...

    def depth(self, alert: str) -> int: ...


@dataclass
class Member:
    """One alert of an incident: what it is, and which alert of the incident explains it."""

    fingerprint: str
    rule: str
    labels: dict[str, str]
    joined_at: datetime
    resolved_at: datetime | None = None
    cause: str | None = None  # the fingerprint of the member that explains it
    why: str = ""  # the link's sentence, when it has a cause


@dataclass
class Incident:
    """One incident: its fixed id, where it opened, its root alert and every alert it holds."""

    id: str
    opened_at: datetime
    locus: dict[str, str]
    root: str
    members: dict[str, Member] = field(default_factory=dict)
    resolved_at: datetime | None = None

    @property
    def open(self) -> bool:
        """True until every alert in it has resolved."""
        return self.resolved_at is None

    def active(self) -> list[Member]:
        """The members still firing, root first, then by when they joined."""
        return sorted((m for m in self.members.values() if m.resolved_at is None), key=self._order)

    def ordered(self) -> list[Member]:
        """Every member, root first, then by when they joined."""
        return sorted(self.members.values(), key=self._order)

    def _order(self, member: Member) -> tuple[bool, datetime, str]:
        return (member.fingerprint != self.root, member.joined_at, member.rule)

    def last_resolved(self) -> Member | None:
        """The member whose resolve ended the incident (None while it is open)."""
        done = [m for m in self.members.values() if m.resolved_at is not None]
        return max(done, key=lambda m: (m.resolved_at, m.rule)) if self.resolved_at and done else None


def locus_of(labels: Mapping[str, str]) -> dict[str, str]:
    """Where an alert happens: cluster + group for consumer-side, cluster + broker for broker-side."""
    for keys in _LOCI:
        if all(labels.get(k) for k in keys):
            return {k: labels[k] for k in keys}
    return {"cluster": labels.get("cluster", "")}


def matcher_labels(alert: AlertInstance, incidents: IncidentBook | None = None) -> dict[str, str]:
    """The labels silences and inhibit rules match: the alert's own, `alertname`, `severity`, `incident`."""
    labels = alert_labels(alert.rule, alert.labels, alert.severity)
    incident = incidents.incident_of(alert.fingerprint) if incidents is not None else None
    if incident is not None:
        labels[INCIDENT_LABEL] = incident.id
    return labels


class IncidentBook:
    """Every open incident (and those resolved within a day), persisted in the state database."""

    def __init__(self, db: StateDB, links: Callable[[], CausalLinks], ids: IncidentIds | None = None) -> None:
        self.db = db
        # The shared incident table (daemon/coordination): every daemon names one incident alike. None: ids
        # are this book's own.
        self.ids = ids
        self._opened: list[str] = []  # opened by update(), not yet claimed in the shared table
        self._ended: list[str] = []  # resolved by update(), not yet marked there
        # Read at each update, so a reload's new rules (and their links) apply from the next cycle.
        self._links = links
        self._incidents: dict[str, Incident] = _load(db)
        # Oldest first, so an alert in a resolved incident and again in a newer one maps to the newer.
        self._by_alert: dict[str, str] = {
            fp: inc.id for inc in sorted(self._incidents.values(), key=lambda i: (i.opened_at, i.id))
            for fp in inc.members
        }

    def incident_of(self, fingerprint: str) -> Incident | None:
        """The incident an alert is in (also just after it resolved)."""
        incident_id = self._by_alert.get(fingerprint)
        return self._incidents.get(incident_id) if incident_id else None

    def get(self, incident_id: str) -> Incident | None:
        """The incident with that id, open or resolved within the last day."""
        return self._incidents.get(incident_id)

    def open_incidents(self) -> list[Incident]:
        """Open incidents, oldest first."""
        return sorted((i for i in self._incidents.values() if i.open), key=lambda i: (i.opened_at, i.id))

    def all(self) -> list[Incident]:
        """Every incident kept, newest first."""
        return sorted(self._incidents.values(), key=lambda i: (i.opened_at, i.id), reverse=True)

    async def advance(self, events: Sequence[AlertEvent], active: Sequence[AlertInstance], now: datetime) -> None:
        """One cycle (before the dispatcher reads the book): update, then agree on ids with the other daemons."""
        self.update(events, active, now)
        await self.share()

    async def share(self) -> None:
        """Claim what opened in the shared table (adopting another daemon's id for the same locus), mark what
        ended, and take the shared id of incidents opened while the coordinator was away."""
        if self.ids is None:
            return
        renamed = await self.ids.reconcile()
        for incident_id in self._opened:
            incident = self._incidents.get(incident_id)
            if incident is not None:
                shared = await self.ids.open(incident.locus, incident_id, incident.opened_at)
                if shared != incident_id:
                    renamed[incident_id] = shared
        for incident_id in self._ended:
            incident = self._incidents.get(incident_id)
            if incident is not None and incident.resolved_at is not None:
                await self.ids.resolve(incident_id, incident.resolved_at)
        self._opened, self._ended = [], []
        for local, shared in renamed.items():
            self._rename(local, shared)

    def _rename(self, local: str, shared: str) -> None:
        incident = self._incidents.get(local)
        if incident is None or shared in self._incidents:
            return  # already known under the shared id: this daemon saw it open itself
        incident.id = shared
        self._incidents[shared] = self._incidents.pop(local)
        for fp, incident_id in list(self._by_alert.items()):
            if incident_id == local:
                self._by_alert[fp] = shared
        with self.db.transaction() as conn:
            conn.execute("UPDATE incidents SET id = ? WHERE id = ?", (shared, local))
            conn.execute("UPDATE incident_members SET incident = ? WHERE incident = ?", (shared, local))

    def update(self, events: Sequence[AlertEvent], active: Sequence[AlertInstance], now: datetime) -> None:
        """Place newly firing alerts, mark resolved ones, close incidents whose alerts all resolved."""
        self.links = self._links()
        changed: set[str] = set()
        for event in events:
            if event.kind is EventKind.RESOLVED:
                changed |= self._resolve(event.fingerprint, now)
        firing = [a for a in active if a.state == "firing" and a.fingerprint not in self._placed()]
        # Causes first, so a consequence firing in the same cycle finds its cause already placed.
        for alert in sorted(firing, key=lambda a: (self.links.depth(a.rule), a.fired_at or now, a.rule, a.fingerprint)):
            changed.add(self._place(alert, now))
        for incident in self._incidents.values():
            if incident.open and incident.members and all(m.resolved_at for m in incident.members.values()):
                incident.resolved_at = now
                changed.add(incident.id)
                if self.ids is not None:
                    self._ended.append(incident.id)
        expired = [i.id for i in self._incidents.values() if i.resolved_at and now - i.resolved_at > KEEP_RESOLVED]
        self._save(changed, expired)

    def _placed(self) -> set[str]:
        return {fp for fp, inc in self._by_alert.items()
                if (m := self._incidents[inc].members.get(fp)) is not None and m.resolved_at is None}

    def _resolve(self, fingerprint: str, now: datetime) -> set[str]:
        incident = self.incident_of(fingerprint)
        if incident is None or fingerprint not in incident.members:
            return set()
        incident.members[fingerprint].resolved_at = now
        return {incident.id}

    def _place(self, alert: AlertInstance, now: datetime) -> str:
        opened = self.open_incidents()
        member = Member(alert.fingerprint, alert.rule, dict(alert.labels), now)
        for incident in opened:  # 1. a member explains it
            for other in incident.active():
                link = self.links.explains(other.rule, other.labels, alert.rule, alert.labels)
                if link is not None:
                    member.cause, member.why = other.fingerprint, link.why
                    return self._join(incident, member)
        for incident in opened:  # 2. it explains a member: the cause arrived late
            explained = [(m, link) for m in incident.active()
                         if (link := self.links.explains(alert.rule, alert.labels, m.rule, m.labels)) is not None]
            if explained:
                for effect, link in explained:
                    if effect.cause is None:  # a member already explained keeps its cause: one incident, one chain
                        effect.cause, effect.why = alert.fingerprint, link.why
                return self._join(incident, member)
        locus = locus_of(alert.labels)
        for incident in opened:  # 3. the same place
            if incident.locus == locus:
                return self._join(incident, member)
        incident = Incident(self._new_id(locus, now), now, locus, alert.fingerprint)
        self._incidents[incident.id] = incident
        if self.ids is not None:
            self._opened.append(incident.id)
        return self._join(incident, member)

    def _join(self, incident: Incident, member: Member) -> str:
        previous = incident.members.get(member.fingerprint)
        if previous is not None and previous.cause and member.cause is None:
            member.cause, member.why = previous.cause, previous.why  # fired again: keeps its known cause
        incident.members[member.fingerprint] = member
        self._by_alert[member.fingerprint] = incident.id
        incident.root = _root(incident)
        return incident.id

    def _new_id(self, locus: Mapping[str, str], now: datetime) -> str:
        # Readable in a subject line and in logs, unique: where, and when it opened.
        base = "/".join(v for v in locus.values() if v) + now.strftime("@%Y-%m-%dT%H:%M:%SZ")
        candidate, n = base, 1
        while candidate in self._incidents:
            n += 1
            candidate = f"{base}#{n}"
        return candidate

    def _save(self, changed: Iterable[str], expired: Sequence[str]) -> None:
        with self.db.transaction() as conn:
            for incident_id in expired:
                incident = self._incidents.pop(incident_id)
                for fp in incident.members:
                    if self._by_alert.get(fp) == incident_id:
                        del self._by_alert[fp]
                conn.execute("DELETE FROM incident_members WHERE incident = ?", (incident_id,))
                conn.execute("DELETE FROM incidents WHERE id = ?", (incident_id,))
            for incident_id in set(changed) - set(expired):
                incident = self._incidents[incident_id]
                conn.execute(
                    "INSERT INTO incidents (id, opened_at, locus, root, resolved_at) VALUES (?, ?, ?, ?, ?) "
                    "ON CONFLICT (id) DO UPDATE SET root = excluded.root, resolved_at = excluded.resolved_at",
                    (incident.id, to_db_time(incident.opened_at), json.dumps(incident.locus), incident.root,
                     to_db_time(incident.resolved_at) if incident.resolved_at else None),
                )
                conn.execute("DELETE FROM incident_members WHERE incident = ?", (incident_id,))
                conn.executemany(
                    "INSERT OR REPLACE INTO incident_members (fingerprint, incident, rule, labels, joined_at, "
                    "resolved_at, cause, why) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                    [(m.fingerprint, incident.id, m.rule, json.dumps(m.labels), to_db_time(m.joined_at),
                      to_db_time(m.resolved_at) if m.resolved_at else None, m.cause, m.why)
                     for m in incident.members.values()],
                )


def _root(incident: Incident) -> str:
    # The alert nothing in the incident explains that explains the most of it; the earliest among
    # equals (the first alert, while no cause is known). It never moves off a cause to an unlinked alert.
    explains: dict[str, int] = {}
    for member in incident.members.values():
        if member.cause is not None:
            explains[member.cause] = explains.get(member.cause, 0) + 1
    candidates = [m for m in incident.members.values() if m.cause is None or m.cause not in incident.members]
    best = min(candidates, key=lambda m: (-explains.get(m.fingerprint, 0), m.fingerprint != incident.root,
                                          m.joined_at, m.rule), default=None)
    return best.fingerprint if best is not None else incident.root


def _load(db: StateDB) -> dict[str, Incident]:
    incidents = {
        r["id"]: Incident(r["id"], from_db_time(r["opened_at"]), json.loads(r["locus"]), r["root"],
                          resolved_at=from_db_time(r["resolved_at"]))
        for r in db.query("SELECT id, opened_at, locus, root, resolved_at FROM incidents")
    }
    for r in db.query("SELECT * FROM incident_members ORDER BY joined_at"):
        incident = incidents.get(r["incident"])
        if incident is not None:
            incident.members[r["fingerprint"]] = Member(
                r["fingerprint"], r["rule"], json.loads(r["labels"]), from_db_time(r["joined_at"]),
                from_db_time(r["resolved_at"]), r["cause"], r["why"] or "")
    return incidents
