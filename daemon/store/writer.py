"""Append collected rows to the Parquet sample store: one file per table per cycle, then the cycle's commit marker."""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping
from datetime import datetime
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq

from rules.tables import BOOL, FLOAT64, INT32, INT64, STRING, TIMESTAMP, Table, get_table
from spark.store_layout import DATA_SUFFIX, cycle_name, partition_dir, write_commit

__all__ = ["ParquetStore", "arrow_schema", "partition_dir"]

_ARROW_TYPES: dict[str, pa.DataType] = {
    STRING: pa.string(),
    INT32: pa.int32(),
    INT64: pa.int64(),
    FLOAT64: pa.float64(),
    BOOL: pa.bool_(),
    TIMESTAMP: pa.timestamp("us", tz="UTC"),
}


def arrow_schema(table: Table) -> pa.Schema:
    """The pyarrow schema of a table's stored columns."""
    return pa.schema(
        [pa.field(c.name, _ARROW_TYPES[c.type], nullable=c.nullable) for c in table.stored_columns]
    )


def _batch(table_name: str, rows: list[Mapping[str, Any]]) -> pa.Table:
    """Rows as an Arrow table of the catalog's schema; ValueError naming the row and column of a missing value."""
    schema = arrow_schema(get_table(table_name))
    columns: dict[str, list[Any]] = {f.name: [] for f in schema}
    for i, row in enumerate(rows):
        for f in schema:
            value = row.get(f.name)
            if value is None and not f.nullable:
                raise ValueError(
                    f"{table_name} row {i}: column {f.name!r} is required but missing "
                    f"(row keys: {', '.join(sorted(row))})"
                )
            columns[f.name].append(value)
    return pa.table(columns, schema=schema)


class ParquetStore:
    """The sample store on local disk: atomic appends, Hive-style date/hour partitions, a commit per cycle."""

    def __init__(self, root: str | os.PathLike[str]) -> None:
        self.root = Path(root)

    def _write(self, table_name: str, batch: pa.Table, ts: datetime) -> Path:
        # Written under a temporary name and renamed, so a reader never sees half a file.
        target_dir = partition_dir(self.root, table_name, ts)
        target_dir.mkdir(parents=True, exist_ok=True)
        name = cycle_name(ts, DATA_SUFFIX)
        tmp = target_dir / f".{name}.tmp"
        pq.write_table(batch, tmp)
        final = target_dir / name
        os.replace(tmp, final)
        return final

    def append(self, table_name: str, rows: Iterable[Mapping[str, Any]], ts: datetime) -> Path | None:
        """Write rows as one new file in the partition of `ts`, then its one-table commit; returns the
        file's path (None, and no commit, if no rows).

        Rows are dicts keyed by column name; missing nullable columns become null.
        """
        rows = list(rows)
        if not rows:
            return None
        path = self._write(table_name, _batch(table_name, rows), ts)
        write_commit(self.root, ts, {table_name: [path]}, {table_name: len(rows)}, _clusters(rows))
        return path

    def append_all(self, tables: Mapping[str, Iterable[Mapping[str, Any]]], ts: datetime) -> dict[str, int]:
        """Append one collection cycle (each table's rows) and commit it; returns the rows written per table.

        Every table is checked before anything is written, so invalid rows write nothing; the marker
        comes after every file, so a crash in between leaves files no commit names (the evaluator
        never folds them; the reference path of `eval --at` and `replay` reads them). A cycle without rows commits nothing.
        """
        rows_by_table = {name: list(rows) for name, rows in tables.items()}
        batches = {name: _batch(name, rows) for name, rows in rows_by_table.items() if rows}
        files = {name: [self._write(name, batch, ts)] for name, batch in batches.items()}
        written = {name: len(rows) for name, rows in rows_by_table.items()}
        if batches:
            # Tables with no rows are listed with no files: the cycle asked and found nothing.
            write_commit(self.root, ts, {name: files.get(name, []) for name in rows_by_table}, written,
                         (c for rows in rows_by_table.values() for c in _clusters(rows)))
        return written


def _clusters(rows: Iterable[Mapping[str, Any]]) -> set[str]:
    return {row["cluster"] for row in rows}
