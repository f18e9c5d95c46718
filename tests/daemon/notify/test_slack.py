"""Slack against a local Web API server: post, update + thread reply, 429 handled by slack-sdk."""

from __future__ import annotations

import asyncio
import json
from datetime import timedelta

import pytest

from config.receivers import SlackReceiver
from daemon.alerts.value_history import ValueHistory
from daemon.notify.factory import build_notifier
from rules.findings import RuleTiming
from tests.daemon.notify.conftest import RULE, Cycle, at, span
from tests.helpers.slack_server import CHANNEL_ID, SlackServer

TOKEN = "xoxb-test-token"
TIMINGS_FOR = {RULE: RuleTiming(RULE, for_=timedelta(seconds=100))}  # pending for 100 s, then firing


@pytest.fixture
def slack():
    with SlackServer(token=TOKEN) as server:
        yield server


def notifiers(slack: SlackServer):
    config = SlackReceiver(
        type="slack", name="oncall-slack", channel="#rocketmq-alerts", token_env="SLACK_BOT_TOKEN",
        base_url=slack.base_url, timeout=5,
    )
    return {"oncall-slack": build_notifier(config, env={"SLACK_BOT_TOKEN": TOKEN})}


def deliver(cycle: Cycle, slack: SlackServer, now):
    return asyncio.run(cycle.outbox.deliver_due(notifiers(slack), now))


def everything(call) -> str:
    return json.dumps(call.args)


def test_firing_posts_one_message_naming_where_and_what(db, slack):
    cycle = Cycle(db, ["oncall-slack"])
    cycle.run([span()], at(0))
    report = deliver(cycle, slack, at(0))
    assert report.delivered == 1, report

    (post,) = slack.calls_to("chat.postMessage")
    assert post.authorization == f"Bearer {TOKEN}"
    assert post.args["channel"] == "#rocketmq-alerts" and "thread_ts" not in post.args
    assert post.args["text"] == "WARNING ProcessQueueSpanTooLong · stuckGroup · prod"  # for a lock screen
    body = everything(post)
    for needle in ("stuckGroup", "broker-a", "queue_id `3`", "span 1500", "Take five jstacks", "OrderTopic"):
        assert needle in body, needle
    header = post.args["blocks"][0]
    assert header["type"] == "header" and "WARNING" in header["text"]["text"]
    assert "ProcessQueueSpanTooLong" in header["text"]["text"]
    assert post.args["attachments"][0]["color"] == "#e09b00"  # warning
    assert post.args["metadata"]["event_payload"]["idempotency_key"] == cycle.outbox.rows()[0].idempotency_key


def test_resolve_updates_the_original_and_replies_in_its_thread(db, slack):
    cycle = Cycle(db, ["oncall-slack"])
    cycle.run([span()], at(0))
    deliver(cycle, slack, at(0))
    (ts,) = slack.messages
    cycle.run([], at(60))
    assert deliver(cycle, slack, at(60)).delivered == 1

    (update,) = slack.calls_to("chat.update")
    assert (update.args["channel"], update.args["ts"]) == (CHANNEL_ID, ts)
    assert update.args["text"].startswith("RESOLVED ProcessQueueSpanTooLong")
    assert "RESOLVED" in update.args["blocks"][0]["text"]["text"]
    assert slack.messages[ts]["attachments"][0]["color"] == "#2da44e"
    (reply,) = slack.replies
    assert reply["thread_ts"] == ts
    assert "resolved" in reply["text"] and "12:01:00 UTC" in reply["text"]
    assert len(slack.messages) == 1  # no second top-level message


def test_escalation_updates_and_replies_never_a_second_message(db, slack):
    cycle = Cycle(db, ["oncall-slack"])
    cycle.run([span(severity="warning")], at(0))
    deliver(cycle, slack, at(0))
    cycle.run([span(value=9000, severity="critical")], at(30))
    deliver(cycle, slack, at(30))
    assert len(slack.messages) == 1
    (ts,) = slack.messages
    assert slack.messages[ts]["attachments"][0]["color"] == "#d1242f"
    (reply,) = slack.replies
    assert "escalated warning → critical" in reply["text"]


def test_rate_limit_is_retried_by_slack_sdk_and_arrives_once(db, slack):
    cycle = Cycle(db, ["oncall-slack"])
    cycle.run([span()], at(0))
    slack.rate_limit_next(1, retry_after=1)
    report = deliver(cycle, slack, at(0))
    assert (report.delivered, report.failed) == (1, 0), report
    attempts = slack.calls_to("chat.postMessage", answered=False)
    assert [c.status for c in attempts] == [429, 200]
    assert len(slack.messages) == 1


def test_api_error_stays_in_the_outbox_and_is_retried(db, slack):
    cycle = Cycle(db, ["oncall-slack"])
    cycle.run([span()], at(0))
    slack.fail_next(1, error="internal_error", status=500)
    report = deliver(cycle, slack, at(0))
    assert report.failed == 1
    assert "internal_error" in report.errors[0] and "(retryable)" in report.errors[0]
    assert TOKEN not in report.errors[0]
    assert deliver(cycle, slack, at(5)).delivered == 1  # a Slack outage: the first backoff step
    assert len(slack.messages) == 1


