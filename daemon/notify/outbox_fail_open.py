"""`ha.on_coordinator_loss.fail_open_after`: after that long without the coordinator, a daemon sends what it holds
itself, as a single node would. The trade, chosen by the operator: no delay beyond the threshold, and
duplicates — every daemon cut off sends the same, and a holder on the other side of a partition too.

A row sent this way stays `held` with `sent_recorded = 0` until the daemon that sent it holds the lease again:
then it enters the shared log as told (unless the log has a newer send of its group), so no holder sends it a
second time, and the held rows other daemons kept are dropped as told (outbox_held.settle).
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Protocol

from daemon.alerts.db import StateDB
from daemon.coordination.model import CoordinatorUnavailable, Fenced
from daemon.coordination.service import CoordinationService
from daemon.notify.model import ThreadRef
from daemon.notify.outbox_held import told_of
from daemon.notify.outbox_row import OutboxRow

log = logging.getLogger(__name__)

FAIL_OPEN_REASON = "fail_open"  # the shared log's reason for a send recorded after the fact


class _Outbox(Protocol):
    db: StateDB
    coordination: CoordinationService

    def rows(self, undelivered_only: bool = False) -> list[OutboxRow]: ...

    def thread(self, receiver: str, group_key: str) -> ThreadRef | None: ...


class FailOpen:
    """One daemon's fail-open policy and what it did: whether held rows go out now, and how many went."""

    def __init__(self, after: float | None = None) -> None:
        self.after = after  # seconds without the coordinator; None: hold forever (the default)
        self.sends = 0  # rows sent fail-open by this process (rocketwatch_ha_fail_open_sends_total)
        self.active = False

    def due(self, coordination: CoordinationService, held: Callable[[], int]) -> bool:
        """Whether this daemon sends its held rows now (it says so when that starts and ends)."""
        if self.after is None:
            return False
        away = coordination.away_for()
        active = coordination.unreachable and away >= self.after
        if active and not self.active:
            log.warning("coordinator away for %.0fs (ha.on_coordinator_loss.fail_open_after %gs): this daemon "
                        "sends the %d notification(s) it holds and what comes next itself; every other daemon cut "
                        "off does the same, so receivers may get duplicates (the trade chosen over delay). Last "
                        "error: %s", away, self.after, held(), coordination.status().last_error)
        elif self.active and not active:
            log.warning("coordinator answers again: fail-open ends after %d send(s) by this daemon; what they "
                        "told enters the shared log once this daemon holds the lease", self.sends)
        self.active = active
        return active

    def sent(self, row: OutboxRow) -> None:
        """Count one row sent fail-open, and say what it may duplicate."""
        self.sends += 1
        log.warning("notification of group %s to %r (%s) sent fail-open, outside the lease: the lease holder or "
                    "another daemon cut off may send it too", row.group_key, row.receiver, row.status)


async def record_fail_open_sends(outbox: _Outbox) -> bool:
    """Under the lease: put this daemon's fail-open sends into the shared log as told, oldest first. False
    when the coordinator stopped answering midway (the rest wait for the next settle)."""
    for row in outbox.rows():
        if row.delivered_at is None or not row.held or row.sent_recorded or row.ref is None:
            continue
        if outbox.coordination.keeper.fence() is None:
            return True  # a standby's sends wait until it holds the lease (the holder decides meanwhile)
        try:
            await _record(outbox, row)
        except CoordinatorUnavailable:
            return False
        except Fenced as exc:
            log.warning("fail-open send of %s not recorded in the shared log: %s", row.ref, exc)
            return True
        with outbox.db.transaction() as conn:
            conn.execute("UPDATE outbox SET sent_recorded = 1 WHERE id = ?", (row.id,))
    return True


async def _record(outbox: _Outbox, row: OutboxRow) -> None:
    assert row.ref is not None
    coordinator, fence = outbox.coordination.coordinator, outbox.coordination.keeper.fence()
    assert fence is not None
    at, told = row.notification.created_at, told_of(row.notification)
    group = await coordinator.log_group(row.ref)
    if group is not None and group.last_sent_at is not None and group.last_sent_at >= at:
        log.info("fail-open send of %s not recorded: the shared log has a later send of the group", row.ref)
        return
    intent = await coordinator.record_intent(fence, row.ref, row.notification.group_labels, told,
                                             FAIL_OPEN_REASON, at)
    thread = outbox.thread(row.receiver, row.group_key)
    await coordinator.record_sent(fence, row.ref, intent.seq, {"thread": thread.model_dump()} if thread else {}, at)
    if row.status == "resolved":
        await coordinator.close_group(fence, row.ref, at)
    log.info("fail-open send of %s recorded in the shared log as send %d: no holder sends it again", row.ref,
             intent.seq)
