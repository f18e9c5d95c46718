"""One incident, one page that leads with its cause (issue 36): console text, email, Slack, webhook.

Alerts go through the daemon's own cycle minus Spark (tracker -> incident book -> dispatcher ->
outbox -> notifiers) on a real SQLite state file; Slack is the local Web API stand-in, email a real
SMTP server, the webhook a local HTTP receiver. Two timelines of one stuck consume thread:
  - consequence first: the span check fires at 08:00:00, StuckMessage (its cause) at 08:02:01, the
    stalled committed offset at 08:05:00; StuckMessage resolves at 08:10:30, the span at 08:11:30,
    the stalled offset, last, at 08:12:00;
  - cause first: StuckMessage at 08:00:00, then what it explains, plus an alert of the same group
    that nothing links to it.
"""

from __future__ import annotations

import asyncio
import html
import io
import json
from datetime import UTC, datetime, timedelta

import pytest
from slack_sdk.web.async_client import AsyncWebClient

from config.receivers import EmailReceiver, SlackReceiver, WebhookReceiver
from daemon.alerts.db import StateDB
from daemon.alerts.group_actions import GroupActionStore
from daemon.alerts.incidents import IncidentBook
from daemon.alerts.silences import SilenceStore
from daemon.alerts.tracker import AlertTracker
from daemon.notify import render, render_incident
from daemon.notify.console import ConsoleNotifier
from daemon.notify.dispatcher import Dispatcher
from daemon.notify.factory import build_notifiers
from daemon.notify.model import Notification
from daemon.notify.outbox import Outbox
from daemon.notify.slack_actions import SlackActionHandler
from rules.findings import Finding, RuleTiming
from rules.links import CausalLinks, Link
from tests.helpers.slack_server import CHANNEL_ID, SlackServer
from tests.helpers.smtp_server import SmtpServer
from tests.helpers.webhook_server import WebhookServer

T0 = datetime(2026, 3, 1, 8, 0, tzinfo=UTC)
TOKEN = "xoxb-incident-pages"
QUEUE = {"cluster": "prod", "group": "orderConsumerA", "topic": "OrderTopic", "broker": "broker-a", "queue_id": "3",
         "client_id": "10.0.0.7@4242"}
ON = ("cluster", "group", "topic", "broker", "queue_id")
WHY_SPAN = ("The stuck message stays the lowest offset in the queue's cache while the client pulls and consumes "
            "the messages after it, so the span of the cache grows until it passes consumeConcurrentlyMaxSpan.")
WHY_STALLED = ("A concurrently consuming client commits the lowest offset still in its ProcessQueue, so the stuck "
               "message pins the committed offset of its queue.")
WHY_BLOCKED = "The stuck message holds its consume thread and never leaves the queue's cache."
LINKS = CausalLinks([
    Link("StuckMessage", "ProcessQueueSpanTooLong", ON, WHY_SPAN),
    Link("StuckMessage", "ConsumerOffsetStalled", ON, WHY_STALLED),
    Link("StuckMessage", "ConsumptionBlocked", ON, WHY_BLOCKED),
])
RULES = ("StuckMessage", "ProcessQueueSpanTooLong", "ConsumerOffsetStalled", "ConsumptionBlocked", "QueueHeldByTwoClients")
TIMINGS = {rule: RuleTiming(rule) for rule in RULES}  # fire on first sight, resolve on first absence


def at(seconds: float) -> datetime:
    return T0 + timedelta(seconds=seconds)


def _finding(rule: str, value: float, threshold: float, summary: str, diagnosis: str, next_steps: str,
             group: str = "orderConsumerA", queue: int = 3) -> Finding:
    labels = {**QUEUE, "group": group, "queue_id": str(queue)}
    return Finding(rule, labels, "warning", value, threshold,
                   {"summary": summary.format(group=group, queue=queue), "diagnosis": diagnosis,
                    "next_steps": next_steps})


def stuck(group: str = "orderConsumerA") -> Finding:
    return _finding("StuckMessage", 193, 60,
                    "{group}: the message at offset 4711 of OrderTopic/broker-a/{queue} is in flight for 193 s",
                    "One consume thread sits on this one message.", "Take 3-5 jstacks of 10.0.0.7@4242.", group)


def span(group: str = "orderConsumerA") -> Finding:
    return _finding("ProcessQueueSpanTooLong", 1500, 1000,
                    "{group}: queue broker-a/{queue} span 1500 (limit 1000)",
                    "Later messages finish while one does not.", "Look at the span's low end.", group)


