"""The coordinator and the lease as one running service of the daemon: opened (and migrated) at start,
renewed in the background, given up at shutdown; its state read by metrics and the status page."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime

from daemon.coordination.lease import LeaseKeeper
from daemon.coordination.model import Coordinator, CoordinatorUnavailable
from daemon.coordination.peers import PeerRecord, PeerReporter

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
        self.open_error: str | None = None  # the coordinator could not be opened (yet)
        self.peer_reporter: PeerReporter | None = None
        self.started_at: float | None = None  # monotonic, at start()
        self.opened = False

    async def start(self) -> None:
        """Open the coordinator (migrating its schema) and start renewing. A coordinator away at start is
        no reason not to start: the daemon runs, holds nothing, and opens it as soon as it answers."""
        self._stopping.clear()
        self.started_at = self.keeper.clock.monotonic()
        await self._open()
        self._task = asyncio.get_running_loop().create_task(self._run(), name="lease")
        log.info("coordination: lease %r renewed every %gs as %s", self.keeper.name,
                 self.keeper.timing.renew_every, self.keeper.holder)

    async def _open(self) -> bool:
        try:
            await self.coordinator.open()
        except CoordinatorUnavailable as exc:
            self.open_error = str(exc)
            log.warning("coordination: %s; not dispatching until it answers (retry every %gs)", exc,
                        self.keeper.timing.renew_every)
            return False
        self.open_error = None
        self.opened = True
        return True

    async def ensure_private(self) -> None:
        """A single node's private lease is claimed on demand: the dispatcher and outbox work also when the
        renewal task is not running (one-shot cycles, tests) or fell behind. No-op for a shared lease."""
        if not self.keeper.private or self.keeper.holding:
            return
        if not self.opened and not await self._open():
            return
        await self.keeper.renew()

    @property
    def unreachable(self) -> bool:
        """This daemon cannot reach the coordinator now (its last claim failed, or it never opened): what it
        would send is held locally rather than dropped."""
        return self.open_error is not None or (not self.keeper.holding and self.keeper.last_error is not None)

    def away_for(self) -> float:
        """Seconds this daemon has been without the coordinator: since its last answered claim (or since it
        started, if none was ever answered); 0 while it is not `unreachable`."""
        if not self.unreachable:
            return 0.0
        since = self.keeper.answered_at if self.keeper.answered_at is not None else self.started_at
        return max(0.0, self.keeper.clock.monotonic() - since) if since is not None else 0.0

    async def _run(self) -> None:
        while self.open_error is not None and not self._stopping.is_set():
            sleeper = asyncio.ensure_future(self.keeper.clock.sleep(self.keeper.timing.renew_every))
            stop = asyncio.ensure_future(self._stopping.wait())
            await asyncio.wait({sleeper, stop}, return_when=asyncio.FIRST_COMPLETED)
            for task in (sleeper, stop):
                task.cancel()
            if not self._stopping.is_set():
                await self._open()
        await self.keeper.run(self._stopping)

    async def stop(self) -> None:
        """Stop renewing, give the lease up, close the coordinator."""
        self._stopping.set()
        if self._task is not None:
            await self._task
            self._task = None
        if self.peer_reporter is not None:
            await self.peer_reporter.flushed()
        await self.coordinator.close()
        self.opened = False

    def report_peer(self, evaluated: Callable[[], datetime | None], held: Callable[[], int],
                    node: str | None = None) -> PeerReporter:
        """Write this daemon's peers row after every renewal from now on (HA only: a single node has no peers)."""
        reporter = PeerReporter(self.coordinator, node or self.keeper.holder.split("/", 1)[0], evaluated, held,
                                timeout=self.keeper.timing.renew_every)
        self.peer_reporter = reporter
        self.keeper.after_renewal = reporter.after_renewal
        return reporter

    def peers(self) -> tuple[list[PeerRecord], datetime] | None:
        """Every daemon's peers row as this daemon last read it (right after its last renewal), and the
        coordinator's time of that read; None before the first, or when it writes no row."""
        return self.peer_reporter.seen if self.peer_reporter is not None else None

    def status(self) -> LeaseStatus:
        """The lease as this daemon sees it now."""
        keeper, last = self.keeper, self.keeper.last
        return LeaseStatus(
            me=keeper.holder, holding=keeper.holding, may_send=keeper.may_send(),
            epoch=keeper.epoch if keeper.epoch is not None else (last.epoch if last else None),
            holder=last.holder if last else None, holder_since=last.acquired_at if last else None,
            expires_at=last.expires_at if last else None, last_error=self.open_error or keeper.last_error,
            renewals=keeper.renewals, failures=keeper.failures)
