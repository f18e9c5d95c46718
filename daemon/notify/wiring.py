"""The daemon's notification side assembled from the config: notifiers, router, dispatcher,
Slack button listeners, and the Heartbeat alert."""

from __future__ import annotations

import asyncio
from collections.abc import Mapping, Sequence

from config.models import NotifyConfig
from config.receivers import ReceiverConfig
from daemon.alerts.group_actions import GroupActionStore
from daemon.alerts.inhibit import Inhibitor
from daemon.alerts.silences import SilenceStore
from daemon.alerts.value_history import ValueHistory
from daemon.notify.dispatcher import Dispatcher
from daemon.notify.factory import build_notifiers
from daemon.notify.model import Notifier
from daemon.notify.outbox import Outbox
from daemon.notify.routing import HEARTBEAT, Router
from daemon.notify.slack_actions import SlackActionListener, build_action_listeners
from rules.findings import Finding


def build_routing(
    notify: NotifyConfig, outbox: Outbox, silences: SilenceStore, group_actions: GroupActionStore,
    value_history: ValueHistory,
) -> tuple[dict[str, Notifier], Dispatcher]:
    """Notifiers by receiver name, and the dispatcher that routes alerts to them."""
    notifiers = build_notifiers(notify.receivers, group_notes=group_actions.notes, value_series=value_history.series)
    inhibitors = [Inhibitor.parse(r.source_matchers, r.target_matchers, r.equal) for r in notify.inhibit_rules]
    dispatcher = Dispatcher(
        outbox, [r.name for r in notify.receivers], notify.group_by, silences, inhibitors,
        router=Router.from_config(notify),
        # An acknowledged group still updates and resolves; it just stops the repeat reminders.
        acknowledged=lambda key: group_actions.acknowledged(key) is not None,
    )
    return notifiers, dispatcher


def start_slack_listeners(
    receivers: Sequence[ReceiverConfig], notifiers: Mapping[str, Notifier], silences: SilenceStore,
    group_actions: GroupActionStore,
) -> tuple[list[SlackActionListener], list[asyncio.Task]]:
    """Socket Mode listeners for Slack receivers with an app token, connecting in the background."""
    listeners = build_action_listeners(receivers, notifiers, silences, group_actions)
    # In the background: slack-sdk retries an unreachable Slack forever, which must not hold up start.
    tasks = [asyncio.get_running_loop().create_task(listener.start(), name=f"slack-actions:{listener.handler.receiver}")
             for listener in listeners]
    return listeners, tasks


def heartbeat_finding(clusters: int, evaluations: int, firing: int) -> Finding:
    """The always-firing dead man's switch alert of one evaluation."""
    return Finding(HEARTBEAT, {}, None, None, None, {
        "summary": f"rocketwatch is watching {clusters} cluster(s): {evaluations} evaluation(s) so far, "
                   f"{firing} alert(s) firing",
        "diagnosis": "This alert always fires. Its notifications stopping means rocketwatch stopped "
                     "evaluating or cannot deliver: nobody is being told about RocketMQ any more.",
        "next_steps": "On the rocketwatch host: systemctl status rocketwatch; journalctl -u rocketwatch.",
    })
