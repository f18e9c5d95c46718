"""Notifications as words: plain text (console, email), HTML (email) and Slack Block Kit.

Every function takes an optional `rules` lookup (alert name -> rule): with it, an alert's figures
read as its rule defines them (daemon/alerts/figures.py), as on the status page; without it, or for
a rule no longer loaded, the raw value and threshold are shown.
"""

from __future__ import annotations

import html
import json
from collections.abc import Sequence
from datetime import datetime
from typing import Any

from daemon.alerts.figures import Figures, RuleLookup, figures
from daemon.notify.model import AlertSnapshot, Change, Notification

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
    """`[FIRING:1] ProcessQueueSpanTooLong stuckGroup (prod)`: status, rule, group values, (cluster)."""
    status = f"FIRING:{len(n.firing)}" if n.status == "firing" else "RESOLVED"
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
    lines = []
    for c in n.changes:
        mark = {"firing": EMOJI.get(c.severity or "", ":bell:"), "resolved": EMOJI["resolved"]}.get(
            c.kind, ":arrow_up:" if c.reason == "escalated" else ":arrow_down:"
        )
        lines.append(f"{mark} {_esc(change_line(n, c, rules))}")
    if n.status == "resolved":
        last = max((a.resolved_at for a in n.alerts if a.resolved_at), default=n.created_at)
        lines.append(f"{EMOJI['resolved']} All alerts of this group resolved at {when(last)}.")
    if not lines and n.reason == REMINDER:
        lines.append(f":repeat: {reminder_line(n)}")
    return _cut("\n".join(lines) or "Updated.", _SLACK_SECTION_MAX)


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
