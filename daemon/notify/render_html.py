"""A notification as a small, self-contained HTML document: the email's HTML part (render_layout says what)."""

from __future__ import annotations

import html

from daemon.alerts.figures import RuleLookup
from daemon.notify import render_common as c
from daemon.notify import render_incident
from daemon.notify.model import Notification
from daemon.notify.render_layout import Item, Layout, layout


def html_body(n: Notification, rules: RuleLookup | None = None, external_url: str = "", detail: str = "full") -> str:
    """The notification as HTML, every value escaped."""
    page = layout(n, rules, external_url)
    colour = c.COLOURS["resolved"] if n.status == "resolved" else c.COLOURS.get(n.severity, c.COLOURS[None])
    return render(page.compact() if detail == "compact" else page, colour)


def render(page: Layout, colour: str) -> str:
    """A layout as HTML."""
    e = html.escape
    parts = ["<!DOCTYPE html><html><body style=\"font-family:sans-serif\">",
             f"<h2 style=\"color:{colour}\">{e(page.title)}</h2>", _lead(page.lead)]
    parts += [f"<p><b>{e(notice)}</b></p>" for notice in page.notices]
    if page.changes:
        parts.append("<p><b>What changed</b></p><ul>" + "".join(f"<li>{e(x)}</li>" for x in page.changes) + "</ul>")
    if page.resolved:
        parts.append("<ul>" + "".join(f"<li>{e(x)}</li>" for x in page.resolved) + "</ul>")
    for section in page.sections:
        if section.heading:
            parts.append(f"<p><b>{e(section.heading)}</b></p>")
        parts += [_item(item) for item in section.items]
    parts.append(f"<p><small>{e(page.footer)}</small></p></body></html>")
    return "\n".join(parts)


def _lead(lead: c.Lead) -> str:
    e = html.escape
    if lead.ended:
        lines = [f"<b>{e(lead.ended)}</b>"]
    else:
        since = f" (since {render_incident.clock(lead.since, lead.now)})" if lead.since else ""
        lines = [f"<b>{e(lead.what)}</b>" + (e(f" for {lead.lasted}{since}") if lead.lasted else "")
                 + (e(f" · {lead.figure}") if lead.figure else "")]
        if lead.first_step:
            lines.append(f"<b>First step:</b> {e(lead.first_step)}")
    links = lead.links()
    if links:
        lines.append(" · ".join(f"<a href=\"{e(url)}\">{e(label)}</a>" for label, url in links))
    return "<p>" + "<br>".join(lines) + "</p>"


def _item(item: Item) -> str:
    e = html.escape
    colour = c.COLOURS.get(item.state, c.COLOURS[None])
    margin = 16 * max(item.depth - 1, 0)
    parts = [f"<div style=\"border-left:4px solid {colour};padding-left:8px;margin:8px 0 8px {margin}px\">",
             f"<p><b>{e(item.head)}</b>" + (f"<br>{e(item.text)}" if item.text else "") + "</p>"]
    if item.labels:
        rows = "".join(f"<tr><td><code>{e(k)}</code></td><td>{e(v)}</td></tr>" for k, v in item.labels)
        parts.append(f"<table>{rows}</table>")
    if item.detail:
        parts.append(f"<p><small>{e(item.detail)}</small></p>")
    if item.why:
        parts.append(f"<p><i>{e(item.why)}</i></p>")
    for title, said in (("Diagnosis", item.diagnosis), ("Next steps", item.next_steps)):
        if said:
            parts.append(f"<p><b>{title}:</b> {e(said)}</p>")
    parts.append("</div>")
    return "".join(parts)
