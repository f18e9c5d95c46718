"""Every scenario `rocketwatch simulate --list` offers does, started as the CLI starts it, what its line says.

Each scenario is served by `start_simulator(name, time_scale=...)`, the call `rocketwatch simulate
--scenario NAME --time-scale ...` makes, and looked at over the wire by the real collector. A line
that says "From the start" is checked with the first look; "At 60 s" and "Every 5 s" are waited for.
One case runs the command itself in a subprocess.
"""

from __future__ import annotations

import asyncio
import re
import subprocess
import sys
import time
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path

import pytest

from config.native_metrics import NativeMetricsConfig
from daemon.collectors.cluster import CollectResult, collect_cluster
from daemon.collectors.native_metrics import collect_native
from daemon.collectors.remoting.admin import AdminClient
from daemon.collectors.remoting.client import RemotingClient
from daemon.collectors.remoting.errors import RemotingError
from daemon.simulator import SimulatorThread, list_scenarios

A, B = "orderConsumerA", "orderConsumerB"
TIME_SCALE = 0.05  # "At 60 s" comes at 3 s
TIMEOUT_S = 1.0
REPO = Path(__file__).resolve().parents[3]


def collect(sim: SimulatorThread) -> CollectResult:
    """One real collection cycle of the served cluster."""

    async def run() -> CollectResult:
        async with RemotingClient(default_timeout=TIMEOUT_S, connect_timeout=TIMEOUT_S) as client:
            return await collect_cluster(AdminClient(client), "DefaultCluster", [sim.namesrv_addr], datetime.now(UTC),
                                         call_timeout=TIMEOUT_S)

    return asyncio.run(run())


def until(sim: SimulatorThread, done: Callable[[CollectResult], bool], what: str, limit_s: float = 60.0) -> CollectResult:
    """Collect until `done` holds for a cycle; fail naming `what` past `limit_s`."""
    deadline = time.monotonic() + limit_s
    while True:
        result = collect(sim)
        if done(result):
            return result
        assert time.monotonic() < deadline, f"never saw: {what}; last cycle: {result.summary}"


def lag(result: CollectResult, group: str) -> int:
    """Messages not yet committed by `group` on OrderTopic, all queues."""
    return sum(r["broker_offset"] - r["consumer_offset"] for r in result.rows["consumer_queue"]
               if r["group"] == group and r["topic"] == "OrderTopic")


def online(result: CollectResult) -> set[str]:
    """Groups with a client connected."""
    return {r["group"] for r in result.rows["consumer_client"]}


def failures(result: CollectResult) -> list[dict]:
    """collector_health rows of failed calls."""
    return [h for h in result.rows["collector_health"] if not h["ok"]]


def span(result: CollectResult, group: str, broker: str, queue_id: int) -> int:
    """The ProcessQueue span of one queue of `group` (0 when nobody holds it)."""
    return max((r["cached_max_offset"] - r["cached_min_offset"] for r in result.rows["process_queue"]
                if (r["group"], r["topic"], r["broker"], r["queue_id"]) == (group, "OrderTopic", broker, queue_id)),
               default=0)


def broker_row(result: CollectResult, broker: str) -> dict:
    """The master's broker row."""
    return next(r for r in result.rows["broker"] if r["broker"] == broker and r["broker_id"] == 0)


def commits(result: CollectResult, group: str) -> dict[tuple[str, int], int]:
    """The client's in-memory committed offset per OrderTopic queue."""
    return {(r["broker"], r["queue_id"]): r["commit_offset"] for r in result.rows["process_queue"]
            if r["group"] == group and r["topic"] == "OrderTopic"}


def healthy(sim: SimulatorThread) -> None:
    result = collect(sim)
    assert not failures(result) and online(result) >= {A, B}
    assert max(lag(result, A), lag(result, B)) < 200, result.summary


def stuck_consumer(sim: SimulatorThread) -> None:
    assert span(collect(sim), A, "broker-a", 3) <= 2000, "stuck before its time"
    until(sim, lambda r: span(r, A, "broker-a", 3) > 2000, "group A's span on broker-a/3 above 2000")


def stuck_far_apart(sim: SimulatorThread) -> None:
    result = collect(sim)
    assert span(result, A, "broker-a", 3) > 2000, result.rows["process_queue"]


def one_stuck_message(sim: SimulatorThread) -> None:
    first = commits(collect(sim), A)
    # The rest flows: wait for another queue's commit to move, then the hung queue's must not have.
    later = commits(until(sim, lambda r: any(v > first[k] for k, v in commits(r, A).items() if k != ("broker-a", 3)),
                          "another queue of group A committing"), A)
    assert later[("broker-a", 3)] == first[("broker-a", 3)]


