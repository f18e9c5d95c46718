"""What the three formats of a notification share (render_text, render_html, render_slack): how an
alert's summary, figures and place read, the lock-screen title, and the page's two lead lines.

Every function takes an optional `rules` lookup (alert name -> rule): with it, an alert's figures
read as its rule defines them (daemon/alerts/figures.py), as on the status page; without it, or for
a rule no longer loaded, the raw value and threshold are shown.

The lead (two lines, then the links) opens every page: what is wrong and where, for how long, the
figure that matters, and the first thing to do (the rule's `first_step`, else the first of its next
steps). The diagnosis and the full next steps follow it, once.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import datetime, timedelta
from urllib.parse import quote, urlencode

from daemon.alerts.figures import Figures, RuleLookup, figures
from daemon.alerts.incidents import INCIDENT_LABEL
from daemon.notify import render_incident
from daemon.notify.model import AlertSnapshot, Change, Notification
from daemon.notify.render_incident import Page
from rules.findings import SEVERITY_ORDER

# Shown first, in this order, because they say *where*; any other label follows.
WHERE_LABELS = ("cluster", "broker", "group", "topic", "queue_id", "client_id")
COLOURS = {"critical": "#d1242f", "warning": "#e09b00", "resolved": "#2da44e", None: "#6e7781"}
EMOJI = {"critical": ":red_circle:", "warning": ":large_orange_circle:", "resolved": ":white_check_mark:"}
REMINDER = "repeat_interval_elapsed"
FOLLOWED = "What followed from it"


def when(dt: datetime | None) -> str:
    """A timestamp as operators read it in a message: `2026-03-01 12:00:05 UTC`."""
    return dt.strftime("%Y-%m-%d %H:%M:%S UTC") if dt else "-"


def where(alert: AlertSnapshot) -> list[tuple[str, str]]:
    """The alert's labels, location labels first."""
    first = [(k, alert.labels[k]) for k in WHERE_LABELS if alert.labels.get(k)]
    rest = sorted((k, v) for k, v in alert.labels.items() if k not in WHERE_LABELS)
    return first + rest


def alert_figures(a: AlertSnapshot, rules: RuleLookup | None = None) -> Figures:
    """The alert's value and threshold as its rule defines them (the raw pair when the rule is unknown)."""
    return figures(a, rules(a.rule) if rules is not None else None)


def figures_text(fig: Figures) -> list[str]:
    """`value 250 vs 100 ms`, or `value 1.38 ms` and `fires while not ok` where no threshold applies."""
    unit = f" {fig.unit}" if fig.unit else ""
    if fig.threshold is not None:
        parts = [f"value {num(fig.value)} vs {num(fig.threshold)}{unit}"]
    else:
        parts = [f"value {num(fig.value)}{unit}"]
    if fig.condition:
        parts.append(f"fires while {fig.condition}")
    return parts


def figure(a: AlertSnapshot, rules: RuleLookup | None) -> str:
    """The figure that matters, in one phrase: `value 250 vs 100 ms`."""
    return ", ".join(figures_text(alert_figures(a, rules)))


def summary(a: AlertSnapshot, rules: RuleLookup | None) -> str:
    """The rule's summary sentence; without one, the rule, its labels and its figures."""
    if a.annotations.get("summary"):
        return a.annotations["summary"]
    labels = ", ".join(f"{k}={v}" for k, v in where(a))
    return f"{a.rule} ({labels}) {', '.join(figures_text(alert_figures(a, rules)))}"


def timeline(a: AlertSnapshot, rules: RuleLookup | None) -> str:
    """`value 1500 vs 1000 · active since ... · firing since ... · resolved at ...`."""
    parts = figures_text(alert_figures(a, rules))
    parts.append(f"active since {when(a.active_at)}")
    if a.fired_at:
        parts.append(f"firing since {when(a.fired_at)}")
    if a.resolved_at:
        parts.append(f"resolved at {when(a.resolved_at)}")
    return " · ".join(parts)


def num(v: float | None) -> str:
    """A figure without a needless `.0`."""
    if v is None:
        return "-"
    return str(int(v)) if float(v).is_integer() else f"{v:.3g}"


def group(n: Notification) -> list[tuple[str, str]]:
    """The group's labels that have a value."""
    # A grouping label the alerts do not have (no consumer group on a broker's alert) is absent, never "".
    return [(k, v) for k, v in n.group_labels.items() if v]


