"""An incident's page: which alert leads it, what followed from it, what else fires there, and the
sentences that say so: "Cause found" when the cause arrives late, how the incident ended.

render_layout.py turns a Page into what a notification says (render_text, render_html and
render_slack lay that out); this module decides which alert leads and how the incident's sentences
read, and never formats an alert's summary or figures itself. Every sentence is kept true:
  - the lead is called the cause only when some alert of the incident is explained by it
    (IncidentSnapshot.cause_known); until then it is the first alert, or an alert, never a cause;
  - an alert of the incident that resolved before this notification is listed with its resolve time;
    one still firing but not on this page (silenced, inhibited, routed elsewhere) is left out,
    except the lead, which is always named;
  - "Resolved after ..." only once the incident itself resolved (every alert in it).
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta

from daemon.notify.model import AlertSnapshot, IncidentMember, IncidentSnapshot, Notification

CAUSE, FIRST, ALERT = "Cause", "First alert", "Alert"


@dataclass(frozen=True)
class Entry:
    """One alert of the page: its snapshot when this notification carries it, and how it is explained."""

    fingerprint: str
    rule: str
    alert: AlertSnapshot | None  # None: resolved before this notification, or not on this page
    resolved_at: datetime | None = None
    why: str = ""  # the link's sentence, when an alert of the incident explains it
    via: str | None = None  # the rule of the alert that explains it, when that is not the lead
    depth: int = 1  # in its list: 1 at the top (explained by the lead, or by nothing), 2 below one of those
    labels: dict[str, str] = field(default_factory=dict)  # where it happens, also when `alert` is None

    @property
    def named(self) -> str:
        """`StuckMessage on broker-a/OrderTopic/3`: the rule and where, from the alert or the incident."""
        spot = spot_of(self.alert.labels if self.alert is not None else self.labels)
        return f"{self.rule} on {spot}" if spot else self.rule

    @property
    def firing(self) -> bool:
        """True when this notification carries it firing."""
        return self.alert is not None and self.alert.state == "firing"


@dataclass(frozen=True)
class Page:
    """What an incident's notification says, cause first."""

    incident: IncidentSnapshot
    lead: Entry  # the incident's root
    lead_label: str  # CAUSE, FIRST (the earliest, no cause known) or ALERT
    followed: list[Entry]  # what the lead explains, depth first
    also: list[Entry]  # the incident's other alerts: same place, not explained by the lead
    cause_found: str | None  # the update's line when the cause arrived after its consequences
    ended: str | None  # the resolve message's line: how long it lasted, what ended it
    cause_found_why: str | None = None  # `cause_found` with each link's why: the thread reply, said on its own

    @property
    def cause_known(self) -> bool:
        """True when the lead explains some alert of the incident."""
        return self.lead_label == CAUSE

    @property
    def entries(self) -> list[Entry]:
        """Every alert of the page in reading order: the lead, what followed, the rest."""
        return [self.lead, *self.followed, *self.also]


