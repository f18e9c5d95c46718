"""Recovery from a crash: partial files moved aside, interrupted compactions finished or undone.

A crash can leave a `.tmp` file (killed mid-write), a zero-length `.parquet` (renamed before the
data reached the disk, then power lost) or a file Parquet cannot read. Spark fails the whole
evaluation on such a file, so each one is moved to `<root>/_quarantine/` (same relative path)
and logged; nothing is deleted, an operator can look at it.

Commit markers (spark/store_layout.py) are written after their cycle's files: a crash in between
leaves data files that no marker names. They stay: the reference path (`eval --at`, `replay`) reads
them as before, and the evaluator's fold simply never sees that cycle (it is not committed). A marker's own temp file
left by a crash is deleted: it is metadata of an uncommitted cycle, with nothing to inspect.
"""

from __future__ import annotations

import logging
import os
import shutil
import time
from dataclasses import dataclass
from pathlib import Path

import pyarrow.parquet as pq

from daemon.store.layout import QUARANTINE, HourPartition, date_dirs, is_data_file
from rules.tables import TABLES
from spark.store_layout import COMMIT_SUFFIX, COMMITS, hour_dirs, is_commit_name

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class MovedAside:
    """A file recovery took out of the store, and why."""

    path: Path
    moved_to: Path
    reason: str


def finish_interrupted_compactions(root: Path) -> list[str]:
    """Complete or undo compactions a crash cut short; returns one line per partition touched.

    The swap is: build `.hour=HH.compact`, rename `hour=HH` to `.hour=HH.old`, rename the compact
    directory to `hour=HH`, delete `.hour=HH.old`. Whatever step the crash hit, one of the two
    complete versions of the hour survives, never both (which would double every row).
    """
    done: list[str] = []
    for table in TABLES:
        for date_dir in date_dirs(root, table):
            for staged in sorted(date_dir.glob(".hour=??.compact")):
                live = date_dir / staged.name[1:-len(".compact")]
                old = date_dir / f".{live.name}.old"
                if live.exists():
                    shutil.rmtree(staged)  # the crash came before the swap: the originals are intact
                    done.append(f"{staged}: unfinished compaction discarded, the hour's files are intact")
                elif old.exists():
                    os.rename(staged, live)  # the crash came between the two renames
                    done.append(f"{live}: interrupted compaction completed")
            for old in sorted(date_dir.glob(".hour=??.old")):
                if (date_dir / old.name[1:-len(".old")]).exists():
                    shutil.rmtree(old)
                    done.append(f"{old}: files replaced by a compaction removed")
    for line in done:
        log.warning("store recovery: %s", line)
    return done


def _problem(path: Path, now: float, temp_grace: float) -> str | None:
    """Why `path` must leave the store, or None when it is fine (or a write still in flight)."""
    name = path.name
    if name.startswith(".") and name.endswith(".tmp"):
        age = now - path.stat().st_mtime
        # A young temp file is most likely a collection writing right now.
        return f"temp file left by an interrupted write ({age:.0f}s old)" if age > temp_grace else None
    if not is_data_file(path):
        return None
    if path.stat().st_size == 0:
        return "zero-length Parquet file (the write never reached the disk)"
    try:
        pq.read_metadata(path)
    except Exception as exc:  # pyarrow raises ArrowInvalid, OSError...: all mean unreadable
        return f"unreadable Parquet file: {exc}"
    return None


def move_aside_broken(root: Path, partitions: list[HourPartition], temp_grace: float) -> list[MovedAside]:
    """Move partial and unreadable files of `partitions` to the quarantine; log each one."""
    moved: list[MovedAside] = []
    now = time.time()
    for part in partitions:
        for path in sorted(part.path.iterdir()):
            if not path.is_file():
                continue
            reason = _problem(path, now, temp_grace)
            if reason is None:
                continue
            target = root / QUARANTINE / path.relative_to(root)
            target.parent.mkdir(parents=True, exist_ok=True)
            os.replace(path, target)
            moved.append(MovedAside(path, target, reason))
            log.warning(
                "store recovery: %s: %s; moved aside to %s (the rows of that collection cycle are lost)",
                path, reason, target,
            )
    return moved


def clean_commit_markers(root: Path, temp_grace: float) -> list[str]:
    """Delete marker temp files older than `temp_grace` seconds and move zero-length markers aside; one line each."""
    done: list[str] = []
    now = time.time()
    for _, directory in hour_dirs(root, COMMITS):
        with os.scandir(directory) as entries:
            found = [(entry.name, Path(entry.path)) for entry in entries if entry.is_file()]
        for name, path in sorted(found):
            if name.startswith(".") and name.endswith(f"{COMMIT_SUFFIX}.tmp"):
                # A young one is most likely a cycle committing right now.
                if now - path.stat().st_mtime > temp_grace:
                    path.unlink(missing_ok=True)
                    done.append(f"{path}: marker temp file left by an interrupted commit removed (that cycle "
                                "is never folded; its files stay for the reference path)")
            elif is_commit_name(name) and path.stat().st_size == 0:
                # Renamed before its bytes reached the disk, then power lost: a reader would warn about it
                # on every listing.
                target = root / QUARANTINE / path.relative_to(root)
                target.parent.mkdir(parents=True, exist_ok=True)
                os.replace(path, target)
                done.append(f"{path}: zero-length commit marker moved aside to {target}")
    for line in done:
        log.warning("store recovery: %s", line)
    return done
