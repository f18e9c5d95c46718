"""Spark schemas of the sample tables, derived from rules.tables."""

from __future__ import annotations

from pyspark.sql.types import (
    BooleanType,
    DataType,
    DoubleType,
    IntegerType,
    LongType,
    StringType,
    StructField,
    StructType,
    TimestampType,
)

from rules.tables import BOOL, FLOAT64, INT32, INT64, STRING, TIMESTAMP, Table

SPARK_TYPES: dict[str, DataType] = {
    STRING: StringType(),
    INT32: IntegerType(),
    INT64: LongType(),
    FLOAT64: DoubleType(),
    BOOL: BooleanType(),
    TIMESTAMP: TimestampType(),
}


def stored_schema(table: Table) -> StructType:
    """The StructType of the columns written to Parquet (derived columns excluded)."""
    return StructType(
        [StructField(c.name, SPARK_TYPES[c.type], nullable=c.nullable) for c in table.stored_columns]
    )

# The SQL names of the catalog's types, for CASTs in SQL text (spark/views.py).
SQL_TYPES: dict[str, str] = {name: data_type.simpleString().upper() for name, data_type in SPARK_TYPES.items()}
