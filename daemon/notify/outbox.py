"""The outbox: every notification is a SQLite row before it is sent; delivered at least once, in order.

Rows of one (receiver, group key) go out strictly in the order they were queued: a later row waits
until the earlier one is delivered, so a resolve never reaches anyone before its firing message.
A failed send keeps the row, counts the attempt and backs off (5 s doubling, capped at 5 min).

Rows with a sequence number belong to the shared notification log (daemon/coordination): they go out
only under the dispatch lease, and their sent record goes back to the log with the receiver's reply.
Held rows were queued while no coordinator answered; the send protocol settles them (outbox_held.py).
"""

from __future__ import annotations

import asyncio
import logging
import random
import uuid
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime, timedelta

from daemon.alerts.db import StateDB, from_db_time, to_db_time
from daemon.coordination.factory import service_for
from daemon.coordination.lease import LeaseLost
from daemon.coordination.model import CoordinatorUnavailable
from daemon.coordination.service import CoordinationService
from daemon.notify.errors import DeliveryError
from daemon.notify.model import Notification, Notifier, ThreadRef
from daemon.notify.outbox_fail_open import FailOpen, record_fail_open_sends
from daemon.notify.outbox_held import record_delivery, settle
from daemon.notify.outbox_row import OutboxRow

log = logging.getLogger(__name__)

BACKOFF_FIRST = timedelta(seconds=5)
BACKOFF_MAX = timedelta(minutes=5)


def backoff(attempts: int) -> timedelta:
    """Wait before the next try after `attempts` failed ones: 5 s, 10 s, 20 s ... at most 5 min."""
    return min(BACKOFF_FIRST * 2 ** max(attempts - 1, 0), BACKOFF_MAX)


@dataclass
class DeliveryReport:
    """What one deliver_due call did."""

    delivered: int = 0
    failed: int = 0
    waiting: int = 0  # undelivered rows not yet due: backing off, or queued behind an earlier row
    errors: list[str] = field(default_factory=list)

    def __str__(self) -> str:
        text = f"{self.delivered} delivered, {self.failed} failed, {self.waiting} waiting"
        return text + "".join(f"\n  {e}" for e in self.errors)


