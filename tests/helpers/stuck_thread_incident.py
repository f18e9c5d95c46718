"""One stuck consume thread as an incident, for the incident-page tests (tests/daemon/notify/): its
alerts (StuckMessage and what it explains), the causal links between them, the consequence-first
timeline, and the daemon's own cycle minus Spark they go through (tracker -> incident book ->
dispatcher -> outbox)."""

from __future__ import annotations

import asyncio
import io
from datetime import UTC, datetime, timedelta

from daemon.alerts.db import StateDB
from daemon.alerts.group_actions import GroupActionStore
from daemon.alerts.incidents import IncidentBook
from daemon.alerts.silences import SilenceStore
from daemon.alerts.tracker import AlertTracker
from daemon.notify.console import ConsoleNotifier
from daemon.notify.dispatcher import Dispatcher
from daemon.notify.model import Notification
from daemon.notify.outbox import Outbox
from rules.findings import Finding, RuleTiming
from rules.links import CausalLinks, Link

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
    """T0 (08:00:00 UTC) plus some seconds."""
    return T0 + timedelta(seconds=seconds)


def _finding(rule: str, value: float, threshold: float, summary: str, diagnosis: str, next_steps: str,
             group: str = "orderConsumerA", queue: int = 3) -> Finding:
    labels = {**QUEUE, "group": group, "queue_id": str(queue)}
    return Finding(rule, labels, "warning", value, threshold,
                   {"summary": summary.format(group=group, queue=queue), "diagnosis": diagnosis,
                    "next_steps": next_steps})


def stuck(group: str = "orderConsumerA") -> Finding:
    """StuckMessage: one message in flight for 193 s (the cause)."""
    return _finding("StuckMessage", 193, 60,
                    "{group}: the message at offset 4711 of OrderTopic/broker-a/{queue} is in flight for 193 s",
                    "One consume thread sits on this one message.", "Take 3-5 jstacks of 10.0.0.7@4242.", group)


def span(group: str = "orderConsumerA") -> Finding:
    """ProcessQueueSpanTooLong: the cache span past its limit (explained by StuckMessage)."""
    return _finding("ProcessQueueSpanTooLong", 1500, 1000,
                    "{group}: queue broker-a/{queue} span 1500 (limit 1000)",
                    "Later messages finish while one does not.", "Look at the span's low end.", group)


def stalled(group: str = "orderConsumerA") -> Finding:
    """ConsumerOffsetStalled: the committed offset pinned (explained by StuckMessage)."""
    return _finding("ConsumerOffsetStalled", 200, 120,
                    "{group}: the committed offset of OrderTopic/broker-a/{queue} has not moved for 200 s",
                    "No commit reaches the broker.", "Find what holds the lowest offset.", group)


def blocked() -> Finding:
    """ConsumptionBlocked: nothing of the queue finished (explained by StuckMessage)."""
    return _finding("ConsumptionBlocked", 90, 60, "{group}: nothing of queue broker-a/{queue} finished for 90 s",
                    "The consume threads make no progress.", "jstack the client.")


def held(queue: int = 3) -> Finding:
    """QueueHeldByTwoClients: a rebalance disagreement nothing links to StuckMessage."""
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
        """One evaluation at T0 + seconds with these findings; the notifications it queued."""
        now = at(seconds)
        events = self.tracker.update(TIMINGS, list(findings), now)
        self.actions.close_resolved(self.tracker.active_alerts(), self.silences, now, self.incidents)
        self.incidents.update(events, self.tracker.active_alerts(), now)
        return [n for _, n in asyncio.run(self.dispatcher.dispatch(events, self.tracker.active_alerts(), now))]

    def deliver(self, notifiers, seconds: float):
        """Deliver what the outbox holds that is due at T0 + seconds."""
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


def play(pipeline: Pipeline, timeline, notifiers=None) -> list[list[Notification]]:
    """Run each evaluation of the timeline; with notifiers, deliver after each (none may fail)."""
    sent = []
    for seconds, findings in timeline:
        sent.append(pipeline.run(seconds, *findings()))
        if notifiers is not None:
            report = pipeline.deliver(notifiers, seconds)
            assert report.failed == 0, report
    return sent


def console(n: Notification, thread=None) -> str:
    """What the console notifier prints for `n`."""
    out = io.StringIO()
    asyncio.run(ConsoleNotifier("console", out).send(n, thread))
    return out.getvalue()
