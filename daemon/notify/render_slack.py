"""A notification as Slack Block Kit (render_layout says what; slack_budget keeps it deliverable).

The message: a header for the lock screen, the lead (two lines and the links), the incident's
context, notices and changes, the buttons; then, in a coloured attachment, the alerts in reading
order. Every text fits its block and the whole fits Slack's limits: texts are split into several
sections where they may be (slack_budget.split), and a message still too big is folded, step by
step: the other alerts to one-line summaries, then the lead's diagnosis (its next steps stay), then
the tail of the summaries; what was folded is counted on the page, and the link leads to the rest.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import replace
from typing import Any

from daemon.alerts.figures import RuleLookup
from daemon.notify import render_common as c
from daemon.notify import render_incident, slack_budget
from daemon.notify.model import Change, Notification
from daemon.notify.render_layout import Item, Layout, change_line, layout

SLACK_MAX_ALERTS = 10
_SLACK_BUTTON_VALUE_MAX = 2000  # Slack's limit on a button's value
# Block and action ids the Socket Mode listener (daemon/notify/slack_actions.py) recognises.
SLACK_ACTIONS_BLOCK = "rocketwatch_actions"
SLACK_NOTES_BLOCK = "rocketwatch_notes"
SLACK_ACTION_SILENCE_1H = "rocketwatch_silence_1h"
SLACK_ACTION_SILENCE_UNTIL_RESOLVED = "rocketwatch_silence_until_resolved"
SLACK_ACTION_ACK = "rocketwatch_ack"
MENTIONS = {"here": "<!here>", "channel": "<!channel>"}  # else a user group's id: <!subteam^ID>


def esc(s: str) -> str:
    """Slack mrkdwn treats &, < and > as control characters (links, mentions); everything else is literal."""
    return s.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


def mention_markup(mention: str) -> str:
    """`here`, `channel` or a user group's id as Slack's mention markup."""
    return MENTIONS.get(mention, f"<!subteam^{mention}>") if mention else ""


def _section(text: str, block_id: str | None = None) -> dict[str, Any]:
    block: dict[str, Any] = {"type": "section", "text": {"type": "mrkdwn", "text": text}}
    if block_id:
        block["block_id"] = block_id
    return block


def _context(text: str) -> dict[str, Any]:
    return {"type": "context", "elements": [{"type": "mrkdwn", "text": slack_budget.split(text, slack_budget.CONTEXT_MAX)[0]}]}


def _mark(state: str | None) -> str:
    return c.EMOJI.get(state or "", ":grey_question:")


def lead_text(lead: c.Lead) -> str:
    """The lead in mrkdwn; the start time as `<!date^…>`, so each reader sees it in their own time zone."""
    if lead.ended:
        lines = [esc(lead.ended)]
    else:
        line = f"*{esc(lead.what)}*"
        if lead.lasted and lead.since is not None:
            fallback = render_incident.clock(lead.since, lead.now)
            line += f" for {esc(lead.lasted)} (since <!date^{int(lead.since.timestamp())}^{{time_secs}}|{fallback}>)"
        if lead.figure:
            line += f" · {esc(lead.figure)}"
        # The links close the first line, short labels, so the first step still opens a phone's first screen.
        lines = [" · ".join([line, *_links(lead)])]
        if lead.first_step:
            lines.append(f"*First step:* {esc(lead.first_step)}")
        return "\n".join(lines)
    return "\n".join(lines + ([" · ".join(_links(lead))] if lead.links() else []))


def _links(lead: c.Lead) -> list[str]:
    return [f"<{url.replace('&', '&amp;')}|{label}>" for label, url in lead.links()]


def slack_message(
    n: Notification, max_alerts: int = SLACK_MAX_ALERTS, actions: bool = False, notes: Sequence[str] = (),
    rules: RuleLookup | None = None, external_url: str = "", detail: str = "full", mention: str = "",
) -> dict[str, Any]:
    """Keyword arguments for chat.postMessage / chat.update, within Slack's limits."""
    page = layout(n, rules, external_url)
    if detail == "compact":
        page = page.compact()
    shown = page.items[:max(max_alerts, 1)]
    hidden = len(page.items) - len(shown)
    ping = mention_markup(mention) if mention and n.status == "firing" and not n.is_update and n.severity == "critical" else ""
    top = _top(n, page, actions, notes, ping)
    colour = c.COLOURS["resolved"] if n.status == "resolved" else c.COLOURS.get(n.severity, c.COLOURS[None])
    message: dict[str, Any] = {}
    for body in _bodies(page, shown, hidden):
        message = {"text": page.title, "blocks": top,
                   "attachments": [{"color": colour, "fallback": page.title, "blocks": body}]}
        if not slack_budget.problems(message):
            break
    return message


