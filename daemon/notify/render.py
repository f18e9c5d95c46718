"""Notifications as words: plain text (console, email), HTML (email) and Slack Block Kit.

Every function takes an optional `rules` lookup (alert name -> rule): with it, an alert's figures
read as its rule defines them (daemon/alerts/figures.py), as on the status page; without it, or for
a rule no longer loaded, the raw value and threshold are shown.

A notification about an incident (grouped by `incident`) leads with its cause: the title names the
root alert and how many alerts follow from it, the first lines are the root's, then what followed
(each with its link's why), then the incident's other alerts (render_incident.py decides what the
page says). Any other notification reads as it always did.
"""

from __future__ import annotations

import html
import json
from collections.abc import Sequence
from datetime import datetime
from typing import Any

from daemon.alerts.figures import Figures, RuleLookup, figures
from daemon.notify import render_incident
from daemon.notify.model import AlertSnapshot, Change, Notification
from daemon.notify.render_incident import Entry, Page

# Shown first, in this order, because they say *where*; any other label follows.
WHERE_LABELS = ("cluster", "broker", "group", "topic", "queue_id", "client_id")
COLOURS = {"critical": "#d1242f", "warning": "#e09b00", "resolved": "#2da44e", None: "#6e7781"}
EMOJI = {"critical": ":red_circle:", "warning": ":large_orange_circle:", "resolved": ":white_check_mark:"}
SLACK_MAX_ALERTS = 10
_SLACK_SECTION_MAX = 3000  # Slack rejects section text longer than this
_SLACK_HEADER_MAX = 150
_SLACK_BUTTON_VALUE_MAX = 2000  # Slack's limit on a button's value
# Block and action ids the Socket Mode listener (daemon/notify/slack_actions.py) recognises.
SLACK_ACTIONS_BLOCK = "rocketwatch_actions"
SLACK_NOTES_BLOCK = "rocketwatch_notes"
SLACK_ACTION_SILENCE_1H = "rocketwatch_silence_1h"
SLACK_ACTION_SILENCE_UNTIL_RESOLVED = "rocketwatch_silence_until_resolved"
SLACK_ACTION_ACK = "rocketwatch_ack"


def subject(n: Notification) -> str:
    """`[FIRING:1] ProcessQueueSpanTooLong stuckGroup (prod)`: status, rule, group values, (cluster).

    An incident's: `[FIRING:3] orderConsumerA (prod): StuckMessage and 2 alerts it explains`.
    """
    status = f"FIRING:{len(n.firing)}" if n.status == "firing" else "RESOLVED"
    p = render_incident.page(n)
    if p is not None:
        return f"[{status}] {p.title}"
    values = [v for k, v in n.group_labels.items() if k not in ("alertname", "cluster") and v]
    cluster = n.group_labels.get("cluster") or _common(n, "cluster")
    text = " ".join([f"[{status}]", n.rule, *values])
    return f"{text} ({cluster})" if cluster else text


def when(dt: datetime | None) -> str:
    """A timestamp as operators read it in a message: `2026-03-01 12:00:05 UTC`."""
    return dt.strftime("%Y-%m-%d %H:%M:%S UTC") if dt else "-"


def where(alert: AlertSnapshot) -> list[tuple[str, str]]:
    """The alert's labels, location labels first."""
    first = [(k, alert.labels[k]) for k in WHERE_LABELS if alert.labels.get(k)]
    rest = sorted((k, v) for k, v in alert.labels.items() if k not in WHERE_LABELS)
    return first + rest


def change_line(n: Notification, change: Change, rules: RuleLookup | None = None) -> str:
    """One sentence saying what a change was, e.g. `escalated warning → critical: <summary>`."""
    alert = n.alert(change.fingerprint)
    summary = _summary(alert, rules) if alert else change.fingerprint
    if change.kind == "firing":
        return f"new alert ({change.severity or 'no severity'}): {summary}"
    if change.kind == "resolved":
        return f"resolved{f' ({change.reason})' if change.reason else ''}: {summary}"
    verb = change.reason or "severity changed"
    return f"{verb} {change.previous_severity} → {change.severity}: {summary}"


# ---- plain text ----------------------------------------------------------------------------------


