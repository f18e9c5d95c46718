"""The dispatch lease as one daemon holds it: renewed on a schedule, trusted only until the holder's own
deadline (renew start + ttl - margin, on its monotonic clock), which holds even when the coordinator is
unreachable. A new holder waits out one whole ttl before its first send: a previous holder that cannot
be reached may still be sending until its own deadline, which is earlier than that.
"""

from __future__ import annotations

import asyncio
import logging
import os
import socket
import uuid
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import TypeVar

from daemon.coordination.clock import Clock, SystemClock
from daemon.coordination.model import Coordinator, CoordinatorUnavailable, Fence, LeaseRecord

log = logging.getLogger(__name__)
T = TypeVar("T")

DISPATCH_LEASE = "dispatch"


@dataclass(frozen=True)
class LeaseTiming:
    """ttl: how long a claim lasts on the coordinator; renew_every: how often the holder renews;
    margin: how long before its ttl runs out the holder stops (clock-rate drift, a slow send's tail)."""

    ttl: float = 15.0
    renew_every: float = 5.0
    margin: float = 3.0

    def __post_init__(self) -> None:
        if not 0 < self.margin < self.ttl:
            raise ValueError(f"lease margin {self.margin:g}s must be above 0 and below the ttl {self.ttl:g}s")
        if not 0 < self.renew_every < self.ttl - self.margin:
            raise ValueError(f"lease renew_every {self.renew_every:g}s must be above 0 and below ttl - margin "
                             f"({self.ttl - self.margin:g}s), or the holder's deadline passes between renewals")


def holder_name(node: str | None = None) -> str:
    """`<node>/<instance>`: the node (config, else the host name) and this process, so a restarted daemon
    is a new holder, never mistaken for the one before it."""
    return f"{node or socket.gethostname()}/{os.getpid()}-{uuid.uuid4().hex[:6]}"


class LeaseLost(Exception):
    """A send refused or cut short: this daemon does not hold the lease (or its deadline came)."""


