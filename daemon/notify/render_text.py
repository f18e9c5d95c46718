"""A notification as plain text: the console and the email's text part (render_layout says what)."""

from __future__ import annotations

from daemon.alerts.figures import RuleLookup
from daemon.notify import render_common as c
from daemon.notify import render_incident
from daemon.notify.model import Notification
from daemon.notify.render_layout import Layout, layout


def summary_lines(lead: c.Lead) -> list[str]:
    """The two lines that open every page: what and where, for how long, how bad; what to do first."""
    if lead.ended:
        return [lead.ended]
    since = f" (since {render_incident.clock(lead.since, lead.now)})" if lead.since else ""
    lines = [f"{lead.what}" + (f" for {lead.lasted}{since}" if lead.lasted else "")
             + (f" · {lead.figure}" if lead.figure else "")]
    if lead.first_step:
        lines.append(f"First step: {lead.first_step}")
    return lines


def lead_lines(lead: c.Lead) -> list[str]:
    """The summary lines, then the links."""
    links = lead.links()
    return summary_lines(lead) + ([" · ".join(f"{label}: {url}" for label, url in links)] if links else [])


def text(n: Notification, rules: RuleLookup | None = None, external_url: str = "", detail: str = "full") -> str:
    """The whole notification as plain text."""
    page = layout(n, rules, external_url)
    return render(page.compact() if detail == "compact" else page)


def render(page: Layout) -> str:
    """A layout as plain text."""
    lines = [page.title, "", *lead_lines(page.lead), ""]
    for notice in page.notices:
        lines += [notice, ""]
    if page.changes:
        lines += ["What changed:", *(f"  - {line}" for line in page.changes), ""]
    if page.resolved:
        lines += [*(f"  - {line}" for line in page.resolved), ""]
    for section in page.sections:
        if section.heading:
            lines.append(f"{section.heading}:")
        for item in section.items:
            lines += _item(item)
        lines.append("")
    lines.append(page.footer)
    return "\n".join(lines).rstrip() + "\n"


def _item(item) -> list[str]:
    if item.lead or not item.depth or item.labels:
        lines = [item.head] + ([f"  {item.text}"] if item.text else [])
        if item.labels:
            lines.append("  " + " ".join(f"{k}={v}" for k, v in item.labels))
        indent = "  "
    else:
        indent = "  " * item.depth + "  "
        lines = [f"{indent[:-2]}- {item.head}: {item.text}"]
    if item.detail:
        lines.append(f"{indent}{item.detail}")
    if item.why:
        lines.append(f"{indent}{item.why}")
    if item.diagnosis:
        lines.append(f"{indent}Diagnosis: {item.diagnosis}")
    if item.next_steps:
        lines.append(f"{indent}Next steps: {item.next_steps}")
    return lines