def text(n: Notification, rules: RuleLookup | None = None) -> str:
    """The whole notification as plain text (console and the email text part)."""
    p = render_incident.page(n)
    if p is not None:
        return _incident_text(n, p, rules)
    lines = [subject(n), ""]
    if n.is_update and n.changes:
        lines += ["What changed:", *(f"  - {change_line(n, c, rules)}" for c in n.changes), ""]
    elif n.reason == REMINDER:
        lines += [f"Reminder. {reminder_line(n)}", ""]
    for alert in n.alerts:
        lines += _alert_text(alert, rules) + [""]
    lines.append("Group: " + ", ".join(f"{k}={v}" for k, v in _group(n)))
    return "\n".join(lines).rstrip() + "\n"


def _alert_text(a: AlertSnapshot, rules: RuleLookup | None) -> list[str]:
    head = f"[{a.state.upper()}] {(a.severity or '').upper()} {a.rule}".replace("  ", " ")
    lines = [head, f"  {_summary(a, rules)}"]
    lines.append("  " + " ".join(f"{k}={v}" for k, v in where(a)))
    lines.append(f"  {_timeline(a, rules)}")
    if a.no_data:
        lines.append("  (no fresh data for this series: held as it was, not resolved)")
    for title, key in (("Diagnosis", "diagnosis"), ("Next steps", "next_steps")):
        if a.annotations.get(key):
            lines.append(f"  {title}: {a.annotations[key]}")
    return lines


# ---- HTML ----------------------------------------------------------------------------------------


def html_body(n: Notification, rules: RuleLookup | None = None) -> str:
    """The notification as a small, self-contained HTML document (every value escaped)."""
    p = render_incident.page(n)
    if p is not None:
        return _incident_html(n, p, rules)
    e = html.escape
    colour = COLOURS["resolved"] if n.status == "resolved" else COLOURS.get(n.severity, COLOURS[None])
    parts = [
        "<!DOCTYPE html><html><body style=\"font-family:sans-serif\">",
        f"<h2 style=\"color:{colour}\">{e(subject(n))}</h2>",
    ]
    if n.is_update and n.changes:
        items = "".join(f"<li>{e(change_line(n, c, rules))}</li>" for c in n.changes)
        parts.append(f"<p><b>What changed</b></p><ul>{items}</ul>")
    for a in n.alerts:
        c = COLOURS["resolved"] if a.state == "resolved" else COLOURS.get(a.severity, COLOURS[None])
        parts.append(f"<div style=\"border-left:4px solid {c};padding-left:8px;margin:12px 0\">")
        parts.append(f"<p><b>{e(a.state.upper())} {e((a.severity or '').upper())}</b> {e(a.rule)}</p>")
        parts.append(f"<p>{e(_summary(a, rules))}</p>")
        rows = "".join(f"<tr><td><code>{e(k)}</code></td><td>{e(v)}</td></tr>" for k, v in where(a))
        parts.append(f"<table>{rows}</table><p><small>{e(_timeline(a, rules))}</small></p>")
        for title, key in (("Diagnosis", "diagnosis"), ("Next steps", "next_steps")):
            if a.annotations.get(key):
                parts.append(f"<p><b>{title}:</b> {e(a.annotations[key])}</p>")
        parts.append("</div>")
    group = ", ".join(f"{k}={v}" for k, v in _group(n))
    parts.append(f"<p><small>Group: {e(group)}</small></p></body></html>")
    return "\n".join(parts)


# ---- Slack ---------------------------------------------------------------------------------------


