"""The coordination service as the daemon runs it: started with its schema, renewing, stopped cleanly;
a single node's coordinator lives in the daemon's own state file beside its tables."""

from __future__ import annotations

import asyncio
from pathlib import Path

from config.ha import HaConfig
from daemon.alerts.db import StateDB
from daemon.coordination.factory import service_for
from tests.helpers.clock import ManualClock
from tests.helpers.postgres import PASSWORD, PostgresServer


def test_a_single_node_runs_its_lease_in_its_state_file_and_gives_it_up_at_stop(tmp_path: Path) -> None:
    state = StateDB(tmp_path / "state.db")  # the daemon's own tables, opened first as the daemon does

    async def main() -> None:
        clock = ManualClock()
        service = service_for(None, tmp_path / "state.db", clock)
        await service.start()
        while service.keeper.renewals < 1:
            await asyncio.sleep(0)
        status = service.status()
        assert status.holding and status.may_send and status.epoch == 1 and status.holder == status.me
        assert status.last_error is None and status.expires_at is not None
        await service.stop()
        assert not service.status().holding

    asyncio.run(main())
    tables = {r[0] for r in state.query("SELECT name FROM sqlite_master WHERE type = 'table'")}
    assert {"coord_lease", "coord_log", "coord_sends", "coord_incidents", "outbox", "incidents"} <= tables
    [lease] = state.query("SELECT expires_at, renewed_at FROM coord_lease")
    assert lease["expires_at"] <= lease["renewed_at"] + 1e-6, "given up at stop: a restart takes it at once"
    state.close()


def test_an_ha_daemon_starts_while_postgres_is_down_and_takes_part_once_it_answers(
        postgres: PostgresServer, postgres_dsn: str) -> None:
    ha = HaConfig(connection=postgres_dsn.replace(f" password={PASSWORD}", ""), password_env="RW_PG_PASSWORD",
                  node="ops-2", timeout=2)

    async def until(condition, what: str) -> None:
        for _ in range(3000):  # each step yields to the service's task; PostgreSQL answers in real time
            if condition():
                return
            await asyncio.sleep(0.01)
        raise AssertionError(f"{what} did not happen")

    async def main() -> None:
        clock = ManualClock()
        service = service_for(ha, Path("unused"), clock, env={"RW_PG_PASSWORD": PASSWORD})
        postgres.stop()
        try:
            await service.start()
            status = service.status()
            assert not status.holding and status.last_error is not None and "PostgreSQL 127.0.0.1" in status.last_error
        finally:
            postgres.start()
        await until(lambda: clock.sleeping, "the service waiting for its next attempt")
        clock.advance(5)  # the next attempt opens it, migrates, and claims the lease
        await until(lambda: service.keeper.renewals >= 1, "the first claim after PostgreSQL came back")
        status = service.status()
        assert status.holding and not status.may_send and status.last_error is None and status.holder == status.me
        await service.stop()

    asyncio.run(main())


def test_an_unexpected_renewal_error_is_reported_and_renewals_go_on(tmp_path: Path) -> None:
    async def main() -> None:
        clock = ManualClock()
        service = service_for(None, tmp_path / "state.db", clock)
        await service.start()
        while service.keeper.renewals < 1:
            await asyncio.sleep(0)
        async with service.coordinator.transaction() as tx:  # someone dropped the table under the daemon
            await tx.run("ALTER TABLE coord_lease RENAME TO coord_lease_aside")
        clock.advance(5)
        while service.keeper.failures < 1:
            await asyncio.sleep(0)
        assert "no such table: coord_lease" in service.status().last_error
        async with service.coordinator.transaction() as tx:
            await tx.run("ALTER TABLE coord_lease_aside RENAME TO coord_lease")
        while not clock.sleeping:
            await asyncio.sleep(0)
        clock.advance(5)
        while service.keeper.renewals < 2:
            await asyncio.sleep(0)
        assert service.status().holding and service.status().last_error is None
        await service.stop()

    asyncio.run(main())
