"""rocketwatch watching itself: one `daemon_health` row per evaluation cycle, written to the store.

The built-in rules in rules/builtin/rocketwatch-self.yaml read it like any other table, so a
failing evaluation, a backed-up outbox or a filling disk becomes an alert on the normal routes:
when Slack is down, the mail receiver says so. Spark cannot report its own failure by
evaluating every rule, so after a failed evaluation the daemon evaluates the self rules alone
(see daemon/app/after_evaluation.py `self_check_after_failure`).
"""

from __future__ import annotations

import shutil
import socket
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from pathlib import Path
from typing import TYPE_CHECKING, Any

from daemon.alerts.db import StateDB, from_db_time
from daemon.coordination.service import CoordinationService
from rules.tables import DAEMON_HEALTH, SELF_CLUSTER

if TYPE_CHECKING:
    from config.models import RocketwatchConfig
    from daemon.notify.outbox import Outbox


@dataclass(frozen=True)
class OutboxBacklog:
    """What the outbox still has to deliver."""

    depth: int
    oldest: datetime | None


def outbox_backlog(db: StateDB) -> OutboxBacklog:
    """Undelivered notifications and the creation time of the oldest one."""
    row = db.query("SELECT count(*) AS depth, min(created_at) AS oldest FROM outbox WHERE delivered_at IS NULL")[0]
    return OutboxBacklog(int(row["depth"]), from_db_time(row["oldest"]))


@dataclass(frozen=True)
class HeldBacklog:
    """Notifications held because no coordinator confirmed this daemon may send them."""

    count: int
    oldest: datetime | None


def held_backlog(db: StateDB) -> HeldBacklog:
    """Held undelivered notifications (queued while no coordinator answered, or unsent when the lease went)."""
    row = db.query("SELECT count(*) AS n, min(created_at) AS oldest FROM outbox "
                   "WHERE delivered_at IS NULL AND held = 1")[0]
    return HeldBacklog(int(row["n"]), from_db_time(row["oldest"]))


def disk_free(path: Path) -> tuple[int, float]:
    """Free bytes and free ratio of the file system holding `path` (or its nearest existing parent)."""
    while not path.exists() and path != path.parent:
        path = path.parent
    usage = shutil.disk_usage(path)
    return usage.free, (usage.free / usage.total if usage.total else 0.0)


def self_rules(rules: Sequence[Any]) -> list[Any]:
    """The rules that read daemon_health: what still runs when the full evaluation fails."""
    return [r for r in rules if r.table == DAEMON_HEALTH.name]


class SelfMonitor:
    """Keeps the figures of the daemon's own health and writes them as daemon_health rows."""

    def __init__(self, store: Any, db: StateDB, store_root: Path, evaluate_interval: timedelta,
                 host: str | None = None, coordination: CoordinationService | None = None) -> None:
        self.store = store
        self.coordination = coordination  # None: no coordinator to judge (the column says up)
        self.db = db
        self.store_root = store_root
        self.evaluate_interval = evaluate_interval
        self.host = host or socket.gethostname()
        self.failures_in_row = 0
        self.last_evaluate_s: float | None = None

    def evaluation_done(self, seconds: float) -> None:
        """An evaluation completed: the failure streak ends."""
        self.failures_in_row = 0
        self.last_evaluate_s = seconds

    def evaluation_failed(self) -> None:
        """An evaluation raised: one more in the streak."""
        self.failures_in_row += 1

    def row(self, now: datetime, last_cycle_at: datetime | None) -> dict[str, Any]:
        """The daemon_health row for `now`."""
        backlog = outbox_backlog(self.db)
        free, ratio = disk_free(self.store_root)
        held = held_backlog(self.db)
        coordinator_up = self.coordination is None or not self.coordination.unreachable
        return {
            "ts": now, "cluster": SELF_CLUSTER, "host": self.host,
            "evaluate_seconds": self.last_evaluate_s,
            "evaluate_interval_s": self.evaluate_interval.total_seconds(),
            "evaluation_failures": self.failures_in_row,
            "last_cycle_age_s": (now - last_cycle_at).total_seconds() if last_cycle_at else None,
            "outbox_depth": backlog.depth,
            "outbox_oldest_age_s": max((now - backlog.oldest).total_seconds(), 0.0) if backlog.oldest else 0.0,
            "store_free_bytes": free, "store_free_ratio": ratio,
            "held_notifications": held.count,
            "held_oldest_age_s": max((now - held.oldest).total_seconds(), 0.0) if held.oldest else 0.0,
            "ha_coordinator_up": int(coordinator_up),
        }

    def record(self, now: datetime, last_cycle_at: datetime | None) -> dict[str, Any]:
        """Write the row for `now` into the store (blocking: run it off the event loop); returns it."""
        row = self.row(now, last_cycle_at)
        self.store.append(DAEMON_HEALTH.name, [row], now)
        return row


def self_monitor(store: Any, outbox: Outbox, config: RocketwatchConfig) -> SelfMonitor:
    """The daemon's self-monitor over its outbox's state file and coordinator."""
    return SelfMonitor(store, outbox.db, config.store, config.evaluate.interval, coordination=outbox.coordination)