def slack_message(
    n: Notification, max_alerts: int = SLACK_MAX_ALERTS, actions: bool = False, notes: Sequence[str] = (),
    rules: RuleLookup | None = None,
) -> dict[str, Any]:
    """Keyword arguments for chat.postMessage / chat.update: fallback text, header blocks, coloured body."""
    p = render_incident.page(n)
    if p is not None:
        return _incident_slack(n, p, max_alerts, actions, notes, rules)
    state = "resolved" if n.status == "resolved" else n.severity
    emoji = EMOJI.get(state or "", ":grey_question:")
    status = "RESOLVED" if n.status == "resolved" else f"FIRING ({len(n.firing)})"
    header = _cut(f"{status} · {n.rule}", _SLACK_HEADER_MAX)
    group = " · ".join(f"{k} `{_esc(v)}`" for k, v in _group(n) if k != "alertname")
    blocks: list[dict[str, Any]] = [
        {"type": "header", "text": {"type": "plain_text", "text": f"{emoji} {header}", "emoji": True}},
        {"type": "context", "elements": [{"type": "mrkdwn", "text": group or "all alerts"}]},
    ]
    if notes:
        blocks.append(slack_note_block(notes))
    if actions and n.status == "firing":
        blocks.append(slack_actions_block(n.group_key, n.group_labels, acknowledged=any(
            note.startswith("Acknowledged") for note in notes)))
    body: list[dict[str, Any]] = []
    shown = n.alerts[:max_alerts]
    for a in shown:
        body.append({"type": "section", "text": {"type": "mrkdwn", "text": _slack_alert(a, rules)}})
        labels = " · ".join(f"{k} `{_esc(v)}`" for k, v in where(a))
        body.append({"type": "context", "elements": [{"type": "mrkdwn", "text": _cut(labels, 3000)}]})
    if len(n.alerts) > len(shown):
        more = len(n.alerts) - len(shown)
        body.append({"type": "context", "elements": [{"type": "mrkdwn", "text": f"_and {more} more_"}]})
    colour = COLOURS["resolved"] if n.status == "resolved" else COLOURS.get(n.severity, COLOURS[None])
    return {
        "text": subject(n),
        "blocks": blocks,
        "attachments": [{"color": colour, "fallback": subject(n), "blocks": body}],
    }


def slack_note_block(notes: Sequence[str]) -> dict[str, Any]:
    """A context block saying who acknowledged or silenced the group."""
    text = _cut(" · ".join(f":bust_in_silhouette: {_esc(note)}" for note in notes), 3000)
    return {"type": "context", "block_id": SLACK_NOTES_BLOCK, "elements": [{"type": "mrkdwn", "text": text}]}


def slack_actions_block(group_key: str, group_labels: dict[str, str], acknowledged: bool = False) -> dict[str, Any]:
    """Buttons to silence or acknowledge the group; each carries the group's key and labels."""
    value = json.dumps({"group_key": group_key, "labels": group_labels}, separators=(",", ":"))
    if len(value) > _SLACK_BUTTON_VALUE_MAX:  # a button that cannot name its group would act on nothing
        return {"type": "context", "block_id": SLACK_ACTIONS_BLOCK, "elements": [
            {"type": "mrkdwn", "text": "_group labels too long for buttons: use `rocketwatch silence add`_"}]}
    buttons = [
        ("Silence 1h", SLACK_ACTION_SILENCE_1H),
        ("Silence until resolved", SLACK_ACTION_SILENCE_UNTIL_RESOLVED),
    ]
    if not acknowledged:
        buttons.append(("Acknowledge", SLACK_ACTION_ACK))
    return {
        "type": "actions",
        "block_id": SLACK_ACTIONS_BLOCK,
        "elements": [
            {"type": "button", "action_id": action_id, "value": value,
             "text": {"type": "plain_text", "text": label, "emoji": True}}
            for label, action_id in buttons
        ],
    }


def slack_thread_reply(n: Notification, rules: RuleLookup | None = None) -> str:
    """The thread reply for a change to a group that already has a message."""
    p = render_incident.page(n)
    if p is not None:
        return _incident_thread_reply(n, p, rules)
    lines = [f"{_change_mark(c)} {_esc(change_line(n, c, rules))}" for c in n.changes]
    if n.status == "resolved":
        last = max((a.resolved_at for a in n.alerts if a.resolved_at), default=n.created_at)
        lines.append(f"{EMOJI['resolved']} All alerts of this group resolved at {when(last)}.")
    if not lines and n.reason == REMINDER:
        lines.append(f":repeat: {reminder_line(n)}")
    return _cut("\n".join(lines) or "Updated.", _SLACK_SECTION_MAX)


def _change_mark(c: Change) -> str:
    return {"firing": EMOJI.get(c.severity or "", ":bell:"), "resolved": EMOJI["resolved"]}.get(
        c.kind, ":arrow_up:" if c.reason == "escalated" else ":arrow_down:"
    )


