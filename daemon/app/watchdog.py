"""systemd's watchdog: WATCHDOG=1 from the event loop, and only while cycles keep completing.

Pinging from a task on the event loop means a blocked loop stops the pings by itself; the
progress check covers what does not block the loop, such as a Spark evaluation hung in its thread.
"""

from __future__ import annotations

import asyncio
import logging
import os
import time
from collections.abc import Callable, Mapping

from daemon.common.sdnotify import sd_notify

log = logging.getLogger(__name__)


def watchdog_interval(env: Mapping[str, str] = os.environ, pid: int | None = None) -> float | None:
    """Seconds between pings (half of WatchdogSec=), or None when systemd asked for no watchdog."""
    usec = env.get("WATCHDOG_USEC")
    if not usec:
        return None
    owner = env.get("WATCHDOG_PID")
    if owner and int(owner) != (pid if pid is not None else os.getpid()):
        return None  # meant for another process of the unit
    try:
        return max(int(usec) / 2 / 1_000_000, 0.05)
    except ValueError:
        log.warning("WATCHDOG_USEC=%r is not a number of microseconds; watchdog off", usec)
        return None


class Watchdog:
    """Pings systemd every `interval` seconds while the last completed cycle is recent enough."""

    def __init__(
        self, interval: float, stall_after: float,
        clock: Callable[[], float] = time.monotonic, notify: Callable[..., bool] = sd_notify,
    ) -> None:
        self.interval = interval
        self.stall_after = stall_after
        self.clock = clock
        self.notify = notify
        self.last_progress = clock()  # start-up counts as progress until the first cycle is due
        self.pings = 0
        self._stalled = False

    def progress(self) -> None:
        """A cycle completed: the daemon is doing its job."""
        self.last_progress = self.clock()
        if self._stalled:
            log.warning("cycles complete again; resuming WATCHDOG=1")
            self._stalled = False

    def healthy(self) -> bool:
        """True while the last completed cycle is younger than `stall_after`."""
        return self.clock() - self.last_progress <= self.stall_after

    def tick(self) -> bool:
        """One ping if healthy; the first miss is logged, since systemd restarts us soon after."""
        if self.healthy():
            self.pings += 1
            return self.notify("WATCHDOG=1")
        if not self._stalled:
            self._stalled = True
            log.error(
                "no cycle completed for %.0fs (limit %.0fs): withholding WATCHDOG=1 so systemd restarts rocketwatch",
                self.clock() - self.last_progress, self.stall_after,
            )
        return False

    async def run(self) -> None:
        """Ping until cancelled."""
        while True:
            self.tick()
            await asyncio.sleep(self.interval)
