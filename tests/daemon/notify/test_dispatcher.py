"""Grouping: one notification per touched group and receiver, carrying the group's current alerts."""

from __future__ import annotations

import asyncio
import io
from datetime import timedelta

from daemon.notify.console import ConsoleNotifier
from daemon.notify.routing import Route, Router, _Node
from tests.daemon.notify.conftest import Cycle, at, span


def test_two_alerts_of_one_group_make_one_notification_per_receiver(db):
    cycle = Cycle(db, ["slack", "mail"])
    queued = cycle.run([span(queue=3), span(queue=4)], at(0))
    assert [r for r, _ in queued] == ["slack", "mail"]
    for _, n in queued:
        assert n.group_labels == {"alertname": "ProcessQueueSpanTooLong", "cluster": "prod", "group": "stuckGroup"}
        assert n.status == "firing" and not n.is_update
        assert sorted(a.labels["queue_id"] for a in n.alerts) == ["3", "4"]
        assert [c.kind for c in n.changes] == ["firing", "firing"]
    assert cycle.outbox.depth() == 2


def test_another_consumer_group_is_another_notification(db):
    cycle = Cycle(db, ["slack"])
    queued = cycle.run([span(group="stuckGroup"), span(group="otherGroup")], at(0))
    assert sorted(n.group_labels["group"] for _, n in queued) == ["otherGroup", "stuckGroup"]
    assert all(len(n.alerts) == 1 for _, n in queued)


def test_quiet_cycle_queues_nothing(db):
    cycle = Cycle(db, ["slack"])
    cycle.run([span()], at(0))
    assert cycle.run([span()], at(30)) == []


def test_new_alert_in_an_open_group_is_an_update_with_all_alerts(db):
    cycle = Cycle(db, ["slack"])
    cycle.run([span(queue=3)], at(0))
    ((_, n),) = cycle.run([span(queue=3), span(queue=4)], at(30))
    assert n.is_update and len(n.alerts) == 2
    assert [c.kind for c in n.changes] == ["firing"]


def test_partial_resolve_stays_firing_and_full_resolve_is_resolved(db):
    cycle = Cycle(db, ["slack"])
    cycle.run([span(queue=3), span(queue=4)], at(0))
    ((_, n),) = cycle.run([span(queue=4)], at(30))
    assert n.status == "firing" and n.is_update
    assert {a.labels["queue_id"]: a.state for a in n.alerts} == {"4": "firing", "3": "resolved"}
    ((_, n),) = cycle.run([], at(60))
    assert n.status == "resolved" and [a.state for a in n.alerts] == ["resolved"]
    # After a resolve the group is closed: firing again is a new message.
    ((_, n),) = cycle.run([span(queue=3)], at(90))
    assert not n.is_update


def test_severity_change_is_an_update_not_a_new_group(db):
    cycle = Cycle(db, ["slack"])
    cycle.run([span(severity="warning")], at(0))
    ((_, n),) = cycle.run([span(value=9000, severity="critical")], at(30))
    assert n.is_update and n.severity == "critical"
    assert [(c.kind, c.previous_severity, c.severity) for c in n.changes] == [
        ("severity_changed", "warning", "critical")
    ]


def test_group_by_a_label_missing_from_the_alert(db):
    cycle = Cycle(db, ["slack"], group_by=["alertname", "region"])
    ((_, n),) = cycle.run([span()], at(0))
    assert n.group_key == '{alertname="ProcessQueueSpanTooLong",region=""}'


def test_a_group_firing_again_after_its_resolve_was_told_is_a_first_message_after_its_group_wait(db):
    cycle = Cycle(db, ["console"])
    route = Route("route.receivers[console]", "console", ("alertname", "cluster", "group"),
                  group_wait=timedelta(seconds=30))
    cycle.dispatcher.router = Router(_Node(None, children=[_Node(route, continue_=True)]))
    notifiers = {"console": ConsoleNotifier("console", io.StringIO())}

    def run(findings, seconds):
        queued = cycle.run(findings, at(seconds))
        asyncio.run(cycle.outbox.deliver_due(notifiers, at(seconds)))
        return [n.reason for _, n in queued]

    assert run([span()], 0) == []  # its group_wait
    assert run([span()], 30) == ["first"]
    assert run([], 60) == ["resolved"]
    assert run([span()], 90) == [], "a new message: it waits its group_wait again"
    assert run([span()], 120) == ["first"]
