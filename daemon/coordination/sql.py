"""The coordinator's semantics, written once in SQL both PostgreSQL and SQLite run (named `:params`).

An implementation supplies a transaction (`Tx`), the SQL of its clock and its row lock; everything
else — the lease's compare-and-set, the fence every log write passes, the send protocol and
incident identity — is here, so the two implementations cannot drift apart.
"""

from __future__ import annotations

import json
import time
from abc import ABC, abstractmethod
from collections.abc import Mapping
from contextlib import AbstractAsyncContextManager
from datetime import datetime
from typing import Any, Protocol

from daemon.coordination.clock import Clock
from daemon.coordination.keys import idempotency_key
from daemon.coordination.model import (
    Fence,
    Fenced,
    GroupRef,
    IncidentClaim,
    Intent,
    LeaseRecord,
    LogGroup,
    Told,
    from_seconds,
    to_seconds,
)
from daemon.coordination.peers import PeerTable
from daemon.coordination.schema import MIGRATIONS, statements

_REF = "route = :route AND receiver = :receiver AND group_key = :group_key"


class Tx(Protocol):
    """One open transaction of an implementation."""

    async def rows(self, sql: str, params: Mapping[str, Any] | None = None) -> list[dict[str, Any]]:
        """Run a statement; its rows as dicts (none for a write without RETURNING)."""
        ...

    async def run(self, sql: str, params: Mapping[str, Any] | None = None) -> int:
        """Run a write; how many rows it touched."""
        ...


