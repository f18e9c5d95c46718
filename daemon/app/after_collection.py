"""What a finished collection cycle leaves behind: metrics, cycle stats, the status page's memory, the log."""

from __future__ import annotations

import logging
from collections import deque
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Protocol

from daemon.app.cycles import CycleRecord, CycleStats
from daemon.app.metrics import DaemonMetrics
from daemon.app.rulebook import Rulebook
from daemon.common.judged_on import GroupBasis, health_failures, judged_on

log = logging.getLogger("rocketwatch")


class CollectionBooks(Protocol):
    """The part of the Daemon a collection cycle writes to (the Daemon is not imported: it imports this)."""

    metrics: DaemonMetrics
    stats: CycleStats
    cycles: deque[CycleRecord]
    collector_health: dict[str, list[dict]]
    judged_on: dict[str, list[GroupBasis]]
    rulebook: Rulebook


@dataclass(frozen=True)
class Collected:
    """One collection cycle of one cluster, as written to the store."""

    cluster: str
    at: datetime
    seconds: float
    rows: Mapping[str, Sequence[dict[str, Any]]]  # table -> rows collected
    written: Mapping[str, int]  # table -> rows written
    failed_calls: int


def record_collection(books: CollectionBooks, done: Collected) -> None:
    """Count the cycle, keep its collector_health rows and what each group is judged on, log what failed."""
    health = done.rows.get("collector_health", [])
    books.metrics.observe_collect(done.cluster, done.seconds, done.written, health)
    books.stats.collect_cycles += 1
    books.stats.rows_collected += sum(done.written.values())
    books.stats.last_collect_s = done.seconds
    books.stats.failed_calls[done.cluster] = done.failed_calls
    books.collector_health[done.cluster] = list(health)
    books.judged_on[done.cluster] = judged_on(done.rows, books.rulebook.rules,
                                              health_failures(books.collector_health[done.cluster]))
    books.cycles.appendleft(
        CycleRecord("collect", done.cluster, done.at, done.seconds, sum(done.written.values()), done.failed_calls)
    )
    for h in health:
        if not h["ok"]:
            log.warning("cluster %s: %s to %s failed: %s", done.cluster, h["call"], h["target"], h["error"],
                        extra={"cluster": done.cluster, "broker": h["target"]})
    log.info(
        "collected cluster %s in %.2fs: %s",
        done.cluster, done.seconds, ", ".join(f"{n}={c}" for n, c in sorted(done.written.items())),
        extra={"cluster": done.cluster},
    )
