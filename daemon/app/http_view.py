"""The Daemon as daemon/http sees it (daemon.http.view.DaemonView): reads at each call, so it follows reloads."""

from __future__ import annotations

import asyncio
from collections.abc import Mapping, Sequence
from datetime import datetime, timedelta
from typing import Any

from config.models import HttpConfig
from daemon.alerts.model import AlertInstance
from daemon.alerts.silences import SilenceStore
from daemon.app.cycles import CycleRecord
from daemon.app.reloader import ReloadOutcome
from daemon.common.charts.sparkline import Point
from daemon.common.judged_on import GroupBasis
from daemon.http.status_ha import HaView, ha_view
from daemon.http.view import IncidentView
from daemon.store.maintenance import store_size


class HttpView:
    """A DaemonView over a running Daemon; holds nothing of its own but the Daemon."""

    def __init__(self, daemon: Any) -> None:
        # The Daemon; not imported here, since daemon/app/daemon.py imports this module.
        self._daemon = daemon

    @property
    def http(self) -> HttpConfig:
        """The HTTP config in force."""
        return self._daemon.config.http

    @property
    def last_cycle_at(self) -> datetime | None:
        """When the last evaluation cycle completed."""
        return self._daemon.last_cycle_at

    @property
    def evaluate_interval(self) -> timedelta:
        """The config's evaluate interval."""
        return self._daemon.config.evaluate.interval

    @property
    def group_by(self) -> Sequence[str]:
        """The labels notifications are grouped by."""
        return self._daemon.config.notify.group_by

    @property
    def cycles(self) -> Sequence[CycleRecord]:
        """A copy of the last finished cycles, newest first."""
        return list(self._daemon.cycles)

    @property
    def collector_health(self) -> Mapping[str, list[dict[str, Any]]]:
        """A copy of each cluster's last collector call outcomes."""
        return dict(self._daemon.collector_health)

    @property
    def judged_on(self) -> Mapping[str, Sequence[GroupBasis]]:
        """A copy of what each group of each cluster's last collection is judged on."""
        return dict(self._daemon.judged_on)

    @property
    def silences(self) -> SilenceStore | None:
        """The silence store, or None until the state is open."""
        return self._daemon.silences if self._open() else None

    def _open(self) -> bool:
        return self._daemon.db is not None

    def active_alerts(self) -> list[AlertInstance]:
        """The tracker's pending and firing alerts; [] until the state is open."""
        return self._daemon.tracker.active_alerts() if self._open() else []

    def incidents(self) -> list[IncidentView]:
        """Copies of the incident book's incidents (open, and resolved within a day), newest first."""
        return [IncidentView.of(i) for i in self._daemon.incidents.all()] if self._open() else []

    def ha(self) -> HaView | None:
        """The dispatch lease and held notifications; None for a single node or until the state is open."""
        return ha_view(self._daemon.outbox) if self._open() else None

    def muted(self, alerts: Sequence[AlertInstance], now: datetime) -> set[str]:
        """What the dispatcher mutes of those alerts now."""
        return self._daemon.dispatcher.muted(list(alerts), now) if self._open() else set()

    def value_series(self, fingerprints: Sequence[str]) -> Mapping[str, Sequence[Point]]:
        """The value history of those alerts, by fingerprint."""
        return self._daemon.value_history.all_series(list(fingerprints)) if self._open() else {}

    def group_notes(self) -> Mapping[str, Sequence[str]]:
        """Per group key, the notes of who acknowledged or silenced it."""
        if not self._open():
            return {}
        actions = self._daemon.group_actions
        return {action.group_key: actions.notes(action.group_key) for action in actions.all()}

    def rules_by_alert(self) -> Mapping[str, Any]:
        """The rulebook's rules by alert name."""
        return {rule.alert: rule for rule in self._daemon.rulebook.rules}

    async def metrics_text(self) -> bytes:
        """Refresh the scrape-time gauges and the store size, then expose the registry."""
        self._daemon.refresh_gauges()
        if self._open():
            clusters = [c.name for c in self._daemon.config.clusters]
            self._daemon.metrics.observe_incidents(self._daemon.incidents.all(), clusters)
        # Measured now, off the event loop: maintenance runs hourly and the store grows in between.
        size = await asyncio.to_thread(store_size, self._daemon.config.store)
        self._daemon.metrics.store_bytes.set(size)
        return self._daemon.metrics.exposition()

    def reload(self) -> ReloadOutcome:
        """The Daemon's reload (the same as SIGHUP)."""
        return self._daemon.reload()
