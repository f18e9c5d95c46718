"""The peers table: each daemon's row follows its lease renewals (holder, last renewal on the coordinator's
clock, last evaluation, held notifications), a restarted node replaces its row, and a node that stops renewing
goes stale; on PostgreSQL and SQLite alike."""

from __future__ import annotations

from datetime import timedelta

from daemon.coordination.lease import LeaseKeeper, LeaseTiming
from daemon.coordination.model import Coordinator
from daemon.coordination.peers import PeerReporter
from tests.daemon.coordination.conftest import Connect, run_pair
from tests.helpers.clock import ManualClock

TIMING = LeaseTiming(ttl=15, renew_every=5, margin=3)


def _keeper(coordinator: Coordinator, clock: ManualClock, node: str, held: list[int]) -> tuple[LeaseKeeper, PeerReporter]:
    keeper = LeaseKeeper(coordinator, f"{node}/{len(held)}", TIMING, clock)
    reporter = PeerReporter(coordinator, node, lambda: clock.now - timedelta(seconds=2), lambda: held[-1],
                            timeout=5, host=f"{node}.example", version="9.9.9", started_at=clock.now)
    keeper.after_renewal = reporter.after_renewal
    return keeper, reporter


def test_each_renewal_writes_the_peer_row_every_daemon_reads(connect: Connect) -> None:
    async def scenario(clock: ManualClock, a: Coordinator, b: Coordinator) -> None:
        assert await a.read_lease("dispatch") is None
        held_a, held_b = [0], [0]
        keeper_a, reporter_a = _keeper(a, clock, "ops-1", held_a)
        keeper_b, reporter_b = _keeper(b, clock, "ops-2", held_b)
        # ops-1's row is written before ops-2 renews: each writer reads the rows back after its own
        # write, so ops-2's read holds both (run together, ops-2's read could precede ops-1's write).
        assert await keeper_a.renew()
        await reporter_a.flushed()
        assert not await keeper_b.renew()
        await reporter_b.flushed()
        peers, now = await a.peers()
        assert [(p.node, p.holder, p.host, p.version, p.holds_lease) for p in peers] == [
            ("ops-1", "ops-1/1", "ops-1.example", "9.9.9", True), ("ops-2", "ops-2/1", "ops-2.example", "9.9.9", False)]
        assert all(p.renew_at == now == clock.now and p.evaluated_at == now - timedelta(seconds=2) for p in peers)
        assert reporter_b.seen is not None and reporter_b.seen[0] == peers, "the writer reads every row back"
        lease = await b.read_lease("dispatch")
        assert lease is not None and (lease.holder, lease.epoch, lease.acquired_at) == ("ops-1/1", 1, clock.now)

        # ops-2 stops renewing (paused, or cut off); ops-1 goes on, now holding two notifications.
        clock.advance(TIMING.ttl + 1)
        held_a.append(2)
        assert await keeper_a.renew()
        await reporter_a.flushed()
        peers, now = await b.peers()
        by_node = {p.node: p for p in peers}
        assert by_node["ops-1"].renew_at == now and by_node["ops-1"].held == 2
        assert not by_node["ops-1"].stale(now, TIMING.ttl) and by_node["ops-2"].stale(now, TIMING.ttl)

        # ops-2 restarts: a new process of the same node replaces its row rather than adding one.
        held_b.append(1)
        restarted, reporter = _keeper(b, clock, "ops-2", held_b)
        assert not await restarted.renew()
        await reporter.flushed()
        peers, now = await a.peers()
        assert [(p.node, p.holder, p.held, p.stale(now, TIMING.ttl)) for p in peers] == [
            ("ops-1", "ops-1/1", 2, False), ("ops-2", "ops-2/2", 1, False)]

    run_pair(connect, scenario)

