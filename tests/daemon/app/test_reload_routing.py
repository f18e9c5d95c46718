"""A reload that moves alerts to another receiver: what the old and the new receiver hear, cycle by cycle.

The notification side is rebuilt as Daemon.reload rebuilds it (daemon/notify/wiring.build_routing on
the same state file); times are explicit, so every decision is exact.
"""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from config.models import NotifyConfig
from daemon.alerts.db import StateDB
from daemon.alerts.group_actions import GroupActionStore
from daemon.alerts.silences import SilenceStore
from daemon.alerts.tracker import AlertTracker
from daemon.alerts.value_history import ValueHistory
from daemon.notify.outbox import Outbox
from daemon.notify.routing import HEARTBEAT
from daemon.notify.wiring import build_routing, heartbeat_finding, unchanged_notifiers
from rules.findings import Finding, RuleTiming

T0 = datetime(2026, 3, 1, 12, 0, tzinfo=UTC)
TIMINGS = {"BigCache": RuleTiming("BigCache"), HEARTBEAT: RuleTiming(HEARTBEAT)}
CONSOLE = [{"type": "console", "name": "team-a"}, {"type": "console", "name": "team-b"}]


def notify(**settings: Any) -> NotifyConfig:
    """Two console receivers and `settings` (route, heartbeat)."""
    return NotifyConfig.model_validate({"receivers": CONSOLE, **settings})


class Daemonish:
    """The daemon's tracker and notification side on one state file; `reload` rebuilds routing only."""

    def __init__(self, db: StateDB, config: NotifyConfig) -> None:
        self.db = db
        self.tracker = AlertTracker(db)
        self.outbox = Outbox(db)
        self.reload(config)

    def reload(self, config: NotifyConfig) -> None:
        """What Daemon.reload swaps: notifiers and dispatcher; the tracker, outbox and log stay."""
        self.notifiers, self.dispatcher = build_routing(
            config, self.outbox, SilenceStore(self.db), GroupActionStore(self.db), ValueHistory(self.db))

    def cycle(self, findings: list[Finding], seconds: float) -> list[tuple[str, str, str]]:
        """One evaluation at T0 + seconds; (receiver, alertnames, reason) of what is queued."""
        now = T0 + timedelta(seconds=seconds)
        events = self.tracker.update(TIMINGS, findings, now)
        queued = asyncio.run(self.dispatcher.dispatch(events, self.tracker.active_alerts(), now))
        return [(receiver, ",".join(sorted({a.rule for a in n.alerts})), n.reason) for receiver, n in queued]


def big(value: float = 900) -> Finding:
    """A firing BigCache finding."""
    return Finding("BigCache", {"cluster": "prod", "group": "orders"}, "warning", value, 500.0, {"summary": "big"})


def test_a_moved_alert_is_reminded_and_resolved_at_its_new_receiver_only(tmp_path: Path) -> None:
    db = StateDB(tmp_path / "state.db")
    daemon = Daemonish(db, notify(route={"receiver": "team-a", "repeat_interval": "1h"}))
    assert daemon.cycle([big()], 0) == [("team-a", "BigCache", "first")]

    daemon.reload(notify(route={"receiver": "team-a", "repeat_interval": "1h", "routes": [
        {"receiver": "team-b", "matchers": ['alertname="BigCache"']}]}))
    # Told already (on team-a): the new route starts quiet, no second page for the same alert.
    assert daemon.cycle([big()], 60) == []
    # Its reminder comes one repeat_interval after the move, at team-b; team-a hears nothing more.
    assert daemon.cycle([big()], 60 + 3599) == []
    assert daemon.cycle([big()], 60 + 3600) == [("team-b", "BigCache", "repeat_interval_elapsed")]
    # And its resolve goes to team-b, not dropped as something team-b was never told.
    assert daemon.cycle([], 60 + 3700) == [("team-b", "BigCache", "resolved")]
    assert [(g.route, g.receiver) for g in daemon.dispatcher.log.groups()] == []
    db.close()


def test_a_moved_heartbeat_beats_at_its_new_receiver_every_interval(tmp_path: Path) -> None:
    db = StateDB(tmp_path / "state.db")
    daemon = Daemonish(db, notify(route={"receiver": "team-a"}, heartbeat={"receiver": "team-a", "interval": "5m"}))
    beat = heartbeat_finding(1, 1, 0)
    assert daemon.cycle([beat], 0) == [("team-a", HEARTBEAT, "first")]

    daemon.reload(notify(route={"receiver": "team-a"}, heartbeat={"receiver": "team-b", "interval": "1m"}))
    assert daemon.cycle([beat], 10) == []  # picked up: the next beat is one (new) interval on
    assert daemon.cycle([beat], 70) == [("team-b", HEARTBEAT, "repeat_interval_elapsed")]
    assert daemon.cycle([beat], 130) == [("team-b", HEARTBEAT, "repeat_interval_elapsed")]
    assert daemon.cycle([beat], 300) == [("team-b", HEARTBEAT, "repeat_interval_elapsed")]  # never team-a again
    db.close()


def test_an_unchanged_receiver_keeps_its_notifier_and_a_changed_one_is_rebuilt(tmp_path: Path) -> None:
    db = StateDB(tmp_path / "state.db")
    slack = {"type": "slack", "name": "team-b", "channel": "#b", "token": "xoxb-1"}
    before = NotifyConfig.model_validate({"receivers": [CONSOLE[0], slack]})
    after = NotifyConfig.model_validate({"receivers": [CONSOLE[0], {**slack, "channel": "#b2"}]})
    daemon = Daemonish(db, before)
    old = daemon.notifiers

    kept = unchanged_notifiers(before.receivers, old, after.receivers)
    assert kept == {"team-a": old["team-a"]}
    notifiers, _ = build_routing(after, daemon.outbox, SilenceStore(db), GroupActionStore(db), ValueHistory(db),
                                 reuse=kept)
    assert notifiers["team-a"] is old["team-a"] and notifiers["team-b"] is not old["team-b"]
    assert notifiers["team-b"].channel == "#b2"
    db.close()