def stalled(group: str = "orderConsumerA") -> Finding:
    return _finding("ConsumerOffsetStalled", 200, 120,
                    "{group}: the committed offset of OrderTopic/broker-a/{queue} has not moved for 200 s",
                    "No commit reaches the broker.", "Find what holds the lowest offset.", group)


def blocked() -> Finding:
    return _finding("ConsumptionBlocked", 90, 60, "{group}: nothing of queue broker-a/{queue} finished for 90 s",
                    "The consume threads make no progress.", "jstack the client.")


def held(queue: int = 3) -> Finding:
    return _finding("QueueHeldByTwoClients", 2, 1, "{group}: queue broker-a/{queue} is held by two clients",
                    "Clients disagree on the rebalance.", "Compare the clients' views.", queue=queue)


class Pipeline:
    """tracker -> incident book -> dispatcher -> outbox, as the daemon runs them each cycle."""

    def __init__(self, db: StateDB, receivers: list[str], group_by: tuple[str, ...] = ("incident",)) -> None:
        self.tracker = AlertTracker(db)
        self.outbox = Outbox(db)
        self.silences = SilenceStore(db)
        self.actions = GroupActionStore(db)
        self.incidents = IncidentBook(db, lambda: LINKS)
        self.dispatcher = Dispatcher(self.outbox, receivers, list(group_by), self.silences, incidents=self.incidents,
                                     acknowledged=lambda key: self.actions.acknowledged(key) is not None)

    def run(self, seconds: float, *findings: Finding) -> list[Notification]:
        now = at(seconds)
        events = self.tracker.update(TIMINGS, list(findings), now)
        self.actions.close_resolved(self.tracker.active_alerts(), self.silences, now, self.incidents)
        self.incidents.update(events, self.tracker.active_alerts(), now)
        return [n for _, n in asyncio.run(self.dispatcher.dispatch(events, self.tracker.active_alerts(), now))]

    def deliver(self, notifiers, seconds: float):
        return asyncio.run(self.outbox.deliver_due(notifiers, at(seconds)))


# The consequence-first timeline: (seconds after 08:00:00, findings of that evaluation).
CONSEQUENCE_FIRST = [
    (0, lambda: [span()]),
    (121, lambda: [span(), stuck()]),
    (300, lambda: [span(), stuck(), stalled()]),
    (630, lambda: [span(), stalled()]),
    (690, lambda: [stalled()]),
    (720, lambda: []),
]
# The page says the link's why once, under the consequence; the thread reply, a message of its own, with it.
CAUSE_FOUND = "Cause found: StuckMessage on broker-a/OrderTopic/3 explains ProcessQueueSpanTooLong."
CAUSE_FOUND_WHY = f"Cause found: StuckMessage on broker-a/OrderTopic/3 explains ProcessQueueSpanTooLong: {WHY_SPAN}"
RESOLVED = ("Resolved after 12 min: StuckMessage ended at 08:10:30 UTC; the last alert, ConsumerOffsetStalled on "
            "broker-a/OrderTopic/3, resolved at 08:12:00 UTC.")


@pytest.fixture
def db(tmp_path):
    db = StateDB(tmp_path / "state.db")
    yield db
    db.close()


def play(pipeline: Pipeline, timeline, notifiers=None) -> list[list[Notification]]:
    sent = []
    for seconds, findings in timeline:
        sent.append(pipeline.run(seconds, *findings()))
        if notifiers is not None:
            report = pipeline.deliver(notifiers, seconds)
            assert report.failed == 0, report
    return sent


def console(n: Notification, thread=None) -> str:
    out = io.StringIO()
    asyncio.run(ConsoleNotifier("console", out).send(n, thread))
    return out.getvalue()


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


# ---- email --------------------------------------------------------------------------------------


def subject(mail) -> str:
    # Python's email folding puts a 69-77 character subject on a continuation line of its own, so the
    # parsed header starts with the fold's space; mail clients drop it when they unfold.
    return mail["Subject"].strip()