REMINDER = "repeat_interval_elapsed"


def reminder_line(n: Notification) -> str:
    """`Still firing: 3 alerts, the oldest since 10:02 UTC.`"""
    since = min((a.fired_at or a.active_at for a in n.firing), default=n.created_at)
    count = len(n.firing)
    return f"Still firing: {count} alert{'s' if count != 1 else ''}, the oldest since {when(since)}."


def _slack_alert(a: AlertSnapshot, rules: RuleLookup | None) -> str:
    mark = EMOJI["resolved"] if a.state == "resolved" else EMOJI.get(a.severity or "", ":grey_question:")
    lines = [f"{mark} *{_esc(_summary(a, rules))}*", f"_{_esc(_timeline(a, rules))}_"]
    for title, key in (("Diagnosis", "diagnosis"), ("Next steps", "next_steps")):
        if a.annotations.get(key):
            lines.append(f"*{title}:* {_esc(a.annotations[key])}")
    return _cut("\n".join(lines), _SLACK_SECTION_MAX)


# ---- an incident: the cause first ----------------------------------------------------------------
# The page (render_incident.Page) says what leads and what followed; these lay it out. Shared by all
# three: the status line (how it ended), "Cause found", what changed, the lead with its diagnosis and
# next steps, "What followed from it" with each link's why, "Also firing here", then the details.

FOLLOWED = "What followed from it"


def _incident_changes(n: Notification, p: Page) -> list[Change]:
    # The lead's own "new alert" change is what the "Cause found" line already says.
    if p.cause_found is None:
        return list(n.changes)
    return [c for c in n.changes if not (c.kind == "firing" and c.fingerprint == p.lead.fingerprint)]


def _also_heading(n: Notification, p: Page) -> str:
    return "Also firing here" if n.status == "firing" and all(e.firing for e in p.also) else "Also here"


def _lead_head(p: Page) -> str:
    """`Cause: StuckMessage (WARNING), firing since 2026-03-01 12:03:10 UTC`."""
    e, a = p.lead, p.lead.alert
    if a is None:
        state = (f"resolved at {when(e.resolved_at)}" if e.resolved_at
                 else "firing, not on this page (silenced, inhibited or sent to another receiver)")
        return f"{p.lead_label}: {e.named}, {state}"
    severity = f" ({a.severity.upper()})" if a.severity else ""
    state = f"resolved at {when(a.resolved_at)}" if a.state == "resolved" else f"firing since {when(a.fired_at or a.active_at)}"
    return f"{p.lead_label}: {e.rule}{severity}, {state}"


def _entry_line(e: Entry, rules: RuleLookup | None) -> str:
    """`ProcessQueueSpanTooLong: <summary> · value 1500 vs 1000`: what it is and its figure."""
    a = e.alert
    if a is None:
        return f"{e.named}: resolved at {when(e.resolved_at)}"
    parts = [f"{e.rule}: {_summary(a, rules)}"]
    if a.annotations.get("summary"):  # without one, the summary sentence already states the figures
        parts += figures_text(alert_figures(a, rules))
    if a.state == "resolved":
        parts.append(f"resolved at {when(a.resolved_at)}")
    return " · ".join(parts)


def _why_line(e: Entry) -> str:
    if not e.why:
        return ""
    return f"{e.via} explains it: {e.why}" if e.via else f"why: {e.why}"


def _incident_footer(n: Notification, p: Page) -> list[tuple[str, str]]:
    # The group's labels other than the incident's id, which the incident line already names.
    return [(k, v) for k, v in _group(n) if not (k == "incident" and v == p.incident.id)]