def common(n: Notification, label: str) -> str | None:
    """The label's value when every alert of the notification has the same one."""
    values = {a.labels.get(label) for a in n.alerts}
    return values.pop() if len(values) == 1 else None


def change_line(n: Notification, change: Change, rules: RuleLookup | None = None) -> str:
    """One sentence saying what a change was, e.g. `escalated warning → critical: <summary>`."""
    alert = n.alert(change.fingerprint)
    said = summary(alert, rules) if alert else change.fingerprint
    if change.kind == "firing":
        return f"new alert ({change.severity or 'no severity'}): {said}"
    if change.kind == "resolved":
        return f"resolved{f' ({change.reason})' if change.reason else ''}: {said}"
    verb = change.reason or "severity changed"
    return f"{verb} {change.previous_severity} → {change.severity}: {said}"


def reminder_line(n: Notification) -> str:
    """`Still firing: 3 alerts, the oldest since 10:02 UTC.`"""
    since = min((a.fired_at or a.active_at for a in n.firing), default=n.created_at)
    count = len(n.firing)
    return f"Still firing: {count} alert{'s' if count != 1 else ''}, the oldest since {when(since)}."


def incident_changes(n: Notification, p: Page) -> list[Change]:
    """The changes worth a line: the lead's own arrival is what the "Cause found" line already says."""
    if p.cause_found is None:
        return list(n.changes)
    return [c for c in n.changes if not (c.kind == "firing" and c.fingerprint == p.lead.fingerprint)]


def newly_firing(n: Notification) -> set[str]:
    """Fingerprints this notification reports for the first time (every alert of a first page)."""
    if not n.is_update:
        return {a.fingerprint for a in n.alerts}
    return {c.fingerprint for c in n.changes if c.kind == "firing"}


# ---- the title and the lead ---------------------------------------------------------------------


def lead_alert(n: Notification, p: Page | None) -> AlertSnapshot | None:
    """The alert the page opens with: the incident's root, else the worst firing alert."""
    if p is not None and p.lead.alert is not None:
        return p.lead.alert
    pool = n.firing or n.alerts
    if not pool:
        return None
    return max(pool, key=lambda a: (SEVERITY_ORDER.get(a.severity or "", 0), -(a.fired_at or a.active_at).timestamp()))


def title(n: Notification) -> str:
    """For a lock screen: `CRITICAL StuckMessage · orderConsumerA · prod`; severity is the notification's."""
    p = render_incident.page(n)
    state = "RESOLVED" if n.status == "resolved" else (n.severity or "firing").upper()
    lead = lead_alert(n, p)
    if p is not None:
        problem = p.lead.rule
        labels = lead.labels if lead is not None else p.lead.labels
    else:
        count = len(n.firing) if n.status == "firing" else len(n.alerts)
        problem = n.rule + (f" ×{count}" if count > 1 else "")
        labels = dict(n.group_labels) | (lead.labels if lead is not None else {})
    who = labels.get("group") or labels.get("broker") or labels.get("topic") or ""
    cluster = labels.get("cluster") or (common(n, "cluster") or "")
    if p is not None and not who:
        who = _who_of_id(p.incident.id)
    return " · ".join(part for part in (f"{state} {problem}", who, cluster) if part)


def subject(n: Notification) -> str:
    """The email subject, Slack's fallback text and the webhook's subject: the lock-screen title."""
    return title(n)


def _who_of_id(incident_id: str) -> str:
    values = [v for v in incident_id.split("@", 1)[0].split("/") if v]
    return values[-1] if len(values) >= 2 else ""


@dataclass(frozen=True)
class Lead:
    """The two lines that open a page and the links after them."""

    what: str  # `StuckMessage on broker-a/OrderTopic/3`, with `and 2 alerts it explains` when it does
    since: datetime | None  # when the lead started firing (None on a resolve)
    lasted: str  # `4 min`, up to this notification
    figure: str  # `value 240 vs 180 s`
    first_step: str  # the rule's first_step, else the first of its next steps ("" when it has none)
    now: datetime | None = None  # the notification's time: a start on the same day reads as a clock time
    ended: str = ""  # a resolve's line instead of the above: how long it lasted and what ended it
    incident_url: str = ""
    silence_url: str = ""
    runbook_url: str = ""

    def links(self) -> list[tuple[str, str]]:
        """(label, address) of each link the page carries."""
        return [(label, url) for label, url in (("Incident page", self.incident_url), ("Silence", self.silence_url),
                                                ("Runbook", self.runbook_url)) if url]