def test_email_consequence_first_is_one_thread_whose_follow_up_says_cause_found(db):
    pipeline = Pipeline(db, ["mail"])
    with SmtpServer() as smtp:
        receiver = EmailReceiver(type="email", name="mail", host=smtp.host, port=smtp.port, security="none",
                                 from_addr="rocketwatch@example.com", to=["oncall@example.com"], timeout=5)
        play(pipeline, CONSEQUENCE_FIRST, build_notifiers([receiver], {}))
        mails = smtp.wait_for(6)
    first, cause = mails[0], mails[1]
    assert subject(first) == "WARNING ProcessQueueSpanTooLong · orderConsumerA · prod"
    assert first["In-Reply-To"] is None
    assert all(m["In-Reply-To"] == first["Message-ID"] == m["References"] for m in mails[1:]), "one email thread"

    assert subject(cause) == "WARNING StuckMessage · orderConsumerA · prod"
    text = cause.get_body(("plain",)).get_content()
    assert text.splitlines()[4] == CAUSE_FOUND
    assert text.splitlines()[6] == "Cause: StuckMessage, firing since 2026-03-01 08:02:01 UTC"
    page = html.unescape(cause.get_body(("html",)).get_content())
    assert page.index(CAUSE_FOUND) < page.index("Cause: StuckMessage,") < page.index("What followed from it")
    assert WHY_SPAN in page and "value 1500 vs 1000" in page

    last = mails[-1]
    assert subject(last) == "RESOLVED StuckMessage · orderConsumerA · prod"
    assert last.get_body(("plain",)).get_content().splitlines()[2] == RESOLVED
    assert RESOLVED in html.unescape(last.get_body(("html",)).get_content())


def test_email_cause_first_subject_names_the_cause_and_counts_what_it_explains(db):
    pipeline = Pipeline(db, ["mail"])
    with SmtpServer() as smtp:
        receiver = EmailReceiver(type="email", name="mail", host=smtp.host, port=smtp.port, security="none",
                                 from_addr="rocketwatch@example.com", to=["oncall@example.com"], timeout=5)
        play(pipeline, [(0, lambda: [stuck(), span(), stalled()])], build_notifiers([receiver], {}))
        (mail,) = smtp.wait_for(1)
    assert subject(mail) == "WARNING StuckMessage · orderConsumerA · prod"
    text = mail.get_body(("plain",)).get_content()
    assert text.splitlines()[2].startswith("StuckMessage on broker-a/OrderTopic/3 and 2 alerts it explains for ")
    assert text.splitlines()[4] == "Cause: StuckMessage, firing since 2026-03-01 08:00:00 UTC"
    assert f"why: {WHY_SPAN}" in text and f"why: {WHY_STALLED}" in text and "Cause found" not in text


# ---- Slack --------------------------------------------------------------------------------------


def slack_receiver(slack: SlackServer) -> SlackReceiver:
    return SlackReceiver(type="slack", name="slack", channel="#mq", token_env="T", base_url=slack.base_url, timeout=5)


def attachment_texts(message: dict) -> list[str]:
    return [b["text"]["text"] for b in message["attachments"][0]["blocks"] if b["type"] == "section"]


def test_slack_consequence_first_is_one_message_updated_in_place_with_one_cause_found_reply(db):
    pipeline = Pipeline(db, ["slack"])
    with SlackServer(token=TOKEN) as slack:
        notifiers = build_notifiers([slack_receiver(slack)], {"T": TOKEN})
        play(pipeline, CONSEQUENCE_FIRST[:1], notifiers)
        (post,) = slack.calls_to("chat.postMessage")
        assert "thread_ts" not in post.args
        assert post.args["text"] == "WARNING ProcessQueueSpanTooLong · orderConsumerA · prod"
        (ts,) = slack.messages

        play(pipeline, CONSEQUENCE_FIRST[1:2], notifiers)  # the cause arrives
        posts = slack.calls_to("chat.postMessage")
        assert [("thread_ts" in c.args) for c in posts] == [False, True], "one top-level message, one reply"
        (update,) = slack.calls_to("chat.update")
        assert update.args["ts"] == ts and posts[1].args["thread_ts"] == ts

        (reply,) = slack.replies
        assert html.unescape(reply["text"]) == f":mag: {CAUSE_FOUND_WHY}"
        message = slack.messages[ts]
        assert message["blocks"][0]["text"]["text"] == ":large_orange_circle: WARNING StuckMessage · orderConsumerA · prod"
        lead = message["blocks"][1]["text"]["text"]
        assert lead.startswith("*StuckMessage on broker-a/OrderTopic/3 and 1 alert it explains* for 0 s (since "
                               "<!date^1772352121^{time_secs}|08:02:01 UTC>) · value 193 vs 60")
        sections = [html.unescape(t) for t in attachment_texts(message)]
        assert sections[0].startswith(":large_orange_circle: *Cause: StuckMessage, firing since")
        assert "*Next steps:* Take 3-5 jstacks" in sections[0]
        assert sections[1].startswith("*What followed from it:*\n:large_orange_circle: *ProcessQueueSpanTooLong*: "
                                      "orderConsumerA: queue broker-a/3")
        assert f"_why: {WHY_SPAN}_" in sections[1]
        assert html.unescape(json.dumps(message, ensure_ascii=False)).count(WHY_SPAN) == 1

        play(pipeline, CONSEQUENCE_FIRST[2:], notifiers)
        assert len(slack.messages) == 1 and len(slack.calls_to("chat.update")) == 5
        assert all(r["thread_ts"] == ts for r in slack.replies) and len(slack.replies) == 5
        assert html.unescape(slack.replies[-1]["text"]).endswith(f":white_check_mark: {RESOLVED}")
        final = slack.messages[ts]
        assert final["blocks"][0]["text"]["text"] == ":white_check_mark: RESOLVED StuckMessage · orderConsumerA · prod"
        assert RESOLVED in html.unescape(json.dumps(final["blocks"], ensure_ascii=False))