def _incident_text(n: Notification, p: Page, rules: RuleLookup | None) -> str:
    lines = [subject(n), ""]
    if p.ended:
        lines += [p.ended, ""]
    if p.cause_found:
        lines += [p.cause_found, ""]
    changes = _incident_changes(n, p)
    if n.is_update and changes:
        lines += ["What changed:", *(f"  - {change_line(n, c, rules)}" for c in changes), ""]
    elif n.reason == REMINDER:
        lines += [f"Reminder. {reminder_line(n)}", ""]
    lines.append(_lead_head(p))
    if p.lead.alert is not None:
        lines += _alert_text(p.lead.alert, rules)[1:]
    lines.append("")
    for heading, entries in ((FOLLOWED, p.followed), (_also_heading(n, p), p.also)):
        if not entries:
            continue
        lines.append(f"{heading}:")
        for e in entries:
            indent = "  " * max(e.depth - 1, 0)
            lines.append(f"  {indent}- {_entry_line(e, rules)}")
            if _why_line(e):
                lines.append(f"  {indent}  {_why_line(e)}")
        lines.append("")
    details = [e.alert for e in [*p.followed, *p.also] if e.alert is not None]
    if details:
        lines += ["Details of the other alerts:", ""]
        for a in details:
            lines += _alert_text(a, rules) + [""]
    lines.append(f"Incident {p.incident.id}, opened {when(p.incident.opened_at)}")
    rest = _incident_footer(n, p)
    if rest:
        lines.append("Group: " + ", ".join(f"{k}={v}" for k, v in rest))
    return "\n".join(lines).rstrip() + "\n"


def _incident_html(n: Notification, p: Page, rules: RuleLookup | None) -> str:
    e = html.escape
    colour = COLOURS["resolved"] if n.status == "resolved" else COLOURS.get(n.severity, COLOURS[None])
    parts = [
        "<!DOCTYPE html><html><body style=\"font-family:sans-serif\">",
        f"<h2 style=\"color:{colour}\">{e(subject(n))}</h2>",
    ]
    if p.ended:
        parts.append(f"<p><b>{e(p.ended)}</b></p>")
    if p.cause_found:
        parts.append(f"<p><b>{e(p.cause_found)}</b></p>")
    changes = _incident_changes(n, p)
    if n.is_update and changes:
        items = "".join(f"<li>{e(change_line(n, c, rules))}</li>" for c in changes)
        parts.append(f"<p><b>What changed</b></p><ul>{items}</ul>")
    lead = p.lead.alert
    c = COLOURS["resolved"] if lead is None or lead.state == "resolved" else COLOURS.get(lead.severity, COLOURS[None])
    parts.append(f"<div style=\"border-left:4px solid {c};padding-left:8px;margin:12px 0\">")
    parts.append(f"<p><b>{e(_lead_head(p))}</b></p>")
    if lead is not None:
        parts += _alert_html(lead, rules)
    parts.append("</div>")
    for heading, entries in ((FOLLOWED, p.followed), (_also_heading(n, p), p.also)):
        if not entries:
            continue
        items = "".join(
            f"<li style=\"margin-left:{16 * max(x.depth - 1, 0)}px\">{e(_entry_line(x, rules))}"
            + (f"<br><i>{e(_why_line(x))}</i>" if _why_line(x) else "") + "</li>"
            for x in entries
        )
        parts.append(f"<p><b>{e(heading)}</b></p><ul>{items}</ul>")
    details = [x.alert for x in [*p.followed, *p.also] if x.alert is not None]
    if details:
        parts.append("<p><b>Details of the other alerts</b></p>")
    for a in details:
        c = COLOURS["resolved"] if a.state == "resolved" else COLOURS.get(a.severity, COLOURS[None])
        parts.append(f"<div style=\"border-left:4px solid {c};padding-left:8px;margin:12px 0\">")
        parts.append(f"<p><b>{e(a.state.upper())} {e((a.severity or '').upper())}</b> {e(a.rule)}</p>")
        parts += _alert_html(a, rules)
        parts.append("</div>")
    foot = f"Incident {p.incident.id}, opened {when(p.incident.opened_at)}"
    rest = _incident_footer(n, p)
    if rest:
        foot += " · Group: " + ", ".join(f"{k}={v}" for k, v in rest)
    parts.append(f"<p><small>{e(foot)}</small></p></body></html>")
    return "\n".join(parts)


def _alert_html(a: AlertSnapshot, rules: RuleLookup | None) -> list[str]:
    e = html.escape
    rows = "".join(f"<tr><td><code>{e(k)}</code></td><td>{e(v)}</td></tr>" for k, v in where(a))
    parts = [f"<p>{e(_summary(a, rules))}</p>", f"<table>{rows}</table><p><small>{e(_timeline(a, rules))}</small></p>"]
    for title, key in (("Diagnosis", "diagnosis"), ("Next steps", "next_steps")):
        if a.annotations.get(key):
            parts.append(f"<p><b>{title}:</b> {e(a.annotations[key])}</p>")
    return parts


