"""The lease between two daemons on an injected clock: one holder at a time, a ttl waited out by a new
holder, and a holder whose deadline passed (dead, paused) refused at the coordinator. SQLite and PostgreSQL."""

from __future__ import annotations

import asyncio
import socket

import pytest

from config.ha import HaConfig
from daemon.coordination.factory import coordinator_for, keeper_for
from daemon.coordination.lease import LeaseKeeper, LeaseLost, LeaseTiming
from daemon.coordination.model import Coordinator, Fenced, GroupRef, Told
from daemon.coordination.schema import MIGRATIONS
from tests.daemon.coordination.conftest import Connect, run_pair
from tests.helpers.clock import ManualClock
from tests.helpers.postgres import PASSWORD

REF = GroupRef("root", "slack-oncall", '{incident="prod/orders@2026-11-27T03:00:00Z"}')
LABELS = {"incident": "prod/orders@2026-11-27T03:00:00Z"}


def keepers(clock: ManualClock, a: Coordinator, b: Coordinator) -> tuple[LeaseKeeper, LeaseKeeper]:
    """Daemon A's and daemon B's view of the lease (defaults: ttl 15 s, renew 5 s, margin 3 s)."""
    return LeaseKeeper(a, "node-a/1", clock=clock), LeaseKeeper(b, "node-b/1", clock=clock)


async def hold_and_send(clock: ManualClock, keeper: LeaseKeeper) -> None:
    """Take the lease and renew on schedule until the new holder's wait is over."""
    assert await keeper.renew()
    while not keeper.may_send():
        clock.advance(keeper.timing.renew_every)
        assert await keeper.renew()