def page(n: Notification) -> Page | None:
    """The page of an incident's notification; None when the notification is not about an incident."""
    incident = n.incident
    if incident is None:
        return None
    alerts = {a.fingerprint: a for a in n.alerts}
    members = {m.fingerprint: m for m in incident.members}
    root = members.get(incident.root)
    lead = Entry(incident.root, root.rule if root else _rule_of(alerts.get(incident.root), "the first alert"),
                 alerts.get(incident.root), _resolved_at(root, alerts.get(incident.root)),
                 labels=dict(root.labels) if root is not None else {})
    label = _lead_label(incident, root)

    def shown(member: IncidentMember) -> bool:
        # On this page, or resolved earlier; an alert still firing elsewhere is not this page's to list.
        return member.fingerprint in alerts or member.resolved_at is not None

    children: dict[str, list[IncidentMember]] = {}
    for m in incident.members:
        if m.cause and m.cause in members and m.fingerprint != incident.root:
            children.setdefault(m.cause, []).append(m)
    below: set[str] = set()

    def walk(member: IncidentMember, depth: int, into: list[Entry]) -> None:
        # Depth first, so each alert comes right after the one that explains it.
        if member.fingerprint in below:
            return  # incidents.py keeps links acyclic; this only guards a hand-built snapshot
        below.add(member.fingerprint)
        if depth and shown(member):
            cause = members.get(member.cause or "")
            via = cause.rule if cause is not None and cause.fingerprint != incident.root else None
            alert = alerts.get(member.fingerprint)
            into.append(Entry(member.fingerprint, member.rule, alert, _resolved_at(member, alert),
                              member.why if cause is not None else "", via, depth, dict(member.labels)))
        for child in children.get(member.fingerprint, []):
            walk(child, depth + 1, into)

    followed: list[Entry] = []
    if root is not None:
        walk(root, 0, followed)
    below.add(incident.root)
    # The rest: same place, not explained by the lead; an alert another of them explains follows it.
    also: list[Entry] = []
    for top in [m for m in incident.members if m.cause not in members] + list(incident.members):
        walk(top, 1, also)
    # An alert the notification carries that the incident does not list (it moved on): shown, unexplained.
    also += [Entry(a.fingerprint, a.rule, a, a.resolved_at) for a in n.alerts if a.fingerprint not in members]
    draft = Page(incident, lead, label, followed, also, None, None)
    found = _cause_found(n, draft)
    return Page(incident, lead, label, followed, also, found[0] if found else None, _ended(n, draft),
                found[1] if found else None)


# ---- sentences -----------------------------------------------------------------------------------


def _cause_found(n: Notification, p: Page) -> tuple[str, str] | None:
    """`Cause found: StuckMessage on broker-a/OrderTopic/3 explains ProcessQueueSpanTooLong.`, and the same
    with each link's why (`...ProcessQueueSpanTooLong: <why>`) for a message that does not list them."""
    if not (n.is_update and n.status == "firing" and p.cause_known and p.lead.firing):
        return None
    new = {c.fingerprint for c in n.changes if c.kind == "firing"}
    if p.lead.fingerprint not in new:
        return None
    # What it explains that was told before it: the alerts this update re-reads in its light.
    earlier = [e for e in p.followed if e.depth == 1 and e.fingerprint not in new]
    if not earlier:
        return None
    spot = spot_of(p.lead.alert.labels) if p.lead.alert else ""
    by_link = Counter((e.rule, e.why) for e in earlier)
    head = f"Cause found: {p.lead.rule}{f' on {spot}' if spot else ''} explains "
    rules = Counter(e.rule for e in earlier)
    short = ", ".join(f"{rule}{f' ×{count}' if count > 1 else ''}" for rule, count in rules.items())
    explained = "; ".join(
        f"{rule}{f' ×{count}' if count > 1 else ''}{f': {why}' if why else ''}"
        for (rule, why), count in by_link.items()
    )
    return f"{head}{short}.", f"{head}{explained}"


def _ended(n: Notification, p: Page) -> str | None:
    """`Resolved after 12 min: StuckMessage ended at 08:10:30 UTC; the last alert, X, resolved at 08:12:00 UTC.`"""
    if n.status != "resolved":
        return None
    incident = p.incident
    if incident.resolved_at is None:
        still = [m for m in incident.members if m.resolved_at is None]
        if not still:
            return None
        return (f"Every alert on this page has resolved; {_count(len(still))} of the incident "
                f"{'still fire' if len(still) > 1 else 'still fires'} (silenced, inhibited or sent elsewhere).")
    lasted = duration(incident.resolved_at - incident.opened_at)
    lead = p.lead.rule if p.lead_label != FIRST else f"the first alert, {p.lead.rule},"
    last = incident.member(incident.ended_by) if incident.ended_by else None
    head = f"Resolved after {lasted}"
    if last is None or last.resolved_at is None:
        return f"{head}."
    at = clock(last.resolved_at, incident.opened_at)
    # Every alert that resolved in that last moment, not one picked among them.
    lasts = [m for m in incident.members if m.resolved_at == last.resolved_at and m.fingerprint != p.lead.fingerprint]
    if p.lead.resolved_at is None:  # the root's resolve is not known (an incident restored oddly)
        return f"{head}: the last {_plural(lasts)}, {_names(n, lasts)}, resolved at {at}."
    ended = clock(p.lead.resolved_at, incident.opened_at)
    if p.lead.resolved_at == last.resolved_at:
        if not lasts:
            alone = len(incident.members) == 1
            return f"{head}: {lead} ended at {ended}{'' if alone else ', the last of its alerts to resolve'}."
        return f"{head}: {lead} ended at {ended}, together with the last of the others ({_names(n, lasts)})."
    return f"{head}: {lead} ended at {ended}; the last {_plural(lasts)}, {_names(n, lasts)}, resolved at {at}."


