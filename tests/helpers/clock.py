"""A clock the test moves by hand, for the lease (daemon/coordination/clock.py's Clock): monotonic time,
the coordinator's time and sleeping all follow `advance()`, so a ttl passes without waiting for it."""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime, timedelta


class ManualClock:
    """Time that moves only when the test says so; shared by every daemon of a test (one world)."""

    def __init__(self, start: datetime | None = None) -> None:
        self._mono = 1000.0
        self._wall = start or datetime(2026, 11, 27, 3, 0, tzinfo=UTC)
        self._sleepers: list[tuple[float, asyncio.Future[None]]] = []

    def monotonic(self) -> float:
        """Seconds since an arbitrary start, moved by advance()."""
        return self._mono

    def coordinator_now(self) -> datetime:
        """The coordinator's time: the same world clock."""
        return self._wall

    @property
    def now(self) -> datetime:
        """The world's wall time (what an evaluation would call now)."""
        return self._wall

    @property
    def sleeping(self) -> int:
        """How many sleeps wait on the clock (a task is parked until the test advances it)."""
        return sum(1 for _, f in self._sleepers if not f.done())

    def sleep(self, seconds: float) -> asyncio.Future[None]:
        """A future done once the clock has been advanced by `seconds` from now (counted from this call)."""
        future: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self._sleepers.append((self._mono + seconds, future))
        return future

    def advance(self, seconds: float) -> None:
        """Move every face of time on, waking the sleepers it passes."""
        self._mono += seconds
        self._wall += timedelta(seconds=seconds)
        due = [f for at, f in self._sleepers if at <= self._mono]
        self._sleepers = [(at, f) for at, f in self._sleepers if at > self._mono]
        for future in due:
            if not future.done():
                future.set_result(None)
