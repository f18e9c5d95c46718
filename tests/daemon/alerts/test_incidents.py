"""Incidents: alerts that share a cause stay under one id, led by the cause, whatever order they fire in."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from daemon.alerts.db import StateDB
from daemon.alerts.incidents import IncidentBook, locus_of
from daemon.alerts.tracker import AlertTracker
from rules.findings import Finding, RuleTiming
from rules.links import CausalLinks, Link

T0 = datetime(2026, 3, 1, 12, 0, tzinfo=UTC)
QUEUE = {"cluster": "prod", "group": "orderConsumerA", "topic": "OrderTopic", "broker": "broker-a", "queue_id": "3"}
LINKS = CausalLinks([
    Link("StuckMessage", "ProcessQueueSpanTooLong", ("cluster", "group", "topic", "broker", "queue_id"),
         "The stuck message holds the low end of the span while later messages keep arriving."),
    Link("StuckMessage", "ConsumerOffsetStalled", ("cluster", "group", "topic", "broker", "queue_id"),
         "The committed offset is the lowest offset still in flight."),
    Link("BrokerUnreachable", "ConsumerOffsetStalled", ("cluster", "broker"),
         "A broker nobody reaches takes no offset commits."),
])
RULES = ("StuckMessage", "ProcessQueueSpanTooLong", "ConsumerOffsetStalled", "BrokerUnreachable", "DLQGrowing")
TIMINGS = {rule: RuleTiming(rule) for rule in RULES}


def at(seconds: float) -> datetime:
    return T0 + timedelta(seconds=seconds)


def finding(rule: str, **labels: str) -> Finding:
    return Finding(rule, {**QUEUE, **labels}, "warning", 1.0, None, {"summary": rule})


class Book:
    """The tracker and the incident book, as the daemon runs them each cycle."""

    def __init__(self, db: StateDB) -> None:
        self.db = db
        self.tracker = AlertTracker(db)
        self.incidents = IncidentBook(db, lambda: LINKS)

    def cycle(self, seconds: float, *findings: Finding) -> None:
        events = self.tracker.update(TIMINGS, list(findings), at(seconds))
        self.incidents.update(events, self.tracker.active_alerts(), at(seconds))

    def of(self, rule: str, **labels: str):
        alert = next(a for a in self.tracker.active_alerts() if a.rule == rule
                     and all(a.labels.get(k) == v for k, v in labels.items()))
        return self.incidents.incident_of(alert.fingerprint)

    def root_rule(self, incident) -> str:
        return incident.members[incident.root].rule


@pytest.fixture
def book(tmp_path) -> Book:
    db = StateDB(tmp_path / "state.db")
    yield Book(db)
    db.close()


def test_a_cause_that_fires_after_its_consequence_joins_its_incident_and_leads_it(book: Book) -> None:
    book.cycle(0, finding("ProcessQueueSpanTooLong"))
    first = book.of("ProcessQueueSpanTooLong")
    assert book.root_rule(first) == "ProcessQueueSpanTooLong"  # the only alert, until a cause is known

    book.cycle(120, finding("ProcessQueueSpanTooLong"), finding("StuckMessage"))
    incident = book.of("StuckMessage")
    assert incident.id == first.id, "the incident keeps the id it opened with"
    assert book.root_rule(incident) == "StuckMessage"
    span = next(m for m in incident.members.values() if m.rule == "ProcessQueueSpanTooLong")
    assert span.cause == incident.root and "low end of the span" in span.why


def test_a_cause_and_its_consequences_in_one_cycle_make_one_incident_led_by_the_cause(book: Book) -> None:
    book.cycle(0, finding("ConsumerOffsetStalled"), finding("ProcessQueueSpanTooLong"), finding("StuckMessage"))
    incidents = book.incidents.open_incidents()
    assert len(incidents) == 1
    assert book.root_rule(incidents[0]) == "StuckMessage"
    assert [m.rule for m in incidents[0].active()][0] == "StuckMessage"
    assert {m.cause for m in incidents[0].members.values() if m.rule != "StuckMessage"} == {incidents[0].root}


def test_unlinked_alerts_are_an_incident_per_consumer_group(book: Book) -> None:
    book.cycle(0, finding("DLQGrowing"), finding("DLQGrowing", group="billing"),
               finding("ProcessQueueSpanTooLong"))
    a, b = book.of("DLQGrowing", group="orderConsumerA"), book.of("DLQGrowing", group="billing")
    assert a.id != b.id
    assert book.of("ProcessQueueSpanTooLong").id == a.id, "same consumer group: same incident"
    assert a.locus == {"cluster": "prod", "group": "orderConsumerA"}


def test_an_alert_two_incidents_could_claim_stays_in_the_first_one_opened(book: Book) -> None:
    # The broker's outage explains the stalled offsets of both groups; each group's alert opened its
    # own incident first, so the broker's alert joins the older one and the other stays as it is.
    book.cycle(0, finding("ConsumerOffsetStalled"))
    book.cycle(30, finding("ConsumerOffsetStalled"), finding("ConsumerOffsetStalled", group="billing"))
    older, newer = book.of("ConsumerOffsetStalled"), book.of("ConsumerOffsetStalled", group="billing")
    book.cycle(60, finding("ConsumerOffsetStalled"), finding("ConsumerOffsetStalled", group="billing"),
               finding("BrokerUnreachable", group="", topic="", queue_id=""))
    broker = book.of("BrokerUnreachable")
    assert broker.id == older.id and book.root_rule(broker) == "BrokerUnreachable"
    assert book.of("ConsumerOffsetStalled", group="billing").id == newer.id


def test_an_incident_resolves_with_its_last_alert_and_the_next_firing_opens_a_new_one(book: Book) -> None:
    book.cycle(0, finding("StuckMessage"), finding("ConsumerOffsetStalled"))
    first = book.of("StuckMessage")
    book.cycle(30, finding("ConsumerOffsetStalled"))
    assert first.open, "one alert still fires"
    book.cycle(60)
    assert first.resolved_at == at(60)
    assert first.last_resolved().rule == "ConsumerOffsetStalled"
    book.cycle(90, finding("StuckMessage"))
    assert book.of("StuckMessage").id != first.id


def test_incidents_survive_a_restart(book: Book) -> None:
    book.cycle(0, finding("ProcessQueueSpanTooLong"))
    book.cycle(30, finding("ProcessQueueSpanTooLong"), finding("StuckMessage"))
    before = book.of("StuckMessage")
    again = Book(book.db)
    after = again.incidents.get(before.id)
    assert after is not None and after.root == before.root
    assert {fp: m.cause for fp, m in after.members.items()} == {fp: m.cause for fp, m in before.members.items()}
    again.cycle(60, finding("ProcessQueueSpanTooLong"), finding("StuckMessage"), finding("ConsumerOffsetStalled"))
    assert again.of("ConsumerOffsetStalled").id == before.id


def test_where_an_alert_happens() -> None:
    assert locus_of(QUEUE) == {"cluster": "prod", "group": "orderConsumerA"}
    assert locus_of({"cluster": "prod", "broker": "broker-a"}) == {"cluster": "prod", "broker": "broker-a"}
    assert locus_of({"cluster": "prod", "topic": "T"}) == {"cluster": "prod", "topic": "T"}


def test_a_late_cause_of_an_alert_already_explained_does_not_take_the_lead(book: Book) -> None:
    book.cycle(0, finding("StuckMessage"), finding("ConsumerOffsetStalled"))
    book.cycle(30, finding("StuckMessage"), finding("ConsumerOffsetStalled"),
               finding("BrokerUnreachable", group="", topic="", queue_id=""))
    incident = book.of("StuckMessage")
    assert book.of("BrokerUnreachable").id == incident.id
    assert book.root_rule(incident) == "StuckMessage", "the offset keeps the cause it had"
    stalled = next(m for m in incident.members.values() if m.rule == "ConsumerOffsetStalled")
    assert incident.members[stalled.cause].rule == "StuckMessage"


def test_an_incident_opened_by_an_unlinked_alert_is_led_by_the_cause_that_joins_it(book: Book) -> None:
    book.cycle(0, finding("DLQGrowing"))
    opened = book.of("DLQGrowing")
    book.cycle(30, finding("DLQGrowing"), finding("StuckMessage"), finding("ProcessQueueSpanTooLong"))
    incident = book.of("StuckMessage")
    assert incident.id == opened.id and book.root_rule(incident) == "StuckMessage"
