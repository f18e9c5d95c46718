"""One collect_cluster run's state: the rows it gathers, and its calls, each bounded (overall and per
broker) and recorded as a collector_health row, so a failing call costs one row, never the cycle."""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, TypeVar

from config.name_filter import Selection
from daemon.collectors.remoting.admin import AdminClient
from daemon.collectors.remoting.codes import RequestCode
from daemon.collectors.remoting.errors import RemotingError

log = logging.getLogger("daemon.collectors.cluster")  # the logger these calls always logged to

T = TypeVar("T")


@dataclass
class CollectCycle:
    """State of one collect_cluster run: its bounds, the rows it gathers, a health row per call."""

    admin: AdminClient
    cluster: str
    now: datetime
    call_timeout: float
    semaphore: asyncio.Semaphore
    selection: Selection = field(default_factory=Selection)
    per_target: int = 4
    _target_slots: dict[str, asyncio.Semaphore] = field(default_factory=dict)
    health: list[dict[str, Any]] = field(default_factory=list)
    process_queue: list[dict[str, Any]] = field(default_factory=list)
    consumer_queue: list[dict[str, Any]] = field(default_factory=list)
    consumer_status: list[dict[str, Any]] = field(default_factory=list)
    consumer_client: list[dict[str, Any]] = field(default_factory=list)
    topic_queue: list[dict[str, Any]] = field(default_factory=list)
    broker: list[dict[str, Any]] = field(default_factory=list)
    thread_dump: list[dict[str, Any]] = field(default_factory=list)
    pop_queue: list[dict[str, Any]] = field(default_factory=list)
    # Every group of the cycle: files a pop retry topic %RETRY%<group>_<topic> under its group.
    group_names: set[str] = field(default_factory=set)
    # Every broker address of the cluster info -> (broker name, broker id): names the broker on the
    # health rows of the calls to it (daemon/collectors/health.py).
    brokers: dict[str, tuple[str, int]] = field(default_factory=dict)
    # Topics worth a GET_TOPIC_STATS_INFO per master: those the groups consume or subscribe.
    topics: dict[str, set[str]] = field(default_factory=dict)
    online_groups: set[str] = field(default_factory=set)
    clients: int = 0

    async def call(
        self,
        target: str,
        code: RequestCode,
        make: Callable[[], Awaitable[T]],
        *,
        answers: tuple[type[RemotingError], ...] = (),
    ) -> tuple[T | None, Exception | None]:
        """Run one call under the semaphore; record its health row; never raise.

        Errors of the `answers` types are expected answers (206 for an offline group): the call
        counts as ok, and the error is returned for the caller to interpret.
        """
        # Bounded twice: overall, and per broker, so one slow broker cannot hold every slot of the
        # cycle and no broker sees more than `per_target` of our requests at once.
        slot = self._target_slots.setdefault(target, asyncio.Semaphore(self.per_target))
        async with slot, self.semaphore:
            start = time.perf_counter()
            value: T | None = None
            error: Exception | None = None
            try:
                # The client enforces call_timeout; this outer bound also covers body decoding.
                value = await asyncio.wait_for(make(), self.call_timeout * 2)
            except RemotingError as exc:
                error = exc
            except TimeoutError:
                error = TimeoutError(f"{target} did not answer {code.name} ({int(code)}) in time")
            except Exception as exc:  # a bug must cost one call, not the cycle
                log.exception("%s to %s failed unexpectedly", code.name, target)
                error = exc
            latency_ms = (time.perf_counter() - start) * 1000.0
        ok = error is None or isinstance(error, answers)
        self.health.append(
            {
                "ts": self.now,
                "cluster": self.cluster,
                "target": target,
                "call": code.name,
                "ok": ok,
                "error": None if ok else _error_text(error),
                "latency_ms": latency_ms,
            }
        )
        return value, error

    def fail_row(self, target: str, code: RequestCode, error: str) -> None:
        """Turn the latest health row of (target, code) into a failure with `error`."""
        for row in reversed(self.health):
            if row["target"] == target and row["call"] == code.name:
                row["ok"], row["error"] = False, error
                return


def _error_text(error: Exception | None) -> str:
    text = str(error) if error is not None else ""
    return text or type(error).__name__
