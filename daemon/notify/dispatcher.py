"""From tracker events to notifications: one per touched alert group and receiver, into the outbox.

Every daemon keeps its own log of what changed; only the holder of the dispatch lease queues sends,
each under a fenced intent in the shared log (daemon/coordination). A standby queues nothing and
follows the shared log; with no coordinator answering, sends are queued held (delayed, never lost).
The heartbeat's route is every daemon's own, outside the lease; so are the groups of a daemon's alerts
about its own coordination (while they fire, no coordinator may answer to grant the lease).
"""

from __future__ import annotations

import logging
from collections import Counter, defaultdict
from collections.abc import Callable, Sequence
from datetime import datetime

from config.matchers import alert_labels
from daemon.alerts.incidents import INCIDENT_LABEL, IncidentBook, locus_of, matcher_labels
from daemon.alerts.inhibit import Inhibitor, inhibited
from daemon.alerts.model import AlertEvent, AlertInstance, EventKind
from daemon.alerts.silences import SilenceStore
from daemon.coordination.model import CoordinatorUnavailable, Fence, Fenced, GroupRef, LogGroup, Told
from daemon.notify.model import AlertSnapshot, Change, IncidentSnapshot, Notification
from daemon.notify.notification_log import GroupState, NotificationLog, Pending, decide
from daemon.notify.outbox import Outbox
from daemon.notify.routing import Route, Router
from daemon.notify.shared_log import follow, told_elsewhere, told_now

log = logging.getLogger(__name__)


def group_labels(alert: AlertInstance, group_by: Sequence[str], incidents: IncidentBook | None = None) -> dict[str, str]:
    """The alert's values of the group_by labels; `alertname` is the rule name, `incident` its incident's id."""
    return {name: _group_value(alert, name, incidents) for name in group_by}


def _group_value(alert: AlertInstance, name: str, incidents: IncidentBook | None) -> str:
    if name == "alertname":
        return alert.rule
    if name == INCIDENT_LABEL:
        incident = incidents.incident_of(alert.fingerprint) if incidents is not None else None
        # Not in an incident (no incident book, or an alert with no cluster): grouped where it happens.
        return incident.id if incident is not None else "/".join(locus_of(alert.labels).values()) or alert.rule
    return alert.labels.get(name, "")


def group_key(labels: dict[str, str]) -> str:
    """A group's id, readable in logs and the outbox: `{alertname="X",cluster="prod",group="g"}`."""
    return "{" + ",".join(f'{k}="{v}"' for k, v in labels.items()) + "}"


