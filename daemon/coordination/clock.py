"""Time as the lease sees it: a monotonic clock for the holder's own deadline, the coordinator's clock for
the lease row, and sleeping between renewals. Injected, so tests move time by hand (tests/helpers/clock.py)."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable
from datetime import datetime
from typing import Protocol


class Clock(Protocol):
    """The three faces of time the lease keeper uses."""

    def monotonic(self) -> float:
        """Seconds on a clock that never jumps (the holder's deadline counts on it)."""
        ...

    def coordinator_now(self) -> datetime | None:
        """The time to compare the lease row against; None means the coordinator's own clock."""
        ...

    def sleep(self, seconds: float) -> Awaitable[None]:
        """Something to await that long (renewal intervals); the time counts from this call."""
        ...


class SystemClock:
    """Production time: time.monotonic, the coordinator's server clock, asyncio.sleep."""

    def monotonic(self) -> float:
        """time.monotonic()."""
        return time.monotonic()

    def coordinator_now(self) -> datetime | None:
        """None: the lease is compared against the server's clock, the one every daemon shares."""
        return None

    def sleep(self, seconds: float) -> Awaitable[None]:
        """asyncio.sleep."""
        return asyncio.sleep(seconds)
