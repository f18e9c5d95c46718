"""Retention: hours older than the configured age go, then the oldest hours until under the size limit."""

from __future__ import annotations

import contextlib
import logging
import shutil
from collections import defaultdict
from dataclasses import dataclass
from datetime import datetime, timedelta
from pathlib import Path

from daemon.store.layout import HourPartition
from spark.store_layout import COMMITS, HOUR, hour_dirs

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class Dropped:
    """One hour of one table removed, and why."""

    partition: HourPartition
    bytes: int
    reason: str  # "age" or "size"


def _remove_hour(path: Path) -> None:
    shutil.rmtree(path)
    with contextlib.suppress(OSError):  # not empty: other hours of the day remain
        path.parent.rmdir()  # the date directory, once its last hour is gone


def _remove(part: HourPartition, size: int, reason: str) -> Dropped:
    _remove_hour(part.path)
    return Dropped(part, size, reason)


def apply_retention(
    partitions: list[HourPartition], now: datetime, max_age: timedelta, max_bytes: int | None
) -> list[Dropped]:
    """Drop hours past `max_age`, then whole hours (every table at once), oldest first, above `max_bytes`.

    The hour being written is never dropped: a size limit smaller than one hour of samples keeps
    that hour and says so.
    """
    sizes = {p.path: p.size() for p in partitions}
    dropped: list[Dropped] = []
    kept: list[HourPartition] = []
    for part in partitions:
        if part.end <= now - max_age:
            dropped.append(_remove(part, sizes[part.path], "age"))
        else:
            kept.append(part)
    if dropped:
        log.info("store retention: dropped %d table-hour(s) older than %s (%d bytes)",
                 len(dropped), max_age, sum(d.bytes for d in dropped))
    if max_bytes is None:
        return dropped
    total = sum(sizes[p.path] for p in kept)
    by_hour: dict[datetime, list[HourPartition]] = defaultdict(list)
    for part in kept:
        by_hour[part.start].append(part)
    for start in sorted(by_hour):
        if total <= max_bytes:
            break
        if start + timedelta(hours=1) > now:
            log.warning("store retention: %d bytes left after dropping every closed hour, above the limit of %d: "
                        "raise store size limit (maintenance.max_size) to hold at least a few hours", total, max_bytes)
            break
        freed = 0
        for part in by_hour[start]:
            dropped.append(_remove(part, sizes[part.path], "size"))
            freed += sizes[part.path]
        total -= freed
        log.warning("store retention: over the size limit of %d bytes: dropped hour %s of every table (%d bytes); "
                    "rules whose window reaches back that far see less history", max_bytes, f"{start:%Y-%m-%d %H}:00Z",
                    freed)
    return dropped


def drop_commit_hours(root: Path, now: datetime, max_age: timedelta, dropped: list[Dropped]) -> list[Path]:
    """Remove the commit markers of hours past `max_age` and of hours dropped for size; returns their directories.

    A marker whose files are gone would only send a reader to empty hours, and markers would
    otherwise pile up for ever (one per cluster per cycle).
    """
    # A size drop takes an hour of every table at once (see apply_retention): its cycles are gone.
    gone = {d.partition.start for d in dropped if d.reason == "size"}
    removed = []
    for start, path in hour_dirs(root, COMMITS):
        if start + HOUR <= now - max_age or start in gone:
            _remove_hour(path)
            removed.append(path)
    if removed:
        log.info("store retention: dropped the commit markers of %d hour(s)", len(removed))
    return removed
