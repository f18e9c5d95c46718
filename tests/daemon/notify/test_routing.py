"""The route tree, time intervals and the notification log's timers, as an on-call team sees them:
who gets which alert, when a group is sent, when it is held, and that restarts change nothing."""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime

import pytest
from pydantic import ValidationError

from config.models import NotifyConfig
from daemon.alerts.tracker import AlertTracker
from daemon.notify.dispatcher import Dispatcher
from daemon.notify.outbox import Outbox
from daemon.notify.routing import HEARTBEAT, Router
from rules.findings import Finding, RuleTiming
from tests.daemon.notify.conftest import RULE, at, span

RECEIVERS = [{"type": "console", "name": n} for n in ("oncall", "payments-team", "mq-admins", "deadman")]


def notify(**extra) -> NotifyConfig:
    return NotifyConfig.model_validate({"receivers": RECEIVERS, **extra})


TREE = {
    "receiver": "oncall",
    "group_by": ["alertname", "cluster", "group"],
    "routes": [
        {"matchers": ['group=~"pay.*"'], "receiver": "payments-team", "continue": True},
        {"matchers": ['category="broker"'], "receiver": "mq-admins", "group_by": ["alertname", "broker"]},
        {"matchers": ['severity="critical"'], "routes": [{"matchers": ['cluster="staging"'], "receiver": "mq-admins"}]},
    ],
}


def receivers_for(router: Router, **labels: str) -> list[tuple[str, tuple[str, ...]]]:
    return [(r.receiver, r.group_by) for r in router.match({"alertname": "X", **labels})]


def test_the_tree_routes_by_labels_with_continue_and_inheritance():
    router = Router.from_config(notify(route=TREE))
    default = ("alertname", "cluster", "group")
    # payments' group goes to the team; with continue, the later siblings are tried too...
    assert receivers_for(router, group="payments", severity="warning") == [("payments-team", default)]
    assert receivers_for(router, group="payments", category="broker", broker="b") == [
        ("payments-team", default), ("mq-admins", ("alertname", "broker"))]
    assert receivers_for(router, category="broker", broker="broker-a") == [("mq-admins", ("alertname", "broker"))]
    # A critical alert of staging goes to the nested route; of prod, the critical node itself (inherits oncall).
    assert receivers_for(router, severity="critical", cluster="staging") == [("mq-admins", default)]
    assert receivers_for(router, severity="critical", cluster="prod") == [("oncall", default)]
    assert receivers_for(router, severity="warning", group="orders") == [("oncall", default)]


def test_without_a_tree_every_receiver_gets_every_alert():
    router = Router.from_config(notify())
    assert [r for r, _ in receivers_for(router, group="orders")] == ["oncall", "payments-team", "mq-admins", "deadman"]


@pytest.mark.parametrize(("route", "message"), [
    ({"receiver": "nobody"}, "route: receiver 'nobody' is not among the receivers"),
    ({"receiver": "oncall", "routes": [{"receiver": "ghost"}]}, "route.routes[0]: receiver 'ghost'"),
    ({"receiver": "oncall", "mute_time_intervals": ["weekends"]}, "time interval 'weekends' is not defined"),
    ({"routes": [{"receiver": "oncall"}]}, "the root route needs a receiver"),
    ({"receiver": "oncall", "matchers": ["severity critical"]}, "cannot read matcher"),
])
def test_a_broken_tree_is_refused_naming_the_route(route, message):
    with pytest.raises(ValidationError, match=message.replace("(", r"\(").replace("[", r"\[").replace("]", r"\]")):
        notify(route=route)


def test_time_intervals_mute_and_activate_routes_in_their_time_zone():
    config = notify(
        route={"receiver": "oncall", "routes": [
            {"matchers": ['severity="warning"'], "receiver": "mq-admins", "active_time_intervals": ["office"]},
            {"matchers": ['severity="critical"'], "receiver": "oncall", "mute_time_intervals": ["maintenance"]},
        ]},
        time_intervals=[
            {"name": "office", "time_intervals": [
                {"weekdays": ["monday:friday"], "times": [{"start_time": "09:00", "end_time": "18:00"}],
                 "location": "Asia/Shanghai"}]},
            {"name": "maintenance", "time_intervals": [{"days_of_month": ["-1"], "months": ["november"]}]},
        ],
    )
    router = Router.from_config(config)
    office, critical = router.match({"severity": "warning"})[0], router.match({"severity": "critical"})[0]
    monday_10_shanghai = datetime(2026, 11, 23, 2, 0, tzinfo=UTC)  # 10:00 in Shanghai
    monday_20_shanghai = datetime(2026, 11, 23, 12, 0, tzinfo=UTC)
    saturday_10_shanghai = datetime(2026, 11, 28, 2, 0, tzinfo=UTC)
    assert router.silent_reason(office, monday_10_shanghai) is None
    assert router.silent_reason(office, monday_20_shanghai) == "outside_active_time_interval"
    assert router.silent_reason(office, saturday_10_shanghai) == "outside_active_time_interval"
    assert router.silent_reason(critical, datetime(2026, 11, 30, 12, 0, tzinfo=UTC)) == "muted_time_interval"
    assert router.silent_reason(critical, datetime(2026, 11, 29, 12, 0, tzinfo=UTC)) is None


