"""Column and table declarations: the types every sample table and view is declared with.

Imports neither pyarrow nor pyspark (`rocketwatch check` runs without a JVM).
"""

from __future__ import annotations

from dataclasses import dataclass, field

# Logical column types; each side (pyarrow, Spark) maps them to its own.
STRING = "string"
INT32 = "int32"
INT64 = "int64"
FLOAT64 = "float64"
BOOL = "bool"
TIMESTAMP = "timestamp"  # UTC, microsecond precision

COLUMN_TYPES = (STRING, INT32, INT64, FLOAT64, BOOL, TIMESTAMP)


@dataclass(frozen=True)
class Column:
    """One column of a sample table."""

    name: str
    type: str
    description: str
    unit: str = ""
    nullable: bool = False
    # Derived columns are not stored: Spark computes them from this expression (rule syntax).
    derived: str | None = None


@dataclass(frozen=True)
class Table:
    """A sample table: its columns and the key that identifies one series."""

    name: str
    description: str
    columns: tuple[Column, ...]
    key: tuple[str, ...]
    source: str = ""
    _by_name: dict[str, Column] = field(default_factory=dict, compare=False, repr=False)

    def __post_init__(self) -> None:
        self._by_name.update({c.name: c for c in self.columns})

    def column(self, name: str) -> Column | None:
        """The column called `name`, or None."""
        return self._by_name.get(name)

    @property
    def stored_columns(self) -> tuple[Column, ...]:
        """Columns written to Parquet (everything but derived ones)."""
        return tuple(c for c in self.columns if c.derived is None)

    @property
    def derived_columns(self) -> tuple[Column, ...]:
        """Columns Spark computes at read time."""
        return tuple(c for c in self.columns if c.derived is not None)

    @property
    def column_names(self) -> tuple[str, ...]:
        """Every column a rule may name, stored and derived."""
        return tuple(c.name for c in self.columns)


def common_columns() -> tuple[Column, ...]:
    """The columns every table and view starts with: ts and cluster."""
    return (
        Column("ts", TIMESTAMP, "UTC time the collector took this sample"),
        Column("cluster", STRING, "cluster name as configured (or as the namesrv reports it)"),
    )
