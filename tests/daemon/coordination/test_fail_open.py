"""ha.on_coordinator_loss.fail_open_after: two daemons, PostgreSQL stopped for longer than the threshold. Until
then both hold what they would send; past it each sends what it holds, and what comes next, itself (every
change of that stretch reaches the receiver twice, counted on /metrics); once PostgreSQL is back the holder
records what it sent fail-open in the shared log, and nothing of it is sent a third time, by anyone."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import psycopg
import pytest
from prometheus_client import CollectorRegistry, generate_latest

from daemon.app.coordination import HaMetrics
from daemon.notify.outbox_fail_open import FAIL_OPEN_REASON, FailOpen
from tests.daemon.coordination.ha_world import END, GROUPS, World, expected_webhook
from tests.daemon.coordination.test_two_dispatchers import play
from tests.helpers.postgres import PostgresServer

# Hundreds of steps of two daemons against a real PostgreSQL: seconds a test, so `make test-fast`
# leaves them to the full suite (the SQLite and single-call coordination tests stay in it).
pytestmark = pytest.mark.slow

FAIL_OPEN_AFTER = 60.0
DOWN, UP = 100, 300  # seconds on the timeline: PostgreSQL stopped, started


def _content(body: dict) -> tuple:
    group = body["commonLabels"].get("group") or body["groupLabels"]["group"]
    # startsAt tells the second incident of a group (same alerts, firing again later) from the first
    return group, body["status"], tuple(sorted((a["fingerprint"], a["status"], a["startsAt"]) for a in body["alerts"]))


def test_past_the_threshold_each_daemon_sends_what_it_holds_and_nobody_sends_it_again(
        tmp_path: Path, postgres: PostgresServer, postgres_dsn: str) -> None:
    seen: dict[str, list[tuple[float, int, int]]] = {"node-a": [], "node-b": []}  # (t, held, sent fail-open)
    marks: dict[str, int] = {}
    metrics: list[bytes] = []

    async def scenario(w: World) -> None:
        a, b = w.nodes
        registry = CollectorRegistry()
        ha_metrics = HaMetrics(registry)

        def outage(t: float) -> None:
            if t == DOWN:
                postgres.stop()
            if DOWN < t <= UP:
                for node in (a, b):
                    seen[node.name].append((t, node.outbox.held(), node.outbox.fail_open.sends))
            if t == UP:
                ha_metrics.observe(a.outbox)
                metrics.append(generate_latest(registry))
                marks["up"] = len(w.hook.bodies)
                postgres.start()

        await w.run_until(END, outage)
        assert (a.outbox.held(), b.outbox.held()) == (0, 0)
        holder = next(n for n in (a, b) if n.keeper.epoch is not None)
        recorded = holder.db.query("SELECT count(*) FROM outbox WHERE held = 1 AND delivered_at IS NOT NULL "
                                   "AND sent_recorded = 1")[0][0]
        assert recorded == holder.outbox.fail_open.sends, "the holder put every fail-open send into the shared log"

    def setup(w: World) -> None:
        for name in ("node-a", "node-b"):
            node = w.add(name, tmp_path, postgres_dsn)
            node.outbox.fail_open = FailOpen(FAIL_OPEN_AFTER)

    w = play(scenario, setup)
    a_seen, b_seen = seen["node-a"], seen["node-b"]
    assert w.nodes[0].outbox.fail_open.sends == w.nodes[1].outbox.fail_open.sends > 0
    sends = w.nodes[0].outbox.fail_open.sends
    for trace in (a_seen, b_seen):
        # Held until the threshold (counted from the last renewal PostgreSQL answered, just before DOWN) ...
        assert any(held > 0 and sent == 0 for t, held, sent in trace if t < DOWN + FAIL_OPEN_AFTER), trace
        assert all(sent == 0 for t, _, sent in trace if t < DOWN + FAIL_OPEN_AFTER - 5), trace
        # ... then sent, and what came next too: nothing left held while failing open.
        assert all(held == 0 and sent > 0 for t, held, sent in trace if t >= DOWN + FAIL_OPEN_AFTER + 5), trace
    assert f"rocketwatch_ha_fail_open_sends_total {float(sends)}" in metrics[0].decode()
    assert "rocketwatch_ha_held_notifications 0.0" in metrics[0].decode()

    with psycopg.connect(postgres_dsn) as conn:
        logged = conn.execute("SELECT count(*) FROM coord_sends WHERE reason = %s AND outcome = 'sent'",
                              (FAIL_OPEN_REASON,)).fetchone()
    assert logged == (sends,), "in the shared log as sent, with the reason that says how"

    bodies = [_content(b) for b in w.hook.bodies]
    twice = [c for c, n in Counter(bodies).items() if n == 2]
    # `sends` counts both receivers (Slack and the webhook get the same notifications): half went to the webhook.
    assert 2 * len(twice) == sends and max(Counter(bodies).values()) == 2, "each fail-open send once per daemon"
    assert not set(bodies[marks["up"]:]) & set(bodies[:marks["up"]]), "nothing told in the outage is told again"
    collapsed: dict[str, list[str]] = {}
    previous: dict[str, tuple] = {}
    for content in bodies:  # the duplicates side by side collapsed: every change told, in order
        if previous.get(content[0]) != content:
            collapsed.setdefault(content[0], []).append(content[1])
        previous[content[0]] = content
    assert collapsed == expected_webhook()
    assert len(bodies) == sum(len(v) for v in expected_webhook().values()) + sends // 2 and len(collapsed) == GROUPS


def test_what_one_daemon_sent_fail_open_is_dropped_by_the_daemon_that_held_it_even_as_the_next_holder(
        tmp_path: Path, postgres: PostgresServer, postgres_dsn: str) -> None:
    # node-a fails open after a minute; node-b holds (the default). Once PostgreSQL is back node-a records its
    # sends; node-b's held rows are then told already and dropped, so when node-a dies and node-b takes the
    # lease, nothing of the outage is sent again: every change reached the receiver exactly once.
    held_b: list[int] = []

    async def scenario(w: World) -> None:
        a, b = w.nodes

        def outage(t: float) -> None:
            if t == DOWN:
                postgres.stop()
            if t == UP:
                held_b.append(b.outbox.held())
                postgres.start()
            if t == UP + 50:
                a.running = False  # killed: node-b takes the lease after its ttl

        await w.run_until(END, outage)
        assert b.keeper.epoch is not None and b.outbox.held() == 0
        assert a.outbox.fail_open.sends > 0 and b.outbox.fail_open.sends == 0

    def setup(w: World) -> None:
        w.add("node-a", tmp_path, postgres_dsn).outbox.fail_open = FailOpen(FAIL_OPEN_AFTER)
        w.add("node-b", tmp_path, postgres_dsn)

    w = play(scenario, setup)
    assert held_b[0] > 0, "node-b held the outage's notifications while node-a sent them"
    bodies = [_content(b) for b in w.hook.bodies]
    assert max(Counter(bodies).values()) == 1, [c for c, n in Counter(bodies).items() if n > 1]
    assert w.webhook_sends() == expected_webhook()
