"""What on-call people did to an alert group from its Slack message: acknowledged it, or silenced it
until it resolves. Both last until the group has no active alert, so the next incident starts fresh."""

from __future__ import annotations

import contextlib
import json
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta

from config.matchers import Matcher, matches_all, parse_matcher
from daemon.alerts.db import StateDB, from_db_time, to_db_time
from daemon.alerts.incidents import IncidentBook, matcher_labels
from daemon.alerts.model import AlertInstance
from daemon.alerts.silences import SilenceStore

ACK = "ack"
SILENCE_UNTIL_RESOLVED = "silence_until_resolved"
# An ended action's row stays this long, closed: a coordinator's older copy of it is recognised, not revived.
CLOSED_KEPT = timedelta(days=1)


def group_matchers(labels: Mapping[str, str]) -> list[str]:
    """The group's labels as equality matchers, e.g. `alertname="ConsumerLag"`, `group="orders"`."""
    return [str(Matcher(name, "=", value)) for name, value in labels.items()]


@dataclass(frozen=True)
class GroupAction:
    """One acknowledgement or until-resolved silence of an alert group."""

    group_key: str
    kind: str  # ACK or SILENCE_UNTIL_RESOLVED
    actor: str
    at: datetime
    matchers: tuple[str, ...]
    silence_id: str | None = None

    def covers(self, alert: AlertInstance, incidents: IncidentBook | None = None) -> bool:
        """True when `alert` belongs to this action's group (an incident's, when grouped by incident)."""
        return matches_all((parse_matcher(m) for m in self.matchers), matcher_labels(alert, incidents))

    def note(self) -> str:
        """One line for the Slack message and the status page."""
        when = self.at.strftime("%H:%M UTC")
        if self.kind == ACK:
            return f"Acknowledged by {self.actor} at {when}"
        return f"Silenced until resolved by {self.actor} at {when}"


class GroupActionStore:
    """The group_actions table of the state file."""

    def __init__(self, db: StateDB) -> None:
        self.db = db
        # Whether this daemon's view decides that a group resolved. Always for one node; with HA the
        # lease holder's (daemon/alerts/action_mirror.py), whose evaluation is the one notifications follow.
        self.may_close: Callable[[], bool] = lambda: True
        self.changed: Callable[[], None] = lambda: None  # HA: the mirror shares the change at once

    def record(
        self, group_key: str, kind: str, actor: str, matchers: Sequence[str], now: datetime,
        silence_id: str | None = None,
    ) -> GroupAction:
        """Store (or replace) the group's action of this kind."""
        if kind not in (ACK, SILENCE_UNTIL_RESOLVED):
            raise ValueError(f"unknown group action {kind!r}")
        action = GroupAction(group_key, kind, actor, now, tuple(matchers), silence_id)
        with self.db.transaction() as conn:
            conn.execute(
                "INSERT OR REPLACE INTO group_actions (group_key, kind, actor, at, silence_id, matchers, closed_at, "
                "mirrored) VALUES (?, ?, ?, ?, ?, ?, NULL, 0)",
                (group_key, kind, actor, to_db_time(now), silence_id, json.dumps(list(matchers))),
            )
        self.changed()
        return action

    def all(self) -> list[GroupAction]:
        """Every open action, oldest first."""
        rows = self.db.query("SELECT * FROM group_actions WHERE closed_at IS NULL ORDER BY at")
        return [
            GroupAction(r["group_key"], r["kind"], r["actor"], from_db_time(r["at"]), tuple(json.loads(r["matchers"])),
                        r["silence_id"])
            for r in rows
        ]

    def for_group(self, group_key: str) -> list[GroupAction]:
        """The open actions of one group."""
        return [a for a in self.all() if a.group_key == group_key]

    def acknowledged(self, group_key: str) -> GroupAction | None:
        """The group's acknowledgement, if someone took it."""
        return next((a for a in self.for_group(group_key) if a.kind == ACK), None)

    def notes(self, group_key: str) -> list[str]:
        """Lines saying who acknowledged or silenced the group, for its message."""
        return [a.note() for a in self.for_group(group_key)]

    def close_resolved(
        self, active: Sequence[AlertInstance], silences: SilenceStore, now: datetime,
        incidents: IncidentBook | None = None,
    ) -> list[GroupAction]:
        """End the actions of groups with no active alert left; expire their until-resolved silences."""
        if not self.may_close():
            return []
        closed = [a for a in self.all() if not any(a.covers(alert, incidents) for alert in active)]
        for action in closed:
            if action.kind == SILENCE_UNTIL_RESOLVED and action.silence_id:
                # KeyError: already expired by hand (CLI, page), nothing left to end.
                with contextlib.suppress(KeyError):
                    silences.expire(action.silence_id, now)
            with self.db.transaction() as conn:
                conn.execute("UPDATE group_actions SET closed_at = ?, mirrored = 0 WHERE group_key = ? AND kind = ? "
                             "AND closed_at IS NULL", (to_db_time(now), action.group_key, action.kind))
        with self.db.transaction() as conn:
            conn.execute("DELETE FROM group_actions WHERE closed_at < ?", (to_db_time(now - CLOSED_KEPT),))
        if closed:
            self.changed()
        return closed
