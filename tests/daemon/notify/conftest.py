"""Shared pieces for notifier tests: a state DB, alerts driven through the real tracker."""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime, timedelta

import pytest

from daemon.alerts.db import StateDB
from daemon.alerts.tracker import AlertTracker
from daemon.notify.dispatcher import Dispatcher
from daemon.notify.outbox import Outbox
from rules.findings import Finding, RuleTiming

T0 = datetime(2026, 3, 1, 12, 0, tzinfo=UTC)
RULE = "ProcessQueueSpanTooLong"
TIMINGS = {RULE: RuleTiming(RULE)}  # for 0: fires on first sight, resolves on first absence


def at(seconds: float) -> datetime:
    """T0 plus some seconds."""
    return T0 + timedelta(seconds=seconds)


def span(group: str = "stuckGroup", queue: int = 3, value: float = 1500, severity: str = "warning") -> Finding:
    """A ProcessQueueSpanTooLong finding as the Spark evaluation would hand it over."""
    labels = {
        "cluster": "prod", "group": group, "topic": "OrderTopic", "broker": "broker-a",
        "queue_id": str(queue), "client_id": "10.0.0.7@4242",
    }
    return Finding(
        RULE, labels, severity, value, 1000,
        {
            "summary": f"{group}: queue broker-a/{queue} span {value:.0f} (limit 1000); the client stopped pulling",
            "diagnosis": "One message at offset 4711 has not finished while later ones did.",
            "next_steps": "1) Take five jstacks of 10.0.0.7@4242 a second apart. 2) Fix the call they all wait in.",
        },
    )


class Cycle:
    """tracker.update -> dispatcher.dispatch, the daemon's cycle minus Spark."""

    def __init__(
        self, db: StateDB, receivers: list[str], group_by=("alertname", "cluster", "group"), silences=None, inhibitors=()
    ) -> None:
        self.tracker = AlertTracker(db)
        self.outbox = Outbox(db)
        self.dispatcher = Dispatcher(self.outbox, receivers, list(group_by), silences, inhibitors)

    def run(self, findings: list[Finding], now: datetime):
        """One evaluation: advance the tracker and queue notifications; return what was queued."""
        events = self.tracker.update(TIMINGS, findings, now)
        return asyncio.run(self.arun(findings, now, events))

    async def arun(self, findings: list[Finding], now: datetime, events=None):
        """run() from a test that is itself a coroutine."""
        if events is None:
            events = self.tracker.update(TIMINGS, findings, now)
        return await self.dispatcher.dispatch(events, self.tracker.active_alerts(), now)


@pytest.fixture
def db(tmp_path):
    db = StateDB(tmp_path / "state.db")
    yield db
    db.close()