def slow_consumer(sim: SimulatorThread) -> None:
    first = collect(sim)
    assert lag(first, A) > 1000 and lag(first, B) < lag(first, A) / 10, first.summary
    until(sim, lambda r: lag(r, A) > lag(first, A), "group A's lag growing")


def blocked_consumer(sim: SimulatorThread) -> None:
    result = collect(sim)
    ok_tps = {r["group"]: r["consume_ok_tps"] for r in result.rows["consumer_status"] if r["topic"] == "OrderTopic"}
    assert ok_tps[A] == 0 and ok_tps[B] > 0, ok_tps
    queues = [r for r in result.rows["process_queue"] if r["group"] == A and r["topic"] == "OrderTopic"]
    assert queues and all(r["cached_msg_count"] > 0 for r in queues)


def retry_storm(sim: SimulatorThread) -> None:
    def clients(r: CollectResult) -> set[str]:
        return {c["client_id"] for c in r.rows["consumer_client"] if c["group"] == A}

    first = clients(collect(sim))
    until(sim, lambda r: clients(r) - first != set(), "a new client of group A")


def one_group_lagging(sim: SimulatorThread) -> None:
    result = collect(sim)
    assert lag(result, A) > 1000 and lag(result, B) < lag(result, A) / 10, result.summary


def all_groups_lagging(sim: SimulatorThread) -> None:
    result = collect(sim)
    assert lag(result, A) > 1000 and lag(result, B) > 1000, result.summary


def group_offline(sim: SimulatorThread) -> None:
    result = collect(sim)
    assert A not in online(result) and B in online(result) and lag(result, A) > 0, result.summary


def broker_down(sim: SimulatorThread) -> None:
    result = collect(sim)
    down = sim.broker_addrs["broker-b"]
    assert {r["broker"] for r in result.rows["broker"]} == {"broker-a"}, "the name server must still list broker-b"
    assert {h["target"] for h in failures(result)} == {down}
    assert all("refused" in h["error"] or "connect" in h["error"] for h in failures(result))


def call_timeout(sim: SimulatorThread) -> None:
    result = collect(sim)
    answered = {h["call"] for h in result.rows["collector_health"]
                if h["target"] == sim.broker_addrs["broker-a"] and h["ok"]}
    assert {(h["target"], h["call"]) for h in failures(result)} == {
        (sim.broker_addrs["broker-a"], "QUERY_CONSUME_TIME_SPAN")}
    assert {"GET_BROKER_RUNTIME_INFO", "GET_CONSUME_STATS", "GET_TOPIC_STATS_INFO"} <= answered


def healthy_busy(sim: SimulatorThread) -> None:
    result = collect(sim)
    assert not failures(result) and online(result) >= {A, B}
    assert sum(broker_row(result, b)["put_tps"] for b in ("broker-a", "broker-b")) > 400
    assert max(lag(result, A), lag(result, B)) < 2000, result.summary


def dispatch_lag(sim: SimulatorThread) -> None:
    assert broker_row(collect(sim), "broker-a")["dispatch_behind_bytes"] == 300 * 1024 * 1024


def put_latency(sim: SimulatorThread) -> None:
    assert broker_row(collect(sim), "broker-b")["put_latency_500ms_1s"] == 150


def dlq_growth(sim: SimulatorThread) -> None:
    def dead(r: CollectResult) -> int:
        return sum(q["max_offset"] for q in r.rows["topic_queue"] if q["topic"] == f"%DLQ%{A}")

    first = collect(sim)
    assert dead(first) > 0
    until(sim, lambda r: dead(r) > dead(first), "more messages in %DLQ%")


def scale(sim: SimulatorThread) -> None:
    async def run() -> tuple[int, int, int]:
        async with RemotingClient(default_timeout=5.0, connect_timeout=5.0) as client:
            admin = AdminClient(client)
            info = await admin.get_cluster_info(sim.namesrv_addr)
            topics = await admin.get_topic_list(sim.namesrv_addr)
            groups = await admin.get_subscription_groups(next(iter(sim.broker_addrs.values())))
        return (len(info.clusters["DefaultCluster"]), sum(t.startswith("ScaleTopic") for t in topics),
                sum(g.startswith("scaleGroup") for g in groups))

    assert asyncio.run(run()) == (3, 300, 100)


def native(sim: SimulatorThread, brokers: list[dict]) -> CollectResult:
    """One scrape of the brokers' native /metrics page."""
    config = NativeMetricsConfig(port=sim.metrics_port)
    return asyncio.run(collect_native("DefaultCluster", config, brokers, datetime.now(UTC)))


