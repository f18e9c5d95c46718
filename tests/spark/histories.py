"""Generated sample histories for the differential tests of the evaluation engine (tests/spark/test_incremental.py).

    cycles = generate(seed=7, histories=4, cycles=40)
    for cluster, ts, tables in cycles:          # in commit order
        ParquetStore(root).append_all(tables, ts)

A history is one small RocketMQ cluster named h0, h1, ... (every rule keys by cluster, so many
histories share one store and one evaluation), evolving over `cycles` collection cycles of 30 s
(tests/spark/history_events.py: the clock, events and their placement):
1-2 brokers (broker-a may have a slave), TopicA on every broker (2-4 queues each), sometimes TopicB
(created mid-history, with its own group GroupC), 1-3 clients per group, a %RETRY% topic per group,
a %DLQ% topic once a group dead-letters; some histories are 5.x clusters (tests/spark/histories_v5.py:
timer wheel, half messages, native metrics pages, a pop-mode group). Beside them runs the daemon's
own stream (tests/spark/history_daemon.py): cluster "rocketwatch", table daemon_health, one or two hosts.

Seeded scenario events (SCENARIOS) drive the built-in rules: every kind is placed in some history of
every run (round robin), on lanes that keep two events from masking each other, and ends a few cycles
before the history does (long enough before for the windowed rules), so each rule fires and resolves
somewhere. Besides the events: cycles a history skips (gaps), one pause in which no history commits
anything, series appearing (TopicB, GroupC, the second daemon host, new client ids after a group
comes back) and disappearing (clients, a broker, a host), counter resets (a %DLQ% topic recreated),
nulls in nullable columns, and cycles committed up to 25 s late, after newer cycles of other
histories (never after a newer cycle of their own).
"""

from __future__ import annotations

import random
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any, NamedTuple

from daemon.collectors.health import with_target_figures
from rules.tables import SELF_CLUSTER
from tests.spark.histories_v5 import V5_BROKER_LANES, V5_SCENARIOS, V5_WINDOWED_TAIL, V5Cluster, v5_placement
from tests.spark.history_daemon import DaemonStream
from tests.spark.history_events import INTERVAL, START, TAIL, Event, Placer, ms

MAX_LATE_S = 25.0  # below the 28 s that at least separate two cycles of one history
CLUSTER_TABLES = ("process_queue", "consumer_queue", "consumer_status", "consumer_client", "topic_queue", "broker",
                  "collector_health")

# Scenario kind -> (the rules it is there for, shortest and longest duration in cycles).
SCENARIOS: dict[str, tuple[tuple[str, ...], int, int]] = {
    "broker_down": (("BrokerStoppedReporting", "CollectorTargetUnreachable"), 6, 14),
    "slave_behind": (("SlaveFallingBehind",), 3, 8),
    "schedule_backlog": (("DelayedMessagesPilingUp",), 6, 12),
    "topic_quiet": (("TopicWritesStopped",), 4, 24),
    "dispatch": (("DispatchBehind",), 3, 8),
    "put_latency": (("BrokerPutLatencyHigh",), 3, 8),
    "page_cache_lock": (("PageCacheLockHeld",), 3, 6),
    "transient_pool": (("TransientStorePoolExhausted",), 3, 8),
    "disk": (("CommitLogDiskFilling",), 3, 8),
    "send_queue": (("SendQueueWaiting",), 3, 6),
    "pull_queue": (("PullQueueWaiting",), 3, 6),
    "collector_fail": (("CollectorTargetUnreachable",), 3, 8),
    # GET_CONSUME_STATS fails on every broker while the rest is answered: degraded, not unreachable.
    "collector_partial": (("CollectionDegraded",), 6, 14),
    "slow": (("OneGroupLagging", "ProcessQueueCachedCountHigh", "ConsumeDelayHigh"), 10, 20),
    "all_slow": (("AllGroupsLagging",), 8, 16),
    "offline": (("ConsumerGroupOffline",), 5, 12),
    "stuck": (("StuckMessage", "ConsumerOffsetStalled", "ProcessQueueSpanTooLong", "ConsumeDelayHigh"), 12, 24),
    "blocked": (("ConsumptionBlocked", "ProcessQueueCachedSizeHigh"), 8, 14),
    "double_hold": (("QueueHeldByTwoClients",), 3, 6),
    "churn": (("RebalanceChurn",), 6, 14),
    "dlq": (("DeadLetterQueueGrowing",), 3, 10),
    "retry": (("RetryBacklogGrowing",), 5, 12),
    "burst": ((), 3, 4),  # producers of TopicA send 10x for a while: a lagging group reaches critical
    **V5_SCENARIOS,  # timer wheel, half messages, pop-mode consumers (tests/spark/histories_v5.py)
}
# Rules over a window keep firing until the growth or the changes leave it: their events end this
# many cycles before the history does (10-minute windows: 20 cycles, plus a margin).
WINDOWED_TAIL = {"dlq": 23, "churn": 23, **V5_WINDOWED_TAIL}
GROUP_KINDS = ("slow", "all_slow", "stuck", "blocked", "offline", "churn", "double_hold")
BROKER_METRICS = ("slave_behind", "schedule_backlog", "dispatch", "put_latency", "page_cache_lock", "transient_pool",
                  "disk", "send_queue", "pull_queue")


