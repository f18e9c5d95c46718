"""Silences and group actions shared between HA daemons: local-first, mirrored through the coordinator.

Every silence and acknowledgement is written to this daemon's state file first (status page, API,
Slack button, `rocketwatch silence` on this host), so it is in force here at once and survives a
coordinator that is away. Every `interval` the mirror offers the coordinator what changed here and
takes what changed elsewhere; for one row the newer update wins (an expire is a later update with an
earlier end). Rows are named by random ids, so two daemons never make the same one.
"""

from __future__ import annotations

import asyncio
import json
import logging
from collections.abc import Callable
from datetime import datetime

from daemon.alerts.db import StateDB, from_db_time, to_db_time
from daemon.alerts.group_actions import GroupActionStore
from daemon.alerts.silences import SilenceStore
from daemon.coordination.model import CoordinatorUnavailable
from daemon.coordination.service import CoordinationService
from daemon.coordination.shared_actions import SharedActions, SharedChanges, SharedGroupAction, SharedSilence
from daemon.coordination.sql import SqlCoordinator

log = logging.getLogger(__name__)


class ActionMirror:
    """Keeps the state file's silences and group actions and the coordinator's copies in step."""

    def __init__(self, db: StateDB, shared: SharedActions, interval: float,
                 ready: Callable[[], bool] = lambda: True) -> None:
        self.db = db
        self.shared = shared
        self.interval = interval
        self.ready = ready  # the coordinator was opened (its schema is there)
        self.version = 0  # the coordinator's version pulled last: 0 at start takes everything once
        self.synced = 0  # syncs completed
        self.last_error: str | None = None
        self._wake = asyncio.Event()
        self._stopping = asyncio.Event()
        self._task: asyncio.Task[None] | None = None

    def start(self) -> None:
        """Sync in the background from now on."""
        self._stopping.clear()
        self._task = asyncio.get_running_loop().create_task(self.run(self._stopping), name="shared-silences")

    async def stop(self) -> None:
        """Stop syncing (what is not mirrored yet stays marked so in the state file, for the next start)."""
        self._stopping.set()
        if self._task is not None:
            await self._task
            self._task = None

    def nudge(self) -> None:
        """Something changed here: sync now rather than at the next interval."""
        self._wake.set()

    async def sync(self) -> None:
        """Offer what changed here, then take what changed elsewhere; CoordinatorUnavailable when away."""
        silences, actions = self._unmirrored()
        if silences or actions:
            await self.shared.put(silences, actions)
            self._mark_mirrored(silences, actions)
        changes = await self.shared.changes(self.version)
        self._merge(changes)
        self.version = changes.version
        self.synced += 1

    async def run(self, stopping: asyncio.Event) -> None:
        """Sync every interval (and when nudged) until `stopping`; a sync that fails is retried next time."""
        while not stopping.is_set():
            try:
                if self.ready():
                    await self.sync()
                    if self.last_error is not None:
                        log.info("shared silences: in step with the coordinator again (version %d)", self.version)
                    self.last_error = None
            except CoordinatorUnavailable as exc:
                if str(exc) != self.last_error:
                    log.warning("shared silences: %s; silences and acknowledgements made here hold here and "
                                "reach the other daemons once it answers", exc)
                self.last_error = str(exc)
            except Exception as exc:  # a bad row must not end sharing for good: said, and tried again
                log.exception("shared silences: sync with the coordinator failed")
                self.last_error = str(exc) or type(exc).__name__
            self._wake.clear()
            waits = {asyncio.ensure_future(stopping.wait()), asyncio.ensure_future(self._wake.wait())}
            await asyncio.wait(waits, timeout=self.interval, return_when=asyncio.FIRST_COMPLETED)
            for waiting in waits:
                waiting.cancel()

    # ---- the state file's side ------------------------------------------------------------

    def _unmirrored(self) -> tuple[list[SharedSilence], list[SharedGroupAction]]:
        silences = [SharedSilence(r["id"], tuple(json.loads(r["matchers"])), _t(r["starts_at"]), _t(r["ends_at"]),
                                  r["created_by"], r["comment"], _t(r["created_at"]),
                                  _t(r["updated_at"] or r["created_at"]))
                    for r in self.db.query("SELECT * FROM silences WHERE mirrored = 0")]
        actions = [SharedGroupAction(r["group_key"], r["kind"], r["actor"], _t(r["at"]), tuple(json.loads(r["matchers"])),
                                     r["silence_id"], from_db_time(r["closed_at"]), _t(r["closed_at"] or r["at"]))
                   for r in self.db.query("SELECT * FROM group_actions WHERE mirrored = 0")]
        return silences, actions

    def _mark_mirrored(self, silences: list[SharedSilence], actions: list[SharedGroupAction]) -> None:
        # Only rows unchanged since they were read: one changed meanwhile goes at the next sync.
        with self.db.transaction() as conn:
            for s in silences:
                conn.execute("UPDATE silences SET mirrored = 1 WHERE id = ? AND COALESCE(updated_at, created_at) = ?",
                             (s.id, to_db_time(s.updated_at)))
            for a in actions:
                conn.execute("UPDATE group_actions SET mirrored = 1 WHERE group_key = ? AND kind = ? AND at = ? "
                             "AND COALESCE(closed_at, at) = ?",
                             (a.group_key, a.kind, to_db_time(a.at), to_db_time(a.updated_at)))

    def _merge(self, changes: SharedChanges) -> None:
        with self.db.transaction() as conn:
            for s in changes.silences:
                found = conn.execute("SELECT ends_at, COALESCE(updated_at, created_at) AS updated_at FROM silences "
                                     "WHERE id = ?", (s.id,)).fetchone()
                if found is not None and not _newer(s.updated_at, _t(found["updated_at"]),
                                                    s.ends_at < _t(found["ends_at"])):
                    continue
                conn.execute(
                    "INSERT OR REPLACE INTO silences (id, matchers, starts_at, ends_at, created_by, comment, created_at, "
                    "updated_at, mirrored) VALUES (?, ?, ?, ?, ?, ?, ?, ?, 1)",
                    (s.id, json.dumps(list(s.matchers)), to_db_time(s.starts_at), to_db_time(s.ends_at), s.created_by,
                     s.comment, to_db_time(s.created_at), to_db_time(s.updated_at)))
            for a in changes.group_actions:
                found = conn.execute("SELECT closed_at, COALESCE(closed_at, at) AS updated_at FROM group_actions "
                                     "WHERE group_key = ? AND kind = ?", (a.group_key, a.kind)).fetchone()
                if found is not None and not _newer(a.updated_at, _t(found["updated_at"]),
                                                    a.closed_at is not None and found["closed_at"] is None):
                    continue
                conn.execute(
                    "INSERT OR REPLACE INTO group_actions (group_key, kind, actor, at, silence_id, matchers, closed_at, "
                    "mirrored) VALUES (?, ?, ?, ?, ?, ?, ?, 1)",
                    (a.group_key, a.kind, a.actor, to_db_time(a.at), a.silence_id, json.dumps(list(a.matchers)),
                     to_db_time(a.closed_at) if a.closed_at is not None else None))


def mirror_actions(db: StateDB, silences: SilenceStore, group_actions: GroupActionStore,
                   service: CoordinationService, interval: float) -> ActionMirror:
    """The mirror of this daemon's stores through its coordinator, not started. Group actions end when the
    holder's evaluation (or, with no coordinator in reach, this daemon's own) finds their group resolved,
    and that end is shared like the rest."""
    if not isinstance(service.coordinator, SqlCoordinator):
        raise TypeError(f"shared silences need an SQL coordinator, not {type(service.coordinator).__name__}")
    mirror = ActionMirror(db, SharedActions(service.coordinator, service.keeper.holder), interval,
                          ready=lambda: service.opened)
    silences.changed = group_actions.changed = mirror.nudge
    group_actions.may_close = lambda: service.keeper.holding or service.unreachable
    return mirror


def _newer(theirs: datetime, ours: datetime, wins_a_tie: bool) -> bool:
    return theirs > ours or (theirs == ours and wins_a_tie)


def _t(text: str) -> datetime:
    found = from_db_time(text)
    assert found is not None
    return found
