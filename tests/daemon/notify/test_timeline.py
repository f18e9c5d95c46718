"""Timelines an on-call person lives through (DESIGN §8), cycle by cycle, against a real SMTP server
and the local Slack Web API: what reaches them, how often, and that nothing is lost or doubled.

The cycle is the daemon's own (tracker -> dispatcher -> outbox -> notifiers) minus Spark; findings
are what an evaluation would hand over. Time is the real clock plus offsets, so silences made with
the CLI (which stamps the real now) line up with the cycles.
"""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime, timedelta

import pytest

from config.receivers import EmailReceiver, SlackReceiver
from daemon.alerts.inhibit import Inhibitor
from daemon.alerts.silences import SilenceStore
from daemon.alerts.tracker import AlertTracker
from daemon.cli import main
from daemon.notify.dispatcher import Dispatcher
from daemon.notify.factory import build_notifiers
from daemon.notify.outbox import Outbox
from rules.findings import Finding, RuleTiming
from tests.helpers.slack_server import SlackServer
from tests.helpers.smtp_server import SmtpServer

TOKEN = "xoxb-timeline"
LAG, BROKER = "ConsumerLagHigh", "BrokerPutLatencyHigh"
TIMINGS = {LAG: RuleTiming(LAG), BROKER: RuleTiming(BROKER)}
T0 = datetime.now(UTC).replace(microsecond=0)


def at(seconds: float) -> datetime:
    return T0 + timedelta(seconds=seconds)


def lag(queue: int, group: str = "orderConsumer", broker: str = "broker-a") -> Finding:
    labels = {"cluster": "prod", "group": group, "topic": "OrderTopic", "broker": broker, "queue_id": str(queue),
              "category": "consumer"}
    return Finding(LAG, labels, "warning", 12000 + queue, 10000,
                   {"summary": f"{group}: queue {broker}/{queue} lags {12000 + queue}",
                    "diagnosis": "the consumer falls behind", "next_steps": "check consumeRT"})


def broker_slow(broker: str = "broker-a") -> Finding:
    return Finding(BROKER, {"cluster": "prod", "broker": broker, "category": "broker"}, "critical", 840, 500,
                   {"summary": f"{broker}: puts take 840 ms", "diagnosis": "page cache busy", "next_steps": "iostat"})


class Timeline:
    """The daemon's notify path with Slack and email receivers on loopback."""

    def __init__(self, db, slack: SlackServer, smtp: SmtpServer) -> None:
        self.slack, self.smtp = slack, smtp
        self.silences = SilenceStore(db)
        self.tracker = AlertTracker(db)
        self.outbox = Outbox(db)
        # An operator's inhibit rule, as Alertmanager reads it: a critical broker-side alert mutes the
        # consumer-side ones on that broker.
        inhibitors = [Inhibitor.parse(['category="broker"', 'severity="critical"'], ['category="consumer"'],
                                      ["cluster", "broker"])]
        self.dispatcher = Dispatcher(self.outbox, ["slack", "mail"], ["alertname", "cluster", "group"],
                                     self.silences, inhibitors)
        receivers = [
            SlackReceiver(type="slack", name="slack", channel="#mq", token_env="T", base_url=slack.base_url,
                          timeout=5),
            EmailReceiver(type="email", name="mail", host=smtp.host, port=smtp.port, security="none",
                          from_addr="rw@example.com", to=["oncall@example.com"], timeout=5),
        ]
        self.notifiers = build_notifiers(receivers, {"T": TOKEN})

    def cycle(self, findings: list[Finding], now: datetime):
        """One evaluation and one delivery round; returns the delivery report."""
        events = self.tracker.update(TIMINGS, findings, now)
        asyncio.run(self.dispatcher.dispatch(events, self.tracker.active_alerts(), now))
        return asyncio.run(self.outbox.deliver_due(self.notifiers, now))

    def deliver(self, now: datetime):
        """A delivery round without an evaluation (the dispatch job)."""
        return asyncio.run(self.outbox.deliver_due(self.notifiers, now))


@pytest.fixture
def timeline(db):
    with SlackServer(token=TOKEN) as slack, SmtpServer() as smtp:
        yield Timeline(db, slack, smtp)