class Outbox:
    """Queue of notifications per (receiver, group key), persisted in the state DB."""

    def __init__(self, db: StateDB, send_timeout: float = 120.0, jitter: float = 0.0,
                 coordination: CoordinationService | None = None) -> None:
        self.db = db
        # No coordination given (a test, a tool): a private single-node lease and log of its own.
        self.coordination = coordination or service_for(None, db.path)
        # Up to this fraction added to each retry delay, so rows that failed together (a receiver
        # outage) do not all retry in the same second when it returns. The daemon uses 0.2.
        self.jitter = jitter
        # Bounds one send, including slack-sdk's Retry-After waits, so one dead receiver cannot
        # stall delivery to the others past the daemon's next cycle.
        self.send_timeout = send_timeout
        # The evaluate job and the dispatch job may both flush; one flush at a time, or a row
        # could be sent twice.
        self._flush = asyncio.Lock()
        # ha.on_coordinator_loss: hold (the default) or, after a while, send held rows from here (set by the app).
        self.fail_open = FailOpen()
        # Rows whose receiver may have them already, unconfirmed: what a previous process left undelivered
        # (it may have been killed between a receiver's answer and marking the row), and rows whose send
        # ended without an answer (a timeout, a dropped connection). Their next send says so (Slack looks
        # for the copy first); every other send goes out without that extra look.
        self._unconfirmed: set[int] = {r["id"] for r in db.query("SELECT id FROM outbox WHERE delivered_at IS NULL")}

    def enqueue(self, receiver: str, notification: Notification, now: datetime, key: str | None = None,
                route: str | None = None, seq: int | None = None, held: bool = False) -> str:
        """Store a notification for a receiver, due now; return its idempotency key.

        `key` and `seq` come from the shared log's intent (None: a local row under a fresh key); a `held`
        row waits until a coordinator answers."""
        key = key or uuid.uuid4().hex
        stored = notification.model_copy(update={"idempotency_key": key})
        with self.db.transaction() as conn:
            conn.execute(
                "INSERT INTO outbox (receiver, group_key, status, idempotency_key, payload, created_at, "
                "next_attempt_at, route, seq, held) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                (receiver, notification.group_key, notification.status, key, stored.model_dump_json(),
                 to_db_time(now), to_db_time(now), route, seq, int(held)),
            )
        return key

    def group_open(self, receiver: str, group_key: str) -> bool:
        """Whether the group's latest queued notification for this receiver was a firing one."""
        rows = self.db.query(
            "SELECT status FROM outbox WHERE receiver = ? AND group_key = ? ORDER BY id DESC LIMIT 1",
            (receiver, group_key),
        )
        return bool(rows) and rows[0]["status"] == "firing"

    def thread(self, receiver: str, group_key: str) -> ThreadRef | None:
        """The group's first message at this receiver, while the group is open."""
        rows = self.db.query(
            "SELECT thread_ref FROM notification_threads WHERE receiver = ? AND group_key = ?",
            (receiver, group_key),
        )
        return ThreadRef.model_validate_json(rows[0]["thread_ref"]) if rows else None

    def rows(self, undelivered_only: bool = False) -> list[OutboxRow]:
        """Stored rows in queue order (for the status page, metrics and tests)."""
        where = "WHERE delivered_at IS NULL" if undelivered_only else ""
        return [_row(r) for r in self.db.query(f"SELECT * FROM outbox {where} ORDER BY id")]

    def holds(self, receiver: str, group_key: str) -> bool:
        """Whether the group has held rows at this receiver (what follows them is held too, to keep order)."""
        return bool(self.db.query("SELECT 1 FROM outbox WHERE receiver = ? AND group_key = ? AND held = 1 "
                                  "AND delivered_at IS NULL LIMIT 1", (receiver, group_key)))

    def _hold_leased(self) -> None:
        # The lease is gone (lost, or its deadline passed): what this daemon numbered and did not send is
        # held, so it is sent again only if the shared log lacks it when this daemon holds the lease again.
        with self.db.transaction() as conn:
            cur = conn.execute("UPDATE outbox SET held = 1, seq = NULL WHERE delivered_at IS NULL AND held = 0 "
                               "AND seq IS NOT NULL")
        if cur.rowcount:
            log.warning("lease lost with %d notification(s) unsent: held until the shared log says whether "
                        "another daemon told them", cur.rowcount)

    def held(self) -> int:
        """Notifications held while no coordinator answered."""
        return int(self.db.query("SELECT count(*) FROM outbox WHERE delivered_at IS NULL AND held = 1")[0][0])

    def depth(self) -> int:
        """Number of notifications not delivered yet."""
        return int(self.db.query("SELECT count(*) FROM outbox WHERE delivered_at IS NULL")[0][0])

    def prune(self, delivered_before: datetime) -> int:
        """Forget delivered rows older than a cutoff; return how many."""
        with self.db.transaction() as conn:
            cur = conn.execute(
                "DELETE FROM outbox WHERE delivered_at IS NOT NULL AND delivered_at < ?",
                (to_db_time(delivered_before),),
            )
            return cur.rowcount

    async def deliver_due(
        self, notifiers: Mapping[str, Notifier], now: datetime, ignore_backoff: bool = False
    ) -> DeliveryReport:
        """Send every due row, in order per (receiver, group key); receivers are served concurrently.

        `ignore_backoff` (the flush at shutdown) gives rows still waiting out a backoff one more try.
        """
        async with self._flush:
            report = DeliveryReport()
            await self.coordination.ensure_private()
            if self.coordination.keeper.fence() is None:
                self._hold_leased()
            if not self.coordination.unreachable:
                await settle(self, now)
                await record_fail_open_sends(self)
            failing_open = self.fail_open.due(self.coordination, self.held)
            queues: dict[str, dict[str, list[OutboxRow]]] = {}
            for row in self.rows(undelivered_only=True):
                queues.setdefault(row.receiver, {}).setdefault(row.group_key, []).append(row)
            await asyncio.gather(*(
                self._deliver_receiver(notifiers.get(receiver), groups, now, report, ignore_backoff, failing_open)
                for receiver, groups in queues.items()
            ))
            return report

    async def _deliver_receiver(
        self, notifier: Notifier | None, groups: dict[str, list[OutboxRow]], now: datetime, report: DeliveryReport,
        ignore_backoff: bool = False, failing_open: bool = False,
    ) -> None:
        for queue in groups.values():
            for position, row in enumerate(queue):
                if (row.held and not failing_open) or (row.seq is not None and not self.coordination.keeper.may_send()):
                    report.waiting += len(queue) - position  # not ours to send now: no attempt, no backoff
                    break
                if row.next_attempt_at > now and not ignore_backoff:
                    report.waiting += len(queue) - position
                    break
                if not await self._deliver_row(notifier, row, now, report):
                    report.waiting += len(queue) - position - 1
                    break

    async def _deliver_row(
        self, notifier: Notifier | None, row: OutboxRow, now: datetime, report: DeliveryReport
    ) -> bool:
        thread = await self._thread(row)
        keeper = self.coordination.keeper
        try:
            if notifier is None:
                raise LookupError("no receiver of that name in the config (kept until it returns)")
            notification = row.notification
            if row.id in self._unconfirmed and notification.unconfirmed_since is None:
                notification = notification.model_copy(update={"unconfirmed_since": row.created_at})
            send = asyncio.wait_for(notifier.send(notification, thread), self.send_timeout)
            if row.seq is None:  # a local row (each daemon's own heartbeat): outside the lease
                ref = await send
            else:
                ref = await keeper.send_within(send, f"send {row.seq} of {row.ref}")
        except LeaseLost as exc:
            # Not a failure of the receiver: the row waits, unattempted, for whoever holds the lease.
            log.warning("notification %s to %r (group %s) left queued: %s", row.idempotency_key, row.receiver,
                        row.group_key, exc)
            report.waiting += 1
            return False
        except Exception as exc:  # any failure of any receiver: keep the row, retry later
            if not isinstance(exc, DeliveryError | LookupError):  # no answer: it may have arrived all the same
                self._unconfirmed.add(row.id)
            attempts = row.attempts + 1
            retry_at = now + _retry_delay(exc, attempts) * (1 + random.uniform(0, self.jitter))
            detail = str(exc) or (f"no answer within {self.send_timeout:g}s" if isinstance(exc, TimeoutError) else "")
            kind = exc.kind if isinstance(exc, DeliveryError) else "retryable"
            error = (
                f"receiver {row.receiver!r}, group {row.group_key}: attempt {attempts} failed ({kind}): "
                f"{type(exc).__name__}: {detail}; next attempt at {retry_at.isoformat()}"
            )
            with self.db.transaction() as conn:
                conn.execute(
                    "UPDATE outbox SET attempts = ?, next_attempt_at = ?, last_error = ? WHERE id = ?",
                    (attempts, to_db_time(retry_at), error, row.id),
                )
            log.warning("notification %s not delivered: %s", row.idempotency_key, error)
            report.failed += 1
            report.errors.append(error)
            return False
        with self.db.transaction() as conn:
            # A held row delivered was sent fail-open: the shared log learns of it later (outbox_fail_open.py).
            conn.execute(
                "UPDATE outbox SET attempts = attempts + 1, delivered_at = ?, "
                "sent_recorded = CASE WHEN held = 1 THEN 0 ELSE sent_recorded END WHERE id = ?",
                (to_db_time(now), row.id),
            )
            if row.status == "resolved":
                # The group is closed: if it fires again, that is a new incident and a new message.
                conn.execute(
                    "DELETE FROM notification_threads WHERE receiver = ? AND group_key = ?",
                    (row.receiver, row.group_key),
                )
            elif ref is not None and ref != thread:
                conn.execute(
                    "INSERT OR REPLACE INTO notification_threads (receiver, group_key, thread_ref, created_at) "
                    "VALUES (?, ?, ?, ?)",
                    (row.receiver, row.group_key, ref.model_dump_json(), to_db_time(now)),
                )
        report.delivered += 1
        if row.held:
            self.fail_open.sent(row)
        self._unconfirmed.discard(row.id)
        if row.seq is not None:
            await record_delivery(self, row, ref)
        return True

    async def _thread(self, row: OutboxRow) -> ThreadRef | None:
        # The shared log's thread first: a Slack thread or mail thread one daemon opened, another continues.
        ref = row.ref
        if ref is not None and row.seq is not None:
            try:
                group = await self.coordination.coordinator.log_group(ref)
            except CoordinatorUnavailable:
                group = None
            shared = group.receiver_data.get("thread") if group is not None else None
            if shared:
                return ThreadRef.model_validate(shared)
        return self.thread(row.receiver, row.group_key)


def _retry_delay(exc: Exception, attempts: int) -> timedelta:
    # A permanent refusal waits the longest interval (only an operator's fix helps, and then it
    # goes out); a receiver that said when to come back (Retry-After) is believed.
    if isinstance(exc, DeliveryError):
        if not exc.retryable:
            return BACKOFF_MAX
        if exc.retry_after is not None:
            return min(max(timedelta(seconds=exc.retry_after), backoff(1) / 5), BACKOFF_MAX)
    return backoff(attempts)


def _row(r) -> OutboxRow:
    return OutboxRow(
        id=r["id"], receiver=r["receiver"], group_key=r["group_key"], status=r["status"],
        idempotency_key=r["idempotency_key"], notification=Notification.model_validate_json(r["payload"]),
        created_at=from_db_time(r["created_at"]), next_attempt_at=from_db_time(r["next_attempt_at"]),
        attempts=r["attempts"], last_error=r["last_error"], delivered_at=from_db_time(r["delivered_at"]),
        route=r["route"], seq=r["seq"], held=bool(r["held"]), sent_recorded=bool(r["sent_recorded"]),
    )

