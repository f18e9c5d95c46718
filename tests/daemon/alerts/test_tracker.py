"""The alert state machine, step by step with an injected clock (Prometheus semantics)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from daemon.alerts.db import StateDB
from daemon.alerts.model import EventKind
from daemon.alerts.tracker import AlertTracker
from rules.findings import Finding, RuleTiming

T0 = datetime(2026, 3, 1, 12, 0, tzinfo=UTC)
RULE = "ProcessQueueSpanTooLong"
LABELS = {"cluster": "prod", "group": "stuckGroup", "broker": "broker-a", "queue_id": "3"}
TIMINGS = {RULE: RuleTiming(RULE, for_=timedelta(minutes=1), keep_firing_for=timedelta(minutes=2))}


def at(seconds: float) -> datetime:
    return T0 + timedelta(seconds=seconds)


def span(value: float = 1500, severity: str = "warning", labels=None, no_data: bool = False) -> Finding:
    return Finding(
        RULE, dict(labels or LABELS), severity, value, 1000,
        {"summary": f"stuckGroup: queue broker-a/3 span {value}"}, no_data=no_data,
    )


@pytest.fixture
def db(tmp_path):
    db = StateDB(tmp_path / "state.db")
    yield db
    db.close()


def kinds(events):
    return [e.kind for e in events]


def test_pending_then_firing_after_for(db):
    tracker = AlertTracker(db)
    assert tracker.update(TIMINGS, [span()], at(0)) == []
    assert [a.state for a in tracker.active_alerts()] == ["pending"]
    assert tracker.update(TIMINGS, [span()], at(30)) == []
    events = tracker.update(TIMINGS, [span(1600)], at(60))
    assert kinds(events) == [EventKind.FIRING]
    alert = events[0].alert
    assert (alert.state, alert.active_at, alert.fired_at, alert.value) == ("firing", at(0), at(60), 1600)
    assert tracker.update(TIMINGS, [span()], at(90)) == []  # firing stays quiet


def test_for_zero_fires_at_once(db):
    tracker = AlertTracker(db)
    events = tracker.update({RULE: RuleTiming(RULE)}, [span()], at(0))
    assert kinds(events) == [EventKind.FIRING]


def test_pending_dropped_silently(db):
    tracker = AlertTracker(db)
    tracker.update(TIMINGS, [span()], at(0))
    assert tracker.update(TIMINGS, [], at(30)) == []
    assert tracker.active_alerts() == []
    # It starts over: a new pending period, not a fire.
    assert tracker.update(TIMINGS, [span()], at(60)) == []
    assert tracker.active_alerts()[0].active_at == at(60)


def test_keep_firing_for_then_resolved(db):
    tracker = AlertTracker(db)
    tracker.update(TIMINGS, [span()], at(0))
    tracker.update(TIMINGS, [span()], at(60))
    assert tracker.update(TIMINGS, [], at(90)) == []  # 30 s since last seen < 2 min
    assert tracker.update(TIMINGS, [], at(179)) == []
    events = tracker.update(TIMINGS, [], at(180))  # exactly keep_firing_for after last seen
    assert kinds(events) == [EventKind.RESOLVED]
    assert events[0].alert.state == "resolved" and events[0].alert.resolved_at == at(180)
    assert tracker.active_alerts() == []


def test_returning_finding_within_keep_firing_for_is_the_same_alert(db):
    tracker = AlertTracker(db)
    tracker.update(TIMINGS, [span()], at(0))
    tracker.update(TIMINGS, [span()], at(60))
    tracker.update(TIMINGS, [], at(90))
    assert tracker.update(TIMINGS, [span()], at(120)) == []
    assert tracker.update(TIMINGS, [], at(200)) == []  # 80 s since last seen: still firing
    assert kinds(tracker.update(TIMINGS, [], at(240))) == [EventKind.RESOLVED]


def test_severity_change_is_an_event_of_the_same_instance(db):
    tracker = AlertTracker(db)
    tracker.update(TIMINGS, [span(severity="warning")], at(0))
    tracker.update(TIMINGS, [span(severity="warning")], at(60))
    events = tracker.update(TIMINGS, [span(5000, severity="critical")], at(90))
    assert kinds(events) == [EventKind.SEVERITY_CHANGED]
    assert (events[0].previous_severity, events[0].severity, events[0].reason) == ("warning", "critical", "escalated")
    assert len(tracker.active_alerts()) == 1
    assert tracker.active_alerts()[0].fired_at == at(60)  # not a new alert
    down = tracker.update(TIMINGS, [span(severity="warning")], at(120))
    assert down[0].reason == "de-escalated"


def test_severity_change_while_pending_is_silent(db):
    tracker = AlertTracker(db)
    tracker.update(TIMINGS, [span(severity="warning")], at(0))
    assert tracker.update(TIMINGS, [span(severity="critical")], at(30)) == []
    events = tracker.update(TIMINGS, [span(severity="critical")], at(60))
    assert kinds(events) == [EventKind.FIRING] and events[0].severity == "critical"


def test_no_data_holds_the_instance(db):
    tracker = AlertTracker(db)
    tracker.update(TIMINGS, [span()], at(0))
    tracker.update(TIMINGS, [span()], at(60))
    for t in (90, 300, 600):  # far past keep_firing_for: stale data must not resolve it
        assert tracker.update(TIMINGS, [span(no_data=True)], at(t)) == []
    (alert,) = tracker.active_alerts()
    assert alert.state == "firing" and alert.no_data and alert.value == 1500
    tracker.update(TIMINGS, [span(1700)], at(630))
    assert not tracker.active_alerts()[0].no_data


def test_no_data_for_an_unknown_series_starts_nothing(db):
    tracker = AlertTracker(db)
    assert tracker.update(TIMINGS, [span(no_data=True)], at(0)) == []
    assert tracker.active_alerts() == []


def test_removed_rule_resolves_its_alerts(db):
    tracker = AlertTracker(db)
    tracker.update(TIMINGS, [span()], at(0))
    tracker.update(TIMINGS, [span()], at(60))
    events = tracker.update({}, [], at(70))
    assert kinds(events) == [EventKind.RESOLVED] and events[0].reason == "rule removed"


def test_values_and_annotations_refresh_on_every_hit(db):
    tracker = AlertTracker(db)
    tracker.update(TIMINGS, [span(1500)], at(0))
    tracker.update(TIMINGS, [span(2500)], at(30))
    (alert,) = tracker.active_alerts()
    assert alert.value == 2500 and alert.annotations["summary"].endswith("2500")


def test_two_label_sets_are_two_instances(db):
    tracker = AlertTracker(db)
    other = {**LABELS, "queue_id": "4"}
    tracker.update(TIMINGS, [span(), span(labels=other)], at(0))
    events = tracker.update(TIMINGS, [span(), span(labels=other)], at(60))
    assert len(events) == 2 and len({e.fingerprint for e in events}) == 2


def test_state_survives_reopening_the_database(tmp_path):
    path = tmp_path / "state.db"
    db = StateDB(path)
    AlertTracker(db).update(TIMINGS, [span()], at(0))
    db.close()

    db = StateDB(path)
    tracker = AlertTracker(db)
    (alert,) = tracker.active_alerts()
    assert alert.state == "pending" and alert.active_at == at(0)
    events = tracker.update(TIMINGS, [span()], at(60))  # the timer carried on: fires on time
    assert kinds(events) == [EventKind.FIRING]
    tracker.update(TIMINGS, [], at(90))
    db.close()

    db = StateDB(path)
    tracker = AlertTracker(db)
    assert tracker.active_alerts()[0].last_seen_at == at(60)
    assert kinds(tracker.update(TIMINGS, [], at(180))) == [EventKind.RESOLVED]
    db.close()
