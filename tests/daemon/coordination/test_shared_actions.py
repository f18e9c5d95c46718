"""Silences and acknowledgements shared between two daemons through the coordinator (SQLite and PostgreSQL):
each daemon's state file first, mirrored both ways, the newer update of a row winning."""

from __future__ import annotations

import asyncio
from datetime import timedelta
from pathlib import Path

import pytest

from daemon.alerts.action_mirror import ActionMirror, mirror_actions
from daemon.alerts.db import StateDB
from daemon.alerts.group_actions import ACK, SILENCE_UNTIL_RESOLVED, GroupActionStore
from daemon.alerts.silences import SilenceStore
from daemon.coordination.model import Coordinator, CoordinatorUnavailable
from daemon.coordination.postgres import PostgresCoordinator
from daemon.coordination.service import CoordinationService
from daemon.coordination.shared_actions import SharedActions
from tests.daemon.coordination.conftest import Connect, run_pair
from tests.daemon.coordination.test_lease import keepers
from tests.helpers.clock import ManualClock
from tests.helpers.postgres import PostgresServer

ORDERS = ['cluster="prod"', 'group="orders"']
GROUP_KEY = "ConsumerLag|prod|orders"


class Daemon:
    """One daemon's side: its own state file, its stores and its mirror through its coordinator."""

    def __init__(self, path: Path, coordinator: Coordinator, node: str) -> None:
        self.db = StateDB(path)
        self.silences = SilenceStore(self.db)
        self.actions = GroupActionStore(self.db)
        self.mirror = ActionMirror(self.db, SharedActions(coordinator, node), interval=1.0)

    def listed(self, clock: ManualClock) -> list[dict]:
        """The silences as its status page and /api/silences list them."""
        return [s.to_json(clock.now) for s in self.silences.all()]


def pair(tmp_path: Path, a: Coordinator, b: Coordinator) -> tuple[Daemon, Daemon]:
    """Daemons A and B, each with its own state file."""
    return Daemon(tmp_path / "a.db", a, "node-a/1"), Daemon(tmp_path / "b.db", b, "node-b/1")


def test_a_silence_made_on_one_daemon_is_listed_alike_and_honoured_on_the_other(
        connect: Connect, tmp_path: Path) -> None:
    async def scenario(clock: ManualClock, ca: Coordinator, cb: Coordinator) -> None:
        a, b = pair(tmp_path, ca, cb)
        made = a.silences.add(ORDERS, clock.now, clock.now + timedelta(hours=2), "ana", "broker upgrade", clock.now)
        await b.mirror.sync()
        assert b.listed(clock) == [], "not offered yet: A has not synced"
        await a.mirror.sync()
        await b.mirror.sync()
        assert b.listed(clock) == a.listed(clock) and b.listed(clock)[0]["id"] == made.id
        labels = {"cluster": "prod", "group": "orders", "alertname": "ConsumerLag"}
        assert any(s.mutes(labels, clock.now) for s in b.silences.active(clock.now))
        # Expired on B (say `rocketwatch silence expire` there): A stops honouring it after its next sync.
        clock.advance(60)
        b.silences.expire(made.id, clock.now)
        await b.mirror.sync()
        await a.mirror.sync()
        assert not a.silences.active(clock.now) and a.listed(clock) == b.listed(clock)
        assert a.listed(clock)[0]["state"] == "expired"
        # Nothing more to offer: a sync writes nothing and changes nothing.
        before = (await a.mirror.shared.changes(0)).version
        await a.mirror.sync()
        await b.mirror.sync()
        assert (await a.mirror.shared.changes(0)).version == before and a.listed(clock) == b.listed(clock)

    run_pair(connect, scenario)


def test_the_newer_update_wins_whichever_daemon_offers_it_first(connect: Connect, tmp_path: Path) -> None:
    async def scenario(clock: ManualClock, ca: Coordinator, cb: Coordinator) -> None:
        a, b = pair(tmp_path, ca, cb)
        made = a.silences.add(ORDERS, clock.now, clock.now + timedelta(hours=2), "ana", "upgrade", clock.now)
        await a.mirror.sync()
        await b.mirror.sync()
        # Both expire it, neither having synced: B later than A. A offers last, yet B's end stands.
        clock.advance(10)
        a.silences.expire(made.id, clock.now)
        clock.advance(10)
        b_end = b.silences.expire(made.id, clock.now).ends_at
        await asyncio.gather(a.mirror.sync(), b.mirror.sync())  # offered at once
        await asyncio.gather(a.mirror.sync(), b.mirror.sync())
        assert [s.ends_at for s in a.silences.all()] == [s.ends_at for s in b.silences.all()] == [b_end]

    run_pair(connect, scenario)