async def keep_holding(clock: ManualClock, keeper: LeaseKeeper, seconds: float) -> None:
    """Let time pass while the holder renews on schedule (a daemon alive and well)."""
    for _ in range(int(seconds // keeper.timing.renew_every)):
        clock.advance(keeper.timing.renew_every)
        assert await keeper.renew()


def test_two_daemons_starting_together_migrate_the_schema_once(connect: Connect) -> None:
    async def scenario(clock: ManualClock, a: Coordinator, b: Coordinator) -> None:
        await a.open()  # a restart: nothing left to do
        async with a.transaction() as tx:
            assert await tx.rows("SELECT version FROM coord_schema_version") == [{"version": len(MIGRATIONS)}]
            # A newer rocketwatch on the other host migrated further: this one must not write under it.
            await tx.run("UPDATE coord_schema_version SET version = :v", {"v": len(MIGRATIONS) + 1})
        with pytest.raises(RuntimeError, match="newer than this rocketwatch knows"):
            await b.open()

    run_pair(connect, scenario)


def test_one_holder_renews_while_the_other_stands_by(connect: Connect) -> None:
    async def scenario(clock: ManualClock, a: Coordinator, b: Coordinator) -> None:
        ka, kb = keepers(clock, a, b)
        assert await ka.renew() and ka.epoch == 1
        assert not ka.may_send(), "a new holder sends only after one whole ttl"
        assert not await kb.renew() and kb.last is not None and kb.last.holder == "node-a/1"
        for _ in range(12):  # a minute of steady state
            clock.advance(5)
            assert await ka.renew()
            assert not await kb.renew()
        assert ka.epoch == 1 and ka.may_send() and ka.fence() is not None
        assert kb.fence() is None and not kb.may_send()

    run_pair(connect, scenario)


def test_two_daemons_claiming_a_free_lease_at_once_get_one_holder(connect: Connect) -> None:
    async def scenario(clock: ManualClock, a: Coordinator, b: Coordinator) -> None:
        ka, kb = keepers(clock, a, b)
        won = await asyncio.gather(ka.renew(), kb.renew())
        assert sorted(won) == [False, True]
        assert {ka.last.holder, kb.last.holder} == {"node-a/1" if won[0] else "node-b/1"}

    run_pair(connect, scenario)


def test_a_dead_holder_is_replaced_after_its_ttl_and_its_writes_are_refused(connect: Connect) -> None:
    async def scenario(clock: ManualClock, a: Coordinator, b: Coordinator) -> None:
        ka, kb = keepers(clock, a, b)
        await hold_and_send(clock, ka)
        fence_a = ka.fence()
        await a.note_pending(fence_a, REF, LABELS, clock.now)
        # A dies here: no more renewals. Until its lease expires on the coordinator, B cannot take it.
        clock.advance(14)
        assert not await kb.renew()
        clock.advance(2)
        assert await kb.renew() and kb.epoch == ka.epoch + 1
        assert not kb.may_send(), "B waits one ttl: A, unreachable rather than dead, could still be sending"
        with pytest.raises(Fenced, match="held by node-b/1"):
            await a.note_pending(fence_a, REF, LABELS, clock.now)
        for _ in range(3):
            clock.advance(5)
            assert await kb.renew()
        assert kb.may_send()
        await b.note_pending(kb.fence(), REF, LABELS, clock.now)

    run_pair(connect, scenario)


def test_a_paused_holder_that_wakes_after_its_ttl_sends_and_writes_nothing(connect: Connect) -> None:
    async def scenario(clock: ManualClock, a: Coordinator, b: Coordinator) -> None:
        ka, kb = keepers(clock, a, b)
        await hold_and_send(clock, ka)
        fence_a = ka.fence()
        intent = await a.record_intent(fence_a, REF, LABELS, Told({"fp-span": "warning"}), "first", clock.now)
        clock.advance(16)  # SIGSTOP (a long GC pause) between the intent and the send
        # A wakes: its own deadline has passed, so it neither sends nor believes it holds the lease ...
        assert not ka.may_send() and not ka.holding and ka.fence() is None and ka.time_left() == 0
        # ... and the coordinator refuses its writes even before anyone took over.
        with pytest.raises(Fenced, match="expired"):
            await a.record_sent(fence_a, intent.ref, intent.seq, {"ts": "1.1"}, clock.now)
        assert await kb.renew()
        with pytest.raises(Fenced, match="held by node-b/1"):
            await a.record_sent(fence_a, intent.ref, intent.seq, {"ts": "1.1"}, clock.now)
        assert not await ka.renew() and ka.epoch is None
        # B sees A's unconfirmed send and retries it under the same key, flagged as a possible repeat.
        group = await b.log_group(REF)
        assert group is not None and group.open_intent is not None and group.open_intent.key == intent.key
        retried = await b.record_intent(kb.fence(), REF, LABELS, Told({"fp-span": "warning"}), "first", clock.now)
        assert (retried.seq, retried.key, retried.retry, retried.epoch) == (intent.seq, intent.key, True, kb.epoch)

    run_pair(connect, scenario)


def test_a_lease_given_up_at_shutdown_is_taken_at_the_standbys_next_claim(connect: Connect) -> None:
    async def scenario(clock: ManualClock, a: Coordinator, b: Coordinator) -> None:
        ka, kb = keepers(clock, a, b)
        await hold_and_send(clock, ka)
        await ka.release()
        assert not ka.holding
        assert await kb.renew() and kb.epoch == 2

    run_pair(connect, scenario)


def test_renewing_in_the_background_keeps_the_lease_until_stopped(connect: Connect) -> None:
    async def scenario(clock: ManualClock, a: Coordinator, b: Coordinator) -> None:
        ka, kb = keepers(clock, a, b)
        stopping = asyncio.Event()
        running = asyncio.create_task(ka.run(stopping))
        while ka.renewals < 1:
            await asyncio.sleep(0)
        for n in range(2, 6):
            clock.advance(5)
            while ka.renewals < n:
                await asyncio.sleep(0)
        assert ka.may_send() and not await kb.renew()
        stopping.set()
        await running
        assert await kb.renew()

    run_pair(connect, scenario)


@pytest.mark.parametrize(("ttl", "renew", "margin"), [(15, 5, 15), (15, 12, 3), (15, 5, 0)])
def test_lease_timings_that_would_lapse_between_renewals_are_refused(ttl: float, renew: float, margin: float) -> None:
    with pytest.raises(ValueError, match="lease"):
        LeaseTiming(ttl, renew, margin)


def test_a_send_starts_only_under_the_lease_and_is_cut_at_the_holders_deadline(connect: Connect) -> None:
    async def scenario(clock: ManualClock, a: Coordinator, b: Coordinator) -> None:
        ka, kb = keepers(clock, a, b)
        assert await ka.renew()
        with pytest.raises(LeaseLost, match="first send in 15.0s"):
            await ka.send_within(asyncio.sleep(0), "slack post")
        await hold_and_send(clock, ka)
        assert await ka.send_within(asyncio.sleep(0, result="ts-1")) == "ts-1"
        assert not await kb.renew()
        with pytest.raises(LeaseLost, match="does not hold lease 'dispatch' \\(held by node-a/1"):
            await kb.send_within(asyncio.sleep(0), "slack post")
        started, cancelled = asyncio.Event(), asyncio.Event()

        async def slow_receiver() -> None:
            started.set()
            try:
                await asyncio.Event().wait()  # a receiver that never answers
            except asyncio.CancelledError:
                cancelled.set()
                raise

        sending = asyncio.create_task(ka.send_within(slow_receiver(), "slack post"))
        await started.wait()
        clock.advance(ka.time_left())  # no renewal gets through: the deadline comes
        with pytest.raises(LeaseLost, match="cancelled at the lease deadline"):
            await sending
        assert cancelled.is_set()

    run_pair(connect, scenario)


def test_a_single_node_holds_its_private_lease_and_sends_at_once(tmp_path) -> None:
    async def main() -> None:
        clock = ManualClock()
        coordinator = coordinator_for(None, tmp_path / "state.db", clock)
        await coordinator.open()
        keeper = keeper_for(None, coordinator, clock)
        assert await keeper.renew() and keeper.may_send()
        assert keeper.holder.startswith(socket.gethostname() + "/")
        await coordinator.close()

    asyncio.run(main())


def test_an_ha_daemon_reaches_postgres_with_the_password_from_its_credential(
        postgres_dsn: str, tmp_path, monkeypatch: pytest.MonkeyPatch) -> None:
    ha = HaConfig(connection=postgres_dsn.replace(f" password={PASSWORD}", ""), password_env="RW_PG_PASSWORD",
                  node="ops-1")
    (tmp_path / "RW_PG_PASSWORD").write_text(PASSWORD)
    monkeypatch.setenv("CREDENTIALS_DIRECTORY", str(tmp_path))

    async def main() -> None:
        clock = ManualClock()
        coordinator = coordinator_for(ha, tmp_path / "unused.db", clock)
        await coordinator.open()
        keeper = keeper_for(ha, coordinator, clock)
        assert await keeper.renew() and not keeper.may_send(), "a PostgreSQL lease is shared: the ttl is waited out"
        assert keeper.holder.startswith("ops-1/") and keeper.timing == LeaseTiming(15, 5, 3)
        await coordinator.close()

    asyncio.run(main())


def test_a_slow_send_goes_on_while_renewals_move_the_deadline_and_is_cut_once_they_stop(connect: Connect) -> None:
    async def scenario(clock: ManualClock, a: Coordinator, b: Coordinator) -> None:
        ka, _ = keepers(clock, a, b)
        await hold_and_send(clock, ka)
        started, answer = asyncio.Event(), asyncio.Event()

        async def slow_receiver() -> str:
            started.set()
            await answer.wait()  # e.g. slack-sdk waiting out a Retry-After
            return "ts-9"

        sending = asyncio.create_task(ka.send_within(slow_receiver(), "slack post"))
        await started.wait()
        for _ in range(4):  # 20 s: past the deadline it started under, renewed all along
            clock.advance(ka.timing.renew_every)
            assert await ka.renew()
            await asyncio.sleep(0)
        assert not sending.done(), "a holder that keeps its lease lets a slow receiver answer"
        answer.set()
        assert await sending == "ts-9"

    run_pair(connect, scenario)