class Cycle(NamedTuple):
    """One collection cycle of one cluster: every table it wrote, stamped with one ts."""

    cluster: str
    ts: datetime
    tables: dict[str, list[dict[str, Any]]]


def generate(seed: int, histories: int, cycles: int) -> list[Cycle]:
    """Collection cycles of `histories` clusters h0.. and the daemon's stream over `cycles` cycles, in commit order."""
    rng, models, daemon, pause = _models(seed, histories, cycles)
    streams = [(model.name, model.run(pause)) for model in models] + [(SELF_CLUSTER, daemon.run(pause))]
    return _commit_order(rng, streams)


def describe(seed: int, histories: int, cycles: int) -> list[str]:
    """What generate(seed, histories, cycles) plays, one line per history (for failure messages)."""
    _, models, daemon, pause = _models(seed, histories, cycles)
    lines = [f"pause (no history commits): cycles {pause.start}-{pause.stop - 1}"]
    for model in [*models, daemon]:
        events = ", ".join(f"{e.kind}({e.target or '-'}) {e.start}-{e.end - 1}"
                           + (f" reset at {e.extra['reset_at']}" if "reset_at" in e.extra else "") for e in model.events)
        version = " (5.x)" if getattr(model, "v5", None) else ""
        lines.append(f"{model.name}{version}: skips {sorted(model.skips)}; {events}")
    return lines


def _models(seed: int, histories: int, cycles: int) -> tuple[random.Random, list[_Cluster], DaemonStream, range]:
    """The seeded models of one run, and the rng left for the commit order."""
    rng = random.Random(seed)
    # Dealt round robin, the kinds that compete for a group's time first, so they spread over the histories.
    crowded = [k for k in SCENARIOS if k in GROUP_KINDS]
    others = [k for k in SCENARIOS if k not in GROUP_KINDS and k != "burst"]
    rng.shuffle(crowded)
    rng.shuffle(others)
    kinds = crowded + others
    assigned: list[list[str]] = [[] for _ in range(histories)]
    for n, kind in enumerate(kinds):
        assigned[n % histories].append(kind)
    extras = [rng.sample(sorted(SCENARIOS), rng.randint(1, 3)) for _ in range(histories)]
    pause = _pause(rng, cycles)
    models = [_Cluster(f"h{h}", h, random.Random(rng.random()), cycles, pause, assigned[h], extras[h])
              for h in range(histories)]
    return rng, models, DaemonStream(random.Random(rng.random()), cycles, pause), pause


