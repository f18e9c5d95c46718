"""Fixtures shared by the whole suite: one SparkSession for every test, and a throwaway sample store."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from daemon.store.writer import ParquetStore


@pytest.fixture(scope="session")
def spark() -> Iterator[object]:
    """The process-wide SparkSession (local[2]); started once, on first use, for the whole run."""
    # Imported here so test runs that never touch Spark never start a JVM.
    from spark.session import get_session

    yield get_session("local[2]")


@pytest.fixture
def store(tmp_path: Path) -> ParquetStore:
    """An empty ParquetStore under the test's tmp_path."""
    return ParquetStore(tmp_path / "store")
