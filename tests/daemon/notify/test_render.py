"""Renderings: console block, caps in Slack, resolved wording, text/HTML content."""

from __future__ import annotations

import asyncio
import io

from daemon.notify import render
from daemon.notify.console import ConsoleNotifier
from tests.daemon.notify.conftest import Cycle, at, span


def test_console_prints_a_readable_block(db):
    cycle = Cycle(db, ["console"])
    ((_, n),) = cycle.run([span(severity="critical")], at(0))
    out = io.StringIO()
    thread = asyncio.run(ConsoleNotifier("console", out).send(n, None))
    text = out.getvalue()
    for needle in (
        "CRITICAL ProcessQueueSpanTooLong · stuckGroup · prod", "[FIRING] CRITICAL ProcessQueueSpanTooLong",
        "First step: Take five jstacks of 10.0.0.7@4242 a second apart.",
        "cluster=prod broker=broker-a group=stuckGroup topic=OrderTopic queue_id=3",
        "Diagnosis: One message at offset 4711", "Next steps: 1) Take five jstacks",
        "firing since 2026-03-01 12:00:00 UTC",
    ):
        assert needle in text, needle
    assert thread is not None and thread.id == n.group_key


def test_console_resolved_says_when(db):
    cycle = Cycle(db, ["console"])
    cycle.run([span()], at(0))
    ((_, n),) = cycle.run([], at(90))
    out = io.StringIO()
    asyncio.run(ConsoleNotifier("console", out).send(n, None))
    assert "RESOLVED ProcessQueueSpanTooLong" in out.getvalue()
    assert "resolved at 2026-03-01 12:01:30 UTC" in out.getvalue()


def test_slack_caps_alerts_and_counts_the_rest(db):
    cycle = Cycle(db, ["slack"])
    ((_, n),) = cycle.run([span(queue=q) for q in range(14)], at(0))
    message = render.slack_message(n, max_alerts=10)
    body = message["attachments"][0]["blocks"]
    assert sum(1 for b in body if b["type"] == "section") == 10
    assert body[-1]["elements"][0]["text"] == "_and 4 more_"
    assert "ProcessQueueSpanTooLong ×14" in message["blocks"][0]["text"]["text"]
    assert len(message["blocks"]) + len(body) <= 50  # Slack's block limit


def test_slack_escapes_control_characters(db):
    cycle = Cycle(db, ["slack"])
    ((_, n),) = cycle.run([span(group="a<@U123>&b")], at(0))
    section = render.slack_message(n)["attachments"][0]["blocks"][0]["text"]["text"]
    assert "<@U123>" not in section and "a&lt;@U123&gt;&amp;b" in section


def test_update_text_lists_what_changed(db):
    cycle = Cycle(db, ["console"])
    cycle.run([span(queue=3)], at(0))
    ((_, n),) = cycle.run([span(queue=4)], at(30))
    text = render.text(n)
    assert "What changed:" in text
    assert "new alert (warning): stuckGroup: queue broker-a/4" in text
    assert "resolved (condition cleared): stuckGroup: queue broker-a/3" in text
