"""The status page's HTML: plain functions from daemon state to escaped markup, no template engine."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from html import escape
from typing import Any
from urllib.parse import urlencode

from daemon.alerts.figures import Figures, figures
from daemon.alerts.incidents import INCIDENT_LABEL, locus_of
from daemon.alerts.model import AlertInstance
from daemon.alerts.silences import Silence
from daemon.common.charts.sparkline import Point, svg_sparkline
from daemon.common.judged_on import GroupBasis
from daemon.http.incidents import Role, cause_known, group_keys, placed, reading_order, shown
from daemon.http.judged_render import judged_section
from daemon.http.relative_time import ago, span
from daemon.http.status_collection import cycles_section, health_section
from daemon.http.status_ha import HaView, ha_section
from daemon.http.status_silences import silences_section
from daemon.http.view import CycleView, IncidentMemberView, IncidentView
from daemon.notify.dispatcher import group_key, group_labels

SEVERITY_COLOURS = {"critical": "#c62828", "warning": "#ef6c00", "info": "#1565c0"}
NO_SEVERITY_COLOUR = "#616161"

STYLE = """
body{font-family:system-ui,sans-serif;margin:1.5em;color:#212121;background:#fafafa}
h1{font-size:1.4em}h2{font-size:1.15em;margin-top:1.6em;border-bottom:1px solid #ccc}
table{border-collapse:collapse;margin:.4em 0;width:100%}
td,th{border:1px solid #ddd;padding:.3em .5em;text-align:left;vertical-align:top;font-size:.92em}
th{background:#eee}.group{margin:.8em 0;padding:.4em .6em;background:#fff;border:1px solid #ddd}
.sev{color:#fff;padding:.1em .45em;border-radius:.3em;font-weight:600}
.pending{opacity:.75}.label{display:inline-block;font-family:monospace;background:#eceff1;padding:0 .3em;
margin:0 .2em .1em 0;word-break:break-all}details{margin-top:.3em}details p{white-space:pre-wrap;max-width:70em}
.bad{color:#c62828;font-weight:600}.ok{color:#2e7d32}.muted{color:#757575}
.note{background:#e8f5e9;padding:0 .4em;border-radius:.3em;font-size:.9em}
form.silence label{display:block;margin:.3em 0}form.silence textarea,form.silence input{width:28em}
.incident.closed{opacity:.7}.lead{margin:.35em 0}tr.resolved{opacity:.6}.closed tr.resolved{opacity:1}
.role{font-size:.8em;text-transform:uppercase;letter-spacing:.04em;background:#37474f;color:#fff;
padding:0 .35em;border-radius:.3em;margin-right:.3em}.why{margin-top:.25em;font-size:.9em}
tr.consequence td:nth-child(3){padding-left:1.6em}
"""


@dataclass(frozen=True)
class PageState:
    """Everything the page shows, read from the daemon once per request."""

    now: datetime
    alerts: Sequence[AlertInstance]
    muted: set[str]
    group_by: Sequence[str]
    silences: Sequence[Silence]
    cycles: Sequence[CycleView]
    health: Mapping[str, list[dict[str, Any]]]
    last_cycle_at: datetime | None
    token_required: bool
    prefill: Sequence[str] = ()
    series: Mapping[str, Sequence[Point]] = field(default_factory=dict)  # fingerprint -> value over time
    group_notes: Mapping[str, Sequence[str]] = field(default_factory=dict)  # group key -> who acked/silenced
    rules: Mapping[str, Any] = field(default_factory=dict)  # alert name -> the rule, for its figures' meaning
    incidents: Sequence[IncidentView] = ()  # open, and resolved within the last day
    judged: Mapping[str, Sequence[GroupBasis]] = field(default_factory=dict)  # cluster -> what each group is judged on
    ha: HaView | None = None  # the dispatch lease, with an `ha:` section


def _number(value: float | None) -> str:
    if value is None:
        return "–"
    return f"{value:,.0f}" if abs(value) >= 100 or value == int(value) else f"{value:.3g}"


def _present(labels: Mapping[str, str | None]) -> dict[str, str]:
    # A label that does not apply to an alert (no group for a broker's alert) is absent, never "".
    return {k: v for k, v in labels.items() if v}


def _labels(labels: Mapping[str, str]) -> str:
    return "".join(f'<span class="label">{escape(k)}="{escape(v)}"</span>'
                   for k, v in sorted(_present(labels).items()))


def _figures(fig: Figures, sep: str = "<br>") -> str:
    unit = f" {escape(fig.unit)}" if fig.unit else ""
    text = f"{_number(fig.value)}"
    text += f" vs {_number(fig.threshold)}{unit}" if fig.threshold is not None else unit
    if fig.condition:
        text += f'{sep}<span class="muted">fires while {escape(fig.condition)}</span>'
    return text


def _severity(severity: str | None) -> str:
    colour = SEVERITY_COLOURS.get(severity or "", NO_SEVERITY_COLOUR)
    return f'<span class="sev" style="background:{colour}">{escape(severity or "none")}</span>'


def _silence_link(alert: AlertInstance) -> str:
    matchers = [f'alertname="{alert.rule}"'] + [f'{k}="{v}"' for k, v in sorted(_present(alert.labels).items())]
    return _prefill_link(matchers, "silence…")


def _prefill_link(matchers: Sequence[str], text: str) -> str:
    return f'<a href="/?{escape(urlencode([("m", m) for m in matchers]))}#silence-form">{escape(text)}</a>'


def _explain(notes: Mapping[str, str]) -> str:
    # Diagnoses run to paragraphs: folded, so the table stays readable with many alerts.
    parts = [f"<b>{title}</b><p>{escape(notes[key])}</p>"
             for key, title in (("diagnosis", "diagnosis"), ("next_steps", "next steps")) if notes.get(key)]
    return f"<details><summary>diagnosis and next steps</summary>{''.join(parts)}</details>" if parts else ""


def _since(alert: AlertInstance) -> datetime:
    return alert.fired_at if alert.state == "firing" and alert.fired_at else alert.active_at


def _alert_row(alert: AlertInstance, now: datetime, muted: bool, series: Sequence[Point] = (),
               rule: Any = None, link: tuple[str, str, str] = ("", "", "")) -> str:
    """One alert's row; `link` is (extra row class, markup before the rule's name, markup after its labels)."""
    notes = alert.annotations
    fig = figures(alert, rule)
    since = _since(alert)
    state = escape(alert.state) + (" <span class='muted'>(muted)</span>" if muted else "")
    state += " <span class='bad'>(no data)</span>" if alert.no_data else ""
    css, before, after = link
    return (
        f'<tr class="{escape(alert.state)}{css}" data-fingerprint="{escape(alert.fingerprint)}">'
        f"<td>{_severity(alert.severity)}</td><td>{state}</td>"
        f"<td>{before}<b>{escape(alert.rule)}</b><br>{_labels(alert.labels)}{after}</td>"
        f"<td>{_figures(fig)}{'<br>' + _chart(alert, series, fig.threshold) if len(series) > 1 else ''}</td>"
        f'<td title="{escape(since.isoformat())}">{ago(now, since)}</td>'
        f"<td>{escape(notes.get('summary', ''))}{_explain(notes)}</td><td>{_silence_link(alert)}</td></tr>"
    )


def _chart(alert: AlertInstance, series: Sequence[Point], threshold: float | None) -> str:
    colour = SEVERITY_COLOURS.get(alert.severity or "", NO_SEVERITY_COLOUR)
    return svg_sparkline(series, threshold, colour=colour)


ALERT_HEAD = (
    "<tr><th>severity</th><th>state</th><th>alert</th><th>value vs threshold</th><th>since</th>"
    "<th>summary, diagnosis and next steps</th><th></th></tr>"
)


def alerts_section(state: PageState) -> str:
    """Firing then pending alerts, grouped as notifications are: by incident (the default), else by group_by."""
    by_incident = INCIDENT_LABEL in state.group_by
    incidents = shown(state.incidents, state.now) if by_incident else []
    if not state.alerts and not incidents:
        return '<h2 id="alerts">Alerts</h2><p class="ok">Nothing firing or pending.</p>'
    heading = (f'Alerts ({sum(a.state == "firing" for a in state.alerts)} firing, '
               f'{sum(a.state == "pending" for a in state.alerts)} pending)')
    if not by_incident:
        return f'<h2 id="alerts">{heading}</h2>' + "".join(_groups(state, state.alerts, _group_heading))
    opened = [i for i in incidents if i.open]
    closed = [i for i in incidents if not i.open]
    heading += f", {len(opened)} open incident{'' if len(opened) == 1 else 's'}"
    parts = [f'<h2 id="alerts">{heading}</h2>']
    if not state.alerts:
        parts.append('<p class="ok">Nothing firing or pending.</p>')
    active = {a.fingerprint: a for a in state.alerts}
    parts += [_incident_block(state, i, active) for i in opened]
    in_incident = placed(opened)
    parts += _groups(state, [a for a in state.alerts if a.fingerprint not in in_incident], _unplaced_heading)
    if closed:
        parts.append("<h3>Resolved within the last hour</h3>")
        parts += [_incident_block(state, i, active) for i in closed]
    return "".join(parts)


def _group_heading(state: PageState, alert: AlertInstance) -> str:
    # The key stays the dispatcher's (notes are filed under it); the heading names only labels that apply.
    return f"<b>{escape(group_key(_present(group_labels(alert, state.group_by))))}</b>"


def _unplaced_heading(state: PageState, alert: AlertInstance) -> str:
    # Pending alerts (and a firing one the incident book has not placed yet): shown where they happen.
    where = _present(locus_of(alert.labels))
    return (f"<b>{escape(group_key(where) if where else alert.rule)}</b> "
            '<span class="muted">· not in an incident yet: an alert joins one when it fires</span>')


def _groups(state: PageState, alerts: Sequence[AlertInstance],
            heading: Callable[[PageState, AlertInstance], str]) -> list[str]:
    """The alerts grouped by the dispatcher's group key, firing groups first."""
    groups: dict[str, list[AlertInstance]] = {}
    for alert in alerts:
        groups.setdefault(group_key(group_labels(alert, state.group_by)), []).append(alert)
    order = {"firing": 0, "pending": 1}
    parts = []
    for key in sorted(groups, key=lambda k: (min(order.get(a.state, 2) for a in groups[k]), k)):
        members = sorted(groups[key], key=lambda a: (order.get(a.state, 2), a.rule, sorted(a.labels.items())))
        rows = "".join(
            _alert_row(a, state.now, a.fingerprint in state.muted, state.series.get(a.fingerprint, ()),
                       state.rules.get(a.rule))
            for a in members
        )
        notes = _notes(state, [key])
        parts.append(f'<div class="group">{heading(state, members[0])}{notes}<table>{ALERT_HEAD}{rows}</table></div>')
    return parts


def _notes(state: PageState, keys: Sequence[str]) -> str:
    return "".join(f' <span class="note">{escape(n)}</span>' for key in keys for n in state.group_notes.get(key, ()))


def _incident_block(state: PageState, incident: IncidentView, active: Mapping[str, AlertInstance]) -> str:
    """One incident: a line on its root alert, then a row per alert, the root first and what it explains next."""
    rules = {m.fingerprint: m.rule for m in incident.members}
    firing = [m for m in incident.members if m.resolved_at is None]
    if incident.resolved_at is not None:
        ended = rules.get(incident.ended_by or "", "")
        status = (f'<span class="ok">resolved</span> {ago(state.now, incident.resolved_at)}, after '
                  f"{span(int((incident.resolved_at - incident.opened_at).total_seconds()))}"
                  + (f" (ended by {escape(ended)})" if ended else ""))
    else:
        status = f'<span class="bad">open</span> since {ago(state.now, incident.opened_at)}'
    size = f"{len(firing)} of {len(incident.members)} alert{'' if len(incident.members) == 1 else 's'} firing"
    silence = (" · " + _prefill_link([f'{INCIDENT_LABEL}="{incident.id}"'], "silence the incident…")
               if incident.open else "")
    rows = "".join(_member_row(state, incident, m, role, active, rules) for m, role in reading_order(incident))
    return (
        f'<div class="group incident{"" if incident.open else " closed"}" data-incident="{escape(incident.id)}">'
        f'<b>incident {escape(incident.id)}</b> · {status} · {size}{silence}'
        f"{_notes(state, group_keys(incident, state.group_by))}"
        f'<p class="lead">{_lead(state, incident, active)}</p><table>{ALERT_HEAD}{rows}</table></div>'
    )


def _lead(state: PageState, incident: IncidentView, active: Mapping[str, AlertInstance]) -> str:
    """The root alert in a line: what, where, since when, its figure and summary."""
    root = incident.member(incident.root)
    if root is None:
        return ""
    what = "cause" if cause_known(incident) else "first alert"
    text = f'<span class="role">{what}</span><b>{escape(root.rule)}</b> {_labels(root.labels)}'
    alert = active.get(root.fingerprint) if root.resolved_at is None else None
    if alert is None:
        resolved = f"resolved {ago(state.now, root.resolved_at)}" if root.resolved_at else "not active"
        return f"{text} · since {ago(state.now, root.joined_at)}, {resolved}"
    text += f" · since {ago(state.now, _since(alert))} · {_figures(figures(alert, state.rules.get(alert.rule)), ' · ')}"
    summary = alert.annotations.get("summary")
    return f"{text} · {escape(summary)}" if summary else text


incident_block = _incident_block  # the incident's own page (daemon/http/incident_page.py) shows the same block


def _member_row(state: PageState, incident: IncidentView, member: IncidentMemberView, role: Role,
                active: Mapping[str, AlertInstance], rules: Mapping[str, str]) -> str:
    if role == "root":
        link = ("", f'<span class="role">{"cause" if cause_known(incident) else "first alert"}</span>', "")
    elif member.cause is not None:
        cause = escape(rules.get(member.cause, "another alert"))
        why = f": {escape(member.why)}" if member.why else ""
        link = (" consequence", "", f'<div class="why">↳ explained by <b>{cause}</b>{why}</div>')
    else:
        link = (" consequence", "", '<div class="why muted">↳ same place, no causal link known</div>')
    alert = active.get(member.fingerprint) if member.resolved_at is None else None
    if alert is not None:
        return _alert_row(alert, state.now, alert.fingerprint in state.muted, state.series.get(alert.fingerprint, ()),
                          state.rules.get(alert.rule), link)
    css, before, after = link
    when = member.resolved_at or member.joined_at
    return (
        f'<tr class="resolved{css}" data-fingerprint="{escape(member.fingerprint)}"><td></td>'
        f"<td>{'resolved' if member.resolved_at else 'not active'}</td>"
        f"<td>{before}<b>{escape(member.rule)}</b><br>{_labels(member.labels)}{after}</td>"
        f'<td class="muted">–</td><td title="{escape(when.isoformat())}">{ago(state.now, when)}</td>'
        "<td></td><td></td></tr>"
    )


def render_page(state: PageState) -> str:
    """The whole status page."""
    return (
        '<!doctype html><html lang="en"><head><meta charset="utf-8"><title>rocketwatch status</title>'
        '<link rel="icon" href="data:,"><meta name="viewport" content="width=device-width">'
        f"<style>{STYLE}</style></head><body><h1>rocketwatch</h1>"
        f'<p class="muted">as of {escape(state.now.strftime("%Y-%m-%d %H:%M:%S UTC"))} · '
        '<a href="/api/alerts">/api/alerts</a> · <a href="/api/silences">/api/silences</a> · '
        '<a href="/metrics">/metrics</a></p>'
        f"{alerts_section(state)}{ha_section(state.ha, state.now)}"
        f"{silences_section(state.silences, state.now, state.prefill, state.token_required)}"
        f"{cycles_section(state.cycles, state.last_cycle_at, state.now)}{health_section(state.health)}"
        f"{judged_section(state.judged)}"
        "</body></html>"
    )


def render_error(status: int, message: str) -> str:
    """A short page for a refused or invalid write."""
    return (
        '<!doctype html><html lang="en"><head><meta charset="utf-8"><title>rocketwatch: refused</title>'
        f'<link rel="icon" href="data:,"></head><body><h1>{status}: nothing changed</h1>'
        f'<p class="error">{escape(message)}</p><p><a href="/">back to the status page</a></p></body></html>'
    )
