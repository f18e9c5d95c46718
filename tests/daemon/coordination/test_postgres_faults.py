"""PostgreSQL going away under the lease: the holder cut off by a silent network (a black-holed TCP proxy)
and the server stopped and started. The holder's own deadline decides, never the network's mood."""

from __future__ import annotations

import asyncio

import pytest

from daemon.coordination.model import CoordinatorUnavailable, Fenced
from daemon.coordination.postgres import PostgresCoordinator
from tests.daemon.coordination.test_lease import LABELS, REF, hold_and_send, keepers
from tests.helpers.clock import ManualClock
from tests.helpers.postgres import PostgresServer
from tests.helpers.tcp_proxy import TcpProxy

# Each case waits out real connection timeouts against a black-holed or stopped PostgreSQL: seconds a
# test, so `make test-fast` leaves them to the full suite.
pytestmark = pytest.mark.slow


def test_a_holder_cut_from_postgres_stops_at_its_own_deadline_and_the_other_takes_over(
        postgres: PostgresServer, postgres_dsn: str) -> None:
    with TcpProxy("127.0.0.1", postgres.port) as proxy:
        through_proxy = postgres_dsn.replace(f"port={postgres.port}", f"port={proxy.port}")

        async def main() -> None:
            clock = ManualClock()
            a = PostgresCoordinator(through_proxy, clock, timeout=1.0)
            b = PostgresCoordinator(postgres_dsn, clock, timeout=1.0)
            await asyncio.gather(a.open(), b.open())
            try:
                ka, kb = keepers(clock, a, b)
                await hold_and_send(clock, ka)
                fence = ka.fence()
                proxy.blackhole()  # packets dropped: no error reaches A, only silence
                clock.advance(5)
                assert await ka.renew(), "within its deadline A still holds: it could not renew, nothing says it lost"
                assert ka.failures == 1 and "no answer" in ka.last_error
                with pytest.raises(CoordinatorUnavailable, match="no answer"):
                    await a.note_pending(fence, REF, LABELS, clock.now)
                clock.advance(5)
                assert await ka.renew() and ka.may_send()
                clock.advance(2.5)  # 12.5 s after its last renewal began: past ttl - margin
                assert not await ka.renew()
                assert not ka.may_send() and ka.fence() is None
                assert not await kb.renew(), "the lease is still A's on the server: B must not send alongside A"
                clock.advance(3)
                assert await kb.renew() and kb.epoch == fence.epoch + 1
                proxy.restore()
                assert not await ka.renew() and ka.last is not None and ka.last.holder == "node-b/1"
                with pytest.raises(Fenced, match="held by node-b/1"):
                    await a.note_pending(fence, REF, LABELS, clock.now)
            finally:
                await a.close()
                await b.close()

        asyncio.run(main())


def test_postgres_stopped_and_started_the_holder_keeps_its_epoch_within_its_deadline_and_loses_it_after(
        postgres: PostgresServer, postgres_dsn: str) -> None:
    async def main() -> None:
        clock = ManualClock()
        a, b = PostgresCoordinator(postgres_dsn, clock, timeout=2.0), PostgresCoordinator(postgres_dsn, clock, timeout=2.0)
        await asyncio.gather(a.open(), b.open())
        try:
            ka, kb = keepers(clock, a, b)
            await hold_and_send(clock, ka)
            fence = ka.fence()
            postgres.stop()
            clock.advance(5)
            assert await ka.renew() and ka.failures == 1
            with pytest.raises(CoordinatorUnavailable):
                await a.note_pending(fence, REF, LABELS, clock.now)
            clock.advance(5)
            assert await ka.renew()
            postgres.start()
            clock.advance(1)
            assert await ka.renew() and ka.epoch == fence.epoch and ka.may_send(), "a short outage costs nothing"
            await a.note_pending(fence, REF, LABELS, clock.now)
            # A longer one: every daemon's deadline passes, nobody sends; the first claim after it wins a new epoch.
            postgres.stop()
            for _ in range(4):
                clock.advance(5)
                await ka.renew()
                assert not await kb.renew()
            assert not ka.holding
            postgres.start()
            assert await kb.renew() and kb.epoch == fence.epoch + 1 and not kb.may_send()
            assert not await ka.renew()
            with pytest.raises(Fenced):
                await a.note_pending(fence, REF, LABELS, clock.now)
        finally:
            await a.close()
            await b.close()

    asyncio.run(main())


def test_a_holder_paused_inside_a_transaction_does_not_lock_the_others_out(
        postgres: PostgresServer, postgres_dsn: str) -> None:
    # SIGSTOP between BEGIN and COMMIT leaves the lease row locked on the server; the server ends that
    # session after it sits idle in its transaction for one call's timeout, so B's claim goes through.
    async def main() -> None:
        clock = ManualClock()
        a = PostgresCoordinator(postgres_dsn, clock, timeout=1.0)
        b = PostgresCoordinator(postgres_dsn, clock, timeout=1.0)
        await asyncio.gather(a.open(), b.open())
        try:
            ka, kb = keepers(clock, a, b)
            await hold_and_send(clock, ka)
            locked, woke = asyncio.Event(), asyncio.Event()
            taken: list[bool] = []

            async def paused_mid_transaction() -> None:
                with pytest.raises(CoordinatorUnavailable):  # its session was ended while it slept
                    async with a.transaction() as tx:
                        await tx.run("UPDATE coord_lease SET holder = holder")  # the row is locked now
                        locked.set()
                        await woke.wait()  # the process stops here (nothing reaches the server)
                        await tx.run("UPDATE coord_lease SET holder = holder")

            async def standby() -> None:
                await locked.wait()
                clock.advance(16)  # past A's ttl on the server's clock as the coordinator sees it
                for _ in range(10):  # each try is bounded by B's own 1 s timeout
                    if await kb.renew():
                        taken.append(True)
                        break
                woke.set()

            await asyncio.gather(paused_mid_transaction(), standby())
            assert taken and kb.epoch is not None and kb.epoch > 1, kb.last_error
        finally:
            await a.close()
            await b.close()

    asyncio.run(main())
