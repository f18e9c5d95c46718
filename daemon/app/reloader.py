"""Reload, first step: build the whole new configuration (config, rules, route tree, receivers) to one side.

Nothing here touches the running daemon: `prepare` either returns every new part, built and valid,
or raises ReloadRejected with the positioned errors, and the daemon keeps running what it has.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ruamel.yaml import YAML

from config.loader import ConfigLoadError, load_config
from config.models import RocketwatchConfig
from daemon.alerts.figures import RuleLookup
from daemon.alerts.group_actions import GroupActionStore
from daemon.alerts.incidents import IncidentBook
from daemon.alerts.silences import SilenceStore
from daemon.alerts.value_history import ValueHistory
from daemon.app.config_diff import ConfigChanges, applied_config, diff_configs
from daemon.app.rulebook import Rulebook, load_rulebook
from daemon.notify.dispatcher import Dispatcher
from daemon.notify.model import Notifier
from daemon.notify.outbox import Outbox
from daemon.notify.slack_actions import SlackActionListener
from daemon.notify.wiring import ReceiverError, build_routing, build_slack_listeners, unchanged_notifiers
from rules.loader import RuleLoadError

log = logging.getLogger("rocketwatch")


class ReloadRejected(Exception):
    """The reloaded file cannot run; the message positions every problem (file:line:col: field: what)."""


@dataclass(frozen=True)
class NotifyState:
    """The persisted notification side a reload keeps: outbox, silences, acknowledgements, value history."""

    outbox: Outbox
    silences: SilenceStore
    group_actions: GroupActionStore
    value_history: ValueHistory
    rules: RuleLookup | None = None  # the running rulebook's lookup, followed by kept and new notifiers alike
    incidents: IncidentBook | None = None  # open incidents outlive a reload; their links follow the rulebook


@dataclass(frozen=True)
class Candidate:
    """Every part of a reloaded configuration, built and valid, ready to be swapped in together."""

    config: RocketwatchConfig  # the file's, with the restart-only settings kept at their running value
    rulebook: Rulebook
    notifiers: dict[str, Notifier]
    dispatcher: Dispatcher
    listeners: list[SlackActionListener] | None  # None: receivers unchanged, the running listeners stay
    changes: ConfigChanges


@dataclass(frozen=True)
class ReloadOutcome:
    """What a reload did, as the HTTP reply and the log tell it."""

    ok: bool
    message: str
    changes: dict[str, Any] | None = field(default=None)


def prepare(
    path: Path, running: RocketwatchConfig, rulebook: Rulebook, notifiers: Mapping[str, Notifier],
    state: NotifyState,
) -> Candidate:
    """Load `path` and build its rules, routes and receivers; raise ReloadRejected on any error."""
    try:
        loaded = load_config(path)
        new_rulebook = load_rulebook(loaded, path)
    except (ConfigLoadError, RuleLoadError) as exc:  # already positioned for the operator
        raise ReloadRejected(str(exc)) from exc
    except Exception as exc:  # anything unforeseen still refuses the reload rather than half-applying it
        log.debug("reload: unexpected error", exc_info=True)
        raise ReloadRejected(f"{path}: {type(exc).__name__}: {exc}") from exc
    config = applied_config(running, loaded)
    changes = diff_configs(running, loaded, rulebook.rules, new_rulebook.rules)
    try:
        # A changed external_url changes every page's links: no notifier is kept then.
        reuse = (unchanged_notifiers(running.notify.receivers, notifiers, config.notify.receivers)
                 if running.external_url == config.external_url else {})
        new_notifiers, dispatcher = build_routing(
            config.notify, state.outbox, state.silences, state.group_actions, state.value_history, reuse=reuse,
            rules=state.rules, incidents=state.incidents, external_url=config.external_url)
        listeners = (build_slack_listeners(config.notify.receivers, new_notifiers, state.silences, state.group_actions)
                     if changes.receivers else None)
    except ReceiverError as exc:
        raise ReloadRejected(f"{_position(path, ('notify', 'receivers', exc.index))}: {exc}") from exc
    return Candidate(config, new_rulebook, new_notifiers, dispatcher, listeners, changes)


def _position(path: Path, keys: Sequence[str | int]) -> str:
    """`file:line:col: a.b.0` of a key path in the YAML file (its nearest existing parent if not found)."""
    line, col = 1, 1
    try:
        node: Any = YAML(typ="rt").load(path.read_text(encoding="utf-8"))
        for key in keys:
            if isinstance(node, list) and isinstance(key, int) and key < len(node):
                line, col = node.lc.item(key)
            elif isinstance(node, dict) and key in node:
                line, col = node.lc.key(key)
            else:
                break
            node = node[key]
            line, col = line + 1, col + 1
    except Exception:  # the position is a courtesy: the message stands without it
        pass
    return f"{path}:{line}:{col}: {'.'.join(str(k) for k in keys)}"
