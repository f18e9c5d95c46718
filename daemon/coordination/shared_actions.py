"""Silences and group actions (acknowledgements, until-resolved silences) on the coordinator, shared by
every daemon: any daemon writes (not fenced by the lease), the newer update of a row wins, and each write
the coordinator keeps gets the next `version`, so a daemon pulls only what changed since its last pull.

Why not fenced: an operator's silence made on a standby is as valid as one made on the holder, and a
write is a whole row merged by its update time (a commutative merge), so a stale writer cannot undo a
newer one; the lease orders sends, not what operators decide.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from datetime import datetime

from daemon.coordination.model import from_seconds, to_seconds
from daemon.coordination.sql import SqlCoordinator, Tx


@dataclass(frozen=True)
class SharedSilence:
    """One silence as every daemon keeps it; an expire is an earlier `ends_at` with a newer `updated_at`."""

    id: str
    matchers: tuple[str, ...]
    starts_at: datetime
    ends_at: datetime
    created_by: str
    comment: str
    created_at: datetime
    updated_at: datetime


@dataclass(frozen=True)
class SharedGroupAction:
    """One acknowledgement or until-resolved silence of a group; `at` names it, `closed_at` ends it."""

    group_key: str
    kind: str
    actor: str
    at: datetime
    matchers: tuple[str, ...]
    silence_id: str | None
    closed_at: datetime | None
    updated_at: datetime


@dataclass(frozen=True)
class SharedChanges:
    """What changed on the coordinator since a version: rows, and the version to ask from next time."""

    silences: list[SharedSilence]
    group_actions: list[SharedGroupAction]
    version: int


# A row is replaced by a newer update only; at the same instant an earlier end (an expire) or a close wins,
# so two daemons writing at once converge on one row whatever order their writes arrive in.
_SILENCE_NEWER = ("excluded.updated_at > coord_silences.updated_at OR (excluded.updated_at = coord_silences.updated_at "
                  "AND excluded.ends_at < coord_silences.ends_at)")
_ACTION_NEWER = ("excluded.updated_at > coord_group_actions.updated_at OR (excluded.updated_at = "
                 "coord_group_actions.updated_at AND coord_group_actions.closed_at IS NULL AND excluded.closed_at IS NOT NULL)")


class SharedActions:
    """The coord_silences and coord_group_actions tables of one coordinator, written as `node`."""

    def __init__(self, coordinator: SqlCoordinator, node: str) -> None:
        self.coordinator = coordinator
        self.node = node

    async def put(self, silences: list[SharedSilence], group_actions: list[SharedGroupAction]) -> int:
        """Offer rows made or changed here; those newer than the coordinator's copy replace it. Returns how
        many were taken (an older one is simply superseded: the pull brings the newer back)."""
        taken = 0
        async with self.coordinator.transaction() as tx:
            for s in silences:
                taken += await tx.run(
                    "INSERT INTO coord_silences (id, matchers, starts_at, ends_at, created_by, comment, created_at, "
                    "updated_at, written_by, version) VALUES (:id, :matchers, :starts_at, :ends_at, :created_by, "
                    ":comment, :created_at, :updated_at, :node, :version) ON CONFLICT (id) DO UPDATE SET "
                    "matchers = excluded.matchers, starts_at = excluded.starts_at, ends_at = excluded.ends_at, "
                    "created_by = excluded.created_by, comment = excluded.comment, updated_at = excluded.updated_at, "
                    f"written_by = excluded.written_by, version = excluded.version WHERE {_SILENCE_NEWER}",
                    {"id": s.id, "matchers": json.dumps(list(s.matchers)), "starts_at": to_seconds(s.starts_at),
                     "ends_at": to_seconds(s.ends_at), "created_by": s.created_by, "comment": s.comment,
                     "created_at": to_seconds(s.created_at), "updated_at": to_seconds(s.updated_at),
                     "node": self.node, "version": await _next_version(tx)})
            for a in group_actions:
                taken += await tx.run(
                    "INSERT INTO coord_group_actions (group_key, kind, actor, at, silence_id, matchers, closed_at, "
                    "updated_at, written_by, version) VALUES (:group_key, :kind, :actor, :at, :silence_id, :matchers, "
                    ":closed_at, :updated_at, :node, :version) ON CONFLICT (group_key, kind) DO UPDATE SET "
                    "actor = excluded.actor, at = excluded.at, silence_id = excluded.silence_id, "
                    "matchers = excluded.matchers, closed_at = excluded.closed_at, updated_at = excluded.updated_at, "
                    f"written_by = excluded.written_by, version = excluded.version WHERE {_ACTION_NEWER}",
                    {"group_key": a.group_key, "kind": a.kind, "actor": a.actor, "at": to_seconds(a.at),
                     "silence_id": a.silence_id, "matchers": json.dumps(list(a.matchers)),
                     "closed_at": to_seconds(a.closed_at) if a.closed_at is not None else None,
                     "updated_at": to_seconds(a.updated_at), "node": self.node, "version": await _next_version(tx)})
        return taken

    async def changes(self, since: int) -> SharedChanges:
        """Every row written after version `since` (0: all), and the version to ask from next."""
        async with self.coordinator.transaction() as tx:
            latest = int((await tx.rows("SELECT value FROM coord_counters WHERE name = 'shared_actions'"))[0]["value"])
            if latest < since:
                since = 0  # a coordinator newer than our memory of it (its database replaced): take everything
            silences = await tx.rows("SELECT * FROM coord_silences WHERE version > :since ORDER BY version",
                                     {"since": since})
            actions = await tx.rows("SELECT * FROM coord_group_actions WHERE version > :since ORDER BY version",
                                    {"since": since})
        # Read committed: a write landing between the counter's read and the rows' is returned already.
        latest = max([latest, *(int(r["version"]) for r in [*silences, *actions])])
        return SharedChanges([_silence(r) for r in silences], [_action(r) for r in actions], latest)


async def _next_version(tx: Tx) -> int:
    # The counter's row lock (PostgreSQL) orders writers: versions become visible in the order they were taken,
    # so a pull from version v never misses a write that commits later under a smaller one.
    return int((await tx.rows("UPDATE coord_counters SET value = value + 1 WHERE name = 'shared_actions' "
                              "RETURNING value"))[0]["value"])


def _silence(row: dict) -> SharedSilence:
    return SharedSilence(row["id"], tuple(json.loads(row["matchers"])), _time(row["starts_at"]), _time(row["ends_at"]),
                         row["created_by"], row["comment"], _time(row["created_at"]), _time(row["updated_at"]))


def _action(row: dict) -> SharedGroupAction:
    return SharedGroupAction(row["group_key"], row["kind"], row["actor"], _time(row["at"]),
                             tuple(json.loads(row["matchers"])), row["silence_id"], from_seconds(row["closed_at"]),
                             _time(row["updated_at"]))


def _time(seconds: float) -> datetime:
    found = from_seconds(seconds)
    assert found is not None
    return found