class Cycle:
    """tracker -> dispatcher with a configured router, as the daemon wires it."""

    def __init__(self, db, config: NotifyConfig, acknowledged=lambda key: False) -> None:
        self.db, self.config, self.acknowledged = db, config, acknowledged
        self.restart()

    def restart(self) -> None:
        """A new daemon process (or a reload) on the same state file."""
        self.tracker = AlertTracker(self.db)
        self.dispatcher = Dispatcher(Outbox(self.db), [r.name for r in self.config.receivers], self.config.group_by,
                                     router=Router.from_config(self.config), acknowledged=self.acknowledged)

    def run(self, findings, now) -> list[tuple[str, str, int]]:
        timings = {RULE: RuleTiming(RULE), HEARTBEAT: RuleTiming(HEARTBEAT)}
        events = self.tracker.update(timings, findings, now)
        queued = asyncio.run(self.dispatcher.dispatch(events, self.tracker.active_alerts(), now))
        return [(receiver, n.reason, len(n.firing)) for receiver, n in queued]


def one_receiver(**route) -> NotifyConfig:
    return notify(route={"receiver": "oncall", **route})


def test_group_wait_then_group_interval_then_repeat_each_with_its_reason(db):
    cycle = Cycle(db, one_receiver(group_wait="1m", group_interval="5m", repeat_interval="1h"))
    assert cycle.run([span(queue=1)], at(0)) == []  # group_wait
    assert cycle.run([span(queue=1), span(queue=2)], at(30)) == []
    assert cycle.run([span(queue=1), span(queue=2)], at(60)) == [("oncall", "first", 2)]  # both, in one message
    assert cycle.run([span(queue=1), span(queue=2), span(queue=3)], at(90)) == []  # group_interval
    assert cycle.run([span(queue=1), span(queue=2), span(queue=3)], at(360)) == [("oncall", "new_alerts_in_group", 3)]
    assert cycle.run([span(queue=1), span(queue=2), span(queue=3)], at(1800)) == []  # unchanged
    assert cycle.run([span(queue=1), span(queue=2), span(queue=3)], at(3960)) == [
        ("oncall", "repeat_interval_elapsed", 3)]
    assert cycle.run([], at(3990)) == []  # group_interval holds the resolve too
    assert cycle.run([], at(4260)) == [("oncall", "resolved", 0)]
    counted = cycle.dispatcher.decisions
    assert counted["group_wait"] == 2 and counted["group_interval"] == 2 and counted["unchanged"] == 1


def test_timers_and_sent_state_survive_a_restart_no_catch_up_storm(db):
    cycle = Cycle(db, one_receiver(group_interval="5m", repeat_interval="1h"))
    assert cycle.run([span(queue=1)], at(0)) == [("oncall", "first", 1)]
    cycle.restart()
    assert cycle.run([span(queue=1)], at(60)) == []  # already told: nothing re-sent after the restart
    assert cycle.run([span(queue=1), span(queue=2)], at(120)) == []  # the group_interval still counts from 0
    cycle.restart()
    assert cycle.run([span(queue=1), span(queue=2)], at(300)) == [("oncall", "new_alerts_in_group", 2)]


def test_an_alert_that_resolves_within_group_wait_is_never_sent(db):
    cycle = Cycle(db, one_receiver(group_wait="2m"))
    assert cycle.run([span(queue=1)], at(0)) == []
    assert cycle.run([], at(30)) == []
    assert cycle.run([], at(300)) == []
    assert cycle.dispatcher.decisions["resolved_before_told"] == 1


def test_an_acknowledged_group_is_not_reminded_but_still_resolves(db):
    acked: set[str] = set()
    cycle = Cycle(db, one_receiver(repeat_interval="30m"), acknowledged=lambda key: key in acked)
    assert cycle.run([span(queue=1)], at(0)) == [("oncall", "first", 1)]
    acked.update(group.group_key for group in cycle.dispatcher.log.groups())
    assert cycle.run([span(queue=1)], at(3600)) == []
    assert cycle.dispatcher.decisions["acknowledged"] == 1
    assert cycle.run([], at(3630)) == [("oncall", "resolved", 0)]


def test_heartbeat_goes_only_to_its_receiver_every_interval(db):
    config = notify(route={"receiver": "oncall"}, heartbeat={"receiver": "deadman", "interval": "5m"})
    cycle = Cycle(db, config)
    beat = Finding(HEARTBEAT, {}, None, None, None, {"summary": "alive"})
    assert cycle.run([beat, span()], at(0)) == [("oncall", "first", 1), ("deadman", "first", 1)]
    assert cycle.run([beat, span()], at(120)) == []
    assert cycle.run([beat, span()], at(300)) == [("deadman", "repeat_interval_elapsed", 1)]
    assert cycle.run([beat, span()], at(600)) == [("deadman", "repeat_interval_elapsed", 1)]


def test_a_route_removed_on_reload_takes_its_groups_with_it(db):
    cycle = Cycle(db, notify(route={"receiver": "oncall", "routes": [
        {"matchers": ['group="stuckGroup"'], "receiver": "mq-admins"}]}))
    assert cycle.run([span()], at(0)) == [("mq-admins", "first", 1)]
    cycle.config = notify(route={"receiver": "oncall"})
    cycle.restart()
    assert cycle.run([span()], at(30)) == []  # firing, already told elsewhere: the new route starts quiet
    assert [g.route for g in cycle.dispatcher.log.groups()] == ["route"]


def test_reminders_read_as_reminders():
    from daemon.notify import render
    from daemon.notify.model import AlertSnapshot, Notification

    alert = AlertSnapshot(fingerprint="f", rule=RULE, labels={"group": "g"}, severity="warning", value=1, threshold=1,
                          annotations={}, state="firing", active_at=at(0), fired_at=at(0))
    n = Notification(group_key="k", group_labels={"alertname": RULE}, status="firing", alerts=[alert], changes=[],
                     is_update=True, created_at=at(3600), reason="repeat_interval_elapsed")
    assert "Still firing: 1 alert, the oldest since 2026-03-01 12:00:00 UTC" in render.slack_thread_reply(n)
    assert "Reminder. Still firing" in render.text(n)
