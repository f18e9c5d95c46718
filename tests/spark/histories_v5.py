"""The RocketMQ 5.x side of the generated histories (tests/spark/histories.py).

A 5.x history's brokers report their timer wheel in runtime info (the broker table's timer_*
columns; a 4.x history leaves them null), and every master serves its native metrics page
(port 5557), read into native_topic (per page x topic: half and timer backlogs, with the system
topics rmq_sys_wheel_timer and RMQ_SYS_TRANS_HALF_TOPIC the rules leave out) and native_consumer
(per page x group x topic x is_retry: the broker's own lag, in-flight, ready and lag latency of
every group, and the pop revive counter). A pop-mode group, GroupPop on TopicPop, has 1-2 clients
that pop from every queue of each broker (pop_queue rows with queue id -1). Slaves run neither the
timer wheel nor the transaction checker, so only masters are scraped.

The scenario kinds here (V5_SCENARIOS) are dealt and placed like the others; their events:
- timer_late: the wheel's delivery falls behind the clock (timer_read_behind_s ramps up), then
  catches up;
- timer_backlog: producers of TopicTimer schedule far ahead, so TopicTimer's timing messages and
  the broker's timerCongestNum grow, then fall due and drain;
- half_growing: a transaction producer group is away: TopicTx's half messages grow, then its
  checks are answered and they resolve;
- half_stuck: the check-back answers UNKNOW for a few transactions: the same half count stands;
- pop_stuck: every consume thread of GroupPop blocks: each client passes popThresholdForQueue and
  stops popping, ready messages age on the broker with nothing in flight, the held messages are
  revived after popInvisibleTime; then the threads are released.
"""

from __future__ import annotations

import random
from collections.abc import Callable
from datetime import datetime, timedelta
from typing import Any

V5_SCENARIOS: dict[str, tuple[tuple[str, ...], int, int]] = {
    "timer_late": (("TimerDeliveryLate",), 3, 10),
    "timer_backlog": (("TimerBacklogGrowing", "TimerTopicBacklogGrowing"), 3, 8),
    "half_growing": (("HalfMessagesGrowing",), 4, 10),
    "half_stuck": (("HalfMessagesUnresolved",), 6, 22),
    "pop_stuck": (("PopConsumerStuck", "PopConsumerBrokerSideStalled", "PopMessagesRevived"), 8, 16),
}
# The timer backlog drains over a few cycles after its event; PopMessagesRevived counts revives over
# 5 minutes (10 cycles), and the held messages are revived two cycles into the event.
V5_WINDOWED_TAIL = {"timer_backlog": 7, "pop_stuck": 9}
# Per-broker lanes of these events (a broker that is down reports none of them).
V5_BROKER_LANES = ("timer", "half")
TIMER_TOPIC, TX_TOPIC, POP_TOPIC, POP_GROUP = "TopicTimer", "TopicTx", "TopicPop", "GroupPop"
WHEEL_TOPIC, HALF_TOPIC = "rmq_sys_wheel_timer", "RMQ_SYS_TRANS_HALF_TOPIC"
NATIVE_PORT = 5557
SCRAPE_CALL = "NATIVE_METRICS_SCRAPE"

Active = Callable[[str, int, str], Any]  # (kind, cycle, target) -> the active Event or None


def v5_placement(kind: str, brokers: list[str], rng: random.Random) -> tuple[str, list[str], float]:
    """(target, lanes, level) of an event of a 5.x kind; a level below 0.5 stays at warning."""
    if kind == "pop_stuck":
        # A down broker would hide the broker-side half of it.
        return POP_GROUP, [f"group:{POP_GROUP}", *(f"up:{b}" for b in brokers)], rng.random()
    broker = rng.choice(brokers)
    return broker, [f"{kind.split('_')[0]}:{broker}"], rng.random()


def _ms(seconds: float) -> timedelta:
    return timedelta(milliseconds=round(seconds * 1000))


