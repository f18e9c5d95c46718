"""What a notification says, before any format: the lead, notices, what changed, the alerts in reading
order with the texts each shows, or a resolve's one line per alert. render_text, render_html and
render_slack lay this out; none of them decides what is said, so all three say it once.

The rules it keeps (issue 44):
  - the lead's diagnosis and next steps are shown once, under it; its figure and age are in the lead;
  - what followed from the lead shows its summary, its figure and its one "why", never its full texts
    again (they are behind the incident link and were on the page that first reported them);
  - another alert of the incident shows its diagnosis and next steps only on the page that first
    reports it;
  - a resolve says how long, what ended it and one line per alert: no next steps, no diagnosis.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from datetime import datetime

from daemon.alerts.figures import RuleLookup
from daemon.notify import render_common as c
from daemon.notify import render_incident
from daemon.notify.model import AlertSnapshot, Change, Notification
from daemon.notify.render_incident import Entry, Page


@dataclass(frozen=True)
class Item:
    """One alert as the page shows it."""

    head: str  # `Cause: StuckMessage (WARNING), firing since ...`, or the rule for a listed alert
    text: str  # its summary, with its figure when listed
    state: str | None  # "resolved", or the severity: picks the colour and the mark
    labels: list[tuple[str, str]] = field(default_factory=list)  # where, shown for the lead and plain alerts
    detail: str = ""  # a plain alert's figures and times
    why: str = ""
    diagnosis: str = ""
    next_steps: str = ""
    depth: int = 1
    lead: bool = False


@dataclass(frozen=True)
class Section:
    """A heading (empty for the lead's) and its alerts."""

    heading: str
    items: list[Item]


@dataclass(frozen=True)
class Layout:
    """A whole notification, format-neutral."""

    title: str
    lead: c.Lead
    notices: list[str]  # `Cause found: ...`, a reminder
    changes: list[str]  # what changed, one line each
    sections: list[Section]
    resolved: list[str]  # a resolve's one line per alert (sections are then empty)
    footer: str
    incident_id: str = ""
    folded: int = 0  # alerts shown by their summary only, to fit the receiver

    @property
    def items(self) -> list[Item]:
        """Every alert shown, in reading order."""
        return [i for s in self.sections for i in s.items]

    def compact(self) -> Layout:
        """Summaries, figures and the link only: no diagnosis, next steps or why."""
        bare = [Section(s.heading, [replace(i, diagnosis="", next_steps="", why="", detail="") for i in s.items])
                for s in self.sections]
        return replace(self, sections=bare)


def layout(n: Notification, rules: RuleLookup | None = None, external_url: str = "") -> Layout:
    """What the notification says, in reading order."""
    p = render_incident.page(n)
    lead = c.lead(n, rules, external_url)
    if p is None:
        return _plain(n, lead, rules)
    notices = [p.cause_found] if p.cause_found else []
    if n.reason == c.REMINDER and not (n.is_update and n.changes):
        notices.append(f"Reminder. {c.reminder_line(n)}")
    changes = [change_line(n, ch) for ch in c.incident_changes(n, p)] if n.is_update and n.status == "firing" else []
    footer = f"Incident {p.incident.id}, opened {c.when(p.incident.opened_at)}"
    rest = [(k, v) for k, v in c.group(n) if not (k == "incident" and v == p.incident.id)]
    if rest:
        footer += " · Group: " + ", ".join(f"{k}={v}" for k, v in rest)
    title = c.title(n)
    if n.status == "resolved":
        return Layout(title, lead, [], [], [], [_resolved_line(e, p) for e in p.entries if _shown_resolved(e)],
                      footer, p.incident.id)
    new = c.newly_firing(n)
    sections = [Section("", [_lead_item(p, rules, n.severity)])]
    if p.followed:
        sections.append(Section(c.FOLLOWED, [_entry(e, rules, full=False) for e in p.followed]))
    if p.also:
        heading = "Also firing here" if all(e.firing for e in p.also) else "Also here"
        sections.append(Section(heading, [_entry(e, rules, full=e.fingerprint in new) for e in p.also]))
    return Layout(title, lead, notices, changes, sections, [], footer, p.incident.id)


def change_line(n: Notification, change: Change) -> str:
    """A change of an incident: what and where; the alert's summary is in its entry, said once."""
    alert = n.alert(change.fingerprint)
    spot = render_incident.spot_of(alert.labels) if alert is not None else ""
    named = (f"{alert.rule} on {spot}" if spot else alert.rule) if alert is not None else change.fingerprint
    if change.kind == "firing":
        return f"new alert ({change.severity or 'no severity'}): {named}"
    if change.kind == "resolved":
        return f"resolved{f' ({change.reason})' if change.reason else ''}: {named}"
    return f"{change.reason or 'severity changed'} {change.previous_severity} → {change.severity}: {named}"


def _state(a: AlertSnapshot | None) -> str | None:
    if a is None or a.state == "resolved":
        return "resolved"
    return a.severity


def _lead_item(p: Page, rules: RuleLookup | None, severity_of: str | None) -> Item:
    e, a = p.lead, p.lead.alert
    if a is None:
        state = (f"resolved at {c.when(e.resolved_at)}" if e.resolved_at
                 else "firing, not on this page (silenced, inhibited or sent to another receiver)")
        return Item(f"{p.lead_label}: {e.named}, {state}", "", "resolved" if e.resolved_at else None, lead=True)
    # The incident's severity is in the title; the lead's own only when it differs from it.
    severity = f" ({a.severity.upper()})" if a.severity and a.severity != severity_of else ""
    state = (f"resolved at {c.when(a.resolved_at)}" if a.state == "resolved"
             else f"firing since {c.when(a.fired_at or a.active_at)}")
    ended = a.state == "resolved"  # no present-tense diagnosis, no steps, for what has ended
    return Item(f"{p.lead_label}: {e.rule}{severity}, {state}", c.summary(a, rules), _state(a), c.where(a),
                diagnosis="" if ended else a.annotations.get("diagnosis", ""),
                next_steps="" if ended else a.annotations.get("next_steps", ""), lead=True)


def _entry(e: Entry, rules: RuleLookup | None, full: bool) -> Item:
    a = e.alert
    why = (f"{e.via} explains it: {e.why}" if e.via else f"why: {e.why}") if e.why else ""
    if a is None:
        return Item(e.named, f"resolved at {c.when(e.resolved_at)}", "resolved", why=why, depth=e.depth)
    parts = [c.summary(a, rules)]
    if a.annotations.get("summary"):  # without one, the summary sentence already states the figures
        parts.append(c.figure(a, rules))
    if a.state == "resolved":
        parts.append(f"resolved at {c.when(a.resolved_at)}")
    return Item(e.rule, " · ".join(parts), _state(a), why=why, depth=e.depth,
                diagnosis=a.annotations.get("diagnosis", "") if full else "",
                next_steps=a.annotations.get("next_steps", "") if full else "")


def _shown_resolved(e: Entry) -> bool:
    return e.alert is not None or e.resolved_at is not None


def _resolved_line(e: Entry, p: Page) -> str:
    """`StuckMessage on broker-a/OrderTopic/3: 08:02:01–08:10:30 UTC (8 min 29 s); last seen: <summary>`."""
    a = e.alert
    start = (a.fired_at or a.active_at) if a is not None else None
    seen = a.annotations.get("summary", "") if a is not None else ""
    return resolved_line(e.named, start, e.resolved_at, seen, p.incident.opened_at)


def resolved_line(named: str, start: datetime | None, end: datetime | None, seen: str, day_of: datetime) -> str:
    """One alert of a resolve: what and where, from when to when (how long), and what it said last."""
    clock = render_incident.clock
    if start is not None and end is not None:
        span = f"{clock(start, day_of)}–{clock(end, day_of)} ({render_incident.duration(end - start)})"
    else:
        span = f"resolved at {clock(end, day_of)}"
    return f"{named}: {span}" + (f"; last seen: {seen}" if seen else "")


# ---- a notification not about an incident ------------------------------------------------------


def _named(a: AlertSnapshot) -> str:
    spot = render_incident.spot_of(a.labels)
    return f"{a.rule} on {spot}" if spot else a.rule


def _plain(n: Notification, lead: c.Lead, rules: RuleLookup | None) -> Layout:
    title = c.title(n)
    footer = "Group: " + ", ".join(f"{k}={v}" for k, v in c.group(n))
    notices = [f"Reminder. {c.reminder_line(n)}"] if n.reason == c.REMINDER and not (n.is_update and n.changes) else []
    changes = [c.change_line(n, ch, rules) for ch in n.changes] if n.is_update and n.status == "firing" else []
    if n.status == "resolved":
        lines = [resolved_line(_named(a), a.fired_at or a.active_at, a.resolved_at, a.annotations.get("summary", ""),
                               n.created_at) for a in n.alerts]
        return Layout(title, lead, notices, [], [], lines, footer)
    new = c.newly_firing(n)
    items = [Item(f"[{a.state.upper()}] {(a.severity or '').upper()} {a.rule}".replace("  ", " "), c.summary(a, rules),
                  _state(a), c.where(a), detail=c.timeline(a, rules)
                  + (" · no fresh data for this series: held as it was, not resolved" if a.no_data else ""),
                  diagnosis=a.annotations.get("diagnosis", "") if a.fingerprint in new else "",
                  next_steps=a.annotations.get("next_steps", "") if a.fingerprint in new else "")
             for a in n.alerts]
    return Layout(title, lead, notices, changes, [Section("", items)], [], footer)