def test_slack_cause_first_leads_with_the_cause_and_the_reply_says_only_what_changed(db):
    pipeline = Pipeline(db, ["slack"])
    with SlackServer(token=TOKEN) as slack:
        notifiers = build_notifiers([slack_receiver(slack)], {"T": TOKEN})
        play(pipeline, [(0, lambda: [stuck()]), (60, lambda: [stuck(), span()])], notifiers)
        assert len(slack.messages) == 1 and len(slack.replies) == 1
        (message,) = slack.messages.values()
        assert message["text"] == "WARNING StuckMessage · orderConsumerA · prod"
        assert attachment_texts(message)[0].startswith(":large_orange_circle: *Cause: StuckMessage")
        reply = html.unescape(slack.replies[0]["text"])
        assert "Cause found" not in reply and "new alert (warning): ProcessQueueSpanTooLong on broker-a/OrderTopic/3" in reply


def test_slack_page_respects_max_alerts_and_the_block_limit(db):
    pipeline = Pipeline(db, ["slack"])
    _, (n,) = play(pipeline, [(0, lambda: [stuck(), span()]),
                              (60, lambda: [stuck(), span(), *(held(q) for q in range(3, 30))])])
    message = render.slack_message(n, max_alerts=5, actions=True, notes=["Acknowledged by ana at 08:01 UTC"])
    body = message["attachments"][0]["blocks"]
    texts = [b["text"]["text"] for b in body if b["type"] == "section"]
    assert texts[0].startswith(":large_orange_circle: *Cause: StuckMessage")
    assert texts[1].startswith("*What followed from it:*\n") and "ProcessQueueSpanTooLong" in texts[1]
    assert texts[2].startswith("*Also firing here:*\n") and len(texts) == 2 + 3  # lead + 1 followed + 3 others = 5
    assert body[-1]["elements"][0]["text"] == "_and 24 more_"
    widest = render.slack_message(n, max_alerts=20, actions=True, notes=["Acknowledged by ana at 08:01 UTC"])
    assert len(widest["blocks"]) + len(widest["attachments"][0]["blocks"]) <= 50  # Slack's block limit
    assert len(widest["blocks"][0]["text"]["text"]) <= 150 + len(":large_orange_circle: ")