def test_an_acknowledgement_on_one_daemon_shows_on_the_other_and_ends_when_the_holder_sees_it_resolve(
        connect: Connect, tmp_path: Path) -> None:
    async def scenario(clock: ManualClock, ca: Coordinator, cb: Coordinator) -> None:
        a, b = pair(tmp_path, ca, cb)
        b.actions.record(GROUP_KEY, ACK, "bob", ORDERS, clock.now)
        silence = b.silences.add(ORDERS, clock.now, clock.now + timedelta(days=7), "bob (Slack)", "until resolved",
                                 clock.now)
        b.actions.record(GROUP_KEY, SILENCE_UNTIL_RESOLVED, "bob", ORDERS, clock.now, silence.id)
        await b.mirror.sync()
        await a.mirror.sync()
        assert a.actions.acknowledged(GROUP_KEY) is not None
        assert a.actions.notes(GROUP_KEY) == b.actions.notes(GROUP_KEY) and len(a.actions.notes(GROUP_KEY)) == 2
        # The group resolves. B does not hold the lease: its view does not end anything.
        clock.advance(120)
        b.actions.may_close = lambda: False
        assert b.actions.close_resolved([], b.silences, clock.now) == []
        # A holds it: the group's actions end, its until-resolved silence expires, and B follows.
        assert len(a.actions.close_resolved([], a.silences, clock.now)) == 2
        await a.mirror.sync()
        await b.mirror.sync()
        assert b.actions.all() == [] and not b.silences.active(clock.now)
        # It fires again and is acknowledged afresh on A: the new acknowledgement reaches B, the old end does not
        # come back on either side.
        clock.advance(300)
        a.actions.record(GROUP_KEY, ACK, "ana", ORDERS, clock.now)
        await a.mirror.sync()
        await b.mirror.sync()
        await a.mirror.sync()
        assert [x.actor for x in b.actions.all()] == [x.actor for x in a.actions.all()] == ["ana"]

    run_pair(connect, scenario)


def test_a_silence_made_while_postgres_is_away_holds_locally_and_reaches_the_other_daemon_once_it_is_back(
        postgres: PostgresServer, postgres_dsn: str, tmp_path: Path) -> None:
    async def main() -> None:
        clock = ManualClock()
        ca, cb = (PostgresCoordinator(postgres_dsn, clock, timeout=2.0) for _ in range(2))
        await asyncio.gather(ca.open(), cb.open())
        a, b = pair(tmp_path, ca, cb)
        try:
            postgres.stop()
            made = a.silences.add(ORDERS, clock.now, clock.now + timedelta(hours=1), "ana", "failover drill", clock.now)
            labels = {"cluster": "prod", "group": "orders"}
            assert any(s.mutes(labels, clock.now) for s in a.silences.active(clock.now)), "in force here at once"
            with pytest.raises(CoordinatorUnavailable):
                await a.mirror.sync()
            postgres.start()
            await a.mirror.sync()
            await b.mirror.sync()
            assert [s["id"] for s in b.listed(clock)] == [made.id] and b.listed(clock) == a.listed(clock)
        finally:
            await ca.close()
            await cb.close()

    asyncio.run(main())


def test_only_the_lease_holder_ends_a_groups_actions_and_its_end_reaches_the_standby(
        connect: Connect, tmp_path: Path) -> None:
    async def scenario(clock: ManualClock, ca: Coordinator, cb: Coordinator) -> None:
        ka, kb = keepers(clock, ca, cb)
        a_db, b_db = StateDB(tmp_path / "a.db"), StateDB(tmp_path / "b.db")
        a_silences, b_silences = SilenceStore(a_db), SilenceStore(b_db)
        a_actions, b_actions = GroupActionStore(a_db), GroupActionStore(b_db)
        a_service, b_service = CoordinationService(ca, ka), CoordinationService(cb, kb)
        a_service.opened = b_service.opened = True  # opened by run_pair
        a = mirror_actions(a_db, a_silences, a_actions, a_service, interval=1.0)
        b = mirror_actions(b_db, b_silences, b_actions, b_service, interval=1.0)
        assert await ka.renew() and await kb.renew() is False  # A holds, B stands by
        a_actions.record(GROUP_KEY, ACK, "ana", ORDERS, clock.now)
        await a.sync()
        await b.sync()
        clock.advance(5)
        assert await ka.renew() and await kb.renew() is False
        # The group has no active alert on either: the standby's view ends nothing, the holder's does.
        assert b_actions.close_resolved([], b_silences, clock.now) == [] and b_actions.acknowledged(GROUP_KEY)
        assert [x.actor for x in a_actions.close_resolved([], a_silences, clock.now)] == ["ana"]
        await a.sync()
        await b.sync()
        assert b_actions.acknowledged(GROUP_KEY) is None and a_actions.all() == b_actions.all() == []

    run_pair(connect, scenario)