class SqlCoordinator(PeerTable, ABC):
    """The Coordinator interface over any `Tx`; PostgresCoordinator and SqliteCoordinator supply one."""

    server_now_sql = ""  # the database's clock, seconds since the epoch
    row_lock = ""  # appended to a SELECT that guards a write (PostgreSQL: FOR UPDATE)
    where = "coordinator"  # named in errors: which database

    def __init__(self, clock: Clock) -> None:
        self.clock = clock

    @abstractmethod
    def transaction(self) -> AbstractAsyncContextManager[Tx]:
        """One transaction; raises CoordinatorUnavailable when the database cannot be reached."""

    @abstractmethod
    async def lock_schema(self, tx: Tx) -> None:
        """Serialise migrations between daemons starting together (first statement of the migration)."""

    @property
    def _now(self) -> str:
        return f"COALESCE(CAST(:now AS DOUBLE PRECISION), {self.server_now_sql})"

    def _clock(self, **params: Any) -> dict[str, Any]:
        injected = self.clock.coordinator_now()
        return {"now": to_seconds(injected) if injected is not None else None, **params}

    # ---- schema ---------------------------------------------------------------------------

    async def migrate(self) -> int:
        """Apply the migrations this database lacks, all or none; return the version it is at."""
        async with self.transaction() as tx:
            await self.lock_schema(tx)
            await tx.run("CREATE TABLE IF NOT EXISTS coord_schema_version (version INTEGER NOT NULL)")
            found = await tx.rows("SELECT version FROM coord_schema_version")
            current = int(found[0]["version"]) if found else 0
            if not found:
                await tx.run("INSERT INTO coord_schema_version (version) VALUES (0)")
            if current > len(MIGRATIONS):
                raise RuntimeError(f"{self.where}: shared schema version {current} is newer than this rocketwatch "
                                   f"knows ({len(MIGRATIONS)}); upgrade this daemon, never downgrade the schema")
            for version, script in enumerate(MIGRATIONS[current:], start=current + 1):
                for statement in statements(script):
                    await tx.run(statement)
                await tx.run("UPDATE coord_schema_version SET version = :v", {"v": version})
            # Sends are numbered from the log's creation time in microseconds, not from 1: keys derive from
            # the number, and a single node's log turned into a shared one (or a log rebuilt from scratch)
            # must never name a new send like an old one a receiver already has.
            await tx.run("UPDATE coord_counters SET value = :start WHERE name = 'send_seq' AND value = 0",
                         {"start": time.time_ns() // 1000})
            return max(current, len(MIGRATIONS))

    # ---- the lease ------------------------------------------------------------------------

    async def claim_lease(self, name: str, holder: str, ttl: float) -> LeaseRecord:
        """Take the lease if free or expired, renew it if ours; the row as it is now (compare-and-set)."""
        now = self._now
        params = self._clock(name=name, holder=holder, ttl=float(ttl))
        async with self.transaction() as tx:
            # One statement: the database decides against its own clock, so no two daemons both win.
            # A holder renewing its live lease keeps the epoch; anyone else (or itself after expiry) bumps it.
            await tx.run(
                "INSERT INTO coord_lease (name, holder, epoch, expires_at, acquired_at, renewed_at) "
                f"VALUES (:name, :holder, 1, {now} + :ttl, {now}, {now}) "
                "ON CONFLICT (name) DO UPDATE SET "
                "epoch = CASE WHEN coord_lease.holder = excluded.holder AND coord_lease.expires_at > excluded.renewed_at "
                "THEN coord_lease.epoch ELSE coord_lease.epoch + 1 END, "
                "acquired_at = CASE WHEN coord_lease.holder = excluded.holder "
                "AND coord_lease.expires_at > excluded.renewed_at THEN coord_lease.acquired_at "
                "ELSE excluded.acquired_at END, "
                "holder = excluded.holder, expires_at = excluded.expires_at, renewed_at = excluded.renewed_at "
                "WHERE coord_lease.holder = excluded.holder OR coord_lease.expires_at <= excluded.renewed_at",
                params)
            row = (await tx.rows(f"SELECT holder, epoch, expires_at, acquired_at, {now} AS server_now "
                                 "FROM coord_lease WHERE name = :name", params))[0]
        return LeaseRecord(name, row["holder"], int(row["epoch"]), from_seconds(row["expires_at"]),
                           from_seconds(row["acquired_at"]), from_seconds(row["server_now"]))

    async def release_lease(self, fence: Fence) -> None:
        """Expire our lease now (a clean shutdown): a standby takes it at its next claim."""
        async with self.transaction() as tx:
            await tx.run(f"UPDATE coord_lease SET expires_at = {self._now} "
                         "WHERE name = :lease AND holder = :holder AND epoch = :epoch",
                         self._clock(lease=fence.lease, holder=fence.holder, epoch=fence.epoch))

    async def _fence(self, tx: Tx, fence: Fence) -> None:
        # Locks the lease row for the rest of the transaction: a takeover waits until this write is in,
        # and a write after a takeover (or after expiry) sees it and is refused.
        found = await tx.rows(f"SELECT holder, epoch, expires_at, {self._now} AS server_now FROM coord_lease "
                              f"WHERE name = :lease{self.row_lock}", self._clock(lease=fence.lease))
        if not found:
            raise Fenced(f"{self.where}: write under {fence} refused: no lease of that name exists")
        row = found[0]
        if row["holder"] != fence.holder or int(row["epoch"]) != fence.epoch:
            raise Fenced(f"{self.where}: write under {fence} refused: the lease is at epoch {row['epoch']}, "
                         f"held by {row['holder']}")
        if row["expires_at"] <= row["server_now"]:
            raise Fenced(f"{self.where}: write under {fence} refused: the lease expired at "
                         f"{from_seconds(row['expires_at']).isoformat()} (coordinator time "
                         f"{from_seconds(row['server_now']).isoformat()})")

    # ---- the shared notification log ------------------------------------------------------

    async def log_groups(self) -> list[LogGroup]:
        """Every open group of the log, with its unconfirmed intent if any."""
        async with self.transaction() as tx:
            groups = await tx.rows("SELECT * FROM coord_log WHERE closed = 0 ORDER BY route, receiver, group_key")
            intents = await tx.rows("SELECT * FROM coord_sends WHERE outcome IS NULL ORDER BY seq")
        latest = {(i["route"], i["receiver"], i["group_key"]): _intent(i) for i in intents}
        return [_group(g, latest.get((g["route"], g["receiver"], g["group_key"]))) for g in groups]

    async def log_group(self, ref: GroupRef) -> LogGroup | None:
        """One group, open or closed."""
        async with self.transaction() as tx:
            found = await tx.rows(f"SELECT * FROM coord_log WHERE {_REF}", _ref(ref))
            intents = await tx.rows(f"SELECT * FROM coord_sends WHERE {_REF} AND outcome IS NULL "
                                    "ORDER BY seq DESC", _ref(ref))
        return _group(found[0], _intent(intents[0]) if intents else None) if found else None

    async def _ensure_group(self, tx: Tx, fence: Fence, ref: GroupRef, labels: Mapping[str, str],
                            at: datetime) -> dict[str, Any]:
        # Create the group, or reopen a closed one (what its old message was told is no longer news).
        params = {**_ref(ref), "labels": json.dumps(dict(labels), sort_keys=True), "at": to_seconds(at),
                  "epoch": fence.epoch}
        await tx.run(
            "INSERT INTO coord_log (route, receiver, group_key, group_labels, told_firing, told_resolved, "
            "first_pending_at, seq, sent_seq, receiver_data, closed, epoch) "
            "VALUES (:route, :receiver, :group_key, :labels, '{}', '{}', :at, 0, 0, '{}', 0, :epoch) "
            "ON CONFLICT (route, receiver, group_key) DO UPDATE SET "
            "first_pending_at = CASE WHEN coord_log.closed = 1 THEN excluded.first_pending_at "
            "ELSE COALESCE(coord_log.first_pending_at, excluded.first_pending_at) END, "
            "told_resolved = CASE WHEN coord_log.closed = 1 THEN '{}' ELSE coord_log.told_resolved END, "
            "closed = 0, group_labels = excluded.group_labels, epoch = excluded.epoch "
            "WHERE coord_log.epoch <= excluded.epoch", params)
        return (await tx.rows(f"SELECT * FROM coord_log WHERE {_REF}{self.row_lock}", params))[0]

    async def note_pending(self, fence: Fence, ref: GroupRef, labels: Mapping[str, str], at: datetime) -> None:
        """Something waits to be told: the group exists and is open, its group_wait started (at `at` if new)."""
        async with self.transaction() as tx:
            await self._fence(tx, fence)
            await self._ensure_group(tx, fence, ref, labels, at)

    async def record_intent(self, fence: Fence, ref: GroupRef, labels: Mapping[str, str], told: Told,
                            reason: str, at: datetime) -> Intent:
        """Record a send before it happens: a new sequence number, or an earlier holder's unconfirmed one."""
        async with self.transaction() as tx:
            await self._fence(tx, fence)
            await self._ensure_group(tx, fence, ref, labels, at)
            open_intents = await tx.rows(f"SELECT seq, epoch, intent_at FROM coord_sends WHERE {_REF} AND outcome IS NULL "
                                         f"ORDER BY seq DESC", _ref(ref))
            earlier = [i for i in open_intents if int(i["epoch"]) < fence.epoch]
            told_json = json.dumps({"firing": dict(told.firing), "resolved": list(told.resolved)}, sort_keys=True)
            base = {"epoch": fence.epoch, "holder": fence.holder, "told": told_json, "reason": reason,
                    "at": to_seconds(at)}
            if earlier and earlier[0]["seq"] == open_intents[0]["seq"]:
                # A holder before us recorded this send and never confirmed it: it may have reached the
                # receiver, so it goes again under the same key (the receiver can recognise it).
                # Its intent_at stays the first holder's: a receiver looks for an earlier copy from then on.
                seq, retry, recorded_at = int(earlier[0]["seq"]), True, from_seconds(earlier[0]["intent_at"])
                await tx.run("UPDATE coord_sends SET epoch = :epoch, holder = :holder, told = :told, reason = :reason, "
                             "attempts = attempts + 1 WHERE seq = :seq", {**base, "seq": seq})
                await tx.run(f"UPDATE coord_sends SET outcome = 'superseded' WHERE {_REF} AND outcome IS NULL "
                             "AND seq < :seq", {**_ref(ref), "seq": seq})
            else:
                seq, retry = int((await tx.rows("UPDATE coord_counters SET value = value + 1 "
                                                "WHERE name = 'send_seq' RETURNING value"))[0]["value"]), False
                recorded_at = at
                await tx.run(
                    "INSERT INTO coord_sends (seq, route, receiver, group_key, idempotency_key, epoch, holder, told, "
                    "reason, intent_at, attempts) VALUES (:seq, :route, :receiver, :group_key, :key, :epoch, :holder, "
                    ":told, :reason, :at, 1)",
                    {**base, **_ref(ref), "seq": seq, "key": idempotency_key(ref.receiver, ref.group_key, seq)})
            await tx.run(f"UPDATE coord_log SET seq = :seq, epoch = :epoch WHERE {_REF} AND seq < :seq",
                         {**_ref(ref), "seq": seq, "epoch": fence.epoch})
        return Intent(ref, seq, idempotency_key(ref.receiver, ref.group_key, seq), fence.epoch, told, reason, retry,
                      recorded_at)

    async def record_sent(self, fence: Fence, ref: GroupRef, seq: int, reply: Mapping[str, Any], at: datetime) -> None:
        """The receiver took send `seq`: the log now says what its intent told; the reply joins the receiver data."""
        async with self.transaction() as tx:
            await self._fence(tx, fence)
            found = await tx.rows(f"SELECT outcome, epoch, told, reason FROM coord_sends WHERE seq = :seq AND {_REF}",
                                  {**_ref(ref), "seq": seq})
            if not found:
                raise LookupError(f"{self.where}: no send {seq} of {ref} was recorded (record_intent comes first)")
            send = found[0]
            if send["outcome"] == "sent" and int(send["epoch"]) == fence.epoch:
                return  # recorded already: a retry after a commit whose answer was lost
            if send["outcome"] is not None or int(send["epoch"]) != fence.epoch:
                raise Fenced(f"{self.where}: sent record of send {seq} ({ref}) under {fence} refused: that intent "
                             f"is {send['outcome'] or 'open'} under epoch {send['epoch']}")
            await tx.run("UPDATE coord_sends SET outcome = 'sent', sent_at = :at, reply = :reply WHERE seq = :seq",
                         {"at": to_seconds(at), "reply": json.dumps(dict(reply), sort_keys=True), "seq": seq})
            told = json.loads(send["told"])
            row = (await tx.rows(f"SELECT * FROM coord_log WHERE {_REF}{self.row_lock}", _ref(ref)))[0]
            data = {**json.loads(row["receiver_data"]), **dict(reply)}
            if seq <= int(row["sent_seq"]):  # a later send was confirmed first: keep its record
                await tx.run(f"UPDATE coord_log SET receiver_data = :data WHERE {_REF}",
                             {**_ref(ref), "data": json.dumps(data, sort_keys=True)})
                return
            resolved = {fp: t for fp, t in json.loads(row["told_resolved"]).items() if fp not in told["firing"]}
            resolved.update({fp: to_seconds(at) for fp in told["resolved"]})
            await tx.run(
                "UPDATE coord_log SET told_firing = :firing, told_resolved = :resolved, first_pending_at = NULL, "
                "last_sent_at = :at, last_reason = :reason, sent_seq = :seq, receiver_data = :data, epoch = :epoch "
                f"WHERE {_REF}",
                {**_ref(ref), "firing": json.dumps(told["firing"], sort_keys=True),
                 "resolved": json.dumps(resolved, sort_keys=True), "at": to_seconds(at), "reason": send["reason"],
                 "seq": seq, "data": json.dumps(data, sort_keys=True), "epoch": fence.epoch})

    async def seed_group(self, fence: Fence, ref: GroupRef, labels: Mapping[str, str], told: Told,
                         receiver_data: Mapping[str, Any], last_sent_at: datetime) -> bool:
        """A group told before HA was on enters the log as told (unless the log has it open)."""
        async with self.transaction() as tx:
            await self._fence(tx, fence)
            touched = await tx.run(
                "INSERT INTO coord_log (route, receiver, group_key, group_labels, told_firing, told_resolved, "
                "last_sent_at, last_reason, seq, sent_seq, receiver_data, closed, epoch) VALUES (:route, :receiver, "
                ":group_key, :labels, :firing, '{}', :at, 'seeded', 0, 0, :data, 0, :epoch) "
                "ON CONFLICT (route, receiver, group_key) DO UPDATE SET group_labels = excluded.group_labels, "
                "told_firing = excluded.told_firing, told_resolved = '{}', first_pending_at = NULL, "
                "last_sent_at = excluded.last_sent_at, last_reason = 'seeded', receiver_data = excluded.receiver_data, "
                "closed = 0, epoch = excluded.epoch WHERE coord_log.closed = 1 AND coord_log.epoch <= excluded.epoch",
                {**_ref(ref), "labels": json.dumps(dict(labels), sort_keys=True),
                 "firing": json.dumps(dict(told.firing), sort_keys=True), "at": to_seconds(last_sent_at),
                 "data": json.dumps(dict(receiver_data), sort_keys=True), "epoch": fence.epoch})
        return touched > 0

    async def close_group(self, fence: Fence, ref: GroupRef, at: datetime) -> None:
        """Nothing fires or waits: the group's message is done (its sequence numbers stay used)."""
        async with self.transaction() as tx:
            await self._fence(tx, fence)
            await tx.run("UPDATE coord_log SET told_firing = '{}', first_pending_at = NULL, receiver_data = '{}', "
                         f"closed = 1, epoch = :epoch WHERE {_REF} AND epoch <= :epoch",
                         {**_ref(ref), "epoch": fence.epoch})

    # ---- incidents' identity --------------------------------------------------------------

    async def claim_incident(self, locus: Mapping[str, str], proposed_id: str, at: datetime,
                             opened_by: str = "") -> IncidentClaim:
        """The incident open at the locus (adopted), or a new one under `proposed_id` (`#2`... if taken)."""
        key = json.dumps(dict(locus), sort_keys=True)
        async with self.transaction() as tx:
            for n in range(1, 100):
                candidate = proposed_id if n == 1 else f"{proposed_id}#{n}"
                # DO NOTHING on either unique key: the id is taken, or an incident is open at the locus.
                await tx.run("INSERT INTO coord_incidents (id, locus, opened_at, opened_by) "
                             "VALUES (:id, :locus, :at, :by) ON CONFLICT DO NOTHING",
                             {"id": candidate, "locus": key, "at": to_seconds(at), "by": opened_by})
                found = await tx.rows("SELECT id, opened_at FROM coord_incidents WHERE locus = :locus "
                                      "AND resolved_at IS NULL", {"locus": key})
                if found:
                    row = found[0]
                    return IncidentClaim(row["id"], from_seconds(row["opened_at"]), row["id"] != candidate)
        raise RuntimeError(f"{self.where}: no free incident id from {proposed_id!r} at locus {key}")

    async def resolve_incident(self, incident_id: str, at: datetime) -> None:
        """The incident is over: the next alert at its locus opens a new one."""
        async with self.transaction() as tx:
            await tx.run("UPDATE coord_incidents SET resolved_at = :at WHERE id = :id AND resolved_at IS NULL",
                         {"id": incident_id, "at": to_seconds(at)})


def _ref(ref: GroupRef) -> dict[str, str]:
    return {"route": ref.route, "receiver": ref.receiver, "group_key": ref.group_key}


def _intent(row: Mapping[str, Any]) -> Intent:
    told = json.loads(row["told"])
    return Intent(GroupRef(row["route"], row["receiver"], row["group_key"]), int(row["seq"]),
                  row["idempotency_key"], int(row["epoch"]), Told(told["firing"], tuple(told["resolved"])),
                  row["reason"], int(row["attempts"]) > 1, from_seconds(row["intent_at"]))


def _group(row: Mapping[str, Any], intent: Intent | None) -> LogGroup:
    return LogGroup(
        GroupRef(row["route"], row["receiver"], row["group_key"]), json.loads(row["group_labels"]),
        json.loads(row["told_firing"]),
        {fp: from_seconds(t) for fp, t in json.loads(row["told_resolved"]).items()},
        from_seconds(row["first_pending_at"]), from_seconds(row["last_sent_at"]), row["last_reason"],
        int(row["seq"]), json.loads(row["receiver_data"]), bool(row["closed"]), intent)