def _top(n: Notification, page: Layout, actions: bool, notes: Sequence[str], ping: str) -> list[dict[str, Any]]:
    state = "resolved" if n.status == "resolved" else n.severity
    emoji = _mark(state)
    header = slack_budget.split(page.title, slack_budget.HEADER_MAX - len(emoji) - 1)[0]
    blocks: list[dict[str, Any]] = [
        {"type": "header", "text": {"type": "plain_text", "text": f"{emoji} {header}", "emoji": True}}]
    lead = lead_text(page.lead)
    blocks += [_section(t) for t in slack_budget.pack([f"{ping} {lead}" if ping else lead])]
    context = [f"incident `{esc(page.incident_id)}`"] if page.incident_id else []
    context.append(esc(page.footer.removeprefix(f"Incident {page.incident_id}, ").replace("Group: ", "")))
    blocks.append(_context(" · ".join(context)))
    paragraphs = [f":mag: {esc(x)}" if x.startswith("Cause found") else esc(x) for x in page.notices]
    if page.changes:
        paragraphs.append("*What changed:*\n" + "\n".join(f"• {esc(x)}" for x in page.changes))
    paragraphs += _resolved_lines(page)
    blocks += [_section(t) for t in slack_budget.pack(paragraphs)]
    if notes:
        blocks.append(slack_note_block(notes))
    if actions and n.status == "firing":
        blocks.append(slack_actions_block(n.group_key, n.group_labels, acknowledged=any(
            note.startswith("Acknowledged") for note in notes)))
    return blocks


def _resolved_lines(page: Layout) -> list[str]:
    """A resolve's line per alert; past a share of the budget, only what and when, then only a count."""
    lines: list[str] = []
    used = 0
    for i, line in enumerate(page.resolved):
        if used > slack_budget.TOTAL_MAX // 2:
            line = line.split("; last seen: ", 1)[0]
        if used + len(line) > slack_budget.TOTAL_MAX * 3 // 4:
            lines.append(f"_and {len(page.resolved) - i} more alerts resolved: see the incident page_")
            break
        lines.append(f"{c.EMOJI['resolved']} {esc(line)}")
        used += len(line)
    return lines


