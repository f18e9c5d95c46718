"""Two daemons fed the same alerts, one PostgreSQL, real Slack stand-in and webhook receiver, one clock the
test moves: whatever happens to the holder, every change reaches each receiver once — no idempotency key
twice (no duplicate), every incident's firing, update and resolve (no loss), a Slack thread continued by
whoever holds the lease. The daemons never talk to each other, only to PostgreSQL: cutting them from
each other changes nothing, which the steady state shows."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from contextlib import ExitStack
from datetime import timedelta
from pathlib import Path

import pytest

from daemon.coordination.keys import idempotency_key
from daemon.notify.dispatcher import Dispatcher
from daemon.notify.outbox import Outbox
from tests.daemon.coordination.ha_world import END, GROUPS, World, expected_webhook, timeline_at, world
from tests.daemon.notify.conftest import TIMINGS
from tests.helpers.postgres import PostgresServer
from tests.helpers.tcp_proxy import TcpProxy

# Hundreds of steps of two daemons against a real PostgreSQL: seconds a test, so `make test-fast`
# leaves them to the full suite (the SQLite and single-call coordination tests stay in it).
pytestmark = pytest.mark.slow


def play(scenario: Callable[[World], Awaitable[None]], setup: Callable[[World], None]) -> World:
    """Build the world, run the scenario in it, close it; the world stays readable for the asserts."""
    with ExitStack() as stack:
        w = world(stack)
        setup(w)

        async def main() -> None:
            await w.open()
            try:
                await scenario(w)
            finally:
                await w.close()

        asyncio.run(main())
        return w


def assert_told_once(w: World) -> None:
    """Every change at every receiver, none twice, one Slack thread per incident."""
    assert w.webhook_sends() == expected_webhook()
    assert w.duplicate_keys() == {"slack": [], "hook": []}
    assert sum(w.slack_threads().values()) == 2 * GROUPS, w.slack_threads()  # one thread per incident


def test_steady_state_the_holder_tells_everything_once_and_the_standby_nothing(tmp_path: Path, postgres_dsn: str) -> None:
    async def scenario(w: World) -> None:
        a, b = w.nodes
        await w.run_until(END)
        assert a.keeper.epoch == 1 and b.keeper.epoch is None, "one holder from start to end: nothing moved"
        assert b.outbox.rows() == [], "the standby queued nothing"
        # Every key is derived from (receiver, group key, the shared log's number): any daemon names a send alike.
        sent = a.outbox.rows()
        assert sent and all(r.idempotency_key == idempotency_key(r.receiver, r.group_key, r.seq) for r in sent)
        assert sorted(w.hook.keys) == sorted(r.idempotency_key for r in sent if r.receiver == "hook")

    w = play(scenario, lambda w: (w.add("node-a", tmp_path, postgres_dsn), w.add("node-b", tmp_path, postgres_dsn)))
    assert_told_once(w)


def test_the_holder_dies_and_the_standby_tells_what_came_after_in_the_same_threads(
        tmp_path: Path, postgres_dsn: str) -> None:
    async def scenario(w: World) -> None:
        a, b = w.nodes

        def kill(t: float) -> None:
            if t == 160:  # kill -9: no release, no flush; updates of group-3..5 come while nobody sends
                a.running = False

        await w.run_until(END, kill)
        assert b.keeper.epoch == 2

    w = play(scenario, lambda w: (w.add("node-a", tmp_path, postgres_dsn), w.add("node-b", tmp_path, postgres_dsn)))
    assert_told_once(w)


def test_a_paused_holder_that_wakes_after_its_ttl_sends_nothing(tmp_path: Path, postgres_dsn: str) -> None:
    async def scenario(w: World) -> None:
        a, b = w.nodes

        async def pause_and_wake(t: float) -> None:
            now = w.clock.now
            if t == 165:  # SIGSTOP right after A numbered group-3's update, before it sent it
                events = a.tracker.update(TIMINGS, timeline_at(now), now)
                queued = await a.dispatcher.dispatch(events, a.tracker.active_alerts(), now)
                assert queued, "A queued group-3's update under the lease"
                a.running = False
            if t == 265:  # SIGCONT: its first act is a delivery, before any renewal tells it the news
                before = (len(w.hook.bodies), len(w.slack.calls))
                await a.step(now, renew_first=False)
                assert (len(w.hook.bodies), len(w.slack.calls)) == before, "a stale holder sent"
                assert a.outbox.rows(undelivered_only=True) == [], "what it had numbered was told by B: dropped"
                a.running = True

        await w.run_until(END, pause_and_wake)
        assert b.keeper.epoch == 2 and a.keeper.epoch is None

    w = play(scenario, lambda w: (w.add("node-a", tmp_path, postgres_dsn), w.add("node-b", tmp_path, postgres_dsn)))
    assert_told_once(w)


def test_the_holder_cut_from_postgres_stops_at_its_deadline_and_drops_what_the_other_told(
        tmp_path: Path, postgres: PostgresServer, postgres_dsn: str) -> None:
    with TcpProxy("127.0.0.1", postgres.port) as proxy:
        held: list[int] = []

        async def scenario(w: World) -> None:
            a, b = w.nodes

            def cut(t: float) -> None:
                if t == 160:
                    proxy.blackhole()  # Slack and the webhook stay reachable: only PostgreSQL goes silent
                if 160 < t <= 250:
                    held.append(a.outbox.held())
                if t == 250:
                    proxy.restore()

            await w.run_until(END, cut)
            assert b.keeper.epoch == 2 and a.keeper.epoch is None
            assert a.outbox.held() == 0

        def setup(w: World) -> None:
            w.add("node-a", tmp_path, postgres_dsn.replace(f"port={postgres.port}", f"port={proxy.port}"))
            w.add("node-b", tmp_path, postgres_dsn)

        w = play(scenario, setup)
    assert max(held) > 0, "cut off, A held what it would have sent"
    assert_told_once(w)


def test_postgres_stopped_and_started_everything_is_held_then_sent_once(
        tmp_path: Path, postgres: PostgresServer, postgres_dsn: str) -> None:
    held: list[tuple[int, int]] = []

    async def scenario(w: World) -> None:
        a, b = w.nodes

        def outage(t: float) -> None:
            if t == 160:
                postgres.stop()
            if 160 < t <= 250:
                held.append((a.outbox.held(), b.outbox.held()))
            if t == 250:
                postgres.start()

        await w.run_until(END, outage)
        assert (a.outbox.held(), b.outbox.held()) == (0, 0)

    w = play(scenario, lambda w: (w.add("node-a", tmp_path, postgres_dsn), w.add("node-b", tmp_path, postgres_dsn)))
    assert max(h for h, _ in held) > 0 and max(h for _, h in held) > 0, "both daemons held while nobody answered"
    assert_told_once(w)


def test_grouped_by_incident_a_daemon_started_later_adopts_the_holders_incident_ids_and_continues_its_threads(
        tmp_path: Path, postgres_dsn: str) -> None:
    async def scenario(w: World) -> None:
        a, b = w.nodes
        b.running = False

        def late_start_then_kill(t: float) -> None:
            if t == 40:  # B first sees every alert 40 s after A: on its own it would name each incident anew
                b.running = True
            if t == 160:
                a.running = False

        await w.run_until(END, late_start_then_kill)
        assert b.keeper.epoch == 2
        died = w.clock.now - timedelta(seconds=END - 160)
        before = {i.id for i in b.incidents.all() if i.opened_at < died}
        assert len(before) == GROUPS and before <= {i.id for i in a.incidents.all()}, "B took A's ids"

    def setup(w: World) -> None:
        w.add("node-a", tmp_path, postgres_dsn, by_incident=True)
        w.add("node-b", tmp_path, postgres_dsn, by_incident=True)

    w = play(scenario, setup)
    assert_told_once(w)


def test_turning_ha_on_seeds_the_shared_log_from_the_threads_a_single_node_opened(
        tmp_path: Path, postgres_dsn: str) -> None:
    async def single_node_before(w: World) -> None:
        # node-a ran alone until now, on the same state file (its private SQLite lease): group-0 was told.
        a = w.nodes[0]
        outbox = Outbox(a.db)
        dispatcher = Dispatcher(outbox, ["slack", "hook"], ["alertname", "cluster", "group"])
        events = a.tracker.update(TIMINGS, timeline_at(w.clock.now), w.clock.now)
        await dispatcher.dispatch(events, a.tracker.active_alerts(), w.clock.now)
        report = await outbox.deliver_due(a.notifiers, w.clock.now)
        assert report.delivered == 2
        await outbox.coordination.stop()
        w.clock.advance(5)

    async def scenario(w: World) -> None:
        a, b = w.nodes

        def kill(t: float) -> None:
            if t == 100:  # before group-0's update: B must tell it in A's thread, and not post group-0 again
                a.running = False

        await w.run_until(END, kill)
        assert b.keeper.epoch == 2

    with ExitStack() as stack:
        w = world(stack)
        w.add("node-a", tmp_path, postgres_dsn)
        w.add("node-b", tmp_path, postgres_dsn)

        async def main() -> None:
            await single_node_before(w)
            await w.open()
            try:
                await scenario(w)
            finally:
                await w.close()

        asyncio.run(main())
    assert_told_once(w)