def _plural(members: list[IncidentMember]) -> str:
    return "alert" if len(members) == 1 else "alerts"


def _names(n: Notification, members: list[IncidentMember]) -> str:
    """`ConsumerOffsetStalled on broker-a/OrderTopic/3`, `A and B`, `A ×6`."""
    if len(members) == 1:
        return _named(n, members[0])
    counts = Counter(m.rule for m in members)
    names = [f"{rule} ×{k}" if k > 1 else rule for rule, k in counts.items()]
    return ", ".join(names[:-1]) + f" and {names[-1]}" if len(names) > 1 else names[0]


# ---- small helpers, shared with render.py --------------------------------------------------------


def spot_of(labels: dict[str, str]) -> str:
    """Exactly where: `broker-a/OrderTopic/3` for a queue, else the group, broker or topic."""
    if labels.get("queue_id") and labels.get("broker") and labels.get("topic"):
        return f"{labels['broker']}/{labels['topic']}/{labels['queue_id']}"
    return labels.get("group") or labels.get("broker") or labels.get("topic") or ""


def clock(dt: datetime | None, day_of: datetime | None = None) -> str:
    """`08:10:30 UTC`, with the date when it is not the day of `day_of`."""
    if dt is None:
        return "-"
    dt = dt.astimezone(UTC)
    same_day = day_of is not None and day_of.astimezone(UTC).date() == dt.date()
    return dt.strftime("%H:%M:%S UTC" if same_day else "%Y-%m-%d %H:%M:%S UTC")


def duration(d: timedelta) -> str:
    """`45 s`, `3 min 20 s`, `12 min`, `2 h 5 min`, `1 d 3 h`."""
    s = max(0, int(d.total_seconds()))
    if s < 60:
        return f"{s} s"
    if s < 600:
        return f"{s // 60} min" + (f" {s % 60} s" if s % 60 else "")
    if s < 3600:
        return f"{round(s / 60)} min"
    if s < 86400:
        h, m = divmod(round(s / 60), 60)
        return f"{h} h" + (f" {m} min" if m else "")
    d_, h = divmod(round(s / 3600), 24)
    return f"{d_} d" + (f" {h} h" if h else "")


def _count(k: int, noun: str = "alert") -> str:
    return f"{k} {noun}{'s' if k != 1 else ''}"


def _named(n: Notification, member: IncidentMember) -> str:
    alert = n.alert(member.fingerprint)
    spot = spot_of(alert.labels if alert is not None else member.labels)
    return f"{member.rule} on {spot}" if spot else member.rule


def _lead_label(incident: IncidentSnapshot, root: IncidentMember | None) -> str:
    if incident.cause_known:
        return CAUSE
    if root is None or len(incident.members) == 1:
        return ALERT
    # "First" only when it was: alone before every other alert of the incident.
    others = [m.joined_at for m in incident.members if m.fingerprint != root.fingerprint]
    return FIRST if all(root.joined_at < t for t in others) else ALERT


def _resolved_at(member: IncidentMember | None, alert: AlertSnapshot | None) -> datetime | None:
    if alert is not None and alert.resolved_at is not None:
        return alert.resolved_at
    return member.resolved_at if member is not None else None


def _rule_of(alert: AlertSnapshot | None, default: str) -> str:
    return alert.rule if alert is not None else default