def _bodies(page: Layout, shown: list[Item], hidden: int):
    """The attachment's blocks, fullest first; each next one folds more."""
    headings = {id(s.items[0]): s.heading for s in page.sections if s.items and s.heading}
    more = [_context(f"_and {hidden} more_")] if hidden else []
    yield [b for item in shown for b in _item_blocks(item, headings.get(id(item), ""))] + more
    lead = [i for i in shown if i.lead]
    rest = [i for i in shown if not i.lead]
    folded = len(rest) + hidden
    lines = [f"• {_mark(i.state)} *{esc(i.head)}*: {esc(i.text)}" for i in rest]
    # Every summary listed first; the lead gives up its diagnosis, then its next steps, before a summary goes.
    leads = [lead, [replace(i, diagnosis="") for i in lead], [replace(i, diagnosis="", next_steps="") for i in lead]]
    step = max(1, len(lines) // 8)  # many lines: drop them a few at a time
    for keep in [*range(len(lines), 0, -step), 0]:
        note = _folded_note(page, folded, len(lines) - keep + hidden)
        for lead_items in leads:
            blocks = [b for i in lead_items for b in _item_blocks(i, "")]
            yield blocks + [_section(t) for t in slack_budget.pack(lines[:keep])] + [_context(note)]


def _folded_note(page: Layout, folded: int, dropped: int) -> str:
    where = next((f"<{url}|incident page>" for label, url in page.lead.links() if label == "Incident page"), "")
    rest = f": the full texts are on the {where}" if where else ": the full texts are on the status page"
    said = f"_{folded} alert{'s' if folded != 1 else ''} folded to fit Slack"
    if dropped:
        said += f", {dropped} of them not listed"
    return said + rest + "_"


def _item_blocks(item: Item, heading: str) -> list[dict[str, Any]]:
    paragraphs = [f"*{esc(heading)}:*"] if heading else []
    if item.lead:
        paragraphs.append(f"{_mark(item.state)} *{esc(item.head)}*" + (f"\n{esc(item.text)}" if item.text else ""))
    else:
        arrow = "↳ " * max(item.depth - 1, 0)
        paragraphs.append(f"{arrow}{_mark(item.state)} *{esc(item.head)}*" + (f": {esc(item.text)}" if item.text else ""))
    if item.detail:
        paragraphs.append(f"_{esc(item.detail)}_")
    if item.why:
        paragraphs.append(f"_{esc(item.why)}_")
    for title, said in (("Diagnosis", item.diagnosis), ("Next steps", item.next_steps)):
        if said:
            paragraphs.append(f"*{title}:* {esc(said)}")
    blocks = [_section(t) for t in slack_budget.pack(paragraphs)]
    if item.labels:
        blocks.append(_context(" · ".join(f"{k} `{esc(v)}`" for k, v in item.labels)))
    return blocks


def slack_note_block(notes: Sequence[str]) -> dict[str, Any]:
    """A context block saying who acknowledged or silenced the group."""
    text = slack_budget.split(" · ".join(f":bust_in_silhouette: {esc(note)}" for note in notes), 3000)[0]
    return {"type": "context", "block_id": SLACK_NOTES_BLOCK, "elements": [{"type": "mrkdwn", "text": text}]}


def slack_actions_block(group_key: str, group_labels: dict[str, str], acknowledged: bool = False) -> dict[str, Any]:
    """Buttons to silence or acknowledge the group; each carries the group's key and labels."""
    value = json.dumps({"group_key": group_key, "labels": group_labels}, separators=(",", ":"))
    if len(value) > _SLACK_BUTTON_VALUE_MAX:  # a button that cannot name its group would act on nothing
        return {"type": "context", "block_id": SLACK_ACTIONS_BLOCK, "elements": [
            {"type": "mrkdwn", "text": "_group labels too long for buttons: use `rocketwatch silence add`_"}]}
    buttons = [("Silence 1h", SLACK_ACTION_SILENCE_1H), ("Silence until resolved", SLACK_ACTION_SILENCE_UNTIL_RESOLVED)]
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


def slack_thread_reply(n: Notification, rules: RuleLookup | None = None, external_url: str = "") -> str:
    """The thread reply for a change to a group that already has a message: what changed, and the link."""
    lead = c.lead(n, rules, external_url)
    p = render_incident.page(n)
    lines = [f":mag: {esc(p.cause_found_why)}"] if p is not None and p.cause_found_why else []
    if n.status == "resolved":
        lines.append(f"{c.EMOJI['resolved']} {esc(lead.ended)}")
    else:
        changes = c.incident_changes(n, p) if p is not None else list(n.changes)
        lines += [f"{_change_mark(x)} {esc(change_line(n, x) if p is not None else c.change_line(n, x, rules))}"
                  for x in changes]
    if not lines and n.reason == c.REMINDER:
        lines.append(f":repeat: {esc(c.reminder_line(n))}")
    link = next((f"<{url}|Incident page>" for label, url in lead.links() if label == "Incident page"), "")
    while len(lines) > 1 and len("\n".join([*lines, link])) > slack_budget.SECTION_MAX:
        lines.pop()  # the first lines say the most: cause found, the resolve, the first changes
    text = "\n".join(lines) or "Updated."
    return slack_budget.split(text + (f"\n{link}" if link else ""))[0]


def _change_mark(x: Change) -> str:
    if x.kind == "firing":
        return c.EMOJI.get(x.severity or "", ":bell:")
    if x.kind == "resolved":
        return c.EMOJI["resolved"]
    return ":arrow_up:" if x.reason == "escalated" else ":arrow_down:"
