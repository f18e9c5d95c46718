"""One incident, one page that leads with its cause (issue 36): the plain text (console, the email's text
part); the email, Slack and webhook pages are in test_incident_page_receivers.py.

Alerts go through the daemon's own cycle minus Spark (tracker -> incident book -> dispatcher ->
outbox -> notifiers, tests/helpers/stuck_thread_incident.py) on a real SQLite state file. Two
timelines of one stuck consume thread:
  - consequence first: the span check fires at 08:00:00, StuckMessage (its cause) at 08:02:01, the
    stalled committed offset at 08:05:00; StuckMessage resolves at 08:10:30, the span at 08:11:30,
    the stalled offset, last, at 08:12:00;
  - cause first: StuckMessage at 08:00:00, then what it explains, plus an alert of the same group
    that nothing links to it.
"""

from __future__ import annotations

import json
from datetime import timedelta

import pytest

from daemon.notify import render, render_incident
from tests.helpers.stuck_thread_incident import (
    CAUSE_FOUND,
    CONSEQUENCE_FIRST,
    RESOLVED,
    WHY_SPAN,
    WHY_STALLED,
    Pipeline,
    at,
    blocked,
    console,
    held,
    play,
    span,
    stalled,
    stuck,
)

# ---- plain text (console, the email's text part) -----------------------------------------------


def test_console_consequence_first_the_update_leads_with_the_cause_and_the_resolve_says_what_ended_it(db):
    pipeline = Pipeline(db, ["console"])
    sent = play(pipeline, CONSEQUENCE_FIRST)
    assert [len(s) for s in sent] == [1] * 6, "one group: every change of the incident is one notification"
    assert len({n.group_key for s in sent for n in s}) == 1

    first = console(sent[0][0])
    assert "WARNING ProcessQueueSpanTooLong · orderConsumerA · prod" in first
    assert "Cause" not in first and "explain" not in first  # nothing known yet: no causation claimed

    update = console(sent[1][0], thread=object())
    lines = [line for line in update.splitlines() if line.strip()]
    assert lines[1] == "update of an earlier message · WARNING StuckMessage · orderConsumerA · prod"
    # The lead: what and where, for how long, the figure; the first step (one step only: said once, below).
    assert lines[2] == ("StuckMessage on broker-a/OrderTopic/3 and 1 alert it explains for 0 s (since 08:02:01 UTC)"
                        " · value 193 vs 60")
    assert lines[3] == CAUSE_FOUND
    assert lines[4] == "Cause: StuckMessage, firing since 2026-03-01 08:02:01 UTC"
    assert lines[5].strip() == "orderConsumerA: the message at offset 4711 of OrderTopic/broker-a/3 is in flight for 193 s"
    followed = update[update.index("What followed from it:"):]
    assert "- ProcessQueueSpanTooLong: orderConsumerA: queue broker-a/3 span 1500 (limit 1000) · value 1500 vs 1000" in followed
    # Said once: the why under the consequence only, its diagnosis and next steps not again (page 1 had them).
    assert update.count(WHY_SPAN) == 1 and "Later messages finish" not in update
    assert update.count("Take 3-5 jstacks") == 1
    assert "new alert" not in update  # the cause's arrival is the "Cause found" line, not a second one

    third = render.text(sent[2][0])
    assert third.startswith("WARNING StuckMessage · orderConsumerA · prod\n")
    assert "and 2 alerts it explains" in third.splitlines()[2]
    assert "Cause found" not in third  # the cause was already known: this one only adds a consequence
    assert f"why: {WHY_STALLED}" in third and "What changed:" in third
    assert "new alert (warning): ConsumerOffsetStalled on broker-a/OrderTopic/3" in third
    assert third.count("has not moved for 200 s") == 1  # its summary once, in its entry

    cause_gone = render.text(sent[3][0])
    assert cause_gone.splitlines()[2] == "StuckMessage on broker-a/OrderTopic/3 resolved at 08:10:30 UTC; 2 alerts of it still fire"
    assert "Cause: StuckMessage, resolved at 2026-03-01 08:10:30 UTC" in cause_gone
    assert "Next steps" not in cause_gone.split("What followed")[0]  # no steps for the cause that ended

    resolved = render.text(sent[5][0])
    assert resolved.startswith("RESOLVED StuckMessage · orderConsumerA · prod\n\n" + RESOLVED)
    # One line per alert, no next steps, no diagnosis of what ended.
    assert "  - StuckMessage on broker-a/OrderTopic/3: resolved at 08:10:30 UTC" in resolved
    assert "  - ProcessQueueSpanTooLong on broker-a/OrderTopic/3: resolved at 08:11:30 UTC" in resolved
    assert ("  - ConsumerOffsetStalled on broker-a/OrderTopic/3: 08:05:00 UTC–08:12:00 UTC (7 min); last seen: "
            "orderConsumerA: the committed offset of OrderTopic/broker-a/3 has not moved for 200 s") in resolved
    for gone in ("Next steps", "Diagnosis", "why:", "jstack"):
        assert gone not in resolved, gone


