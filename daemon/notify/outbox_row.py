"""One queued notification as the outbox stores it: shared by the outbox and its send protocol."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from daemon.coordination.model import GroupRef
from daemon.notify.model import Notification


@dataclass(frozen=True)
class OutboxRow:
    """One queued notification, as stored."""

    id: int
    receiver: str
    group_key: str
    status: str
    idempotency_key: str
    notification: Notification
    created_at: datetime
    next_attempt_at: datetime
    attempts: int
    last_error: str | None
    delivered_at: datetime | None
    route: str | None = None
    seq: int | None = None  # the shared log's number of this send; None: a local row (the heartbeat)
    held: bool = False
    sent_recorded: bool = True

    @property
    def ref(self) -> GroupRef | None:
        """The shared log's group of a row sent under the lease."""
        return GroupRef(self.route, self.receiver, self.group_key) if self.route is not None else None
