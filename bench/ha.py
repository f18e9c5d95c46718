"""Benchmark: two daemons, one notification — every alert change told once through the holder's failures.

Two daemons in one process (own state files, trackers, outboxes, dispatchers; tests/daemon/coordination/
ha_world.py), one PostgreSQL (Debian's binaries, tests/helpers/postgres.py), the Slack stand-in and a
webhook receiver on loopback, one manual clock stepped every 5 s (evaluation = renewal interval).
BENCH_GROUPS consumer groups (default 26) each fire two queues and resolve them, twice: 8 alert changes
per group (208 by default). Each scenario disrupts the holder at t = 160 s. Writes bench/results/ha.{json,md}.

Mid-send crash (its own section, `mid_send_crash`): the holder killed between its Slack post and the sent
record (tests/daemon/coordination/mid_send.py), the next holder looking the send up by its metadata.
"""

from __future__ import annotations

import asyncio
import os
import statistics
import sys
import tempfile
from collections import Counter
from contextlib import ExitStack
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.report import run_facts, write_results  # noqa: E402
from daemon.coordination.postgres import PostgresCoordinator  # noqa: E402
from daemon.notify.model import Notification, ThreadRef  # noqa: E402
from daemon.notify.outbox_fail_open import FailOpen  # noqa: E402
from tests.daemon.coordination.ha_world import START, Node, World, end, world  # noqa: E402
from tests.daemon.coordination.mid_send import crash_mid_send, slack_server  # noqa: E402
from tests.helpers.clock import ManualClock  # noqa: E402
from tests.helpers.postgres import PostgresServer, find_bindir  # noqa: E402
from tests.helpers.tcp_proxy import TcpProxy  # noqa: E402

DISRUPT, RECOVER, WAKE = 160.0, 250.0, 265.0


@dataclass
class Sent:
    """One notification a receiver accepted: from which daemon, when, and whether that daemon was stale."""

    node: str
    receiver: str
    at: datetime
    notification: Notification
    stale: bool
    fail_open: bool = False  # sent by a daemon failing open (ha.on_coordinator_loss): a chosen duplicate, not stale


class Recording:
    """A notifier that records each accepted send (the receiver's key and what it told)."""

    def __init__(self, inner, node: Node, receiver: str, world_: World, log: list[Sent]) -> None:
        self.inner, self.node, self.receiver, self.world, self.log = inner, node, receiver, world_, log

    async def send(self, notification: Notification, thread: ThreadRef | None) -> ThreadRef | None:
        """Send through the real notifier, then record it."""
        ref = await self.inner.send(notification, thread)
        mine = self.node.keeper.epoch
        newer = any(o.keeper.epoch is not None and (mine is None or o.keeper.epoch > mine)
                    for o in self.world.nodes if o is not self.node)
        failing_open = self.node.outbox.fail_open.active
        self.log.append(Sent(self.node.name, self.receiver, self.world.clock.now, notification,
                             stale=(not self.node.keeper.may_send() or newer) and not failing_open,
                             fail_open=failing_open))
        return ref


async def _kill(w: World, t: float) -> None:
    if t == DISRUPT:
        w.nodes[0].running = False


async def _pause(w: World, t: float) -> None:
    a = w.nodes[0]
    if t == DISRUPT:
        a.running = False
    if t == WAKE:  # woken: it delivers before it renews
        await a.step(w.clock.now, renew_first=False)
        a.running = True


def _between(action_at_disrupt, action_at_recover, recover_at: float = RECOVER):
    async def during(w: World, t: float) -> None:
        if t == DISRUPT:
            action_at_disrupt()
        if t == recover_at:
            action_at_recover()
    return during


async def _nothing(w: World, t: float) -> None:
    return None


def scenarios(server: PostgresServer, proxy: TcpProxy):
    """(name, disruption, whether node A reaches PostgreSQL through the proxy)."""
    return [
        ("steady state", _nothing, False),
        ("daemons cut from each other only (they share no link: steady state)", _nothing, False),
        ("holder killed (kill -9)", _kill, False),
        ("holder paused past its ttl (SIGSTOP, SIGCONT at +105 s)", _pause, False),
        ("holder cut from PostgreSQL (black-holed 90 s; receivers reachable)",
         _between(proxy.blackhole, proxy.restore), True),
        ("PostgreSQL stopped 90 s and started", _between(server.stop, server.start), False),
    ]


