"""A 5.x broker's timer wheel and transactional (half) messages, as counts.

Timer messages wait in the wheel until their deliver time, then are put into their topic (queue 0).
A stalled wheel (`stalled`) delivers nothing while the clock runs on, so its read pointer trails.
Half messages wait for the producer's commit or rollback; an UNKNOW answer keeps them half.
"""

from __future__ import annotations

from collections import Counter, deque
from dataclasses import dataclass, field

from daemon.simulator.broker import Broker, RateWindow


@dataclass
class TimerWheel:
    """One broker's timer wheel: batches (due time, topic, count), per-topic totals, rates."""

    start: float
    due: deque[tuple[float, str, int]] = field(default_factory=deque)
    enqueued: Counter[str] = field(default_factory=Counter)
    dequeued: Counter[str] = field(default_factory=Counter)
    waiting: Counter[str] = field(default_factory=Counter)
    stalled_since: float | None = None
    enqueue_rate: RateWindow | None = None
    dequeue_rate: RateWindow | None = None

    def __post_init__(self) -> None:
        self.enqueue_rate = RateWindow(self.start)
        self.dequeue_rate = RateWindow(self.start)

    def schedule(self, topic: str, count: int, due: float, now: float) -> None:
        """Take `count` timer messages of `topic` due at model time `due`."""
        if count <= 0:
            return
        self.due.append((due, topic, count))
        self.enqueued[topic] += count
        self.waiting[topic] += count
        assert self.enqueue_rate is not None
        self.enqueue_rate.add(now, count)

    def deliver(self, broker: Broker, now: float, epoch_ms: int) -> None:
        """Put every due batch into its topic (unless the wheel is stalled)."""
        if self.stalled_since is not None:
            return
        while self.due and self.due[0][0] <= now:
            _, topic, count = self.due.popleft()
            for _ in range(count):
                if (topic, 0) in broker.queues:
                    broker.put(topic, 0, now, epoch_ms, 255)
            self.dequeued[topic] += count
            self.waiting[topic] -= count
            assert self.dequeue_rate is not None
            self.dequeue_rate.add(now, count)

    def read_behind_s(self, now: float) -> int:
        """timerReadBehind: seconds the delivery trails the clock."""
        if self.stalled_since is not None:
            return int(now - self.stalled_since)
        return 0

    @property
    def congest(self) -> int:
        """timerCongestNum: messages in the wheel not yet delivered."""
        return sum(self.waiting.values())


@dataclass
class Transactions:
    """One broker's half messages per topic and the resolved totals."""

    half: Counter[str] = field(default_factory=Counter)
    committed: Counter[str] = field(default_factory=Counter)
    rolled_back: Counter[str] = field(default_factory=Counter)


@dataclass
class BrokerBacklogs:
    """The 5.x backlogs of every broker of a model, created on first use."""

    start: float
    timers: dict[str, TimerWheel] = field(default_factory=dict)
    transactions: dict[str, Transactions] = field(default_factory=dict)

    def timer(self, broker: str) -> TimerWheel:
        """The timer wheel of `broker`."""
        if broker not in self.timers:
            self.timers[broker] = TimerWheel(self.start)
        return self.timers[broker]

    def tx(self, broker: str) -> Transactions:
        """The transactions of `broker`."""
        return self.transactions.setdefault(broker, Transactions())


@dataclass
class TimedProducer:
    """Sends `rate` timer messages/s to `topic` on `broker`, each due `delay_s` later."""

    broker: str
    topic: str
    rate: float
    delay_s: float
    start: float
    end: float | None = None
    _acc: float = 0.0

    def step(self, backlogs: BrokerBacklogs, t0: float, t1: float) -> None:
        """Schedule the messages sent in (t0, t1]."""
        lo, hi = max(t0, self.start), t1 if self.end is None else min(t1, self.end)
        if hi <= lo:
            return
        self._acc += self.rate * (hi - lo)
        n = int(self._acc)
        self._acc -= n
        backlogs.timer(self.broker).schedule(self.topic, n, t1 + self.delay_s, t1)


@dataclass
class TransactionalProducer:
    """Sends `rate` transactions/s to `topic` on `broker`; a share `unknown` of them stays half."""

    broker: str
    topic: str
    rate: float
    start: float
    unknown: float = 0.0
    _acc: float = 0.0
    _unknown_acc: float = 0.0

    def step(self, backlogs: BrokerBacklogs, brokers: dict[str, Broker], t0: float, t1: float, epoch_ms: int) -> None:
        """Commit what the checker resolves, keep the UNKNOW ones half."""
        lo = max(t0, self.start)
        if t1 <= lo:
            return
        self._acc += self.rate * (t1 - lo)
        n = int(self._acc)
        self._acc -= n
        self._unknown_acc += n * self.unknown
        stuck = int(self._unknown_acc)
        self._unknown_acc -= stuck
        tx = backlogs.tx(self.broker)
        tx.half[self.topic] += stuck
        tx.committed[self.topic] += n - stuck
        broker = brokers[self.broker]
        for i in range(n - stuck):
            cfg = broker.topics.get(self.topic)
            if cfg is not None:
                broker.put(self.topic, i % cfg.write_queue_nums, t1, epoch_ms, 255)