def lead(n: Notification, rules: RuleLookup | None = None, external_url: str = "") -> Lead:
    """What opens the page: what, where, since when, how bad, the first step, then the links."""
    p = render_incident.page(n)
    a = lead_alert(n, p)
    base = external_url.rstrip("/")
    incident_url = silence_url = ""
    if base and p is not None:
        incident_url = incident_link(base, p.incident.id)
        if n.status == "firing":
            silence_url = silence_link(base, [f'{INCIDENT_LABEL}="{p.incident.id}"'])
    elif base and a is not None and n.status == "firing":
        silence_url = silence_link(base, [f'alertname="{a.rule}"'] + [f'{k}="{v}"' for k, v in sorted(a.labels.items())])
    runbook = a.annotations.get("runbook_url", "") if a is not None else ""
    if n.status == "resolved":
        ended = p.ended if p is not None and p.ended else _ended_plain(n)
        return Lead(what="", since=None, lasted="", figure="", first_step="", ended=ended,
                    incident_url=incident_url, runbook_url=runbook)
    if a is None:
        return Lead(what=n.rule, since=None, lasted="", figure="", first_step="", incident_url=incident_url,
                    silence_url=silence_url, runbook_url=runbook)
    spot = render_incident.spot_of(a.labels)
    what = f"{a.rule} on {spot}" if spot else a.rule
    if a.state == "resolved":  # the lead ended; what it explained fires on
        still = [e for e in p.entries if e.firing] if p is not None else n.firing
        what += (f" resolved at {render_incident.clock(a.resolved_at, n.created_at)}; "
                 f"{len(still)} alert{'s' if len(still) != 1 else ''} of it still fire{'s' if len(still) == 1 else ''}")
        return Lead(what=what, since=None, lasted="", figure="", first_step="", incident_url=incident_url,
                    silence_url=silence_url, runbook_url=runbook)
    if p is not None and p.cause_known:
        explained = [e for e in p.followed if e.firing]
        if explained:
            what += f" and {len(explained)} alert{'s' if len(explained) != 1 else ''} it explains"
    since = a.active_at  # the condition has held since then; "firing since" (after `for`) is in the details
    lasted = n.created_at - since
    fig = alert_figures(a, rules)
    if fig.unit == "s" and fig.value is not None and fig.value > lasted.total_seconds():
        # A stall's value is how long it has been stuck, from before the rule could see it.
        lasted = timedelta(seconds=fig.value)
        since = n.created_at - lasted
    return Lead(what=what, since=since, lasted=render_incident.duration(lasted), figure=figure(a, rules), now=n.created_at,
                first_step=first_step(a), incident_url=incident_url, silence_url=silence_url, runbook_url=runbook)


def first_step(a: AlertSnapshot) -> str:
    """The rule's `first_step`; without one, the first of its numbered next steps when that is short."""
    if a.annotations.get("first_step"):
        return a.annotations["first_step"]
    steps = a.annotations.get("next_steps", "")
    if not re.search(r"\s2\)\s", steps):
        return ""  # one step only: the next steps below say it, once
    first = re.split(r"\s+2\)\s", steps, maxsplit=1)[0]
    first = re.sub(r"^1\)\s*", "", first).strip()
    return first if 0 < len(first) <= 200 else ""


def _ended_plain(n: Notification) -> str:
    last = max((a.resolved_at for a in n.alerts if a.resolved_at), default=n.created_at)
    first = min((a.fired_at or a.active_at for a in n.alerts), default=last)
    return f"Resolved after {render_incident.duration(last - first)}: all alerts of this group resolved at {when(last)}."


def incident_link(external_url: str, incident_id: str) -> str:
    """`<external_url>/incidents/<url-encoded id>`: the incident on the status page."""
    return f"{external_url.rstrip('/')}/incidents/{quote(incident_id, safe='')}"


def silence_link(external_url: str, matchers: list[str]) -> str:
    """The status page's silence form, filled with the matchers."""
    return f"{external_url.rstrip('/')}/?{urlencode([('m', m) for m in matchers])}#silence-form"