def _incident_slack(
    n: Notification, p: Page, max_alerts: int, actions: bool, notes: Sequence[str], rules: RuleLookup | None,
) -> dict[str, Any]:
    state = "resolved" if n.status == "resolved" else n.severity
    emoji = EMOJI.get(state or "", ":grey_question:")
    status = "RESOLVED" if n.status == "resolved" else f"FIRING ({len(n.firing)})"
    header = _cut(f"{status} · {p.title}", _SLACK_HEADER_MAX)
    context = [f"incident `{_esc(p.incident.id)}`", f"opened {when(p.incident.opened_at)}"]
    context += [f"{k} `{_esc(v)}`" for k, v in _incident_footer(n, p) if k != "alertname"]
    blocks: list[dict[str, Any]] = [
        {"type": "header", "text": {"type": "plain_text", "text": f"{emoji} {header}", "emoji": True}},
        {"type": "context", "elements": [{"type": "mrkdwn", "text": _cut(" · ".join(context), 3000)}]},
    ]
    if p.ended:
        blocks.append({"type": "section", "text": {"type": "mrkdwn", "text": _cut(
            f"{EMOJI['resolved']} {_esc(p.ended)}", _SLACK_SECTION_MAX)}})
    if notes:
        blocks.append(slack_note_block(notes))
    if actions and n.status == "firing":
        blocks.append(slack_actions_block(n.group_key, n.group_labels, acknowledged=any(
            note.startswith("Acknowledged") for note in notes)))
    body: list[dict[str, Any]] = [{"type": "section", "text": {"type": "mrkdwn", "text": _slack_lead(p, rules)}}]
    if p.lead.alert is not None:
        body.append(_slack_labels(p.lead.alert))
    shown = 1
    for heading, entries in ((FOLLOWED, p.followed), (_also_heading(n, p), p.also)):
        room = entries[: max(max_alerts - shown, 0)]
        if not room:
            continue
        body.append({"type": "section", "text": {"type": "mrkdwn", "text": f"*{heading}:*"}})
        for x in room:
            # What followed reads in the light of the cause's diagnosis; an unrelated alert keeps its own.
            body.append({"type": "section", "text": {"type": "mrkdwn", "text": _slack_entry(
                x, rules, details=entries is p.also)}})
            if x.alert is not None:
                body.append(_slack_labels(x.alert))
        shown += len(room)
    if len(p.entries) > shown:
        body.append({"type": "context", "elements": [{"type": "mrkdwn", "text": f"_and {len(p.entries) - shown} more_"}]})
    colour = COLOURS["resolved"] if n.status == "resolved" else COLOURS.get(n.severity, COLOURS[None])
    return {
        "text": subject(n),
        "blocks": blocks,
        "attachments": [{"color": colour, "fallback": subject(n), "blocks": body}],
    }


def _slack_labels(a: AlertSnapshot) -> dict[str, Any]:
    labels = " · ".join(f"{k} `{_esc(v)}`" for k, v in where(a))
    return {"type": "context", "elements": [{"type": "mrkdwn", "text": _cut(labels, 3000)}]}


def _slack_lead(p: Page, rules: RuleLookup | None) -> str:
    a = p.lead.alert
    if a is None:
        return _cut(f"{EMOJI['resolved'] if p.lead.resolved_at else ':grey_question:'} *{_esc(_lead_head(p))}*",
                    _SLACK_SECTION_MAX)
    mark = EMOJI["resolved"] if a.state == "resolved" else EMOJI.get(a.severity or "", ":grey_question:")
    lines = [f"{mark} *{_esc(_lead_head(p))}*", _esc(_summary(a, rules)), f"_{_esc(_timeline(a, rules))}_"]
    for title, key in (("Diagnosis", "diagnosis"), ("Next steps", "next_steps")):
        if a.annotations.get(key):
            lines.append(f"*{title}:* {_esc(a.annotations[key])}")
    return _cut("\n".join(lines), _SLACK_SECTION_MAX)


