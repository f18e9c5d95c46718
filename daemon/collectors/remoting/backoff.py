"""Reconnect backoff per address: a broker that cannot be reached is not dialled for every call.

After a failed connect, further connects to that address fail at once (with the last reason)
until a delay has passed: 1 s, doubling per failure in a row, at most 60 s, ±20 % jitter so many
collectors do not return in step. The first successful connect clears it. `retry_now()` lets the
next call dial again whatever the delay (the daemon calls it at the start of each collection
cycle, so a broker that came back is collected on the next cycle, and a dead one costs one
connect attempt per cycle instead of one per call).
"""

from __future__ import annotations

import random
import time
from dataclasses import dataclass

BASE_S = 1.0
MAX_S = 60.0
JITTER = 0.2


@dataclass
class _Failures:
    count: int
    until: float
    reason: str


class ReconnectBackoff:
    """Failed connects by address and when each may be dialled again."""

    def __init__(self, base_s: float = BASE_S, max_s: float = MAX_S, jitter: float = JITTER,
                 rng: random.Random | None = None) -> None:
        self.base_s, self.max_s, self.jitter = base_s, max_s, jitter
        self._rng = rng or random.Random()
        self._failures: dict[str, _Failures] = {}

    def blocked(self, addr: str, now: float | None = None) -> str | None:
        """Why `addr` must not be dialled yet, or None when it may be."""
        failures = self._failures.get(addr)
        now = time.monotonic() if now is None else now
        if failures is None or now >= failures.until:
            return None
        return (f"{failures.reason}; {failures.count} failed connect(s) in a row, next attempt in "
                f"{failures.until - now:.1f} s")

    def failed(self, addr: str, reason: str, now: float | None = None) -> float:
        """Record a failed connect; returns the seconds until the next attempt."""
        previous = self._failures.get(addr)
        count = (previous.count if previous else 0) + 1
        delay = min(self.max_s, self.base_s * 2 ** (count - 1))
        delay *= 1 + self._rng.uniform(-self.jitter, self.jitter)
        now = time.monotonic() if now is None else now
        self._failures[addr] = _Failures(count, now + delay, reason)
        return delay

    def succeeded(self, addr: str) -> None:
        """A connect worked: forget the failures."""
        self._failures.pop(addr, None)

    def retry_now(self) -> None:
        """Let every address be dialled at the next call (failure counts are kept)."""
        for failures in self._failures.values():
            failures.until = 0.0
