"""Fixtures shared by the whole suite: one SparkSession for every test, and a throwaway sample store.

Every test that starts Spark carries the `spark` marker, so `pytest -m "not spark"` runs the rest
quickly: the tests that use the `spark` fixture (directly or through another fixture) and the
acceptance tests (their daemon or `rocketwatch eval` subprocess evaluates rules on Spark) get it
here; a test that starts Spark some other way is marked where it is written.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest

from daemon.store.writer import ParquetStore

# A real PostgreSQL on loopback for the HA coordinator's tests (fixtures postgres_server, postgres, postgres_dsn).
pytest_plugins = ["tests.helpers.postgres"]

# No daemon or diagnose under test starts a class-archive warm-up in the background (it would compete
# with the tests for the cores); they start from the archive `make test` writes first, when there is one.
os.environ.setdefault("ROCKETWATCH_CLASS_ARCHIVE", "off")

# Tests that start Spark in a subprocess without the fixture, in files edited by another change right
# now: marked from here until their own file says `@pytest.mark.spark`.
STARTS_SPARK = {
    "tests/daemon/diagnose/test_cli.py::test_first_run_leaves_a_class_archive_the_next_run_starts_from",
}


# Run first, in the shared session's young JVM: the differential walk took 472 s run alone and
# 678 s after the ~1,450 tests before it (the fresh-clone run of session 22).
RUN_FIRST = "tests/spark/test_incremental.py"


@pytest.hookimpl(tryfirst=True)  # before `-m` deselects by markers
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    for item in items:
        if (
            "spark" in getattr(item, "fixturenames", ())
            or item.get_closest_marker("acceptance")
            or item.nodeid.split("[", 1)[0] in STARTS_SPARK
        ):
            item.add_marker(pytest.mark.spark)
    items.sort(key=lambda item: not item.nodeid.startswith(RUN_FIRST))  # stable: the rest keep their order


@pytest.fixture(scope="session")
def spark() -> Iterator[object]:
    """The process-wide SparkSession (local[2]), as the daemon starts it; started once, on first use, for the whole run."""
    # Imported here so test runs that never touch Spark never start a JVM.
    from daemon.diagnose.warmup import daemon_session_conf
    from spark.session import get_session

    yield get_session("local[2]", daemon_session_conf("local[2]", {}))


@pytest.fixture
def store(tmp_path: Path) -> ParquetStore:
    """An empty ParquetStore under the test's tmp_path."""
    return ParquetStore(tmp_path / "store")
