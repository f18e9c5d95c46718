"""Compaction: the many per-cycle files of a closed hour rewritten as one file, sorted by time.

A day of 30 s cycles is 2,880 files per table; Spark pays per file opened, so an hour read as one
file is what keeps long windows (growth over 1h, churn) cheap. The swap is crash-safe (see
daemon/store/recovery.py) and the caller keeps evaluations out while it runs, so a reader never
sees an hour twice or half.
"""

from __future__ import annotations

import logging
import os
import shutil
import uuid
from dataclasses import dataclass

import pyarrow as pa
import pyarrow.parquet as pq

from daemon.store.layout import HourPartition
from daemon.store.writer import arrow_schema
from rules.tables import get_table

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class Compacted:
    """One hour partition rewritten."""

    partition: HourPartition
    files_before: int
    rows: int
    bytes_before: int
    bytes_after: int


def _conform(table: pa.Table, schema: pa.Schema) -> pa.Table:
    """`table` in the catalog's current schema: a column added since is null, a dropped one goes."""
    columns = []
    for f in schema:
        if f.name in table.column_names:
            columns.append(table.column(f.name).cast(f.type))
        else:
            columns.append(pa.nulls(table.num_rows, type=f.type))
    return pa.Table.from_arrays(columns, schema=schema)


def compact_partition(part: HourPartition) -> Compacted | None:
    """Rewrite the partition's files as one; None when there is nothing to merge or it cannot be read."""
    files = part.data_files()
    if len(files) < 2:
        return None
    schema = arrow_schema(get_table(part.table))
    bytes_before = sum(p.stat().st_size for p in files)
    try:
        merged = pa.concat_tables([_conform(pq.read_table(p), schema) for p in files]).sort_by("ts")
    except Exception as exc:  # an unreadable file or a column whose type cannot be cast
        log.error("store compaction: %s: cannot merge its %d files, left as they are: %s", part.path, len(files), exc)
        return None
    staged = part.path.parent / f".{part.path.name}.compact"
    old = part.path.parent / f".{part.path.name}.old"
    if staged.exists():
        shutil.rmtree(staged)
    staged.mkdir()
    out = staged / f"{part.start:%Y%m%dT%H}0000000000-compacted-{uuid.uuid4().hex[:8]}.parquet"
    pq.write_table(merged, out, compression="zstd")
    with open(out, "rb") as handle:  # on disk before the swap, or a power cut could leave it empty
        os.fsync(handle.fileno())
    bytes_after = out.stat().st_size
    # Files written into the hour after we listed it (a late cycle) must survive the swap.
    for late in set(part.data_files()) - set(files):
        os.replace(late, staged / late.name)
    os.rename(part.path, old)
    os.rename(staged, part.path)
    shutil.rmtree(old)
    result = Compacted(part, len(files), merged.num_rows, bytes_before, bytes_after)
    log.info(
        "store compaction: %s: %d files -> 1 (%d rows, %d -> %d bytes)",
        part.path, result.files_before, result.rows, result.bytes_before, result.bytes_after,
    )
    return result