def fail_open_scenarios(server: PostgresServer, proxy: TcpProxy):
    """(name, disruption, via the proxy, ha.on_coordinator_loss.fail_open_after in seconds or None: hold)."""
    long_outage = DISRUPT + 360
    return [
        ("PostgreSQL stopped 90 s, fail_open_after 30 s", _between(server.stop, server.start), False, 30.0),
        ("holder cut from PostgreSQL (black-holed 90 s), fail_open_after 30 s",
         _between(proxy.blackhole, proxy.restore), True, 30.0),
        ("PostgreSQL stopped 6 min and started (hold, the default)",
         _between(server.stop, server.start, long_outage), False, None),
        ("PostgreSQL stopped 6 min, fail_open_after 5 min",
         _between(server.stop, server.start, long_outage), False, 300.0),
    ]


async def play(w: World, during) -> None:
    """Run the timeline to its end with the disruption."""
    await w.open()
    try:
        await w.run_until(end(w.groups), lambda t: during(w, t))
    finally:
        await w.close()


def figures(w: World, sent: list[Sent], disrupted: bool) -> dict[str, object]:
    """notified, lost, duplicates (per receiver key and per change), stale-holder sends, failover delays."""
    expected_per_receiver = 8 * w.groups
    told: Counter[tuple[str, str, str, datetime | None]] = Counter()
    keys: Counter[tuple[str, str]] = Counter()
    first: dict[tuple[str, str, str, datetime | None], float] = {}  # a change's first notification's delay
    for s in sent:
        keys[(s.receiver, s.notification.idempotency_key)] += 1
        for change in s.notification.changes:
            alert = s.notification.alert(change.fingerprint)
            fired = alert.fired_at if alert is not None else None
            told[(s.receiver, change.kind, change.fingerprint, fired)] += 1
            happened = (alert.resolved_at if change.kind == "resolved" else alert.fired_at) if alert else None
            if happened is not None and s.receiver == "hook" and disrupted \
                    and (happened - START).total_seconds() >= DISRUPT:
                first.setdefault((s.receiver, change.kind, change.fingerprint, fired), (s.at - happened).total_seconds())
    notified = len(told)
    lost = 2 * expected_per_receiver - notified
    duplicates = sum(n - 1 for n in keys.values()) + sum(n - 1 for n in told.values())
    delays = [d for d in first.values() if d > 0] or [0.0]
    delays.sort()
    return {"notified": notified, "lost": lost, "duplicates": duplicates, "disrupted": disrupted,
            "stale_holder_sends": sum(1 for s in sent if s.stale), "fail_open_sends": sum(1 for s in sent if s.fail_open),
            "failover_s": {"p50": statistics.median(delays), "p95": delays[int(0.95 * (len(delays) - 1))],
                           "max": delays[-1]}}


# ---- mid-send crash: the holder killed between the Slack post and its sent record ----------------------

MID_SEND_RUNS = 5
NO_HISTORY = ("chat:write", "files:write")


def mid_send_cases():
    """(name, the bot token's scopes or None for all, other messages in the channel after the post)."""
    return [("history scope, quiet channel", None, 0),
            ("history scope, 900 messages after the post (5 pages)", None, 900),
            ("no history scope", NO_HISTORY, 0)]


def mid_send_crash(server: PostgresServer) -> dict[str, dict[str, object]]:
    """Each case MID_SEND_RUNS times on PostgreSQL: posts seen, marked, lookups, resolve time."""
    out: dict[str, dict[str, object]] = {}
    for name, scopes, chatter in mid_send_cases():
        runs = []
        for _ in range(MID_SEND_RUNS):
            dsn = server.dsn(server.create_database())
            clock = ManualClock()
            with slack_server(clock, scopes) as slack, tempfile.TemporaryDirectory() as tmp:
                def connect(c: ManualClock, dsn: str = dsn) -> PostgresCoordinator:
                    return PostgresCoordinator(dsn, c, timeout=5.0)

                outcome = asyncio.run(crash_mid_send(Path(tmp), connect, slack, clock, chatter=chatter))
            runs.append(outcome)
        send_ms = sorted(1000 * max(o.send_wall_seconds or [0.0]) for o in runs)
        out[name] = {"runs": len(runs), "posts": [o.posts for o in runs], "marked": [o.marked for o in runs],
                     "lookups": [o.lookups for o in runs],
                     "resolve_s": [o.resolve_seconds for o in runs],
                     "send_with_lookup_ms": {"p50": statistics.median(send_ms), "max": send_ms[-1]}}
        print("mid-send crash:", name, out[name], flush=True)
    return out