def test_slack_buttons_silence_and_acknowledge_the_whole_incident(db):
    pipeline = Pipeline(db, ["slack"])
    with SlackServer(token=TOKEN) as slack:
        notifiers = build_notifiers([slack_receiver(slack)], {"T": TOKEN})
        (sent,) = play(pipeline, [(0, lambda: [span(), stuck()])], notifiers)
        incident_id = sent[0].incident.id
        (ts,) = slack.messages
        message = slack.messages[ts]
        handler = SlackActionHandler("slack", pipeline.silences, pipeline.actions,
                                     AsyncWebClient(token=TOKEN, base_url=slack.base_url), clock=lambda: at(30))
        values = {e["action_id"]: e["value"] for b in render.slack_message(sent[0], actions=True)["blocks"]
                  if b.get("block_id") == render.SLACK_ACTIONS_BLOCK for e in b["elements"]}

        def click(action_id: str) -> None:
            payload = {"type": "block_actions", "user": {"id": "U1", "username": "ana"},
                       "container": {"message_ts": ts, "channel_id": CHANNEL_ID},
                       "message": {"ts": ts, "text": message["text"], "blocks": message["blocks"],
                                   "attachments": message["attachments"]},
                       "actions": [{"action_id": action_id, "value": values[action_id]}]}
            assert asyncio.run(handler.handle(payload))

        click(render.SLACK_ACTION_ACK)
        assert pipeline.actions.acknowledged(sent[0].group_key) is not None
        click(render.SLACK_ACTION_SILENCE_1H)
        (silence,) = pipeline.silences.all()
        assert [str(m) for m in silence.matchers] == [f'incident="{incident_id}"']

        # The silence mutes every alert of the incident, one joining later too; another group still pages.
        later = pipeline.run(60, span(), stuck(), stalled(), stuck(group="billing"))
        assert [a.labels["group"] for n in later for a in n.alerts] == ["billing"]
        assert pipeline.actions.acknowledged(sent[0].group_key) is not None  # still open: its alerts fire
        pipeline.run(90, stuck(group="billing"))
        assert pipeline.actions.acknowledged(sent[0].group_key) is None  # ended with the incident


# ---- webhook ------------------------------------------------------------------------------------


def test_webhook_keeps_one_group_key_and_carries_the_incident_beside_alertmanagers_fields(db):
    pipeline = Pipeline(db, ["hook"])
    with WebhookServer() as hook:
        play(pipeline, CONSEQUENCE_FIRST, build_notifiers([WebhookReceiver(type="webhook", name="hook", url=hook.url)], {}))
        bodies, keys = list(hook.bodies), list(hook.keys)
    assert len(bodies) == 6 and len({b["groupKey"] for b in bodies}) == 1
    # Each send its own idempotency key, in the header and the body alike (a retry would repeat it).
    assert [b["idempotencyKey"] for b in bodies] == keys and len(set(keys)) == 6
    v4 = {"version", "groupKey", "truncatedAlerts", "status", "receiver", "groupLabels", "commonLabels",
          "commonAnnotations", "externalURL", "alerts", "rocketwatch", "idempotencyKey"}
    assert all(set(b) == v4 and b["version"] == "4" for b in bodies)
    assert all(set(a) == {"status", "labels", "annotations", "startsAt", "endsAt", "generatorURL", "fingerprint"}
               for b in bodies for a in b["alerts"])

    first, cause, last = bodies[0]["rocketwatch"], bodies[1]["rocketwatch"], bodies[-1]["rocketwatch"]
    assert first["incident"]["root"]["rule"] == "ProcessQueueSpanTooLong" and not first["incident"]["cause_known"]
    incident = cause["incident"]
    assert incident["id"] == first["incident"]["id"] == bodies[0]["groupLabels"]["incident"]
    assert incident["root"]["rule"] == "StuckMessage" and incident["cause_known"]
    assert incident["opened_at"] == "2026-03-01T08:00:00+00:00" and incident["resolved_at"] is None
    by_rule = {a["rule"]: a for a in incident["alerts"]}
    assert by_rule["ProcessQueueSpanTooLong"]["cause"] == incident["root"]["fingerprint"] == by_rule["StuckMessage"]["fingerprint"]
    assert by_rule["ProcessQueueSpanTooLong"]["why"] == WHY_SPAN and by_rule["StuckMessage"]["cause"] is None
    assert cause["incident"]["cause_found"] == CAUSE_FOUND_WHY
    assert cause["subject"] == "WARNING StuckMessage · orderConsumerA · prod"
    assert last["incident"]["resolved_at"] == "2026-03-01T08:12:00+00:00" and last["incident"]["ended"] == RESOLVED
    assert {a["rule"]: a["fingerprint"] for a in last["incident"]["alerts"]}["ConsumerOffsetStalled"] == \
        last["incident"]["ended_by"]


def test_webhook_without_incident_grouping_has_no_incident_object(db):
    pipeline = Pipeline(db, ["hook"], group_by=("alertname", "cluster", "group"))
    with WebhookServer() as hook:
        play(pipeline, [(0, lambda: [span()])],
             build_notifiers([WebhookReceiver(type="webhook", name="hook", url=hook.url)], {}))
        (body,) = hook.bodies
    assert set(body["rocketwatch"]) == {"subject", "is_update", "changes", "lead", "links"}
    assert body["rocketwatch"]["subject"] == "WARNING ProcessQueueSpanTooLong · orderConsumerA · prod"
