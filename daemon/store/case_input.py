"""A rule test case's input series written into a store, from START (rule tests, runbook-text tests, diagnose's warm-up)."""

from __future__ import annotations

from collections import defaultdict
from datetime import UTC, datetime, timedelta
from typing import Any

from daemon.store.writer import ParquetStore
from rules.tables import TABLES
from rules.testing import RuleTestCase, series_rows

START = datetime(2026, 1, 1, tzinfo=UTC)


def write_case_input(store: ParquetStore, case: RuleTestCase, interval: timedelta) -> None:
    """Write a test case's input series into a store, one file per table and hour, from START."""
    by_table_hour: dict[tuple[str, datetime], list[dict[str, Any]]] = defaultdict(list)
    for table_name, series_list in case.input.items():
        for series in series_list:
            for row in series_rows(TABLES[table_name], series, START, interval):
                hour = row["ts"].replace(minute=0, second=0, microsecond=0)
                by_table_hour[(table_name, hour)].append(row)
    for (table_name, hour), rows in sorted(by_table_hour.items()):
        store.append(table_name, rows, hour)
