"""The daemon's notification side assembled from the config: notifiers, router, dispatcher,
Slack button listeners, and the Heartbeat alert."""

from __future__ import annotations

import asyncio
from collections.abc import Mapping, Sequence

from config.models import NotifyConfig
from config.receivers import ReceiverConfig, SlackReceiver
from daemon.alerts.figures import RuleLookup
from daemon.alerts.group_actions import GroupActionStore
from daemon.alerts.incidents import IncidentBook
from daemon.alerts.inhibit import Inhibitor
from daemon.alerts.silences import SilenceStore
from daemon.alerts.value_history import ValueHistory
from daemon.notify.dispatcher import Dispatcher
from daemon.notify.factory import build_notifier
from daemon.notify.model import Notifier
from daemon.notify.outbox import Outbox
from daemon.notify.routing import HEARTBEAT, Router
from daemon.notify.slack_actions import SlackActionListener, build_action_listeners
from rules.findings import Finding


class ReceiverError(ValueError):
    """A receiver that cannot be built (a secret not set); `index` is its place under notify.receivers."""

    def __init__(self, index: int, message: str) -> None:
        self.index = index
        super().__init__(message)


def build_routing(
    notify: NotifyConfig, outbox: Outbox, silences: SilenceStore, group_actions: GroupActionStore,
    value_history: ValueHistory, reuse: Mapping[str, Notifier] | None = None, rules: RuleLookup | None = None,
    incidents: IncidentBook | None = None, external_url: str = "",
) -> tuple[dict[str, Notifier], Dispatcher]:
    """Notifiers by receiver name, and the dispatcher that routes alerts to them.

    `reuse` holds notifiers of receivers a reload left unchanged: they are kept, not rebuilt; so
    `rules` should look names up in the running rulebook at call time, not in a copy of it.
    """
    notifiers: dict[str, Notifier] = {}
    for index, config in enumerate(notify.receivers):
        kept = (reuse or {}).get(config.name)
        try:
            notifiers[config.name] = kept if kept is not None else build_notifier(
                config, group_notes=group_actions.notes, value_series=value_history.series, rules=rules,
                external_url=external_url)
        except ValueError as exc:
            raise ReceiverError(index, str(exc)) from exc
    inhibitors = [Inhibitor.parse(r.source_matchers, r.target_matchers, r.equal) for r in notify.inhibit_rules]
    dispatcher = Dispatcher(
        outbox, [r.name for r in notify.receivers], notify.group_by, silences, inhibitors,
        router=Router.from_config(notify),
        # An acknowledged group still updates and resolves; it just stops the repeat reminders.
        acknowledged=lambda key: group_actions.acknowledged(key) is not None,
        incidents=incidents,
    )
    return notifiers, dispatcher


def unchanged_notifiers(
    old: Sequence[ReceiverConfig], notifiers: Mapping[str, Notifier], new: Sequence[ReceiverConfig]
) -> dict[str, Notifier]:
    """The running notifiers whose receiver config a reload left exactly as it was."""
    before = {c.name: c for c in old}
    return {c.name: notifiers[c.name] for c in new if before.get(c.name) == c and c.name in notifiers}


def build_slack_listeners(
    receivers: Sequence[ReceiverConfig], notifiers: Mapping[str, Notifier], silences: SilenceStore,
    group_actions: GroupActionStore,
) -> list[SlackActionListener]:
    """Socket Mode listeners (not started) for Slack receivers with an app token; ReceiverError names a missing one."""
    for index, config in enumerate(receivers):
        if isinstance(config, SlackReceiver):
            try:
                config.resolve_app_token()
            except ValueError as exc:
                raise ReceiverError(index, str(exc)) from exc
    return build_action_listeners(receivers, notifiers, silences, group_actions)


def start_listener_tasks(listeners: Sequence[SlackActionListener]) -> list[asyncio.Task]:
    """Connect each listener in the background of the running loop."""
    # In the background: slack-sdk retries an unreachable Slack forever, which must not hold up start.
    return [asyncio.get_running_loop().create_task(listener.start(), name=f"slack-actions:{listener.handler.receiver}")
            for listener in listeners]


def start_slack_listeners(
    receivers: Sequence[ReceiverConfig], notifiers: Mapping[str, Notifier], silences: SilenceStore,
    group_actions: GroupActionStore,
) -> tuple[list[SlackActionListener], list[asyncio.Task]]:
    """Socket Mode listeners for Slack receivers with an app token, connecting in the background."""
    listeners = build_slack_listeners(receivers, notifiers, silences, group_actions)
    return listeners, start_listener_tasks(listeners)


def heartbeat_finding(clusters: int, evaluations: int, firing: int) -> Finding:
    """The always-firing dead man's switch alert of one evaluation."""
    return Finding(HEARTBEAT, {}, None, None, None, {
        "summary": f"rocketwatch is watching {clusters} cluster(s): {evaluations} evaluation(s) so far, "
                   f"{firing} alert(s) firing",
        "diagnosis": "This alert always fires. Its notifications stopping means rocketwatch stopped "
                     "evaluating or cannot deliver: nobody is being told about RocketMQ any more.",
        "next_steps": "On the rocketwatch host: systemctl status rocketwatch; journalctl -u rocketwatch.",
    })