class Dispatcher:
    """Routes this cycle's changes to alert groups and sends each group when its timers allow."""

    def __init__(
        self,
        outbox: Outbox,
        receivers: list[str],
        group_by: list[str],
        silences: SilenceStore | None = None,
        inhibitors: Sequence[Inhibitor] = (),
        router: Router | None = None,
        acknowledged: Callable[[str], bool] | None = None,
        incidents: IncidentBook | None = None,
    ) -> None:
        self.outbox = outbox
        self.incidents = incidents
        self.silences = silences
        self.inhibitors = list(inhibitors)
        self.router = router or Router.default(list(receivers), list(group_by))
        self.acknowledged = acknowledged or (lambda key: False)
        self.log = NotificationLog(outbox.db)
        # Muted at the previous dispatch (persisted): an alert leaving this set while it fires is announced.
        self._muted: set[str] = self.log.muted()
        self.decisions: Counter[str] = Counter()  # reason -> count since the caller last read it
        self._seeded = False  # this process has put its own open threads into the shared log

    @property
    def group_by(self) -> list[str]:
        """The first route's grouping, for pages that show alerts grouped as routed."""
        routes = self.router.routes()
        return list(routes[0].group_by) if routes else ["alertname"]

    def muted(self, active: list[AlertInstance], now: datetime) -> set[str]:
        """Fingerprints of the active alerts a silence or an inhibition mutes right now."""
        muted = inhibited(active, self.inhibitors)
        silences = self.silences.active(now) if self.silences is not None else []
        for alert in active:
            labels = matcher_labels(alert, self.incidents)
            if any(s.mutes(labels, now) for s in silences):
                muted.add(alert.fingerprint)
        return muted

    def _unmuted(self, events: list[AlertEvent], active: list[AlertInstance], muted: set[str]) -> list[AlertEvent]:
        # Drop what is muted now; drop resolves of alerts nobody was told about (muted until now);
        # announce firing alerts whose silence expired or whose cause resolved.
        kept = [
            e for e in events
            if e.fingerprint not in muted and not (e.kind is EventKind.RESOLVED and e.fingerprint in self._muted)
        ]
        announced = {e.fingerprint for e in kept}
        for alert in active:
            if alert.state == "firing" and alert.fingerprint in self._muted - muted and alert.fingerprint not in announced:
                kept.append(AlertEvent(EventKind.FIRING, alert, reason="no longer silenced or inhibited"))
        return kept

    async def dispatch(
        self, events: list[AlertEvent], active: list[AlertInstance], now: datetime
    ) -> list[tuple[str, Notification]]:
        """Record the cycle's changes per route and group, then queue every group that is due (the lease
        holder; held while no coordinator answers; nothing on a standby but its own heartbeat). The incident
        book is read, never changed: daemon/alerts advances it first."""
        muted = self.muted(active, now)
        events = self._unmuted(events, active, muted)
        if muted != self._muted:
            self.log.set_muted(muted)
        self._muted = muted
        for event in events:
            resolved = AlertSnapshot.of(event.alert) if event.kind is EventKind.RESOLVED else None
            for route in self._routes(event.alert):
                labels = group_labels(event.alert, route.group_by, self.incidents)
                self.log.add_change(route, group_key(labels), labels, Pending(Change.of(event), resolved), now)
        firing: dict[tuple[str, str, str], list[AlertInstance]] = defaultdict(list)
        labels_of: dict[tuple[str, str, str], tuple[Route, dict[str, str]]] = {}
        for alert in active:
            if alert.state != "firing" or alert.fingerprint in muted:
                continue
            for route in self._routes(alert):
                labels = group_labels(alert, route.group_by, self.incidents)
                key = (route.id, route.receiver, group_key(labels))
                firing[key].append(alert)
                labels_of[key] = (route, labels)
        groups = self.log.groups()
        known = {(g.route, g.receiver, g.group_key) for g in groups}
        for key in firing.keys() - known:  # firing with no group row: after a restart, or a new route
            route, labels = labels_of[key]
            self.log.ensure(route, key[2], labels)
            # Its alerts were told on their old route: the new one starts quiet, as if told now, so its
            # reminders, updates and resolve (a moved heartbeat's next beat) reach the new receiver.
            self.log.sent(GroupState(route.id, route.receiver, key[2], labels), "picked_up", now)
        if firing.keys() - known:
            groups = self.log.groups()
        order = {r.id: i for i, r in enumerate(self.router.routes())}
        groups.sort(key=lambda g: (order.get(g.route, len(order)), g.group_key))
        service = self.outbox.coordination
        await service.ensure_private()
        turn = _Turn(service.keeper.fence(), service.unreachable, muted)
        if not turn.held:
            try:
                turn.shared = {g.ref: g for g in await service.coordinator.log_groups()}
            except CoordinatorUnavailable:
                turn.held, turn.fence = True, None
        if turn.fence is not None and not self._seeded:
            await self._seed(groups, firing, turn)
        queued = []
        for group in groups:
            if (q := await self._decide(group, firing, now, turn)) is not None:
                queued.append(q)
        return queued

    def _incident(self, group: GroupState) -> IncidentSnapshot | None:
        incident_id = group.group_labels.get(INCIDENT_LABEL)
        incident = self.incidents.get(incident_id) if self.incidents is not None and incident_id else None
        return IncidentSnapshot.of(incident) if incident is not None else None

    def _routes(self, alert: AlertInstance) -> list[Route]:
        return self.router.match(alert_labels(alert.rule, alert.labels, alert.severity))

    async def _record(self, group: GroupState, turn: _Turn, local: bool) -> LogGroup | None:
        # The shared log's record of the group (open, or closed since): None when it has none, or when
        # the local log is all there is (held, or a group this daemon tells itself).
        ref = GroupRef(group.route, group.receiver, group.group_key)
        if turn.held or local:
            return None
        if ref in turn.shared:
            return turn.shared[ref]
        if not group.pending:
            return None
        try:
            return await self.outbox.coordination.coordinator.log_group(ref)
        except CoordinatorUnavailable:
            return None

    async def _decide(
        self, group: GroupState, firing: dict[tuple[str, str, str], list[AlertInstance]], now: datetime,
        turn: _Turn,
    ) -> tuple[str, Notification] | None:
        route = next((r for r in self.router.routes() if r.id == group.route and r.receiver == group.receiver), None)
        alerts = firing.get((group.route, group.receiver, group.group_key), [])
        local = group.route == HEARTBEAT_ROUTE or own_trouble(group, alerts)
        record = await self._record(group, turn, local)
        if route is None:  # the route left the tree on reload: its groups go with it
            self.log.close(group)
            await self._close_shared(group, record, turn, now)
            return None
        if told_elsewhere(group, record):
            assert record is not None
            follow(group, record, alerts, turn.muted)
            self.log.follow(group)
        silent = self.router.silent_reason(route, now) if (group.pending or alerts) else None
        decision = decide(group, len(alerts), route, now, self.acknowledged(group.group_key), silent)
        standby = not local and turn.fence is None and not turn.held
        self.decisions["standby" if standby and decision.send else decision.reason] += 1
        if not decision.send:
            if decision.reason == "resolved_before_told":
                self.log.drop_pending(group)
            if not alerts and (not group.pending or decision.reason == "resolved_before_told"):
                self.log.close(group)
                await self._close_shared(group, record, turn, now)
            return None
        if standby:
            return None  # the holder tells it; this daemon follows the shared log
        firing_fps = {a.fingerprint for a in alerts}
        resolved = {p.resolved.fingerprint: p.resolved for p in group.pending
                    if p.resolved is not None and p.resolved.fingerprint not in firing_fps}
        notification = Notification(
            group_key=group.group_key, group_labels=group.group_labels,
            status="firing" if alerts else "resolved",
            alerts=[AlertSnapshot.of(a) for a in alerts] + list(resolved.values()),
            changes=[p.change for p in group.pending],
            is_update=self.outbox.group_open(route.receiver, group.group_key)
            or (record is not None and not record.closed and bool(record.told_firing)), created_at=now,
            reason=decision.reason, incident=self._incident(group),
        )
        if local:
            self.outbox.enqueue(route.receiver, notification, now, route=route.id)
        elif turn.held or self.outbox.holds(route.receiver, group.group_key):
            # Queued behind held rows, or nobody answers: numbered once a coordinator does (in queue order).
            self.outbox.enqueue(route.receiver, notification, now, route=route.id, held=True)
            log.warning("notify %s via %s held: no coordinator answers (%s)", group.group_key, route.receiver,
                        self.outbox.coordination.status().last_error)
        else:
            assert turn.fence is not None
            ref = GroupRef(route.id, route.receiver, group.group_key)
            try:
                intent = await self.outbox.coordination.coordinator.record_intent(
                    turn.fence, ref, group.group_labels, told_now(alerts, group, record, turn.muted),
                    decision.reason, now)
            except CoordinatorUnavailable:
                turn.held, turn.fence = True, None
                self.outbox.enqueue(route.receiver, notification, now, route=route.id, held=True)
            except Fenced as exc:
                log.warning("notify %s via %s not queued: %s", group.group_key, route.receiver, exc)
                turn.fence = None
                return None
            else:
                if intent.retry:  # an earlier holder's send, never confirmed: it may be at the receiver already
                    notification = notification.model_copy(update={"unconfirmed_since": intent.recorded_at or now})
                self.outbox.enqueue(route.receiver, notification, now, key=intent.key, route=route.id, seq=intent.seq)
        self.log.sent(group, decision.reason, now)
        if not alerts:
            self.log.close(group)
        log.info("notify %s via %s (%s): %s, %d firing, %d change(s)", group.group_key, route.receiver, route.id,
                 decision.reason, len(alerts), len(group.pending))
        return route.receiver, notification

    async def _seed(self, groups: list[GroupState], firing: dict[tuple[str, str, str], list[AlertInstance]],
                    turn: _Turn) -> None:
        # Once, at this process's first fence: open groups this daemon told itself (its outbox's latest row
        # for them is a firing one) that the shared log lacks enter it as told, with their thread, so turning
        # HA on (or upgrading) posts nothing again.
        for group in groups:
            ref = GroupRef(group.route, group.receiver, group.group_key)
            alerts = firing.get((group.route, group.receiver, group.group_key), [])
            if ref in turn.shared or group.last_sent_at is None or not alerts or group.route == HEARTBEAT_ROUTE \
                    or own_trouble(group, alerts) or not self.outbox.group_open(group.receiver, group.group_key):
                continue
            thread = self.outbox.thread(group.receiver, group.group_key)
            data = {"thread": thread.model_dump()} if thread is not None else {}
            told = Told({a.fingerprint: a.severity for a in alerts})
            try:
                if await self.outbox.coordination.coordinator.seed_group(
                        turn.fence, ref, group.group_labels, told, data, group.last_sent_at):
                    log.info("shared log seeded with %s from this daemon's thread", ref)
            except (CoordinatorUnavailable, Fenced) as exc:
                log.warning("shared log not seeded with %s: %s (tried again next cycle)", ref, exc)
                return
        self._seeded = True

    async def _close_shared(self, group: GroupState, record: LogGroup | None, turn: _Turn, now: datetime) -> None:
        # Nothing fires or waits any more: the holder closes the shared group, unless a send is in flight.
        if turn.fence is None or record is None or record.closed or record.open_intent is not None:
            return
        try:
            await self.outbox.coordination.coordinator.close_group(turn.fence, record.ref, now)
        except (CoordinatorUnavailable, Fenced) as exc:
            log.warning("shared %s not closed: %s", record.ref, exc)


HEARTBEAT_ROUTE = "heartbeat"  # routing.py's id of the heartbeat's route: every daemon sends its own
# A daemon's alerts about its own coordination (rules/builtin/rocketwatch-self.yaml): each daemon tells its
# own, outside the lease, as its heartbeat; held behind the lease they would wait for the coordinator they
# report as away.
OWN_TROUBLE_RULES = frozenset({"RocketwatchCoordinatorUnreachable", "RocketwatchNotificationsHeld"})


def own_trouble(group: GroupState, alerts: Sequence[AlertInstance]) -> bool:
    """The group tells only alerts about this daemon's own coordination (firing, or resolved and not told)."""
    rules = {a.rule for a in alerts} | {p.resolved.rule for p in group.pending if p.resolved is not None}
    return bool(rules) and rules <= OWN_TROUBLE_RULES


class _Turn:
    """One dispatch's standing: the fence it writes under, whether sends are held, the shared log read once."""

    def __init__(self, fence: Fence | None, held: bool, muted: set[str]) -> None:
        self.fence = fence
        self.held = held and fence is None
        self.muted = muted
        self.shared: dict[GroupRef, LogGroup] = {}
