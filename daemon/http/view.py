"""What daemon/http reads from the running daemon, and the one thing it asks of it: a reload.

daemon/http never imports daemon.app (DESIGN §3). daemon/app/http_view.py adapts the Daemon to
this protocol, and start_http/build_app take anything that satisfies it (a test can pass a fake)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any, Protocol

from aiohttp import web

from config.models import HttpConfig
from daemon.alerts.incidents import Incident
from daemon.alerts.model import AlertInstance
from daemon.alerts.silences import SilenceStore
from daemon.common.charts.sparkline import Point
from daemon.common.judged_on import GroupBasis
from daemon.http.status_ha import HaView


class CycleView(Protocol):
    """One finished cycle as the status page lists it (daemon.app.cycles.CycleRecord has these)."""

    @property
    def kind(self) -> str:
        """"collect" or "evaluate"."""

    @property
    def target(self) -> str:
        """The cluster collected, or "rules"."""

    @property
    def at(self) -> datetime:
        """When the cycle started."""

    @property
    def seconds(self) -> float:
        """How long it took."""

    @property
    def rows(self) -> int:
        """Rows collected or findings evaluated."""

    @property
    def failed_calls(self) -> int:
        """Calls that failed during the cycle."""


class ReloadResult(Protocol):
    """What a reload did (daemon.app.reloader.ReloadOutcome has these)."""

    @property
    def ok(self) -> bool:
        """Whether the new config was swapped in."""

    @property
    def message(self) -> str:
        """What changed, or why the reload was rejected."""

    @property
    def changes(self) -> dict[str, Any] | None:
        """The changes as JSON for scripts; None when nothing was swapped in."""


@dataclass(frozen=True)
class IncidentMemberView:
    """One alert of an incident, copied from the incident book (daemon.alerts.incidents.Member)."""

    fingerprint: str
    rule: str
    labels: Mapping[str, str]
    joined_at: datetime
    resolved_at: datetime | None = None
    cause: str | None = None  # the fingerprint of the member that explains it
    why: str = ""  # the causal link's sentence, when it has a cause


@dataclass(frozen=True)
class IncidentView:
    """One incident, copied from the incident book: nothing the page holds changes under it."""

    id: str
    opened_at: datetime
    locus: Mapping[str, str]  # where it opened: cluster + group, cluster + broker, ...
    root: str  # the fingerprint of the alert that explains the others (the first, until a cause is known)
    members: tuple[IncidentMemberView, ...]  # root first, then as they joined
    resolved_at: datetime | None = None
    ended_by: str | None = None  # the fingerprint of the last alert to resolve, once resolved

    @classmethod
    def of(cls, incident: Incident) -> IncidentView:
        """Copy an incident of the incident book."""
        last = incident.last_resolved()
        return cls(
            id=incident.id, opened_at=incident.opened_at, locus=dict(incident.locus), root=incident.root,
            members=tuple(IncidentMemberView(m.fingerprint, m.rule, dict(m.labels), m.joined_at, m.resolved_at,
                                             m.cause, m.why) for m in incident.ordered()),
            resolved_at=incident.resolved_at, ended_by=last.fingerprint if last is not None else None,
        )

    @property
    def open(self) -> bool:
        """True until every alert in it has resolved."""
        return self.resolved_at is None

    def member(self, fingerprint: str) -> IncidentMemberView | None:
        """The member with that fingerprint."""
        return next((m for m in self.members if m.fingerprint == fingerprint), None)


class DaemonView(Protocol):
    """The running daemon as daemon/http sees it; every read follows reloads."""

    @property
    def http(self) -> HttpConfig:
        """The HTTP config in force: token and listen, for the write guard."""

    @property
    def last_cycle_at(self) -> datetime | None:
        """When the last evaluation cycle completed; None before the first."""

    @property
    def evaluate_interval(self) -> timedelta:
        """How often rules are evaluated."""

    @property
    def group_by(self) -> Sequence[str]:
        """The labels notifications are grouped by."""

    @property
    def cycles(self) -> Sequence[CycleView]:
        """The last finished cycles."""

    @property
    def collector_health(self) -> Mapping[str, list[dict[str, Any]]]:
        """Per cluster, the outcome of each collector call of its last cycle."""

    @property
    def silences(self) -> SilenceStore | None:
        """The silence store, which writes go through; None until the daemon's state is open."""

    @property
    def judged_on(self) -> Mapping[str, Sequence[GroupBasis]]:
        """Per cluster, what each consumer group of its last collection is judged on, and why."""

    def active_alerts(self) -> Sequence[AlertInstance]:
        """Pending and firing alerts; empty until the daemon's state is open."""

    def incidents(self) -> Sequence[IncidentView]:
        """Open incidents and those resolved within the last day, newest first; empty until the state is open."""

    def ha(self) -> HaView | None:
        """The dispatch lease as this daemon sees it; None for a single node."""

    def muted(self, alerts: Sequence[AlertInstance], now: datetime) -> set[str]:
        """Fingerprints of those alerts a silence or an acknowledgement mutes now."""

    def value_series(self, fingerprints: Sequence[str]) -> Mapping[str, Sequence[Point]]:
        """Each alert's value over time, by fingerprint."""

    def group_notes(self) -> Mapping[str, Sequence[str]]:
        """Per group key, who acknowledged or silenced the group."""

    def rules_by_alert(self) -> Mapping[str, Any]:
        """The running rules by alert name."""

    async def metrics_text(self) -> bytes:
        """The Prometheus text exposition, with gauges and the store size measured now."""

    def reload(self) -> ReloadResult:
        """Reload the config file, swapping it in only if all of it is valid."""


VIEW_KEY = web.AppKey("daemon_view", DaemonView)


def view_of(request: web.Request) -> DaemonView:
    """The view the app was built with."""
    return request.app[VIEW_KEY]