class V5Cluster:
    """The 5.x state of one history: timer wheels, half messages and the pop-mode group, advanced every cycle."""

    def __init__(self, name: str, net: str, rng: random.Random, brokers: list[str], active: Active) -> None:
        self.name, self.net, self.rng, self.brokers, self.active = name, net, rng, brokers, active
        self.congest_base = {b: rng.randint(2_000, 60_000) for b in brokers}
        self.timer_excess = dict.fromkeys(brokers, 0)  # TopicTimer's messages scheduled beyond the usual
        self.wheel = {b: rng.randint(500, 5_000) for b in brokers}  # rmq_sys_wheel_timer (revive log)
        self.read_behind = dict.fromkeys(brokers, 0)
        self.tps = dict.fromkeys(brokers, (0.0, 0.0))  # timer enqueue, dequeue per second
        self.timer_totals = {b: [rng.randint(10**5, 10**7)] * 2 for b in brokers}  # enqueued, delivered
        self.half = dict.fromkeys(brokers, 0)
        self.half_repeats = {b: rng.randint(0, 10**5) for b in brokers}  # re-puts into the half topic
        self.tx_totals = {b: [rng.randint(10**4, 10**6), rng.randint(0, 10**3)] for b in brokers}
        self.pop_threshold = 96 if rng.random() < 0.7 else 1024
        self.pop_batch = 8 if self.pop_threshold == 96 else 32
        self.pop_rate = {b: rng.randint(100, 600) for b in brokers}  # TopicPop messages per cycle
        pid = 2000 + rng.randint(0, 5000)
        self.pop_clients = [f"{net}.9.{n + 1}@{pid + n}" for n in range(rng.randint(1, 2))]
        self.wait_ack = {(c, b): 0 for c in self.pop_clients for b in brokers}
        self.last_pop: dict[tuple[str, str], datetime | None] = dict.fromkeys(self.wait_ack)
        self.ready = dict.fromkeys(brokers, 0)
        self.stopped_at: datetime | None = None  # when the clients last popped before their threads blocked
        self.revived_total = {b: rng.randint(0, 50) for b in brokers}
        self.retry_ready = dict.fromkeys(brokers, 0)

    # -- state ----------------------------------------------------------------------------------------------------

    def advance(self, i: int, ts: datetime, down: set[str]) -> None:
        """Move every 5.x figure to cycle i (collected or not)."""
        for broker in self.brokers:
            self._timer(i, broker)
            self._half(i, broker)
        self._pop(i, ts, down)

    def _timer(self, i: int, broker: str) -> None:
        rng = self.rng
        enqueue, dequeue = rng.uniform(5.0, 50.0), rng.uniform(5.0, 50.0)
        backlog = self.active("timer_backlog", i, broker)
        if backlog is not None:  # scheduled far ahead: in, not out
            grown = rng.randint(40_000, 80_000) if backlog.level < 0.5 else rng.randint(300_000, 500_000)
            self.timer_excess[broker] += grown
            enqueue += grown / 30.0
        elif self.timer_excess[broker]:  # they fall due: the wheel delivers them
            left = int(self.timer_excess[broker] * rng.uniform(0.2, 0.4))
            dequeue += (self.timer_excess[broker] - left) / 30.0
            self.timer_excess[broker] = left if left > 1_000 else 0
        late = self.active("timer_late", i, broker)
        if late is not None:  # the wheel stopped delivering: its read pointer trails the clock
            step = rng.randint(40, 55) if late.level < 0.5 else rng.randint(180, 260)
            cap = rng.randint(400, 590) if late.level < 0.5 else 3_000
            self.read_behind[broker] = min(cap, (i - late.start + 1) * step)
            dequeue = rng.uniform(0.0, 1.0)
        else:
            self.read_behind[broker] = 0 if rng.random() < 0.9 else 1
        self.wheel[broker] = max(0, self.wheel[broker] + rng.randint(-400, 400))
        self.tps[broker] = (round(enqueue, 3), round(dequeue, 3))
        totals = self.timer_totals[broker]
        totals[0] += int(enqueue * 30)
        totals[1] += int(dequeue * 30)

    def _half(self, i: int, broker: str) -> None:
        rng = self.rng
        growing = self.active("half_growing", i, broker)
        stuck = self.active("half_stuck", i, broker)
        if growing is not None:  # no producer of the group online to answer the checks
            self.half[broker] += rng.randint(35, 60) if growing.level < 0.5 else rng.randint(200, 400)
        elif stuck is not None:  # the same transactions answered UNKNOW at every check
            if stuck.start == i:
                self.half[broker] = 3 + int(stuck.level * 60)
        else:  # prepared and resolved within milliseconds: rarely caught in flight
            self.half[broker] = 0 if rng.random() < 0.8 else rng.randint(1, 3)
        self.half_repeats[broker] += self.half[broker] + rng.randint(0, 5)  # one re-put per check round
        self.tx_totals[broker][0] += rng.randint(100, 500)
        self.tx_totals[broker][1] += rng.randint(0, 3)

    def _pop(self, i: int, ts: datetime, down: set[str]) -> None:
        rng = self.rng
        stuck = self.active("pop_stuck", i, POP_GROUP)
        if stuck is not None and self.stopped_at is None:
            self.stopped_at = ts - _ms(rng.uniform(16.0, 28.0))
            for key in self.wait_ack:  # popped up to past the threshold, then the threads blocked
                self.wait_ack[key] = self.pop_threshold + rng.randint(1, self.pop_batch)
                self.last_pop[key] = self.stopped_at
        elif stuck is None and self.stopped_at is not None:
            self.stopped_at = None  # the threads are released: every held message is acknowledged
        for broker in self.brokers:
            produced = int(self.pop_rate[broker] * rng.uniform(0.8, 1.2))
            if broker in down:
                continue
            if self.stopped_at is not None:
                self.ready[broker] += produced
                invisible_until = self.stopped_at + timedelta(milliseconds=60_000)
                if ts >= invisible_until and self.retry_ready[broker] == 0:  # revived once, into the retry topic
                    held = sum(self.wait_ack[(c, broker)] for c in self.pop_clients)
                    self.revived_total[broker] += held
                    self.retry_ready[broker] = held
                continue
            self.ready[broker] = rng.randint(0, 20)
            self.retry_ready[broker] = 0
            self.revived_total[broker] += rng.choice([0, 0, 0, 1])
            for client in self.pop_clients:
                self.wait_ack[(client, broker)] = rng.randint(0, min(self.pop_threshold, 40))
                self.last_pop[(client, broker)] = ts - _ms(rng.uniform(0.0, 2.0))

    # -- rows -----------------------------------------------------------------------------------------------------

    def timer_figures(self, broker: str, master: bool) -> dict[str, Any]:
        """The timer keys of the broker's runtime info (a slave's wheel does not run: zeros)."""
        if not master:
            return dict(timer_read_behind_s=0, timer_offset_behind=0, timer_congest_num=0, timer_enqueue_tps=0.0,
                        timer_dequeue_tps=0.0)
        congest = self.congest_base[broker] + self.timer_excess[broker] + self.wheel[broker]
        return dict(timer_read_behind_s=self.read_behind[broker], timer_offset_behind=self.rng.randint(0, 50),
                    timer_congest_num=congest, timer_enqueue_tps=self.tps[broker][0],
                    timer_dequeue_tps=self.tps[broker][1])

    def add_rows(self, ts: datetime, tables: dict[str, list[dict[str, Any]]], down: set[str],
                 addr: Callable[[str, int], str]) -> None:
        """Append this cycle's native_topic, native_consumer, pop_queue and native scrape health rows."""
        topic_rows, consumer_rows = tables.setdefault("native_topic", []), tables.setdefault("native_consumer", [])
        for row in tables["consumer_queue"]:
            row["pop_mode"] = False  # the collector marks every group: none of these clients pops
        for broker in self.brokers:
            if broker in down:  # refused: in auto mode a page that is not there is skipped silently
                continue
            target = f"{addr(broker, 0).split(':')[0]}:{NATIVE_PORT}"
            base = dict(ts=ts, cluster=self.name, target=target, broker=broker)
            topic_rows.extend(self._topic_rows(base, broker))
            consumer_rows.extend(self._push_rows(base, broker, tables["consumer_queue"]))
            consumer_rows.extend(self._pop_rows(base, broker, ts))
            tables["collector_health"].append(dict(
                ts=ts, cluster=self.name, target=target, call=SCRAPE_CALL, ok=True, error=None,
                latency_ms=round(self.rng.uniform(2.0, 40.0), 3)))
        tables["pop_queue"] = [
            dict(ts=ts, cluster=self.name, group=POP_GROUP, client_id=client, topic=POP_TOPIC, broker=broker,
                 queue_id=-1, wait_ack_count=self.wait_ack[(client, broker)],
                 last_pop_ts=self.last_pop[(client, broker)], dropped=False,
                 pop_threshold_for_queue=self.pop_threshold, pop_invisible_time_ms=60_000,
                 pop_batch_nums=self.pop_batch, max_reconsume_times=16)
            for client in self.pop_clients for broker in self.brokers]

    def _topic_rows(self, base: dict[str, Any], broker: str) -> list[dict[str, Any]]:
        enqueued, delivered = self.timer_totals[broker]
        committed, rolled_back = self.tx_totals[broker]
        timing = self.congest_base[broker] + self.timer_excess[broker]
        return [
            dict(base, topic=HALF_TOPIC, is_system=True, half_messages=self.half_repeats[broker]),
            dict(base, topic=TIMER_TOPIC, is_system=False, timing_messages=timing, timer_enqueue_total=enqueued,
                 timer_dequeue_total=delivered),
            dict(base, topic=TX_TOPIC, is_system=False, half_messages=self.half[broker], commit_total=committed,
                 rollback_total=rolled_back),
            dict(base, topic=WHEEL_TOPIC, is_system=True, timing_messages=self.wheel[broker]),
        ]

    def _push_rows(self, base: dict[str, Any], broker: str, queues: list[dict[str, Any]]) -> list[dict[str, Any]]:
        """The broker's own figures of the push groups: its consumer_queue rows summed per group and topic."""
        summed: dict[tuple[str, str], dict[str, Any]] = {}
        for q in queues:
            if q["broker"] != broker:
                continue
            retry = q["topic_kind"] == "retry"
            row = summed.setdefault((q["group"], q["topic"]), dict(
                base, group=q["group"], topic=q["topic"], is_retry=retry, is_system=False, lag=0, inflight=0,
                ready=0, lag_latency_ms=None, queueing_latency_ms=None, dlq_total=None if retry else 0))
            lag = q["broker_offset"] - q["consumer_offset"]
            inflight = (q["pull_offset"] if q["pull_offset"] is not None else q["consumer_offset"]) - q["consumer_offset"]
            row["lag"] += lag
            row["inflight"] += inflight
            row["ready"] += lag - inflight
            if q["consume_delay_ms"] is not None:
                row["lag_latency_ms"] = max(row["lag_latency_ms"] or 0, q["consume_delay_ms"])
        for row in summed.values():  # nothing waits to be pulled: no queueing latency
            row["queueing_latency_ms"] = row["lag_latency_ms"] if row["ready"] > 0 else 0
        return [summed[key] for key in sorted(summed)]

    def _pop_rows(self, base: dict[str, Any], broker: str, ts: datetime) -> list[dict[str, Any]]:
        """GroupPop as the broker counts it: popped messages are not in flight; revives per original topic."""
        rng = self.rng
        ready, retry = self.ready[broker], self.retry_ready[broker]
        age_ms = round((ts - self.stopped_at).total_seconds() * 1000) if self.stopped_at else rng.randint(20, 900)
        return [
            dict(base, group=POP_GROUP, topic=POP_TOPIC, is_retry=False, is_system=False, lag=ready, inflight=0,
                 ready=ready, lag_latency_ms=age_ms if ready else 0, queueing_latency_ms=age_ms if ready else 0,
                 dlq_total=0, revive_retry_total=self.revived_total[broker]),
            dict(base, group=POP_GROUP, topic=f"%RETRY%{POP_GROUP}_{POP_TOPIC}", is_retry=True, is_system=False,
                 lag=retry, inflight=0, ready=retry, lag_latency_ms=rng.randint(0, 60_000) if retry else 0),
        ]
