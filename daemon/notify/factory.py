"""Build the notifiers named in the config; secrets are read from the environment here, once."""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping, Sequence
from typing import TextIO

from config.receivers import ConsoleReceiver, EmailReceiver, ReceiverConfig, SlackReceiver, WebhookReceiver
from daemon.alerts.figures import RuleLookup
from daemon.common.charts.sparkline import Point
from daemon.notify.console import ConsoleNotifier
from daemon.notify.email import EmailNotifier
from daemon.notify.model import Notifier
from daemon.notify.slack import SlackNotifier
from daemon.notify.webhook import WebhookNotifier

GroupNotes = Callable[[str], list[str]]  # group key -> "Acknowledged by ..." lines
ValueSeries = Callable[[str], Sequence[Point]]  # fingerprint -> the alert's values over its window


def build_notifiers(
    configs: Sequence[ReceiverConfig], env: Mapping[str, str] = os.environ, stream: TextIO | None = None,
    group_notes: GroupNotes | None = None, value_series: ValueSeries | None = None, rules: RuleLookup | None = None,
    external_url: str = "",
) -> dict[str, Notifier]:
    """One notifier per receiver, by name; raises ValueError naming a receiver whose secret is missing."""
    notifiers: dict[str, Notifier] = {}
    for config in configs:
        notifiers[config.name] = build_notifier(config, env, stream, group_notes, value_series, rules, external_url)
    return notifiers


def build_notifier(
    config: ReceiverConfig, env: Mapping[str, str] = os.environ, stream: TextIO | None = None,
    group_notes: GroupNotes | None = None, value_series: ValueSeries | None = None, rules: RuleLookup | None = None,
    external_url: str = "",
) -> Notifier:
    """The notifier for one receiver config; `rules` (alert name -> rule) lets texts state figures as rules define
    them, `external_url` (the status page's address) gives every page its incident link."""
    if isinstance(config, ConsoleReceiver):
        return ConsoleNotifier(config.name, stream, rules, external_url=external_url, detail=config.detail)
    if isinstance(config, SlackReceiver):
        return SlackNotifier(
            config.name, config.resolve_token(env), config.channel, base_url=config.base_url,
            max_alerts=config.max_alerts, timeout=config.timeout,
            actions=config.resolve_app_token(env) is not None, group_notes=group_notes, value_series=value_series,
            rules=rules, external_url=external_url, detail=config.detail, reply_broadcast=config.reply_broadcast,
            mention=config.mention or "",
        )
    if isinstance(config, EmailReceiver):
        return EmailNotifier(
            config.name, config.host, config.port, config.from_addr, config.to, security=config.security,
            username=config.username, password=config.resolve_password(env), timeout=config.timeout,
            cert_bundle=config.ca_file, rules=rules, external_url=external_url, detail=config.detail,
        )
    if isinstance(config, WebhookReceiver):
        return WebhookNotifier(config.name, config.url, config.resolve_bearer(env), timeout=config.timeout,
                               external_url=config.external_url or external_url, rules=rules)
    raise TypeError(f"unknown receiver config {type(config).__name__}")