def pop_stuck(sim: SimulatorThread) -> None:
    def over(r: CollectResult) -> bool:
        return any(p["wait_ack_count"] > p["pop_threshold_for_queue"] for p in r.rows.get("pop_queue", ()))

    result = until(sim, over, "popGroup's client past popThresholdForQueue")
    assert {c["consume_type"] for c in result.rows["consumer_client"]} == {"CONSUME_PASSIVELY"}
    assert not any(p["group"] == "mailGroup" for p in result.rows["pop_queue"])


def timer_backlog(sim: SimulatorThread) -> None:
    first = until(sim, lambda r: broker_row(r, "broker-a")["timer_congest_num"] > 1000, "timer messages in the wheel")
    later = until(sim, lambda r: broker_row(r, "broker-a")["timer_congest_num"]
                  > broker_row(first, "broker-a")["timer_congest_num"], "the wheel's backlog growing")
    pages = native(sim, later.rows["broker"]).rows["native_topic"]
    assert {p["topic"]: p["timing_messages"] for p in pages}["TimerTopic"] > 1000


def half_unresolved(sim: SimulatorThread) -> None:
    brokers = collect(sim).rows["broker"]
    deadline = time.monotonic() + 60
    while not any(p["half_messages"] for p in native(sim, brokers).rows["native_topic"]):
        assert time.monotonic() < deadline, "never saw half messages on TxTopic"


PROBES: dict[str, Callable[[SimulatorThread], None]] = {
    "pop-stuck": pop_stuck, "timer-backlog": timer_backlog, "half-unresolved": half_unresolved,
    "healthy": healthy, "stuck-consumer": stuck_consumer, "stuck-far-apart": stuck_far_apart,
    "one-stuck-message": one_stuck_message, "slow-consumer": slow_consumer, "blocked-consumer": blocked_consumer,
    "retry-storm": retry_storm, "one-group-lagging": one_group_lagging, "all-groups-lagging": all_groups_lagging,
    "group-offline": group_offline, "broker-down": broker_down, "call-timeout": call_timeout,
    "healthy-busy": healthy_busy, "dispatch-lag": dispatch_lag, "put-latency": put_latency,
    "dlq-growth": dlq_growth, "scale": scale,
}


def test_every_listed_scenario_has_a_probe() -> None:
    assert set(list_scenarios()) == set(PROBES)


# Scenarios whose probe waits seconds for the scenario to play out at its own pace (pop-stuck ~15 s):
# in the full suite, not in `make test-fast`.
WAITED_OUT = {"pop-stuck", "timer-backlog", "half-unresolved", "stuck-consumer"}


@pytest.mark.parametrize("name", [pytest.param(name, marks=pytest.mark.slow) if name in WAITED_OUT else name
                                  for name in sorted(PROBES)])
def test_listed_scenario_serves_what_its_line_says(name: str) -> None:
    line = list_scenarios()[name]
    assert re.match(r"(From the start|At \d+ s|Every \d+ s)", line), f"{name}: the line gives no timing: {line}"
    with SimulatorThread(name, time_scale=TIME_SCALE) as sim:
        PROBES[name](sim)


def test_broker_down_from_the_command_line_refuses_broker_b(tmp_path: Path) -> None:
    proc = subprocess.Popen([sys.executable, "-m", "daemon.cli", "simulate", "--scenario", "broker-down",
                             "--listen", "127.0.0.1:0"], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            cwd=REPO)
    try:
        assert proc.stdout is not None
        lines = [proc.stdout.readline() for _ in range(3)]  # the namesrv and two brokers, printed once serving
        addrs = dict(re.findall(r"(namesrv|broker-[ab]) (\S+)", "".join(lines)))
        assert set(addrs) == {"namesrv", "broker-a", "broker-b"}, lines

        async def ask() -> tuple[set[str], str | None]:
            async with RemotingClient(default_timeout=TIMEOUT_S, connect_timeout=TIMEOUT_S) as client:
                admin = AdminClient(client)
                listed = set((await admin.get_cluster_info(addrs["namesrv"])).clusters["DefaultCluster"])
                await admin.get_broker_runtime_info(addrs["broker-a"])
                try:
                    await admin.get_broker_runtime_info(addrs["broker-b"])
                except RemotingError as exc:
                    return listed, str(exc)
                return listed, None

        listed, refused = asyncio.run(ask())
        assert listed == {"broker-a", "broker-b"}
        assert refused is not None and ("refused" in refused or "connect" in refused), refused
    finally:
        proc.terminate()
        proc.wait(10)