def test_console_cause_first_names_the_cause_from_the_start_and_lists_unlinked_alerts_after(db):
    pipeline = Pipeline(db, ["console"])
    sent = play(pipeline, [(0, lambda: [stuck()]), (60, lambda: [stuck(), span()]),
                           (90, lambda: [stuck(), span(), held()]), (200, lambda: [])])
    first, joined, other, resolved = (render.text(s[0]) for s in sent)
    assert first.startswith("WARNING StuckMessage · orderConsumerA · prod\n")
    assert "Alert: StuckMessage, firing since 2026-03-01 08:00:00 UTC" in first

    assert joined.startswith("WARNING StuckMessage · orderConsumerA · prod\n")
    assert joined.splitlines()[2].startswith("StuckMessage on broker-a/OrderTopic/3 and 1 alert it explains for")
    assert "Cause found" not in joined
    assert "new alert (warning): ProcessQueueSpanTooLong on broker-a/OrderTopic/3" in joined
    assert joined.index("Cause: StuckMessage") < joined.index("What followed from it:") < joined.index(WHY_SPAN)

    also = other[other.index("Also firing here:"):]
    assert "- QueueHeldByTwoClients: orderConsumerA: queue broker-a/3 is held by two clients · value 2 vs 1" in also
    assert other.index("What followed from it:") < other.index("Also firing here:")
    # The unlinked alert is new on this page: its next steps are here, once; the lead's too.
    assert other.index("Next steps: Take 3-5 jstacks") < other.index("Next steps: Compare the clients")

    assert resolved.startswith("RESOLVED StuckMessage · orderConsumerA · prod\n")
    assert ("Resolved after 3 min 20 s: StuckMessage ended at 08:03:20 UTC, together with the last of the others "
            "(ProcessQueueSpanTooLong and QueueHeldByTwoClients).") in resolved


def test_no_causation_is_claimed_while_the_cause_is_unknown(db):
    pipeline = Pipeline(db, ["console"])
    ((n,),) = play(pipeline, [(0, lambda: [span(), blocked()])])
    text = render.text(n)
    assert not n.incident.cause_known
    assert text.startswith("WARNING ConsumptionBlocked · orderConsumerA · prod\n")
    assert "Alert: ConsumptionBlocked, firing since" in text  # both fired in one cycle: neither is "first"
    for claim in ("Cause", "explain", "What followed", "why:"):
        assert claim not in text, claim
    assert "Also firing here:" in text


def test_a_cause_that_joins_an_incident_opened_by_an_unlinked_alert_leads_it(db):
    # The incident opened with an unlinked alert; StuckMessage joined it where it happens, and the
    # span it explains joined as its consequence: the alert that explains something leads the page,
    # the unlinked one that opened it is listed beside it.
    pipeline = Pipeline(db, ["console"])
    _, (n,) = play(pipeline, [(0, lambda: [held()]), (60, lambda: [held(), stuck(), span()])])
    text = render.text(n)
    assert n.incident.id.endswith("@2026-03-01T08:00:00Z"), "the id the first alert opened it with"
    assert text.startswith("WARNING StuckMessage · orderConsumerA · prod\n")
    assert "Cause: StuckMessage, firing since 2026-03-01 08:01:00 UTC" in text
    followed = text[text.index("What followed from it:"):text.index("Also firing here:")]
    assert "- ProcessQueueSpanTooLong:" in followed and WHY_SPAN in followed
    assert "- QueueHeldByTwoClients:" in text[text.index("Also firing here:"):]


def test_a_page_whose_alerts_resolved_while_one_of_the_incident_is_muted_does_not_claim_the_end(db):
    pipeline = Pipeline(db, ["console"])
    pipeline.run(0, stuck(), span())
    pipeline.silences.add(['alertname="ConsumerOffsetStalled"'], at(0), at(3600), "ana", "known", at(0))
    pipeline.run(60, stuck(), span(), stalled())
    (n,) = pipeline.run(120, stalled())  # what the page showed resolved; the muted one fires on
    text = render.text(n)
    assert n.status == "resolved" and n.incident.resolved_at is None
    assert text.startswith("RESOLVED StuckMessage · orderConsumerA · prod\n\n"
                           "Every alert on this page has resolved; 1 alert of the incident still fires "
                           "(silenced, inhibited or sent elsewhere).\n")
    assert "Resolved after" not in text and "ConsumerOffsetStalled" not in text


@pytest.mark.parametrize(("seconds", "said"), [
    (45, "45 s"), (200, "3 min 20 s"), (720, "12 min"), (3 * 3600 + 300, "3 h 5 min"), (26 * 3600, "1 d 2 h"),
])
def test_how_long_an_incident_lasted_reads_as_an_operator_says_it(seconds, said):
    assert render_incident.duration(timedelta(seconds=seconds)) == said


def test_a_group_not_by_incident_renders_as_before(db):
    pipeline = Pipeline(db, ["console"], group_by=("alertname", "cluster", "group"))
    ((span_n, stuck_n),) = [sorted(s, key=lambda n: n.rule) for s in play(pipeline, [(0, lambda: [stuck(), span()])])]
    assert span_n.incident is None and stuck_n.incident is None
    text = render.text(span_n)
    assert text.splitlines()[:4] == ["WARNING ProcessQueueSpanTooLong · orderConsumerA · prod", "",
                                     "ProcessQueueSpanTooLong on broker-a/OrderTopic/3 for 0 s (since 08:00:00 UTC) · "
                                     "value 1500 vs 1000", ""]
    assert "[FIRING] WARNING ProcessQueueSpanTooLong" in text
    assert text.rstrip().endswith("Group: alertname=ProcessQueueSpanTooLong, cluster=prod, group=orderConsumerA")
    assert "Incident" not in text and "What followed" not in text
    assert "incident" not in json.dumps(render.slack_message(span_n))
