"""The send protocol around the outbox: a delivered row's fenced sent record (retried while the
coordinator is away), and held rows settled once a coordinator answers — dropped when the shared log
already records what they tell, else numbered and sent by the holder."""

from __future__ import annotations

import logging
from datetime import datetime
from typing import Protocol

from daemon.alerts.db import StateDB
from daemon.coordination.model import CoordinatorUnavailable, Fenced, Told
from daemon.coordination.pending import already_told
from daemon.coordination.service import CoordinationService
from daemon.notify.model import Notification, ThreadRef
from daemon.notify.outbox_row import OutboxRow


class Outbox(Protocol):
    """What the send protocol reads of the outbox (daemon/notify/outbox.py), which calls it."""

    db: StateDB
    coordination: CoordinationService

    def rows(self, undelivered_only: bool = False) -> list[OutboxRow]: ...

    def thread(self, receiver: str, group_key: str) -> ThreadRef | None: ...

log = logging.getLogger(__name__)


def told_of(notification: Notification) -> Told:
    """What a notification tells its receiver, as the shared log records it."""
    return Told({a.fingerprint: a.severity for a in notification.firing},
                tuple(sorted(a.fingerprint for a in notification.resolved)))


def _mark_recorded(outbox: Outbox, row: OutboxRow, recorded: bool) -> None:
    with outbox.db.transaction() as conn:
        conn.execute("UPDATE outbox SET sent_recorded = ? WHERE id = ?", (int(recorded), row.id))


async def record_delivery(outbox: Outbox, row: OutboxRow, thread: ThreadRef | None) -> bool:
    """The receiver took a leased row: record it sent (with the thread it replied to or opened), and close
    the group after its resolve. False when the record must be retried (the coordinator did not answer)."""
    assert row.ref is not None and row.seq is not None
    fence = outbox.coordination.keeper.fence()
    coordinator = outbox.coordination.coordinator
    at = row.notification.created_at
    recorded = False
    if fence is not None:
        try:
            reply = {"thread": thread.model_dump()} if thread is not None else {}
            await coordinator.record_sent(fence, row.ref, row.seq, reply, at)
            if row.status == "resolved":
                await coordinator.close_group(fence, row.ref, at)
            recorded = True
        except CoordinatorUnavailable as exc:
            log.warning("send %d of %s delivered; its sent record waits for the coordinator: %s", row.seq, row.ref, exc)
        except (Fenced, LookupError) as exc:
            # Another daemon holds the log now and decides from its content: nothing for us to add.
            log.warning("send %d of %s delivered, sent record refused: %s", row.seq, row.ref, exc)
            recorded = True
    if not recorded or not row.sent_recorded:
        _mark_recorded(outbox, row, recorded)
    return recorded


async def settle(outbox: Outbox, now: datetime) -> None:
    """With a coordinator answering: retry sent records it missed, and settle held rows in queue order."""
    for row in [r for r in outbox.rows() if r.delivered_at is not None and not r.sent_recorded and r.seq is not None]:
        if outbox.coordination.keeper.fence() is None:
            break
        thread = outbox.thread(row.receiver, row.group_key)
        if not await record_delivery(outbox, row, thread):
            return
    for row in outbox.rows(undelivered_only=True):
        if row.held and row.ref is not None and not await _settle_held(outbox, row):
            return


async def _settle_held(outbox: Outbox, row: OutboxRow) -> bool:
    assert row.ref is not None
    coordinator = outbox.coordination.coordinator
    told = told_of(row.notification)
    try:
        group = await coordinator.log_group(row.ref)
        if already_told(group, told):
            with outbox.db.transaction() as conn:
                conn.execute("DELETE FROM outbox WHERE id = ?", (row.id,))
            log.info("held notification of %s dropped: the shared log records it as told", row.ref)
            return True
        fence = outbox.coordination.keeper.fence()
        if fence is None:
            return True  # a standby keeps it held: the holder may be sending its own; the log will say
        intent = await coordinator.record_intent(fence, row.ref, row.notification.group_labels, told,
                                                 row.notification.reason, row.created_at)
    except CoordinatorUnavailable:
        return False
    except Fenced:
        return True
    stored = row.notification.model_copy(update={"idempotency_key": intent.key, "unconfirmed_since": (
        intent.recorded_at or row.created_at) if intent.retry else row.notification.unconfirmed_since})
    with outbox.db.transaction() as conn:
        conn.execute("UPDATE outbox SET held = 0, seq = ?, idempotency_key = ?, payload = ? WHERE id = ?",
                     (intent.seq, intent.key, stored.model_dump_json(), row.id))
    log.info("held notification of %s released as send %d", row.ref, intent.seq)
    return True