def test_a_wrong_channel_is_permanent_waits_longest_and_goes_out_once_fixed(db, slack):
    cycle = Cycle(db, ["oncall-slack"])
    cycle.run([span()], at(0))
    slack.fail_next(1, error="channel_not_found")
    report = deliver(cycle, slack, at(0))
    assert "channel_not_found" in report.errors[0] and "(permanent)" in report.errors[0]
    assert "oncall-slack" in report.errors[0] and TOKEN not in report.errors[0]
    assert deliver(cycle, slack, at(60)).waiting == 1  # no hammering a channel that is not there
    assert deliver(cycle, slack, at(300)).delivered == 1  # kept, and sent once the operator fixed it


def test_deleted_original_starts_a_new_message(db, slack):
    cycle = Cycle(db, ["oncall-slack"])
    cycle.run([span(queue=3)], at(0))
    deliver(cycle, slack, at(0))
    slack.messages.clear()  # someone deleted the message
    cycle.run([span(queue=3), span(queue=4)], at(30))
    assert deliver(cycle, slack, at(30)).delivered == 1
    (message,) = slack.messages.values()
    assert message["text"] == "WARNING ProcessQueueSpanTooLong ×2 · stuckGroup · prod"


def test_secrets_stay_out_of_reprs(slack):
    config = SlackReceiver(type="slack", name="s", channel="#c", token="xoxb-inline-secret")
    assert "xoxb-inline-secret" not in repr(config) and "xoxb-inline-secret" not in str(config.model_dump())
    notifier = build_notifier(config)
    assert "xoxb-inline-secret" not in repr(notifier)


def charting(db, slack: SlackServer):
    """A cycle, its value history and a Slack notifier that charts from it."""
    history = ValueHistory(db)
    config = SlackReceiver(
        type="slack", name="oncall-slack", channel="#rocketmq-alerts", token_env="SLACK_BOT_TOKEN",
        base_url=slack.base_url, timeout=5,
    )
    notifier = {"oncall-slack": build_notifier(config, env={"SLACK_BOT_TOKEN": TOKEN}, value_series=history.series)}
    return Cycle(db, ["oncall-slack"]), history, notifier


def test_a_new_group_gets_a_chart_of_its_worst_alert_in_the_thread(db, slack):
    cycle, history, notifier = charting(db, slack)
    # The span climbs over four evaluations (the rule's `for` would keep it pending meanwhile).
    for i, value in enumerate((1200, 1900, 2600, 3626)):
        cycle.tracker.update(TIMINGS_FOR, [span(queue=3, value=value), span(queue=5, value=1100)], at(30 * i))
        history.record(cycle.tracker.active_alerts(), at(30 * i))
    events = cycle.tracker.update(TIMINGS_FOR, [span(queue=3, value=3626), span(queue=5, value=1100)], at(120))
    asyncio.run(cycle.dispatcher.dispatch(events, cycle.tracker.active_alerts(), at(120)))
    asyncio.run(cycle.outbox.deliver_due(notifier, at(120)))

    (post,) = slack.calls_to("chat.postMessage")
    (upload,) = slack.uploads
    assert upload["content"].startswith(b"\x89PNG\r\n\x1a\n")  # a real PNG
    assert upload["thread_ts"] in slack.messages and upload["channel_id"] == CHANNEL_ID
    assert "queue_id=3" in upload["title"] and "last 2 min" in upload["title"]  # the worst queue: 3626 > 1100

    # An update of the same group (resolve) uploads nothing more.
    events = cycle.tracker.update(TIMINGS_FOR, [], at(150))
    asyncio.run(cycle.dispatcher.dispatch(events, cycle.tracker.active_alerts(), at(150)))
    asyncio.run(cycle.outbox.deliver_due(notifier, at(150)))
    assert len(slack.uploads) == 1


def test_a_failing_chart_upload_does_not_fail_the_notification(db, slack):
    cycle, history, notifier = charting(db, slack)
    for i in range(3):
        cycle.tracker.update(TIMINGS_FOR, [span(value=1500 + i)], at(30 * i))
        history.record(cycle.tracker.active_alerts(), at(30 * i))
    events = cycle.tracker.update(TIMINGS_FOR, [span(value=1600)], at(120))
    asyncio.run(cycle.dispatcher.dispatch(events, cycle.tracker.active_alerts(), at(120)))
    posted = len(slack.calls_to("chat.postMessage"))
    original = slack._answer

    def refuse_uploads(method, args, auth):
        if method.startswith("files."):
            return 200, {}, {"ok": False, "error": "not_allowed_token_type"}
        return original(method, args, auth)

    slack._answer = refuse_uploads
    report = asyncio.run(cycle.outbox.deliver_due(notifier, at(120)))
    assert report.delivered == 1 and report.failed == 0
    assert len(slack.calls_to("chat.postMessage")) == posted + 1 and slack.uploads == []
