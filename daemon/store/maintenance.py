"""The `maintain` job: recover from crashes, compact closed hours, apply retention, in that order.

Recovery comes first so compaction never merges a partial file; retention comes last so it counts
the store at its compacted size.
"""

from __future__ import annotations

import logging
import os
import shutil
import time
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from pathlib import Path

from config.models import MaintenanceConfig
from daemon.store.compaction import Compacted, compact_partition
from daemon.store.layout import QUARANTINE, hour_partitions
from daemon.store.recovery import (
    MovedAside,
    clean_commit_markers,
    finish_interrupted_compactions,
    move_aside_broken,
)
from daemon.store.retention import Dropped, apply_retention, drop_commit_hours

log = logging.getLogger(__name__)


@dataclass
class MaintenanceReport:
    """What one run of the job did."""

    recovered: list[str] = field(default_factory=list)
    moved_aside: list[MovedAside] = field(default_factory=list)
    compacted: list[Compacted] = field(default_factory=list)
    dropped: list[Dropped] = field(default_factory=list)
    markers: list[str] = field(default_factory=list)  # commit marker files recovery removed or moved aside
    store_bytes: int = 0
    seconds: float = 0.0

    def __str__(self) -> str:
        return (
            f"{len(self.compacted)} hour(s) compacted ({sum(c.files_before for c in self.compacted)} files), "
            f"{len(self.dropped)} table-hour(s) dropped, {len(self.moved_aside)} broken file(s) moved aside, "
            f"{len(self.recovered)} interrupted compaction(s) repaired, {len(self.markers)} commit marker(s) "
            f"cleaned up; store {self.store_bytes} bytes, "
            f"{self.seconds:.1f}s"
        )


def store_size(root: Path) -> int:
    """Bytes the store's files take on disk now (0 before the first cycle creates the store)."""
    total = 0
    # os.walk skips a directory removed under it (the evaluation state's temporary folder, renamed or
    # dropped while a scrape walks: Path.rglob raised FileNotFoundError and /metrics answered 500).
    for folder, _, names in os.walk(root):
        for name in names:
            try:
                total += os.stat(os.path.join(folder, name)).st_size
            except FileNotFoundError:
                continue  # compaction or retention removed it while we walked
    return total


def recover_store(root: Path, temp_grace: timedelta = timedelta(minutes=10)) -> MaintenanceReport:
    """Only the crash recovery: what the daemon runs at start, before the first evaluation reads the store."""
    report = MaintenanceReport()
    if not root.is_dir():
        return report
    report.recovered = finish_interrupted_compactions(root)
    report.moved_aside = move_aside_broken(root, hour_partitions(root), temp_grace.total_seconds())
    report.markers = clean_commit_markers(root, temp_grace.total_seconds())
    return report


def maintain_store(root: Path, now: datetime, settings: MaintenanceConfig) -> MaintenanceReport:
    """One full run: recovery, compaction of hours closed for `compact_after`, retention, quarantine pruning."""
    started = time.monotonic()
    report = recover_store(root, temp_grace=settings.compact_after)
    if not root.is_dir():
        log.info("store maintenance: nothing to do yet, no store at %s (the first cycle creates it)", root)
        return report
    for part in hour_partitions(root):
        if part.end + settings.compact_after <= now:
            done = compact_partition(part)
            if done is not None:
                report.compacted.append(done)
    report.dropped = apply_retention(hour_partitions(root), now, settings.retention, settings.max_size)
    # Compaction leaves markers alone (a reader falls back to the hour's files); retention does not.
    drop_commit_hours(root, now, settings.retention, report.dropped)
    _prune_quarantine(root / QUARANTINE, now, settings.retention)
    report.store_bytes = store_size(root)
    report.seconds = time.monotonic() - started
    log.info("store maintenance: %s", report)
    return report


def _prune_quarantine(quarantine: Path, now: datetime, max_age: timedelta) -> None:
    # Files moved aside are kept for inspection, but not past the store's own retention.
    if not quarantine.is_dir():
        return
    limit = now.timestamp() - max_age.total_seconds()
    for path in quarantine.rglob("*"):
        if path.is_file() and path.stat().st_mtime < limit:
            path.unlink()
    for directory in sorted((p for p in quarantine.rglob("*") if p.is_dir()), key=lambda p: -len(p.parts)):
        if not any(directory.iterdir()):
            shutil.rmtree(directory)