def test_fifty_queues_one_message_then_a_reply_then_resolved_in_place(timeline):
    t, slack, smtp = timeline, timeline.slack, timeline.smtp
    t.cycle([lag(q) for q in range(50)], at(0))
    assert len(slack.messages) == 1 and len(smtp.messages) == 1
    (message,) = slack.messages.values()
    assert "ConsumerLagHigh ×50" in message["blocks"][0]["text"]["text"] and "and 40 more" in str(message)
    assert smtp.messages[0]["Subject"].startswith("WARNING ConsumerLagHigh ×50 · orderConsumer")
    assert "queue broker-a/49 lags 12049" in smtp.messages[0].get_body(("plain",)).get_content()

    t.cycle([lag(q) for q in range(50)], at(30))  # nothing changed: nothing sent
    assert len(slack.calls) == 1 and len(smtp.messages) == 1

    t.cycle([lag(q) for q in range(51)], at(60))  # queue 50 joins
    assert len(slack.messages) == 1 and len(slack.replies) == 1
    assert "broker-a/50" in slack.replies[0]["text"] and len(smtp.messages) == 2

    t.cycle([], at(90))  # all resolved
    (ts,) = slack.messages
    assert "RESOLVED" in slack.messages[ts]["blocks"][0]["text"]["text"]
    assert len(slack.messages) == 1 and len(slack.replies) == 2
    assert "RESOLVED" in smtp.messages[-1]["Subject"] and len(smtp.messages) == 3
    first_id = smtp.messages[0]["Message-ID"]
    assert all(first_id in (m["References"] or "") for m in smtp.messages[1:])  # one mail thread


def test_a_silence_from_the_cli_mutes_and_its_expiry_lets_the_group_through(timeline, db, capsys):
    t, slack = timeline, timeline.slack
    state_dir = str(db.path.parent)
    base = ["silence", "--state-dir", state_dir]
    assert main([*base, "add", 'group="orderConsumer"', "-d", "1h", "-a", "ana", "-m", "reindex job"]) == 0
    silence_id = capsys.readouterr().out.split()[1]

    t.cycle([lag(q) for q in range(3)], datetime.now(UTC))
    t.cycle([lag(q) for q in range(4)], datetime.now(UTC) + timedelta(seconds=30))
    assert slack.calls == [] and timeline.smtp.messages == []  # muted, though it fires and grows

    assert main([*base, "expire", silence_id]) == 0
    t.cycle([lag(q) for q in range(4)], datetime.now(UTC) + timedelta(seconds=60))
    (message,) = slack.messages.values()  # announced once the silence ends, with all four queues
    assert "ConsumerLagHigh ×4" in message["blocks"][0]["text"]["text"]
    assert len(timeline.smtp.messages) == 1


def test_the_broker_cause_mutes_consumer_symptoms_on_that_broker_only(timeline):
    t, slack = timeline, timeline.slack
    t.cycle([broker_slow("broker-a"), lag(1, broker="broker-a"), lag(2, group="audit", broker="broker-b")], at(0))
    texts = [str(m) for m in slack.messages.values()]
    assert len(texts) == 2  # the cause, and the symptom on the other broker
    assert any(BROKER in x for x in texts) and any("audit" in x for x in texts)
    assert not any("orderConsumer" in x for x in texts)

    t.cycle([lag(1, broker="broker-a"), lag(2, group="audit", broker="broker-b")], at(30))  # cause resolved
    texts = [str(m) for m in slack.messages.values()]
    assert any("orderConsumer" in x for x in texts)  # the symptom, unmuted, is announced now


def test_smtp_down_for_several_rounds_then_the_mail_arrives_once(timeline):
    t, smtp = timeline, timeline.smtp
    smtp.stop()
    report = t.cycle([lag(1)], at(0))
    assert report.failed == 1 and report.delivered == 1  # Slack went out; the mail waits
    assert t.deliver(at(5)).failed == 1 and t.deliver(at(15)).failed == 1  # 5 s, then 10 s of backoff
    assert t.deliver(at(20)).waiting == 1  # not hammering: the next try is at 35 s
    smtp.start()
    assert t.deliver(at(35)).delivered == 1
    assert t.deliver(at(600)).delivered == 0
    assert len(smtp.messages) == 1 and "WARNING ConsumerLagHigh" in smtp.messages[0]["Subject"]
    assert [r.attempts for r in t.outbox.rows() if r.receiver == "mail"] == [4]


def test_slack_429_is_waited_out_and_nothing_is_doubled(timeline):
    t, slack = timeline, timeline.slack
    slack.rate_limit_next(2, retry_after=1)
    report = t.cycle([lag(1)], at(0))
    assert report.delivered == 2 and report.failed == 0
    assert [c.status for c in slack.calls_to("chat.postMessage", answered=False)] == [429, 429, 200]
    assert len(slack.messages) == 1
