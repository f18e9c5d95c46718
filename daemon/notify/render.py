"""Notifications as words, one module per format: plain text (render_text: console, email), HTML
(render_html: email) and Slack Block Kit (render_slack); what they say is decided once, in
render_layout, from what they share (render_common) and an incident's page (render_incident).

Callers import this module; the names below are the whole of it.
"""

from __future__ import annotations

from daemon.notify.render_common import (
    COLOURS,
    EMOJI,
    REMINDER,
    WHERE_LABELS,
    alert_figures,
    change_line,
    figures_text,
    reminder_line,
    subject,
    title,
    when,
    where,
)
from daemon.notify.render_html import html_body
from daemon.notify.render_slack import (
    SLACK_ACTION_ACK,
    SLACK_ACTION_SILENCE_1H,
    SLACK_ACTION_SILENCE_UNTIL_RESOLVED,
    SLACK_ACTIONS_BLOCK,
    SLACK_MAX_ALERTS,
    SLACK_NOTES_BLOCK,
    slack_actions_block,
    slack_message,
    slack_note_block,
    slack_thread_reply,
)
from daemon.notify.render_text import text

__all__ = [
    "COLOURS", "EMOJI", "REMINDER", "SLACK_ACTIONS_BLOCK", "SLACK_ACTION_ACK", "SLACK_ACTION_SILENCE_1H",
    "SLACK_ACTION_SILENCE_UNTIL_RESOLVED", "SLACK_MAX_ALERTS", "SLACK_NOTES_BLOCK", "WHERE_LABELS", "alert_figures",
    "change_line", "figures_text", "html_body", "reminder_line", "slack_actions_block", "slack_message",
    "slack_note_block", "slack_thread_reply", "subject", "text", "title", "when", "where",
]
