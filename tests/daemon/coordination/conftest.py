"""Two daemons' coordinators on one shared database, on a clock the test moves: PostgreSQL and SQLite alike."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from pathlib import Path

import pytest

from daemon.coordination.model import Coordinator
from daemon.coordination.postgres import PostgresCoordinator
from daemon.coordination.sqlite import SqliteCoordinator
from tests.helpers.clock import ManualClock

Connect = Callable[[ManualClock], Coordinator]
Scenario = Callable[[ManualClock, Coordinator, Coordinator], Awaitable[None]]


@pytest.fixture(params=["sqlite", "postgres"])
def connect(request: pytest.FixtureRequest, tmp_path: Path) -> Connect:
    """A factory of coordinators over one database: the state file for SQLite, a fresh PostgreSQL database."""
    if request.param == "sqlite":
        path = tmp_path / "state.db"
        return lambda clock: SqliteCoordinator(path, clock)
    dsn = request.getfixturevalue("postgres_dsn")
    return lambda clock: PostgresCoordinator(dsn, clock, timeout=5.0)


def run_pair(connect: Connect, scenario: Scenario) -> None:
    """Open two coordinators together (as two daemons starting at once), run the scenario, close them."""

    async def main() -> None:
        clock = ManualClock()
        a, b = connect(clock), connect(clock)
        await asyncio.gather(a.open(), b.open())
        try:
            await scenario(clock, a, b)
        finally:
            await a.close()
            await b.close()

    asyncio.run(main())
