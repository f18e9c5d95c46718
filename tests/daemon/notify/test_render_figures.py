"""Slack and email state an alert's figures as its rule defines them, as the status page does.

A rule whose condition is its `where` (CollectorTargetUnreachable: `where: not ok`, `above: {critical: -1}`)
has no threshold an operator could read the value against: the message says what makes it fire instead.
"""

from __future__ import annotations

import asyncio
import html
import json
from pathlib import Path

import pytest

from config.receivers import EmailReceiver, SlackReceiver
from daemon.alerts.incidents import IncidentBook
from daemon.alerts.tracker import AlertTracker
from daemon.notify import render
from daemon.notify.dispatcher import Dispatcher
from daemon.notify.factory import build_notifier
from daemon.notify.model import AlertSnapshot
from daemon.notify.outbox import Outbox
from rules.findings import Finding, RuleTiming
from rules.links import CausalLinks
from rules.loader import load_rule_files
from tests.daemon.notify.conftest import at
from tests.helpers.figure_rules import FIGURE_RULES
from tests.helpers.slack_server import SlackServer
from tests.helpers.smtp_server import SmtpServer

TOKEN = "xoxb-test-token"


FAILING = Finding("TargetFailing", {"cluster": "prod", "target": "127.0.0.1:10911", "call": "QUERY_CONSUME_TIME_SPAN"},
                  "critical", 1.38, -1.0, {"summary": "QUERY_CONSUME_TIME_SPAN to 127.0.0.1:10911 fails"})
DEGRADED = Finding("TargetDegraded", {"cluster": "prod", "target": "127.0.0.1:10921", "call": "GET_CONSUME_STATS"},
                   "warning", 2.5, 0.0, {"summary": "GET_CONSUME_STATS to 127.0.0.1:10921 fails"})
# No summary: the fallback sentence states the figures too.
SLOW = Finding("SlowPuts", {"cluster": "prod", "broker": "broker-a"}, "warning", 250.0, 100.0, {})


@pytest.fixture
def rules(tmp_path: Path):
    path = tmp_path / "rules.yaml"
    path.write_text(FIGURE_RULES)
    by_name = {rule.alert: rule for rule in load_rule_files([path]).rules}
    return by_name.get


def queue(db, receiver: str) -> Outbox:
    """One evaluation through the real tracker and dispatcher: the three alerts, one group each."""
    tracker, outbox = AlertTracker(db), Outbox(db)
    dispatcher = Dispatcher(outbox, [receiver], ["alertname", "cluster", "group"], None, ())
    events = tracker.update({f.rule: RuleTiming(f.rule) for f in (FAILING, DEGRADED, SLOW)},
                            [FAILING, DEGRADED, SLOW], at(0))
    assert len(asyncio.run(dispatcher.dispatch(events, tracker.active_alerts(), at(0)))) == 3
    return outbox


def by_rule(texts: list[str]) -> dict[str, str]:
    """Each rule's message, unescaped (Slack and HTML both escape `>`)."""
    return {rule: html.unescape(next(t for t in texts if rule in t))
            for rule in ("TargetFailing", "TargetDegraded", "SlowPuts")}


def assert_figures_as_the_rules_define_them(texts: dict[str, str]) -> None:
    failing, degraded, slow = texts["TargetFailing"], texts["TargetDegraded"], texts["SlowPuts"]
    # The failing call's value is how long it took to fail; -1 is no threshold to read it against.
    assert "1.38 ms" in failing and "fires while not ok" in failing
    assert "-1" not in failing and "threshold" not in failing and "1.38 ms vs" not in failing
    # A level its `where` already demands the value be past is no threshold either.
    assert "2.5 ms" in degraded and "fires while not ok and latency_ms > 0" in degraded
    assert "vs 0" not in degraded and "threshold 0" not in degraded
    # Nor is a grouping label the alert does not have: no consumer group on a target's alert.
    assert ", group=" not in failing and "group ``" not in failing
    # A real threshold still reads as one, in the value's unit.
    assert "250 vs 100 ms" in slow and "fires while" not in slow


