"""What follows an evaluation: its findings advance alert states, incidents and notifications follow, and the
cycle is counted (/metrics, status page, self-monitoring, watchdog); after a failed one, the self rules run alone."""

from __future__ import annotations

import asyncio
import logging
from collections import deque
from collections.abc import Awaitable, Callable, Mapping, Sequence
from datetime import datetime
from typing import Any, Protocol

from config.models import RocketwatchConfig
from daemon.alerts.group_actions import GroupActionStore
from daemon.alerts.incidents import IncidentBook
from daemon.alerts.model import AlertEvent
from daemon.alerts.silences import SilenceStore
from daemon.alerts.tracker import AlertTracker
from daemon.alerts.value_history import ValueHistory
from daemon.app.cycles import CycleRecord, CycleStats
from daemon.app.metrics import DaemonMetrics
from daemon.app.rulebook import Rulebook
from daemon.app.schedule import utcnow
from daemon.app.selfmon import SelfMonitor, self_rules
from daemon.app.watchdog import Watchdog
from daemon.common.sdnotify import sd_notify
from daemon.notify.dispatcher import Dispatcher
from daemon.notify.routing import HEARTBEAT
from daemon.notify.wiring import heartbeat_finding
from rules.findings import Finding, RuleTiming

log = logging.getLogger("rocketwatch")

_LOGGED_LABELS = ("cluster", "broker", "group", "topic", "queue_id", "client_id")


class EvaluationBooks(Protocol):
    """The part of the Daemon an evaluation's findings act on (the Daemon is not imported: it imports this)."""

    config: RocketwatchConfig
    stats: CycleStats
    metrics: DaemonMetrics
    cycles: deque[CycleRecord]
    tracker: AlertTracker
    silences: SilenceStore
    group_actions: GroupActionStore
    value_history: ValueHistory
    incidents: IncidentBook
    dispatcher: Dispatcher
    selfmon: SelfMonitor
    watchdog: Watchdog | None
    last_cycle_at: datetime | None

    async def dispatch_once(self, final: bool = False) -> None:
        """Deliver what the outbox holds that is due."""


# Evaluates these rules on the store at that time, as the Daemon does it (under its store lock).
Evaluate = Callable[[Sequence[Any], datetime], Awaitable[Sequence[Finding]]]


async def act_on_findings(books: EvaluationBooks, timings: Mapping[str, RuleTiming], findings: Sequence[Finding],
                          now: datetime) -> list[Finding]:
    """Advance every alert on the findings (plus the heartbeat), close what resolved, queue notifications;
    returns the findings acted on."""
    if books.config.notify.heartbeat is not None:
        # The dead man's switch: always firing, so its receiver hears from us every interval.
        findings = [*findings, heartbeat_finding(len(books.config.clusters), books.stats.evaluate_cycles,
                                                 books.stats.firing)]
        timings = {**timings, HEARTBEAT: RuleTiming(HEARTBEAT)}
    events = books.tracker.update(timings, findings, now)
    # Acknowledgements and until-resolved silences end with their group.
    books.group_actions.close_resolved(books.tracker.active_alerts(), books.silences, now, books.incidents)
    books.value_history.record(books.tracker.active_alerts(), now)
    await _notify(books, events, now)
    for reason, count in books.dispatcher.decisions.items():
        books.metrics.notification_decisions.labels(reason).inc(count)
    books.dispatcher.decisions.clear()
    for event in events:
        labels = event.alert.labels
        log.info("alert %s", event, extra={"rule": event.alert.rule,
                                           **{k: labels[k] for k in _LOGGED_LABELS if k in labels}})
    return list(findings)


async def self_check_after_failure(books: EvaluationBooks, rulebook: Rulebook, evaluate: Evaluate) -> None:
    """After a failed evaluation, run the self-monitoring rules alone on a fresh daemon_health row and
    advance only their alerts; every other alert stays as it is."""
    # The full evaluation failed, so no rule ran, including the one that reports exactly that.
    rules = self_rules(rulebook.rules)
    if not rules:
        return
    now = utcnow()
    try:
        await asyncio.to_thread(books.selfmon.record, now, books.last_cycle_at)
        findings = await evaluate(rules, now)
    except Exception as exc:
        log.error("self-monitoring rules could not run either (%s): Spark itself is failing", exc)
        return
    events = books.tracker.update({r.alert: rulebook.timings[r.alert] for r in rules}, findings, now,
                                  only_evaluated=True)
    await _notify(books, events, now)
    for event in events:
        log.info("alert %s", event, extra={"rule": event.alert.rule})
    await books.dispatch_once()


async def _notify(books: EvaluationBooks, events: Sequence[AlertEvent], now: datetime) -> None:
    await books.incidents.advance(events, books.tracker.active_alerts(), now)
    await books.dispatcher.dispatch(events, books.tracker.active_alerts(), now)


def record_evaluation(books: EvaluationBooks, findings: Sequence[Finding], now: datetime, seconds: float) -> None:
    """Count a completed evaluation: stats, self-monitoring, /metrics, the status page's cycles, the watchdog."""
    books.stats.evaluate_cycles += 1
    books.stats.last_evaluate_s = seconds
    books.selfmon.evaluation_done(seconds)
    books.metrics.evaluate_seconds.observe(seconds)
    books.cycles.appendleft(CycleRecord("evaluate", "rules", now, seconds, len(findings), 0))
    books.metrics.observe_findings(findings)
    books.metrics.observe_alerts(books.tracker.active_alerts())
    books.last_cycle_at = utcnow()
    if books.watchdog is not None:
        books.watchdog.progress()
    books.metrics.last_cycle.set(books.last_cycle_at.timestamp())
    books.stats.firing = sum(1 for a in books.tracker.active_alerts() if a.state == "firing")


def tell_systemd(books: EvaluationBooks, findings: Sequence[Finding], ready: bool) -> bool:
    """READY=1 after the first evaluation that follows a collection, then each cycle's STATUS= line;
    returns whether the daemon is ready now."""
    if not ready and books.stats.collect_cycles > 0:
        ready = True
        sd_notify("READY=1", f"STATUS=watching {len(books.config.clusters)} cluster(s)")
        log.info("first cycle complete: ready")
    sd_notify(
        f"STATUS=cycle {books.stats.evaluate_cycles}: {len(findings)} finding(s), "
        f"{books.stats.firing} firing, evaluate {books.stats.last_evaluate_s:.1f}s"
    )
    return ready
