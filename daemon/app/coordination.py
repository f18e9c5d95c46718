"""The daemon's coordination service (daemon/coordination) as the daemon runs it: built with the state,
and its lease on /metrics: who sends, at which epoch, and how many notifications wait held."""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime

from prometheus_client import CollectorRegistry, Counter, Gauge

from config.models import RocketwatchConfig
from daemon.alerts.action_mirror import ActionMirror, mirror_actions
from daemon.alerts.db import StateDB
from daemon.alerts.group_actions import GroupActionStore
from daemon.alerts.silences import SilenceStore
from daemon.coordination.factory import service_for
from daemon.coordination.incident_ids import IncidentIds
from daemon.coordination.service import CoordinationService
from daemon.notify.outbox import Outbox
from daemon.notify.outbox_fail_open import FailOpen


def coordination_for(config: RocketwatchConfig) -> CoordinationService:
    """PostgreSQL and a shared lease with an `ha:` section; else the state file's private single-node lease."""
    return service_for(config.ha, config.state_dir / "state.db")


def wire_ha(outbox: Outbox, config: RocketwatchConfig, evaluated: Callable[[], datetime | None]) -> None:
    """With an `ha:` section: this daemon's row in the peers table after every renewal (its last evaluation
    and held notifications), and what it does without a coordinator (hold, or fail open after a while)."""
    if config.ha is None:
        return
    outbox.coordination.report_peer(evaluated, outbox.held, config.ha.node)
    after = config.ha.on_coordinator_loss.fail_open_after
    outbox.fail_open = FailOpen(after.total_seconds() if after is not None else None)


def share_actions(config: RocketwatchConfig, db: StateDB, silences: SilenceStore, group_actions: GroupActionStore,
                  service: CoordinationService) -> ActionMirror | None:
    """With an `ha:` section, start mirroring silences and acknowledgements through the coordinator, synced at
    every lease renewal's pace; a single node has nobody to share with (None)."""
    if config.ha is None:
        return None
    mirror = mirror_actions(db, silences, group_actions, service, config.ha.lease.renew_every.total_seconds())
    mirror.start()
    return mirror


def incident_ids(outbox: Outbox) -> IncidentIds:
    """The shared incident table on the outbox's coordinator, claimed in this daemon's name."""
    service = outbox.coordination
    return IncidentIds(service.coordinator, service.keeper.holder)


class HaMetrics:
    """rocketwatch_ha_*: the lease as this daemon sees it, the notifications it holds, and what it sent fail-open.

    `rocketwatch_ha_holder` is unlabelled, 1 on the daemon that holds the lease and 0 on the others (each is
    told apart by its scrape's `instance`): `sum(rocketwatch_ha_holder) != 1` is the alert on nobody, or on
    two, holding it, and no series comes and goes with each new holder's process name."""

    def __init__(self, registry: CollectorRegistry) -> None:
        self.holder = Gauge("rocketwatch_ha_holder", "1 while this daemon holds the dispatch lease", registry=registry)
        self.epoch = Gauge("rocketwatch_ha_epoch", "The dispatch lease's epoch as last seen (grows with each new "
                           "holder)", registry=registry)
        self.held = Gauge("rocketwatch_ha_held_notifications",
                          "Notifications held because no coordinator answered (sent or dropped once one does)",
                          registry=registry)
        self.fail_open = Counter("rocketwatch_ha_fail_open_sends",
                                 "Notifications this daemon sent itself after ha.on_coordinator_loss.fail_open_after "
                                 "without a coordinator (each possibly a duplicate)", registry=registry)
        self._fail_open_seen = 0

    def observe(self, outbox: Outbox) -> None:
        """Read the lease and the outbox now (at scrape time)."""
        status = outbox.coordination.status()
        self.holder.set(1 if status.holding else 0)
        self.epoch.set(status.epoch or 0)
        self.held.set(outbox.held())
        sends = outbox.fail_open.sends
        self.fail_open.inc(max(0, sends - self._fail_open_seen))
        self._fail_open_seen = sends