def test_slack_states_the_condition_instead_of_a_threshold_that_cannot_be_crossed(db, rules):
    with SlackServer(token=TOKEN) as slack:
        config = SlackReceiver(type="slack", name="oncall-slack", channel="#alerts", token_env="T",
                               base_url=slack.base_url, timeout=5)
        notifier = build_notifier(config, env={"T": TOKEN}, rules=rules)
        report = asyncio.run(queue(db, "oncall-slack").deliver_due({"oncall-slack": notifier}, at(0)))
        assert report.delivered == 3, report
        posts = [json.dumps(call.args) for call in slack.calls_to("chat.postMessage")]
    assert_figures_as_the_rules_define_them(by_rule(posts))


def test_email_states_the_condition_instead_of_a_threshold_that_cannot_be_crossed(db, rules):
    with SmtpServer() as smtp:
        config = EmailReceiver(type="email", name="oncall-mail", host=smtp.host, port=smtp.port, security="none",
                               from_addr="rocketwatch@example.com", to=["mq-oncall@example.com"])
        notifier = build_notifier(config, rules=rules)
        report = asyncio.run(queue(db, "oncall-mail").deliver_due({"oncall-mail": notifier}, at(0)))
        assert report.delivered == 3, report
        mails = smtp.wait_for(3)
    assert_figures_as_the_rules_define_them(by_rule([m.get_body(("plain",)).get_content() for m in mails]))
    assert_figures_as_the_rules_define_them(by_rule([m.get_body(("html",)).get_content() for m in mails]))


def test_an_incident_page_states_figures_as_the_rules_define_them(db, rules):
    # Grouped by incident: the two target alerts share a place (cluster prod) and one page; the
    # broker's alert is a page of its own. The lead and the "Also firing here" list read alike.
    tracker, outbox = AlertTracker(db), Outbox(db)
    incidents = IncidentBook(db, lambda: CausalLinks([]))
    dispatcher = Dispatcher(outbox, ["console"], ["incident"], None, (), incidents=incidents)
    events = tracker.update({f.rule: RuleTiming(f.rule) for f in (FAILING, DEGRADED, SLOW)},
                            [FAILING, DEGRADED, SLOW], at(0))
    incidents.update(events, tracker.active_alerts(), at(0))
    sent = [n for _, n in asyncio.run(dispatcher.dispatch(events, tracker.active_alerts(), at(0)))]
    assert sorted(len(n.alerts) for n in sent) == [1, 2] and all(n.incident is not None for n in sent)
    assert "Also firing here:" in "".join(render.text(n, rules) for n in sent)
    assert_figures_as_the_rules_define_them(by_rule([render.text(n, rules) for n in sent]))
    assert_figures_as_the_rules_define_them(by_rule([json.dumps(render.slack_message(n, rules=rules)) for n in sent]))
    assert_figures_as_the_rules_define_them(by_rule([render.html_body(n, rules) for n in sent]))


@pytest.mark.parametrize(("rule", "value", "threshold", "expected"), [
    ("StuckMessage", 48.0, 45.0, "value 48 vs 45 s"),  # a stall's value is how long it is frozen, not the offset
    ("BrokerStoppedReporting", 150.0, 120.0, "value 150 vs 120 s"),
    ("RebalanceChurn", 5.0, 3.0, "value 5 vs 3 changes"),
])
def test_a_windowed_rules_value_reads_in_its_kinds_unit(rule: str, value: float, threshold: float, expected: str) -> None:
    pack = load_rule_files(["builtin"])
    alert = AlertSnapshot(fingerprint="f", rule=rule, labels={"cluster": "prod"}, severity="warning",
                                 value=value, threshold=threshold, annotations={}, state="firing",
                                 active_at=at(0), fired_at=at(0))
    assert render.figures_text(render.alert_figures(alert, pack.get))[0] == expected
