"""From tracker events to notifications: one per touched alert group and receiver, into the outbox."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime

from config.matchers import alert_labels
from daemon.alerts.inhibit import Inhibitor, inhibited
from daemon.alerts.model import AlertEvent, AlertInstance, EventKind
from daemon.alerts.silences import SilenceStore
from daemon.notify.model import AlertSnapshot, Change, Notification
from daemon.notify.outbox import Outbox


def group_labels(alert: AlertInstance, group_by: Sequence[str]) -> dict[str, str]:
    """The alert's values of the group_by labels; `alertname` is the rule name."""
    return {name: alert.rule if name == "alertname" else alert.labels.get(name, "") for name in group_by}


def group_key(labels: dict[str, str]) -> str:
    """A group's id, readable in logs and the outbox: `{alertname="X",cluster="prod",group="g"}`."""
    return "{" + ",".join(f'{k}="{v}"' for k, v in labels.items()) + "}"


class Dispatcher:
    """Groups this cycle's changes by `group_by` and queues one notification per group and receiver."""

    def __init__(
        self,
        outbox: Outbox,
        receivers: list[str],
        group_by: list[str],
        silences: SilenceStore | None = None,
        inhibitors: Sequence[Inhibitor] = (),
    ) -> None:
        self.outbox = outbox
        self.receivers = list(receivers)
        self.group_by = list(group_by)
        self.silences = silences
        self.inhibitors = list(inhibitors)
        # Muted in the previous cycle: an alert leaving this set while it fires is announced then.
        self._muted: set[str] = set()

    def muted(self, active: list[AlertInstance], now: datetime) -> set[str]:
        """Fingerprints of the active alerts a silence or an inhibition mutes right now."""
        muted = inhibited(active, self.inhibitors)
        silences = self.silences.active(now) if self.silences is not None else []
        for alert in active:
            labels = alert_labels(alert.rule, alert.labels, alert.severity)
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

    def dispatch(
        self, events: list[AlertEvent], active: list[AlertInstance], now: datetime
    ) -> list[tuple[str, Notification]]:
        """Queue notifications for every group an event touched; return (receiver, notification) pairs."""
        muted = self.muted(active, now)
        events = self._unmuted(events, active, muted)
        self._muted = muted
        active = [a for a in active if a.fingerprint not in muted]
        touched: dict[str, list[AlertEvent]] = {}
        labels_of: dict[str, dict[str, str]] = {}
        for event in events:
            labels = group_labels(event.alert, self.group_by)
            key = group_key(labels)
            touched.setdefault(key, []).append(event)
            labels_of[key] = labels
        firing_by_group: dict[str, list[AlertInstance]] = {}
        for alert in active:
            if alert.state == "firing":
                firing_by_group.setdefault(group_key(group_labels(alert, self.group_by)), []).append(alert)

        queued: list[tuple[str, Notification]] = []
        for key, group_events in touched.items():
            # The group's whole current state, not just the delta: the top message shows all of it.
            resolved = [e.alert for e in group_events if e.kind is EventKind.RESOLVED]
            alerts = [AlertSnapshot.of(a) for a in firing_by_group.get(key, []) + resolved]
            status = "firing" if key in firing_by_group else "resolved"
            changes = [Change.of(e) for e in group_events]
            for receiver in self.receivers:
                notification = Notification(
                    group_key=key, group_labels=labels_of[key], status=status, alerts=alerts, changes=changes,
                    is_update=self.outbox.group_open(receiver, key), created_at=now,
                )
                self.outbox.enqueue(receiver, notification, now)
                queued.append((receiver, notification))
        return queued
