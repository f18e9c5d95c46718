"""One incident, one page that leads with its cause (issue 36), as each receiver gets it: one email
thread, one Slack message updated in place with its buttons acting on the whole incident, one webhook
group key carrying the incident (the plain text is test_incident_pages.py's).

The timelines and the pipeline are tests/helpers/stuck_thread_incident.py's: the daemon's own cycle
minus Spark on a real SQLite state file; Slack is the local Web API stand-in, email a real SMTP
server, the webhook a local HTTP receiver.
"""

from __future__ import annotations

import asyncio
import html
import json

from slack_sdk.web.async_client import AsyncWebClient

from config.receivers import EmailReceiver, SlackReceiver, WebhookReceiver
from daemon.notify import render
from daemon.notify.factory import build_notifiers
from daemon.notify.slack_actions import SlackActionHandler
from tests.helpers.slack_server import CHANNEL_ID, SlackServer
from tests.helpers.smtp_server import SmtpServer
from tests.helpers.stuck_thread_incident import (
    CAUSE_FOUND,
    CAUSE_FOUND_WHY,
    CONSEQUENCE_FIRST,
    RESOLVED,
    TOKEN,
    WHY_SPAN,
    WHY_STALLED,
    Pipeline,
    at,
    held,
    play,
    span,
    stalled,
    stuck,
)
from tests.helpers.webhook_server import WebhookServer

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
