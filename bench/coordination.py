"""Benchmark: what the HA coordinator costs a dispatch, per operation, on PostgreSQL (loopback) and SQLite.

Not a test: numbers depend on the machine. Writes bench/results/coordination.{json,md}.
Runs a throwaway PostgreSQL from Debian's binaries (tests/helpers/postgres.py). Sizes via env:
BENCH_GROUPS (open groups in the shared log, 200), BENCH_ROUNDS (repetitions per operation, 200).
"""

from __future__ import annotations

import asyncio
import os
import statistics
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.report import run_facts, write_results  # noqa: E402
from daemon.coordination.lease import LeaseKeeper  # noqa: E402
from daemon.coordination.model import Coordinator, GroupRef, Told  # noqa: E402
from daemon.coordination.postgres import PostgresCoordinator  # noqa: E402
from daemon.coordination.sqlite import SqliteCoordinator  # noqa: E402
from tests.helpers.clock import ManualClock  # noqa: E402
from tests.helpers.postgres import PostgresServer, find_bindir  # noqa: E402


async def timed(rounds: int, op: Callable[[int], Awaitable[object]]) -> dict[str, float]:
    """Median, p95 and max of `rounds` calls, in milliseconds."""
    samples = []
    for n in range(rounds):
        started = time.perf_counter()
        await op(n)
        samples.append((time.perf_counter() - started) * 1000)
    samples.sort()
    return {"p50_ms": round(statistics.median(samples), 3), "p95_ms": round(samples[int(0.95 * (len(samples) - 1))], 3),
            "max_ms": round(samples[-1], 3)}


async def measure(connect: Callable[[ManualClock], Coordinator], groups: int,
                  rounds: int) -> dict[str, dict[str, float]]:
    """Each operation a dispatch makes, against a log holding `groups` open groups."""
    clock = ManualClock()  # the lease held for the whole run: time stands still, so it never expires
    coordinator = connect(clock)
    await coordinator.open()
    keeper = LeaseKeeper(coordinator, "bench/1", clock=clock)
    await keeper.renew()
    fence = keeper.fence()
    refs = [GroupRef("root", "slack", f'{{incident="prod/group-{g}@t"}}') for g in range(groups)]
    for ref in refs:
        intent = await coordinator.record_intent(fence, ref, {"incident": ref.group_key}, Told({"fp": "warning"}),
                                                 "first", clock.now)
        await coordinator.record_sent(fence, intent.ref, intent.seq, {"ts": "1"}, clock.now)
    figures = {"renew the lease": await timed(rounds, lambda n: coordinator.claim_lease("dispatch", "bench/1", 15))}
    figures["read the open groups"] = await timed(max(rounds // 10, 5), lambda n: coordinator.log_groups())
    figures["note a pending change"] = await timed(
        rounds, lambda n: coordinator.note_pending(fence, refs[n % groups], {}, clock.now))

    async def send(n: int) -> None:
        ref = refs[n % groups]
        intent = await coordinator.record_intent(fence, ref, {}, Told({"fp": "warning", f"fp{n}": "critical"}),
                                                 "new_alerts_in_group", clock.now)
        await coordinator.record_sent(fence, intent.ref, intent.seq, {"ts": str(n)}, clock.now)

    figures["one send's intent + sent records"] = await timed(rounds, send)
    figures["claim an incident id (adopt)"] = await timed(
        rounds, lambda n: coordinator.claim_incident({"cluster": "prod", "group": f"g{n % 20}"}, f"g{n}", clock.now))
    await coordinator.close()
    return figures


def main() -> None:
    """Measure both implementations, print and save the table."""
    groups = int(os.environ.get("BENCH_GROUPS", "200"))
    rounds = int(os.environ.get("BENCH_ROUNDS", "200"))
    bindir = find_bindir()
    if bindir is None:
        raise SystemExit("no PostgreSQL server binaries under /usr/lib/postgresql/<version>/bin: apt-get install postgresql")
    results: dict[str, dict[str, dict[str, float]]] = {}
    server = PostgresServer(bindir)
    try:
        server.init()
        server.start()
        dsn = server.dsn(server.create_database())
        results["PostgreSQL (loopback)"] = asyncio.run(
            measure(lambda clock: PostgresCoordinator(dsn, clock), groups, rounds))
    finally:
        server.remove()
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "state.db"
        results["SQLite (state file)"] = asyncio.run(
            measure(lambda clock: SqliteCoordinator(path, clock), groups, rounds))
    facts = run_facts()
    lines = [f"# Coordinator cost per operation ({groups} open groups, {rounds} rounds)", "",
             f"{facts['when']}, {facts['machine']}, load {facts['load_average_1m']}. "
             "PostgreSQL 127.0.0.1 via psycopg 3 (async, one connection), fsync off; SQLite WAL.", "",
             "| operation | " + " | ".join(f"{name} p50 / p95 / max ms" for name in results) + " |",
             "|---|" + "---|" * len(results)]
    for op in next(iter(results.values())):
        cells = [f"{r[op]['p50_ms']:.2f} / {r[op]['p95_ms']:.2f} / {r[op]['max_ms']:.2f}" for r in results.values()]
        lines.append(f"| {op} | " + " | ".join(cells) + " |")
    write_results("coordination", {**facts, "groups": groups, "rounds": rounds, "results": results},
                  "\n".join(lines) + "\n")


if __name__ == "__main__":
    main()
