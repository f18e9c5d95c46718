"""Incident ids through a coordinator that comes and goes: agreed when it answers, claimed once it is back."""

from __future__ import annotations

import asyncio

from daemon.coordination.incident_ids import IncidentIds
from daemon.coordination.postgres import PostgresCoordinator
from tests.helpers.clock import ManualClock
from tests.helpers.postgres import PostgresServer

ORDERS = {"cluster": "prod", "group": "orders"}
PAYMENTS = {"cluster": "prod", "group": "payments"}


def test_ids_opened_while_postgres_is_down_are_claimed_or_renamed_once_it_is_back(
        postgres: PostgresServer, postgres_dsn: str) -> None:
    async def main() -> None:
        clock = ManualClock()
        a_db, b_db = (PostgresCoordinator(postgres_dsn, clock, timeout=2.0) for _ in range(2))
        await asyncio.gather(a_db.open(), b_db.open())
        a, b = IncidentIds(a_db, "node-a/1"), IncidentIds(b_db, "node-b/1")
        try:
            first = await a.open(ORDERS, "prod/orders@03:00:00", clock.now)
            assert await b.open(ORDERS, "prod/orders@03:00:12", clock.now) == first == "prod/orders@03:00:00"
            postgres.stop()
            # Away: each daemon names what it sees by itself, and what ends is remembered.
            assert await a.open(PAYMENTS, "prod/payments@03:01:00", clock.now) == "prod/payments@03:01:00"
            assert await b.open(PAYMENTS, "prod/payments@03:01:09", clock.now) == "prod/payments@03:01:09"
            await b.resolve(first, clock.now)
            assert await a.reconcile() == {} and a.unclaimed, "still away: nothing claimed, nothing lost"
            postgres.start()
            assert await a.reconcile() == {}, "A claimed first: its id stands"
            assert await b.reconcile() == {"prod/payments@03:01:09": "prod/payments@03:01:00"}
            assert not a.unclaimed and not b.unclaimed and not b.unresolved
            # The resolve B remembered reached the table: the next alert at orders opens a new incident.
            assert await a.open(ORDERS, "prod/orders@03:05:00", clock.now) == "prod/orders@03:05:00"
        finally:
            await a_db.close()
            await b_db.close()

    asyncio.run(main())


def test_an_incident_opened_and_ended_while_away_never_closes_anothers(
        postgres: PostgresServer, postgres_dsn: str) -> None:
    async def main() -> None:
        clock = ManualClock()
        a_db, b_db = (PostgresCoordinator(postgres_dsn, clock, timeout=2.0) for _ in range(2))
        await asyncio.gather(a_db.open(), b_db.open())
        a, b = IncidentIds(a_db, "node-a/1"), IncidentIds(b_db, "node-b/1")
        try:
            postgres.stop()
            local = await a.open(ORDERS, "prod/orders@03:00:00", clock.now)
            await a.resolve(local, clock.now)  # a blip on A alone, over before the coordinator returned
            postgres.start()
            theirs = await b.open(ORDERS, "prod/orders@03:00:30", clock.now)
            assert await a.reconcile() == {}
            assert await a.open(ORDERS, "prod/orders@03:02:00", clock.now) == theirs, "B's incident is still open"
        finally:
            await a_db.close()
            await b_db.close()

    asyncio.run(main())