def mid_send_lines(results: dict[str, dict[str, object]]) -> list[str]:
    """The Markdown section of the mid-send crash."""
    lines = ["", "## Holder killed between the Slack post and its sent record", "",
             f"Each case {MID_SEND_RUNS} times on PostgreSQL: node A posts a group's first message and dies before "
             "its sent record; node B takes the lease, retries the send under the same key and first looks it up "
             "by its message metadata (conversations.history, include_all_metadata, from the intent's time "
             "less 5 min, at most 5 pages of 200). `posts`: top-level chat.postMessage calls for the group "
             "(1 = no duplicate); `resolve`: world seconds from the kill to B's sent record (lease ttl + a new "
             "holder's wait); `B's send`: wall time of B's send, lookup included.", "",
             "| case | posts | marked repeat | lookups (API calls) | resolve (s) | B's send p50 / max (ms) |",
             "|---|---|---|---|---|---|"]

    def spread(values: object) -> str:
        vals = sorted(set(values))  # type: ignore[arg-type]
        return " / ".join(f"{v:g}" if isinstance(v, float) else str(v) for v in vals)

    for name, r in results.items():
        ms = r["send_with_lookup_ms"]
        lines.append(f"| {name} | {spread(r['posts'])} | {spread(r['marked'])} | {spread(r['lookups'])} | "
                     f"{spread(r['resolve_s'])} | {ms['p50']:.0f} / {ms['max']:.0f} |")  # type: ignore[index]
    return lines


def main() -> None:
    """Run every scenario, print and save the table."""
    groups = int(os.environ.get("BENCH_GROUPS", "26"))
    bindir = find_bindir()
    if bindir is None:
        raise SystemExit("no PostgreSQL server binaries under /usr/lib/postgresql/<version>/bin: apt-get install postgresql")
    server = PostgresServer(bindir)
    results: dict[str, dict[str, object]] = {}
    try:
        server.init()
        server.start()
        with TcpProxy("127.0.0.1", server.port) as proxy:
            for name, during, via_proxy, fail_open in [*((*s, None) for s in scenarios(server, proxy)),
                                                       *fail_open_scenarios(server, proxy)]:
                if not server.running:
                    server.start()
                dsn = server.dsn(server.create_database())
                with ExitStack() as stack, tempfile.TemporaryDirectory() as tmp:
                    w = world(stack, groups)
                    sent: list[Sent] = []
                    a = w.add("node-a", Path(tmp), dsn.replace(f"port={server.port}", f"port={proxy.port}")
                              if via_proxy else dsn)
                    b = w.add("node-b", Path(tmp), dsn)
                    for node in (a, b):
                        node.outbox.fail_open = FailOpen(fail_open)
                        node.notifiers = {r: Recording(n, node, r, w, sent) for r, n in node.notifiers.items()}
                    asyncio.run(play(w, during))
                results[name] = figures(w, sent, during is not _nothing)
                print(name, results[name], flush=True)
        mid_send = mid_send_crash(server)
    finally:
        server.remove()
    facts = run_facts()
    changes = 8 * groups
    lines = [f"# Two daemons, one notification ({changes} alert changes x 2 receivers per scenario)", "",
             f"{facts['when']}, {facts['machine']}, load {facts['load_average_1m']}. Lease ttl 15 s, renew every 5 s, "
             "margin 3 s; both daemons evaluate every 5 s on one manual clock; the holder is disrupted at t = 160 s. "
             "Receivers: the Slack stand-in and a webhook receiver; PostgreSQL on loopback (fsync off).", "",
             "`notified`: distinct alert changes told, summed over both receivers (expected "
             f"{2 * changes}); `duplicates`: sends whose receiver key (Slack message metadata key, webhook "
             "Idempotency-Key) was seen before, plus changes told twice; `stale-holder sends`: sends by a daemon "
             "past its lease deadline or after another took a newer epoch; `failover`: seconds from an alert "
             "change at or after the disruption to its first notification (changes told at once excluded). "
             "With `fail_open_after` each daemon cut off sends what it holds after that long (both daemons carry "
             "the setting): `duplicates` then counts the changes both told, and the cell adds how many sends were "
             "made fail-open.", "",
             "| scenario | notified | lost | duplicates | stale-holder sends | failover p50 / p95 / max (s) |",
             "|---|---|---|---|---|---|"]
    for name, r in results.items():
        f = r["failover_s"]
        failover = f"{f['p50']:.0f} / {f['p95']:.0f} / {f['max']:.0f}" if r["disrupted"] else "—"
        duplicates = f"{r['duplicates']} ({r['fail_open_sends']} sent fail-open)" if r["fail_open_sends"] \
            else r["duplicates"]
        lines.append(f"| {name} | {r['notified']} | {r['lost']} | {duplicates} | {r['stale_holder_sends']} | "
                     f"{failover} |")
    lines += mid_send_lines(mid_send)
    write_results("ha", {**facts, "groups": groups, "alert_changes": changes, "lease": {"ttl_s": 15, "renew_s": 5,
                  "margin_s": 3}, "results": results, "mid_send_crash": mid_send}, "\n".join(lines) + "\n")


if __name__ == "__main__":
    main()
