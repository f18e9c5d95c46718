"""The coordinator and the lease as one running service of the daemon: opened (and migrated) at start,
renewed in the background, given up at shutdown; its state read by metrics and the status page."""

from __future__ import annotations

import asyncio
import logging
from dataclasses import dataclass
from datetime import datetime

from daemon.coordination.lease import LeaseKeeper
from daemon.coordination.model import Coordinator

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class LeaseStatus:
    """What an operator asks: who sends, since when, and whether this daemon can reach the coordinator."""

    me: str
    holding: bool  # this daemon holds the lease (within its deadline)
    may_send: bool  # ... and is past a new holder's wait
    epoch: int | None  # the epoch seen last (ours, or the holder's)
    holder: str | None  # who held it at the last successful claim
    holder_since: datetime | None
    expires_at: datetime | None  # on the coordinator's clock
    last_error: str | None  # why the last claim failed, while it fails
    renewals: int
    failures: int


class CoordinationService:
    """Owns the coordinator's connection and the lease keeper's renewal task."""

    def __init__(self, coordinator: Coordinator, keeper: LeaseKeeper) -> None:
        self.coordinator = coordinator
        self.keeper = keeper
        self._stopping = asyncio.Event()
        self._task: asyncio.Task[None] | None = None

    async def start(self) -> None:
        """Open the coordinator (migrating its schema; raises when it cannot) and start renewing."""
        await self.coordinator.open()
        self._stopping.clear()
        self._task = asyncio.get_running_loop().create_task(self.keeper.run(self._stopping), name="lease")
        log.info("coordination: lease %r renewed every %gs as %s", self.keeper.name,
                 self.keeper.timing.renew_every, self.keeper.holder)

    async def stop(self) -> None:
        """Stop renewing, give the lease up, close the coordinator."""
        self._stopping.set()
        if self._task is not None:
            await self._task
            self._task = None
        await self.coordinator.close()

    def status(self) -> LeaseStatus:
        """The lease as this daemon sees it now."""
        keeper, last = self.keeper, self.keeper.last
        return LeaseStatus(
            me=keeper.holder, holding=keeper.holding, may_send=keeper.may_send(),
            epoch=keeper.epoch if keeper.epoch is not None else (last.epoch if last else None),
            holder=last.holder if last else None, holder_since=last.acquired_at if last else None,
            expires_at=last.expires_at if last else None, last_error=keeper.last_error,
            renewals=keeper.renewals, failures=keeper.failures)