def _slack_entry(x: Entry, rules: RuleLookup | None, details: bool) -> str:
    a = x.alert
    if a is None:
        mark = EMOJI["resolved"]
    else:
        mark = EMOJI["resolved"] if a.state == "resolved" else EMOJI.get(a.severity or "", ":grey_question:")
    arrow = "↳ " * max(x.depth - 1, 0)
    rule, _, rest = _entry_line(x, rules).partition(": ")
    lines = [f"{arrow}{mark} *{_esc(rule)}*: {_esc(rest)}"]
    if _why_line(x):
        lines.append(f"_{_esc(_why_line(x))}_")
    if details and a is not None:
        for title, key in (("Diagnosis", "diagnosis"), ("Next steps", "next_steps")):
            if a.annotations.get(key):
                lines.append(f"*{title}:* {_esc(a.annotations[key])}")
    return _cut("\n".join(lines), _SLACK_SECTION_MAX)


def _incident_thread_reply(n: Notification, p: Page, rules: RuleLookup | None) -> str:
    lines = [f":mag: {_esc(p.cause_found)}"] if p.cause_found else []
    lines += [f"{_change_mark(c)} {_esc(change_line(n, c, rules))}" for c in _incident_changes(n, p)]
    if n.status == "resolved":
        if p.ended:
            lines.append(f"{EMOJI['resolved']} {_esc(p.ended)}")
        else:
            last = max((a.resolved_at for a in n.alerts if a.resolved_at), default=n.created_at)
            lines.append(f"{EMOJI['resolved']} All alerts of this group resolved at {when(last)}.")
    if not lines and n.reason == REMINDER:
        lines.append(f":repeat: {reminder_line(n)}")
    return _cut("\n".join(lines) or "Updated.", _SLACK_SECTION_MAX)


# ---- shared --------------------------------------------------------------------------------------


def alert_figures(a: AlertSnapshot, rules: RuleLookup | None = None) -> Figures:
    """The alert's value and threshold as its rule defines them (the raw pair when the rule is unknown)."""
    return figures(a, rules(a.rule) if rules is not None else None)


def figures_text(fig: Figures) -> list[str]:
    """`value 250 vs 100 ms`, or `value 1.38 ms` and `fires while not ok` where no threshold applies."""
    unit = f" {fig.unit}" if fig.unit else ""
    if fig.threshold is not None:
        parts = [f"value {_num(fig.value)} vs {_num(fig.threshold)}{unit}"]
    else:
        parts = [f"value {_num(fig.value)}{unit}"]
    if fig.condition:
        parts.append(f"fires while {fig.condition}")
    return parts


def _summary(a: AlertSnapshot, rules: RuleLookup | None) -> str:
    if a.annotations.get("summary"):
        return a.annotations["summary"]
    labels = ", ".join(f"{k}={v}" for k, v in where(a))
    return f"{a.rule} ({labels}) {', '.join(figures_text(alert_figures(a, rules)))}"


def _timeline(a: AlertSnapshot, rules: RuleLookup | None) -> str:
    parts = figures_text(alert_figures(a, rules))
    parts.append(f"active since {when(a.active_at)}")
    if a.fired_at:
        parts.append(f"firing since {when(a.fired_at)}")
    if a.resolved_at:
        parts.append(f"resolved at {when(a.resolved_at)}")
    return " · ".join(parts)


def _num(v: float | None) -> str:
    if v is None:
        return "-"
    return str(int(v)) if float(v).is_integer() else f"{v:.3g}"


def _group(n: Notification) -> list[tuple[str, str]]:
    # A grouping label the alerts do not have (no consumer group on a broker's alert) is absent, never "".
    return [(k, v) for k, v in n.group_labels.items() if v]


def _common(n: Notification, label: str) -> str | None:
    values = {a.labels.get(label) for a in n.alerts}
    return values.pop() if len(values) == 1 else None


def _esc(s: str) -> str:
    # Slack mrkdwn treats &, < and > as control characters (links, mentions); everything else is literal.
    return s.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


def _cut(s: str, limit: int) -> str:
    return s if len(s) <= limit else s[: limit - 1] + "…"
