"""Append collected rows to the Parquet sample store, one file per table per cycle."""

from __future__ import annotations

import os
import uuid
from collections.abc import Iterable, Mapping
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq

from rules.tables import BOOL, FLOAT64, INT32, INT64, STRING, TIMESTAMP, Table, get_table

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


def partition_dir(root: Path, table: str, ts: datetime) -> Path:
    """Where the rows of `table` taken at `ts` live: <root>/<table>/date=…/hour=…."""
    ts = ts.astimezone(UTC)
    return root / table / f"date={ts:%Y-%m-%d}" / f"hour={ts:%H}"


class ParquetStore:
    """The sample store on local disk: atomic appends, Hive-style date/hour partitions."""

    def __init__(self, root: str | os.PathLike[str]) -> None:
        self.root = Path(root)

    def append(self, table_name: str, rows: Iterable[Mapping[str, Any]], ts: datetime) -> Path | None:
        """Write rows as one new file in the partition of `ts`; returns its path (None if no rows).

        Rows are dicts keyed by column name; missing nullable columns become null. The file is
        written under a temporary name and renamed, so a reader never sees half a file.
        """
        table = get_table(table_name)
        rows = list(rows)
        if not rows:
            return None
        schema = arrow_schema(table)
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
        batch = pa.table(columns, schema=schema)
        target_dir = partition_dir(self.root, table_name, ts)
        target_dir.mkdir(parents=True, exist_ok=True)
        name = f"{ts.astimezone(UTC):%Y%m%dT%H%M%S%f}-{uuid.uuid4().hex[:8]}.parquet"
        tmp = target_dir / f".{name}.tmp"
        pq.write_table(batch, tmp)
        final = target_dir / name
        os.replace(tmp, final)
        return final

    def append_all(self, tables: Mapping[str, Iterable[Mapping[str, Any]]], ts: datetime) -> dict[str, int]:
        """Append each table's rows; returns the number of rows written per table."""
        written: dict[str, int] = {}
        for name, rows in tables.items():
            rows = list(rows)
            self.append(name, rows, ts)
            written[name] = len(rows)
        return written