def cycle_of(ts: datetime) -> int:
    """The cycle index of a generated cycle's ts (each history collects 1.5-28 s into its cycle, +-1 s)."""
    return int((ts - START) // INTERVAL)


def _pause(rng: random.Random, cycles: int) -> range:
    """The cycles no history commits (the collectors or the store were away): 5-8 cycles around the middle."""
    start = rng.randint(cycles * 2 // 5, cycles * 3 // 5)
    return range(start, start + rng.randint(5, 8))


def _commit_order(rng: random.Random, streams: Iterable[tuple[str, list]]) -> list[Cycle]:
    """All cycles ordered by when they are committed: a moment after their ts, a few up to 25 s late."""
    timed = []
    for cluster, cycles in streams:
        for n, (_, ts, tables) in enumerate(cycles):
            late = n > 0 and rng.random() < 0.12
            delay = rng.uniform(6.0, MAX_LATE_S) if late else rng.uniform(0.05, 0.5)
            timed.append((ts + timedelta(seconds=delay), cluster, ts, tables))
    timed.sort(key=lambda t: (t[0], t[1]))
    ordered = [Cycle(cluster, ts, tables) for _, cluster, ts, tables in timed]
    newest: dict[str, datetime] = {}
    for cycle in ordered:  # never out of order within one cluster
        assert cycle.ts > newest.get(cycle.cluster, cycle.ts - INTERVAL), cycle.cluster
        newest[cycle.cluster] = cycle.ts
    return ordered


@dataclass
class _Offsets:
    """A group's view of one queue: committed offset, cache, when it last consumed."""

    committed: int
    cached: int = 0
    low: int = 0  # cached_min_offset (0 with an empty cache)
    high: int = 0
    frozen_at: int | None = None  # the offset a stuck or blocked consumer holds
    last_consume: datetime | None = None
    last_pull: datetime | None = None


class _Cluster:
    """One history: a small cluster whose state advances every cycle, collected or not."""

    def __init__(self, name: str, index: int, rng: random.Random, cycles: int, pause: range, required: list[str],
                 extras: list[str]) -> None:
        kinds = required + extras
        self.name = name
        self.rng = rng
        self.cycles = cycles
        self.net = f"10.{index}"
        self.offset_s = round(rng.uniform(1.5, 28.0), 3)  # where in the 30 s this cluster collects (see cycle_of)
        self.brokers = ["broker-a", "broker-b"] if rng.random() < 0.6 or "broker_down" in kinds else ["broker-a"]
        self.slave = "slave_behind" in kinds or rng.random() < 0.3
        self.pool = {b for b in self.brokers if b == "broker-a" and ("transient_pool" in kinds or rng.random() < 0.3)}
        # Topics: name -> (queues per broker, brokers, rate per queue per cycle, created at cycle)
        qa = rng.randint(2, 4)
        self.topics: dict[str, dict[str, Any]] = {
            "TopicA": {"queues": qa, "brokers": self.brokers, "rate": rng.randint(2000, 6000) // (qa * len(self.brokers)),
                       "born": 0},
        }
        has_b = rng.random() < 0.6
        if has_b:
            self.topics["TopicB"] = {"queues": rng.randint(2, 3), "brokers": ["broker-a"], "rate": rng.randint(300, 800),
                                     "born": rng.choice([0, rng.randint(4, 14)])}
        if "topic_quiet" in kinds:
            # on broker-a: broker_down takes the last broker, and with it the put rate this rule needs
            self.topics["TopicQuiet"] = {"queues": 2, "brokers": ["broker-a"], "rate": rng.randint(20, 80),
                                         "born": 0}
        self.groups: dict[str, dict[str, Any]] = {}
        for group, topic in (("GroupA", "TopicA"), ("GroupB", "TopicA")) + ((("GroupC", "TopicB"),) if has_b else ()):
            self.groups[group] = {
                "topic": topic, "clients": rng.randint(1, 3), "pid": 1000 + rng.randint(0, 8000),
                "orderly": group == "GroupC" and rng.random() < 0.3,
                "broadcast": group == "GroupC" and rng.random() < 0.25,
                "tags": rng.random() < 0.2, "delay_null": rng.random() < 0.15, "pull_offset": rng.random() < 0.7,
                "threshold": 500 if rng.random() < 0.2 else 1000,
            }
        # Single cycles this history misses, and sometimes a run of 2-4 (its series go stale).
        self.skips = {rng.randint(1, cycles - 2) for _ in range(rng.randint(1, 3))}
        if rng.random() < 0.6:
            gap = rng.randint(3, cycles - 6)
            self.skips |= set(range(gap, gap + rng.randint(2, 4)))
        self.events: list[Event] = []
        self._place(required, extras, self.skips | set(pause))
        self._init_state()
        v5 = any(k in V5_SCENARIOS for k in kinds) or rng.random() < 0.25  # else 4.x: no timer, native or pop rows
        self.v5 = V5Cluster(name, self.net, random.Random(rng.random()), self.brokers, self._active) if v5 else None

    # -- scenario placement -------------------------------------------------------------------------------------

    def _place(self, required: list[str], extras: list[str], hidden: set[int]) -> None:
        """Place the events: the ones this history is there for first, the most constrained of them first; the
        extras where they still fit."""
        first = ("dlq", "churn", "topic_quiet", "all_slow", "slow", "stuck", "blocked", "offline", "double_hold")
        required = sorted(required, key=lambda k: first.index(k) if k in first else len(first))
        attempts = 12
        for attempt in range(attempts):  # start over with shorter events until the required ones all fit
            self.events = []
            placer = Placer(self.rng, self.cycles, hidden)
            stretch = 1.0 - attempt / (attempts - 1)
            if all([self._place_one(placer, kind, stretch) for kind in required]):
                break
        for kind in extras:
            self._place_one(placer, kind, 1.0)

    def _place_one(self, placer: Placer, kind: str, stretch: float) -> bool:
        """Place one event of `kind` on the first of its possible targets (in seeded order) that has room, at most
        `stretch` of the way from its shortest to its longest duration."""
        targets: list[str] = [""]
        if kind in ("offline", "stuck", "blocked", "double_hold", "churn", "dlq", "retry"):
            targets = self.rng.sample(sorted(self.groups), len(self.groups))
            if kind == "stuck":  # the span and stuck-message rules skip orderly consumers
                targets = [g for g in targets if not self.groups[g]["orderly"]]
        return any(self._try_place(placer, kind, target, stretch) for target in targets)

    def _try_place(self, placer: Placer, kind: str, target: str, stretch: float) -> bool:
        rng = self.rng
        _, shortest, longest = SCENARIOS[kind]
        longest = shortest + round((longest - shortest) * stretch)
        topic_a_groups = [g for g, spec in self.groups.items() if spec["topic"] == "TopicA"]
        lanes, first, at, level = [kind], 2, None, 0.0
        extra: dict[str, Any] = {}
        if kind == "broker_down":
            target = self.brokers[-1]
            lanes = [f"{m}:{target}" for m in (*BROKER_METRICS, *V5_BROKER_LANES)] + [f"up:{target}"]
        elif kind in BROKER_METRICS:
            target = "broker-a" if kind in ("slave_behind", "transient_pool") else rng.choice(self.brokers)
            lanes = [f"{kind}:{target}"]
            level = rng.random()  # below 0.5: warning, above: critical
        elif kind == "topic_quiet":
            # Written last before the history starts (minutes: ~15 or ~60); writes resume at the end.
            target, lanes, at = "TopicQuiet", [kind], 0
            level = rng.choice([rng.uniform(13.0, 16.0), rng.uniform(58.0, 61.0)])
        elif kind in ("slow", "all_slow"):
            # A lagging group's peers must not lag (OneGroupLagging), nor must any group fail to (AllGroupsLagging).
            target = rng.choice(topic_a_groups) if kind == "slow" else "TopicA"
            lanes = [f"group:{g}" for g in topic_a_groups]
            level = rng.uniform(0.0, 0.3)  # the share of new messages consumed
        elif kind in ("offline", "stuck", "blocked", "double_hold", "churn"):
            lanes = [f"group:{target}"]
            extra["pick"] = rng.random()
        elif kind in ("dlq", "retry"):
            lanes = [f"{kind}:{target}"]
            level = rng.choice([rng.randint(2, 8), rng.randint(15, 40)] if kind == "dlq"
                               else [rng.randint(350, 900), rng.randint(1200, 3000)])
            if kind == "dlq":
                extra["reset"] = True  # the growth rule is a counter: every DLQ event resets it once
        elif kind == "collector_fail":
            target = rng.choice(["namesrv", "consume_stats", "client"])
        elif kind == "collector_partial":
            # A broker that is down answers nothing: the two events would mask each other.
            target, lanes = "consume_stats", [kind, *(f"up:{b}" for b in self.brokers)]
        elif kind == "burst":
            target = "TopicA"
        elif kind in V5_SCENARIOS:
            target, lanes, level = v5_placement(kind, self.brokers, rng)
        if target in self.groups and self.groups[target]["topic"] == "TopicB":
            first = max(first, self.topics["TopicB"]["born"] + 1)
        placed = placer.place(lanes, shortest, longest, first, WINDOWED_TAIL.get(kind, TAIL), at)
        if placed is None:
            return False
        start, end = placed
        if extra.get("reset"):
            extra["reset_at"] = rng.randint(start + 1, max(start + 1, end - 2))
        self.events.append(Event(kind, start, end, target, level, extra))
        return True

    def _active(self, kind: str, i: int, target: str | None = None) -> Event | None:
        for event in self.events:
            if event.kind == kind and event.on(i) and (target is None or event.target == target):
                return event
        return None

    def _ended(self, kind: str, i: int, target: str) -> Event | None:
        """The event of `kind` on `target` that ended exactly at cycle i."""
        for event in self.events:
            if event.kind == kind and event.end == i and event.target == target:
                return event
        return None

    # -- state ------------------------------------------------------------------------------------------------------

    def _init_state(self) -> None:
        rng = self.rng
        self.max_offset: dict[tuple[str, str, int], int] = {}
        self.last_update: dict[tuple[str, str, int], datetime | None] = {}
        for topic, spec in self.topics.items():
            for broker in spec["brokers"]:
                for q in range(spec["queues"]):
                    self.max_offset[(topic, broker, q)] = rng.randint(10_000, 2_000_000) if spec["born"] == 0 else 0
                    self.last_update[(topic, broker, q)] = None
        self.retry_max = {g: rng.randint(0, 500) for g in self.groups}
        self.dlq_max: dict[str, int] = {g: rng.randint(0, 40) for g in self.groups if rng.random() < 0.4}
        self.offsets: dict[tuple[str, str, str, int], _Offsets] = {}
        for group, spec in self.groups.items():
            for key in self._group_queues(group):
                if key[1] == spec["topic"]:
                    self.offsets[key] = _Offsets(self.max_offset.get(key[1:], 0))
            self.offsets[(group, f"%RETRY%{group}", "broker-a", 0)] = _Offsets(self.retry_max[group])
        self.assignment: dict[str, dict[str, list[tuple[str, str, int]]]] = {}
        self.prev: dict[str, dict[str, list[tuple[str, str, int]]]] = {}  # last cycle's assignment
        self.schedule = {b: rng.randint(100, 3000) for b in self.brokers}
        self.commitlog = {b: rng.randint(10**9, 10**11) for b in self.brokers}
        self.boot = {b: START - timedelta(days=rng.randint(1, 90)) for b in self.brokers}

    def _group_queues(self, group: str) -> list[tuple[str, str, str, int]]:
        topic = self.groups[group]["topic"]
        spec = self.topics[topic]
        return [(group, topic, b, q) for b in spec["brokers"] for q in range(spec["queues"])]

    def _exists(self, topic: str, i: int) -> bool:
        return topic not in self.topics or self.topics[topic]["born"] <= i

    def _clients(self, group: str, i: int) -> list[str]:
        """The online clients of `group` at cycle i (none while offline; a flapping one during churn)."""
        spec = self.groups[group]
        if self._active("offline", i, group) or not self._exists(spec["topic"], i):
            return []
        # After coming back the clients are new processes: new ids, new series.
        pid = spec["pid"] + 10 * sum(1 for e in self.events if e.kind == "offline" and e.target == group and e.end <= i)
        g = list(self.groups).index(group)
        clients = [f"{self.net}.{g + 1}.{n + 1}@{pid + n}" for n in range(spec["clients"])]
        churn = self._active("churn", i, group)
        if churn is not None and (i - churn.start) % 2 == 0:
            clients.append(f"{self.net}.{g + 1}.0@flapper")  # sorts first: it always takes queues
        return sorted(clients)

    # -- one cycle ---------------------------------------------------------------------------------------------------

    def run(self, pause: range) -> list[tuple[int, datetime, dict[str, list[dict[str, Any]]]]]:
        """Every cycle's (index, ts, tables); state advances through skipped cycles too."""
        out = []
        for i in range(self.cycles):
            ts = START + i * INTERVAL + ms(self.offset_s + self.rng.uniform(-1.0, 1.0))
            tables = self.step(i, ts)
            if i not in self.skips and i not in pause:
                out.append((i, ts, tables))
        return out

    def step(self, i: int, ts: datetime) -> dict[str, list[dict[str, Any]]]:
        """Advance the cluster to cycle i and return the rows its collectors would write at ts."""
        rng = self.rng
        down = {e.target for e in self.events if e.kind == "broker_down" and e.on(i)}
        produced = self._produce(i, ts, down)
        self._consume(i, ts, produced)
        if self.v5:
            self.v5.advance(i, ts, down)
        tables: dict[str, list[dict[str, Any]]] = {t: [] for t in CLUSTER_TABLES}
        health = tables["collector_health"]
        health.append(self._health(ts, f"{self.net}.0.100:9876", "GET_BROKER_CLUSTER_INFO",
                                   self._active("collector_fail", i, "namesrv") is None))
        for broker in self.brokers:
            up = broker not in down
            for broker_id in ([0, 1] if self.slave and broker == "broker-a" else [0]):
                addr = self._addr(broker, broker_id)
                health.append(self._health(ts, addr, "GET_BROKER_RUNTIME_INFO", up))
                if up:
                    tables["broker"].append(self._broker_row(i, ts, broker, broker_id, produced))
            stats_ok = (up and self._active("collector_fail", i, "consume_stats") is None
                        and self._active("collector_partial", i) is None)
            health.append(self._health(ts, self._addr(broker, 0), "GET_CONSUME_STATS", stats_ok))
        for (topic, broker, q), max_offset in self.max_offset.items():
            if broker in down or not self._exists(topic, i):
                continue
            last = self.last_update[(topic, broker, q)]
            tables["topic_queue"].append(dict(
                ts=ts, cluster=self.name, topic=topic, topic_kind="normal", broker=broker, queue_id=q,
                min_offset=None if rng.random() < 0.03 else max(0, max_offset - 500_000), max_offset=max_offset,
                last_update_ts=None if rng.random() < 0.02 else last))
        if "broker-a" not in down:
            tables["topic_queue"].append(dict(
                ts=ts, cluster=self.name, topic="SCHEDULE_TOPIC_XXXX", topic_kind="system", broker="broker-a",
                queue_id=2, min_offset=0, max_offset=self.schedule["broker-a"], last_update_ts=ts - ms(3.0)))
            for group in self.groups:
                if not self._exists(self.groups[group]["topic"], i):
                    continue
                tables["topic_queue"].append(dict(
                    ts=ts, cluster=self.name, topic=f"%RETRY%{group}", topic_kind="retry", group=group,
                    broker="broker-a", queue_id=0, min_offset=0, max_offset=self.retry_max[group],
                    last_update_ts=ts - ms(rng.uniform(0, 20))))
                if group in self.dlq_max:
                    tables["topic_queue"].append(dict(
                        ts=ts, cluster=self.name, topic=f"%DLQ%{group}", topic_kind="dlq", group=group,
                        broker="broker-a", queue_id=0, min_offset=None if rng.random() < 0.2 else 0,
                        max_offset=self.dlq_max[group], last_update_ts=None))
        for group, spec in self.groups.items():
            self._group_rows(i, ts, group, spec, down, tables)
        if self.v5:
            self.v5.add_rows(ts, tables, down, self._addr)
        # As the collector does at the end of a cycle: each row says how its target fared overall.
        with_target_figures(health)
        return tables

    def _addr(self, broker: str, broker_id: int) -> str:
        return f"{self.net}.0.{self.brokers.index(broker) * 2 + broker_id + 1}:10911"

    def _health(self, ts: datetime, target: str, call: str, ok: bool) -> dict[str, Any]:
        rng = self.rng
        return dict(ts=ts, cluster=self.name, target=target, call=call, ok=ok,
                    error=None if ok else rng.choice([f"connect to <{target}> failed", "timeout after 3000 ms"]),
                    latency_ms=round(rng.uniform(0.5, 25.0), 3) if ok else 3000.0 + rng.randint(0, 50))

    def _produce(self, i: int, ts: datetime, down: set[str]) -> dict[tuple[str, str, int], int]:
        """Messages written to each normal queue this cycle (also the retry and DLQ topics and the schedule)."""
        rng = self.rng
        produced: dict[tuple[str, str, int], int] = {}
        for key in self.max_offset:
            topic, broker, _ = key
            spec = self.topics[topic]
            if broker in down or not self._exists(topic, i):
                produced[key] = 0
                continue
            quiet = self._active("topic_quiet", i) if topic == "TopicQuiet" else None
            if quiet is not None:
                produced[key] = 0
                if self.last_update[key] is None:
                    self.last_update[key] = START - ms(quiet.level * 60 + rng.uniform(0, 20))
                continue
            burst = 10 if topic == "TopicA" and self._active("burst", i) else 1
            n = int(spec["rate"] * burst * rng.uniform(0.8, 1.2))
            produced[key] = n
            self.max_offset[key] += n
            if n:
                self.last_update[key] = ts - ms(rng.uniform(0.0, 0.8))
        for group in self.groups:
            retry = self._active("retry", i, group)
            self.retry_max[group] += int(retry.level * rng.uniform(0.8, 1.2)) if retry else rng.choice([0, 0, 1, 3])
            dlq = self._active("dlq", i, group)
            if dlq is not None:
                if dlq.extra.get("reset_at") == i:
                    self.dlq_max[group] = rng.randint(0, 3)  # topic deleted and recreated: a counter reset
                else:
                    self.dlq_max[group] = self.dlq_max.get(group, 0) + rng.randint(1, int(dlq.level))
        for broker in self.brokers:
            event = self._active("schedule_backlog", i, broker)
            if event is not None:
                self.schedule[broker] += int((62_000 if event.level > 0.5 else 12_000) * rng.uniform(0.95, 1.1))
            else:
                self.schedule[broker] = max(100, int(self.schedule[broker] * 0.3)) + rng.randint(0, 200)
            self.commitlog[broker] += sum(n for (_, b, _), n in produced.items() if b == broker) * 1024
        return produced

    def _consume(self, i: int, ts: datetime, produced: dict[tuple[str, str, int], int]) -> None:
        """Move every group's committed offsets and caches for cycle i."""
        rng = self.rng
        for group, spec in self.groups.items():
            clients = self._clients(group, i)
            queues = sorted(k for k in self.offsets if k[0] == group)
            assignment = _allocate([k[1:] for k in queues], clients)
            self.assignment[group] = assignment
            slow = self._active("slow", i, group) or (spec["topic"] == "TopicA" and self._active("all_slow", i))
            stuck = self._active("stuck", i, group)
            blocked = self._active("blocked", i, group)
            for key in queues:
                state = self.offsets[key]
                _, topic, broker, q = key
                if topic.startswith("%RETRY%"):
                    top = self.retry_max[group]
                    rate = 50
                else:
                    top = self.max_offset[(topic, broker, q)]
                    rate = max(1, self.topics[topic]["rate"])
                holder = next((c for c, held in assignment.items() if (topic, broker, q) in held), None)
                frozen = (
                    not clients
                    or (stuck is not None and key == self._stuck_queue(stuck, queues))
                    or (blocked is not None and holder == self._blocked_client(blocked, assignment))
                    or (topic.startswith("%RETRY%") and self._active("retry", i, group) is not None)
                )
                if frozen:
                    if state.frozen_at is None:
                        state.frozen_at = state.committed
                else:
                    state.frozen_at = None
                    if slow and not topic.startswith("%RETRY%"):
                        state.committed = min(top, state.committed + int(slow.level * produced.get(key[1:], 0)))
                    elif topic.startswith("%RETRY%"):
                        state.committed = max(state.committed, top - rng.randint(0, 2))  # retries drain at once
                    else:
                        residual = rng.randint(0, rate // 20)
                        target = max(state.committed, top - residual)
                        state.committed = min(target, state.committed + produced.get(key[1:], 0) + 5 * rate)
                    state.last_consume = ts - ms(rng.uniform(0.0, 4.0))
                lag = top - state.committed
                pulled = ts - ms(rng.uniform(0.0, 2.0))
                if stuck is not None and key == self._stuck_queue(stuck, queues):
                    # one message in flight at frozen_at; the client keeps pulling and consuming after it
                    state.low, state.high = state.committed, max(state.committed + 1, top - rng.randint(0, 40))
                    state.cached = min(state.high - state.low, rng.randint(20, 300))
                    state.last_consume, state.last_pull = ts - ms(rng.uniform(0.0, 4.0)), pulled
                elif blocked is not None and holder == self._blocked_client(blocked, assignment):
                    # nothing finishes; the client pulls until its cache is full
                    full = spec["threshold"] + 30
                    if state.cached < full:
                        state.last_pull = pulled
                    state.cached = min(lag, full)
                    state.low, state.high = state.committed, state.committed + max(state.cached - 1, 0)
                    if state.last_consume is None:
                        state.last_consume = ts - ms(rng.uniform(60.0, 90.0))
                else:
                    cap = spec["threshold"] + rng.randint(0, 40) if slow or not clients else rng.randint(0, 60)
                    state.cached = max(0, min(lag, cap))
                    state.low = state.committed if state.cached else 0
                    state.high = state.committed + state.cached - 1 if state.cached else 0
                    state.last_pull = pulled
            ended = self._ended("stuck", i, group)
            if ended is not None:  # consumeTimeout: the stuck message went to %RETRY%, the offset moves on
                self.retry_max[group] += 1

    @staticmethod
    def _stuck_queue(event: Event, queues: list[tuple[str, str, str, int]]) -> tuple[str, str, str, int]:
        normal = [k for k in queues if not k[1].startswith("%RETRY%")]
        return normal[int(event.extra["pick"] * len(normal))]

    @staticmethod
    def _blocked_client(event: Event, assignment: dict[str, list[tuple[str, str, int]]]) -> str | None:
        holders = [c for c, held in sorted(assignment.items()) if held]  # a client without queues has nothing to block
        return holders[int(event.extra["pick"] * len(holders))] if holders else None

    def _group_rows(self, i: int, ts: datetime, group: str, spec: dict[str, Any], down: set[str],
                    tables: dict[str, list[dict[str, Any]]]) -> None:
        rng = self.rng
        if not self._exists(spec["topic"], i):
            return
        clients = self._clients(group, i)
        assignment = self.assignment[group]
        model = "BROADCASTING" if spec["broadcast"] else "CLUSTERING"
        retry_topic = f"%RETRY%{group}"
        expr = "TagA || TagB" if spec["tags"] else "*"
        failing_client = self._active("collector_fail", i, "client") is not None and group == "GroupA"
        for n, client in enumerate(clients):
            tables["collector_health"].append(self._health(ts, client, "GET_CONSUMER_RUNNING_INFO",
                                                           not (failing_client and n == 0)))
            tables["consumer_client"].append(dict(
                ts=ts, cluster=self.name, group=group, client_id=client, client_addr=f"{client.split('@')[0]}:{5000 + n}",
                language=None if rng.random() < 0.05 else "JAVA", version=None if rng.random() < 0.05 else 413,
                consume_type="CONSUME_PASSIVELY", message_model=model,
                subscriptions=f"{retry_topic}=*;{spec['topic']}={expr}"))
            failing = self._active("retry", i, group) is not None
            for topic in (spec["topic"], retry_topic):
                tables["consumer_status"].append(dict(
                    ts=ts, cluster=self.name, group=group, client_id=client, topic=topic,
                    pull_rt_ms=round(rng.uniform(0.5, 30.0), 3), pull_tps=round(rng.uniform(0.0, 300.0), 3),
                    consume_rt_ms=round(rng.uniform(0.1, 50.0), 3), consume_ok_tps=round(rng.uniform(0.0, 300.0), 3),
                    consume_failed_tps=round(rng.uniform(5.0, 80.0), 3) if failing else 0.0,
                    consume_failed_msgs_1h=rng.randint(100, 5000) if failing else rng.choice([0, 0, 2])))
            blocked = self._active("blocked", i, group)
            big = blocked is not None and client == self._blocked_client(blocked, assignment)
            for topic, broker, q in assignment.get(client, []):
                tables["process_queue"].append(self._pq_row(ts, group, client, spec, (topic, broker, q), big))
            if client in self.prev.get(group, {}):
                for topic, broker, q in self.prev[group][client]:
                    if (topic, broker, q) not in assignment.get(client, []):  # moved away: reported dropped once
                        row = self._pq_row(ts, group, client, spec, (topic, broker, q), False)
                        row.update(dropped=True, cached_msg_count=0, cached_msg_size_mib=0, cached_min_offset=0,
                                   cached_max_offset=0)
                        tables["process_queue"].append(row)
        hold = self._active("double_hold", i, group)
        if hold is not None:
            held = sorted(q for c in clients for q in assignment.get(c, []))
            if held:
                queue = held[int(hold.extra["pick"] * len(held))]
                owner = next(c for c in clients if queue in assignment.get(c, []))
                others = [c for c in clients if c != owner]
                second = others[0] if others else f"{self.net}.{list(self.groups).index(group) + 1}.8@ghost"
                row = self._pq_row(ts, group, second, spec, queue, False)
                row["dropped"] = i == hold.end - 1  # the stale holder finally lets go
                tables["process_queue"].append(row)
        self.prev[group] = {c: list(assignment.get(c, [])) for c in clients}
        for (g, topic, broker, q), state in sorted(self.offsets.items()):
            if g != group or broker in down:
                continue
            top = self.retry_max[group] if topic == retry_topic else self.max_offset[(topic, broker, q)]
            lag = top - state.committed
            rate = 50 if topic == retry_topic else max(1, self.topics[topic]["rate"])
            delay = None if spec["delay_null"] or rng.random() < 0.03 else (round(lag / rate * 30_000) if lag > 0 else 0)
            pull = state.committed + state.cached if spec["pull_offset"] else None
            tables["consumer_queue"].append(dict(
                ts=ts, cluster=self.name, group=group, topic=topic, broker=broker, queue_id=q, broker_offset=top,
                consumer_offset=state.committed, pull_offset=pull,
                last_consumed_store_ts=None if lag == 0 or rng.random() < 0.1 else ts - ms(lag / rate * 30),
                consume_delay_ms=delay, topic_kind="retry" if topic == retry_topic else "normal"))

    def _pq_row(self, ts: datetime, group: str, client: str, spec: dict[str, Any], queue: tuple[str, str, int],
                big: bool) -> dict[str, Any]:
        rng = self.rng
        topic, broker, q = queue
        state = self.offsets[(group, topic, broker, q)]
        kib = 200 if big else 2
        return dict(
            ts=ts, cluster=self.name, group=group, client_id=client, topic=topic, broker=broker, queue_id=q,
            cached_msg_count=state.cached, cached_msg_size_mib=state.cached * kib // 1024,
            cached_min_offset=state.low, cached_max_offset=state.high, commit_offset=state.committed,
            last_pull_ts=None if rng.random() < 0.02 else state.last_pull,
            last_consume_ts=None if rng.random() < 0.02 else state.last_consume,
            locked=spec["orderly"], dropped=False, try_unlock_times=0,
            pull_threshold_for_queue=spec["threshold"], pull_threshold_size_mib=100, max_span=2000,
            consume_timeout_min=15, max_reconsume_times=16, orderly=spec["orderly"])

    def _broker_row(self, i: int, ts: datetime, broker: str, broker_id: int,
                    produced: dict[tuple[str, str, int], int]) -> dict[str, Any]:
        rng = self.rng
        mib = 1 << 20

        def level(kind: str, warning: float, critical: float, normal: float) -> float:
            event = self._active(kind, i, broker)
            if event is None:
                return normal
            return warning if event.level < 0.5 else critical

        tps = sum(n for (_, b, _), n in produced.items() if b == broker) / 30.0
        master = broker_id == 0
        slow = self._active("put_latency", i, broker)
        buckets = {name: 0 for name in _SLOW_BUCKETS}
        if slow is not None and master:
            for name in rng.sample(_SLOW_BUCKETS, 2):
                buckets[name] = rng.randint(1, 30) if slow.level < 0.5 else rng.randint(60, 200)
        fast = int(tps * 60)
        row: dict[str, Any] = dict(
            ts=ts, cluster=self.name, broker=broker, broker_id=broker_id, addr=self._addr(broker, broker_id),
            version=None if rng.random() < 0.05 else "V5_3_3" if self.v5 else "V4_9_7", boot_ts=self.boot[broker],
            commitlog_min_offset=self.commitlog[broker] // 2, commitlog_max_offset=self.commitlog[broker],
            dispatch_behind_bytes=int(level("dispatch", rng.uniform(20, 200), rng.uniform(300, 900),
                                            rng.uniform(0.0, 0.06)) * mib),
            page_cache_lock_ms=int(level("page_cache_lock", rng.randint(550, 990), rng.randint(1100, 4000), 0)),
            put_latency_le_0ms=int(fast * 0.7), put_latency_0_10ms=fast - int(fast * 0.7),
            put_latency_10_50ms=rng.randint(0, 5), put_latency_50_100ms=rng.randint(0, 2),
            put_latency_100_200ms=rng.randint(0, 1), put_latency_200_500ms=0, **buckets,
            put_p99_ms=None if rng.random() < 0.1 else round(rng.uniform(1.0, 10.0) + 300 * (slow is not None), 3),
            put_tps=round(tps, 3) if master else 0.0, put_tps_1m=round(tps, 3) if master else 0.0,
            remain_transient_buffers=(int(level("transient_pool", 1, 0, 5)) if broker in self.pool and master else None),
            remain_to_commit_bytes=rng.randint(0, 4 * mib) if broker in self.pool else None,
            commitlog_disk_ratio=None if rng.random() < 0.03 else round(
                level("disk", rng.uniform(0.76, 0.84), rng.uniform(0.86, 0.95), rng.uniform(0.3, 0.6)), 4),
            send_queue_size=rng.randint(0, 20), send_queue_capacity=10000,
            send_queue_head_wait_ms=int(level("send_queue", rng.randint(110, 190), rng.randint(210, 900),
                                              rng.randint(0, 30))),
            pull_queue_size=rng.randint(0, 20), pull_queue_capacity=100000,
            pull_queue_head_wait_ms=int(level("pull_queue", rng.randint(2100, 4900), rng.randint(5100, 9000),
                                              rng.randint(0, 200))),
            earliest_message_ts=START - timedelta(days=3),
            schedule_backlog=self.schedule[broker] if master else None,
        )
        row["put_slow_100ms"] = sum(buckets.values()) + row["put_latency_100_200ms"]
        row.update(self.v5.timer_figures(broker, master) if self.v5 else {})
        if not master:
            behind = level("slave_behind", rng.uniform(280, 900), rng.uniform(1100, 3000), rng.uniform(0.0, 3.0))
            row["replication_behind_bytes"] = int(behind * mib)
        return row


_SLOW_BUCKETS = ["put_latency_500ms_1s", "put_latency_1_2s", "put_latency_2_3s", "put_latency_3_4s",
                 "put_latency_4_5s", "put_latency_5_10s", "put_latency_ge_10s"]


def _allocate(queues: list[tuple[str, str, int]], clients: list[str]) -> dict[str, list[tuple[str, str, int]]]:
    """AllocateMessageQueueAveragely: each client gets a contiguous share of the sorted queues of each topic."""
    out: dict[str, list[tuple[str, str, int]]] = {c: [] for c in clients}
    if not clients:
        return out
    by_topic: dict[str, list[tuple[str, str, int]]] = {}
    for queue in sorted(queues):
        by_topic.setdefault(queue[0], []).append(queue)
    for topic_queues in by_topic.values():
        n, k = len(topic_queues), len(clients)
        start = 0
        for index, client in enumerate(clients):
            share = n // k + (1 if index < n % k else 0)
            out[client].extend(topic_queues[start:start + share])
            start += share
    return out
