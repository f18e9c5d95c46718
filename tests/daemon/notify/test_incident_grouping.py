"""Grouped by incident: alerts that share a cause go out as one notification, updated when the cause arrives."""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime, timedelta

import pytest

from daemon.alerts.db import StateDB
from daemon.alerts.incidents import IncidentBook
from daemon.alerts.silences import SilenceStore
from daemon.alerts.tracker import AlertTracker
from daemon.notify.dispatcher import Dispatcher
from daemon.notify.outbox import Outbox
from rules.findings import Finding, RuleTiming
from rules.links import CausalLinks, Link

T0 = datetime(2026, 3, 1, 12, 0, tzinfo=UTC)
QUEUE = {"cluster": "prod", "group": "orderConsumerA", "topic": "OrderTopic", "broker": "broker-a", "queue_id": "3"}
ON = ("cluster", "group", "topic", "broker", "queue_id")
LINKS = CausalLinks([
    Link("StuckMessage", "ProcessQueueSpanTooLong", ON, "The stuck message holds the low end of the span."),
    Link("StuckMessage", "ConsumerOffsetStalled", ON, "The committed offset is the lowest offset in flight."),
])
TIMINGS = {r: RuleTiming(r) for r in ("StuckMessage", "ProcessQueueSpanTooLong", "ConsumerOffsetStalled")}


def at(minutes: float) -> datetime:
    return T0 + timedelta(minutes=minutes)


def finding(rule: str, group: str = "orderConsumerA") -> Finding:
    return Finding(rule, {**QUEUE, "group": group}, "warning", 1.0, None, {"summary": f"{rule} on {group}"})


class Cycle:
    def __init__(self, db: StateDB) -> None:
        self.tracker = AlertTracker(db)
        self.outbox = Outbox(db)
        self.silences = SilenceStore(db)
        self.incidents = IncidentBook(db, lambda: LINKS)
        self.dispatcher = Dispatcher(self.outbox, ["slack"], ["incident"], self.silences, incidents=self.incidents)

    def run(self, minutes: float, *findings: Finding):
        events = self.tracker.update(TIMINGS, list(findings), at(minutes))
        self.incidents.update(events, self.tracker.active_alerts(), at(minutes))
        return [n for _, n in asyncio.run(self.dispatcher.dispatch(events, self.tracker.active_alerts(), at(minutes)))]


@pytest.fixture
def cycle(tmp_path):
    db = StateDB(tmp_path / "state.db")
    yield Cycle(db)
    db.close()


def test_a_consequence_first_then_its_cause_is_one_group_whose_update_names_the_cause(cycle: Cycle) -> None:
    first = cycle.run(0, finding("ProcessQueueSpanTooLong"))
    assert [n.reason for n in first] == ["first"]
    assert first[0].incident.members[0].rule == "ProcessQueueSpanTooLong"

    update = cycle.run(3, finding("ProcessQueueSpanTooLong"), finding("StuckMessage"))
    assert len(update) == 1
    assert update[0].group_key == first[0].group_key, "the same group: the first message is updated"
    assert update[0].incident.id == first[0].incident.id
    root = update[0].incident.member(update[0].incident.root)
    assert root.rule == "StuckMessage" and update[0].incident.cause_known
    assert {a.rule for a in update[0].firing} == {"ProcessQueueSpanTooLong", "StuckMessage"}


def test_two_groups_are_two_incidents(cycle: Cycle) -> None:
    sent = cycle.run(0, finding("StuckMessage"), finding("StuckMessage", group="billing"))
    assert len({n.group_key for n in sent}) == 2


def test_a_silence_of_the_incident_mutes_every_alert_in_it_and_nothing_else(cycle: Cycle) -> None:
    cycle.run(0, finding("StuckMessage"), finding("ConsumerOffsetStalled"))
    incident = cycle.incidents.open_incidents()[0]
    cycle.silences.add([f'incident="{incident.id}"'], at(0), at(60), "oncall", "looking", at(0))
    sent = cycle.run(1, finding("StuckMessage"), finding("ConsumerOffsetStalled"), finding("StuckMessage", group="billing"))
    assert [a.labels["group"] for n in sent for a in n.alerts] == ["billing"]