class LeaseKeeper:
    """One daemon's view of the dispatch lease: whether it may send now, and the fence its writes carry.

    `private`: no other process can hold this lease (a single node's SQLite under the state-directory
    lock), so a new epoch needs no wait: nobody else can have been sending."""

    def __init__(self, coordinator: Coordinator, holder: str, timing: LeaseTiming | None = None,
                 clock: Clock | None = None, name: str = DISPATCH_LEASE, private: bool = False) -> None:
        self.coordinator = coordinator
        self.private = private
        self.holder = holder
        self.timing = timing or LeaseTiming()
        self.clock = clock or SystemClock()
        self.name = name
        self.epoch: int | None = None  # the epoch we hold (None: we hold nothing)
        self.deadline: float = float("-inf")  # monotonic: no send after this
        self.sends_from: float = float("inf")  # monotonic: no send before this (a new holder waits one ttl)
        self.last: LeaseRecord | None = None  # the row as the last successful claim saw it (who holds it)
        self.last_error: str | None = None
        self.answered_at: float | None = None  # monotonic: the start of the last claim the coordinator answered
        self.renewals = 0
        self.failures = 0
        # Called after every renewal the coordinator answered (the peers table's row, peers.py); it must return
        # at once: a renewal never waits on it.
        self.after_renewal: Callable[[str, bool], None] | None = None

    def _now(self) -> float:
        return self.clock.monotonic()

    @property
    def holding(self) -> bool:
        """We hold the lease and our deadline has not passed (we may write the shared log)."""
        return self.epoch is not None and self._now() < self.deadline

    def may_send(self) -> bool:
        """Holding, past the new holder's wait: a send may start now."""
        return self.holding and self._now() >= self.sends_from

    def time_left(self) -> float:
        """Seconds until our deadline (0 when not holding): a send still running then is cancelled."""
        return max(0.0, self.deadline - self._now()) if self.epoch is not None else 0.0

    def fence(self) -> Fence | None:
        """What our shared writes carry while we hold the lease; None otherwise."""
        return Fence(self.name, self.holder, self.epoch) if self.holding and self.epoch is not None else None

    async def send_within(self, send: Awaitable[T], what: str = "send") -> T:
        """Run one send under the lease: refused unless we may send now, cancelled at our deadline."""
        if not self.may_send():
            if hasattr(send, "close"):
                send.close()  # a coroutine never awaited would warn
            raise LeaseLost(f"{what} not started: {self._why_not()}")
        task = asyncio.ensure_future(send)
        epoch = self.epoch
        # The deadline in force: renewals while the send runs move it on, so a slow receiver is cut only
        # when the lease really lapses (or changes hands), never merely at the deadline it started under.
        while self.epoch == epoch and self.time_left() > 0:
            timer = asyncio.ensure_future(self.clock.sleep(self.time_left()))
            try:
                done, _ = await asyncio.wait({task, timer}, return_when=asyncio.FIRST_COMPLETED)
            except asyncio.CancelledError:
                task.cancel()
                raise
            finally:
                timer.cancel()
            if task in done:
                return task.result()
        if task.done() and not task.cancelled():
            return task.result()  # finished at the very moment the deadline came: it was sent
        task.cancel()
        await asyncio.gather(task, return_exceptions=True)
        raise LeaseLost(f"{what} cancelled at the lease deadline (epoch {self.epoch}): it may or may not have "
                        "reached the receiver")

    def _why_not(self) -> str:
        if self.epoch is None:
            holder = f" (held by {self.last.holder}, epoch {self.last.epoch})" if self.last is not None else ""
            return f"{self.holder} does not hold lease {self.name!r}{holder}"
        if self._now() >= self.deadline:
            return f"lease {self.name!r} epoch {self.epoch}: deadline passed without a renewal ({self.last_error})"
        return (f"lease {self.name!r} epoch {self.epoch} was just taken: first send in "
                f"{self.sends_from - self._now():.1f}s (a previous holder may still be sending until then)")

    async def renew(self) -> bool:
        """One claim (take or renew); True when we hold the lease afterwards. Never raises for the coordinator
        being away: the deadline set by the last success keeps counting down."""
        holding = await self._claim()
        if self.after_renewal is not None and self.last_error is None:
            self.after_renewal(self.holder, holding)
        return holding

    async def _claim(self) -> bool:
        started = self._now()
        try:
            # Bounded by renew_every, so a silent coordinator cannot hold up the next attempt.
            record = await asyncio.wait_for(
                self.coordinator.claim_lease(self.name, self.holder, self.timing.ttl), self.timing.renew_every)
        except (CoordinatorUnavailable, TimeoutError, OSError) as exc:
            self.failures += 1
            self.last_error = str(exc) or type(exc).__name__
            if self.epoch is not None and not self.holding:
                log.warning("lease %r: deadline passed without a renewal (%s): this daemon stops dispatching",
                            self.name, self.last_error)
                self._drop()
            return self.holding
        self.last, self.last_error, self.answered_at = record, None, started
        if record.holder != self.holder:
            if self.epoch is not None:
                log.warning("lease %r: now held by %s (epoch %d); this daemon stops dispatching",
                            self.name, record.holder, record.epoch)
            self._drop()
            return False
        if record.epoch != self.epoch:
            # A new epoch: someone may have held it since we last did; wait out the whole ttl before sending.
            self.sends_from = started if self.private else started + self.timing.ttl
            log.info("lease %r: taken by %s at epoch %d; first send after %gs", self.name, self.holder,
                     record.epoch, 0 if self.private else self.timing.ttl)
        self.epoch = record.epoch
        self.deadline = started + self.timing.ttl - self.timing.margin
        self.renewals += 1
        return True

    def _drop(self) -> None:
        self.epoch = None
        self.deadline = float("-inf")
        self.sends_from = float("inf")

    async def run(self, stopping: asyncio.Event) -> None:
        """Renew every renew_every until `stopping` is set; then give the lease up if we hold it."""
        while not stopping.is_set():
            try:
                await self.renew()
            except Exception as exc:  # a bug or a broken schema must not end renewals silently
                self.failures += 1
                if str(exc) != self.last_error:
                    log.exception("lease %r: renewal failed unexpectedly", self.name)
                self.last_error = str(exc) or type(exc).__name__
                if not self.holding:
                    self._drop()
            sleeper = asyncio.ensure_future(self.clock.sleep(self.timing.renew_every))
            stop = asyncio.ensure_future(stopping.wait())
            await asyncio.wait({sleeper, stop}, return_when=asyncio.FIRST_COMPLETED)
            for task in (sleeper, stop):
                task.cancel()
        await self.release()

    async def release(self) -> None:
        """Give the lease up (clean shutdown): the standby's next claim takes it."""
        fence = self.fence()
        self._drop()
        if fence is None:
            return
        try:
            await asyncio.wait_for(self.coordinator.release_lease(fence), self.timing.renew_every)
        except (CoordinatorUnavailable, TimeoutError, OSError) as exc:
            log.warning("lease %r: could not give it up (%s); it expires within %gs", self.name, exc, self.timing.ttl)
