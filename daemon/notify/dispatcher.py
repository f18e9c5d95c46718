"""From tracker events to notifications: one per touched alert group and receiver, into the outbox."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime

from daemon.alerts.model import AlertEvent, AlertInstance, EventKind
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

    def __init__(self, outbox: Outbox, receivers: list[str], group_by: list[str]) -> None:
        self.outbox = outbox
        self.receivers = list(receivers)
        self.group_by = list(group_by)

    def dispatch(
        self, events: list[AlertEvent], active: list[AlertInstance], now: datetime
    ) -> list[tuple[str, Notification]]:
        """Queue notifications for every group an event touched; return (receiver, notification) pairs."""
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
