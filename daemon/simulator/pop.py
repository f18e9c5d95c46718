"""A 5.x push consumer in pop mode (`setClientRebalance(false)` + broker consume mode POP).

It follows `ConsumeMessagePopConcurrentlyService` as the 5.3.3 capture shows it: the client pops
batches from every queue of a broker (its PopProcessQueue has queue id -1), the broker advances the
group's offset at the pop (so in-flight stays 0 on the broker's side), popped messages wait for a
consume thread, and each finished one is acknowledged. While more than popThresholdForQueue messages
wait for their ack the client stops popping. A message not acknowledged within popInvisibleTime is
revived by the broker into `%RETRY%<group>_<topic>` (V1 naming), counted per group and topic.
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass, field

from daemon.simulator.broker import Broker, MessageQueue, TopicConfig
from daemon.simulator.retry import RETRY_PREFIX


@dataclass(frozen=True)
class PopSettings:
    """The pop settings of DefaultMQPushConsumer (5.3.3 defaults but the batch, 8 as in the capture)."""

    threshold_for_queue: int = 96
    invisible_time_s: float = 60.0
    batch_nums: int = 8


@dataclass
class PopQueue:
    """One client's PopProcessQueue for a topic on one broker (queue id -1: every queue)."""

    topic: str
    broker: str
    wait_ack: dict[tuple[MessageQueue, int], float] = field(default_factory=dict)  # -> pop time
    pending: deque[tuple[MessageQueue, int]] = field(default_factory=deque)
    holding: dict[int, tuple[MessageQueue, int]] = field(default_factory=dict)  # thread -> blocked message
    revived: set[tuple[MessageQueue, int]] = field(default_factory=set)
    last_pop_ms: int = 0
    next_queue: int = 0
    budget: float = 0.0

    @property
    def mq(self) -> MessageQueue:
        """The mqPopTable key."""
        return MessageQueue(self.topic, self.broker, -1)


def pop_retry_topic(group: str, topic: str) -> str:
    """KeyBuilder.buildPopRetryTopicV1: %RETRY%<group>_<topic>."""
    return f"{RETRY_PREFIX}{group}_{topic}"


def pop_queues_for(group: str, topics: list[str], brokers: dict[str, Broker], epoch_ms: int) -> list[PopQueue]:
    """A PopProcessQueue per topic and broker that serves it; creates the pop retry topics."""
    queues = []
    for topic in topics:
        for broker in brokers.values():
            if topic in broker.topics:
                queues.append(PopQueue(topic, broker.name))
                retry = pop_retry_topic(group, topic)
                if retry not in broker.topics:
                    broker.add_topic(TopicConfig(retry, 1, 1), epoch_ms)
                    broker.commit(group, retry, 0, 0)  # the group's offsets list it (208), as on 5.3.3
    return queues


@dataclass
class PopConsumer:
    """The pop side of one client: its PopProcessQueues and consume threads."""

    group: str
    settings: PopSettings
    threads: int
    rate_per_thread: float
    queues: list[PopQueue]
    revive_totals: dict[tuple[str, str], int] = field(default_factory=dict)  # (group, topic) -> revived

    def step(self, brokers: dict[str, Broker], poison: dict[tuple[MessageQueue, int], str], dt: float,
             now: float, now_ms: int) -> None:
        """One sub-step: pop where below the threshold, consume and ack, revive what outlived its invisible time."""
        for pq in self.queues:
            broker = brokers[pq.broker]
            if len(pq.wait_ack) <= self.settings.threshold_for_queue:
                self._pop(pq, broker, now, now_ms)
            self._consume(pq, poison, dt)
            self._revive(pq, broker, now, now_ms)

    def _pop(self, pq: PopQueue, broker: Broker, now: float, now_ms: int) -> None:
        cfg = broker.topics.get(pq.topic)
        if cfg is None:
            return
        for i in range(cfg.read_queue_nums):
            qid = (pq.next_queue + i) % cfg.read_queue_nums
            cq = broker.queue(pq.topic, qid)
            start = max(broker.committed(self.group, pq.topic, qid), 0)
            if cq is None or cq.max_offset <= start:
                continue
            n = min(self.settings.batch_nums, cq.max_offset - start)
            mq = MessageQueue(pq.topic, pq.broker, qid)
            for off in range(start, start + n):
                pq.wait_ack[(mq, off)] = now
                pq.pending.append((mq, off))
            broker.commit(self.group, pq.topic, qid, start + n)  # the broker moves the offset at the pop
            broker.record_get(self.group, pq.topic, now, n)
            pq.last_pop_ms = now_ms
            pq.next_queue = qid + 1
            return

    def _consume(self, pq: PopQueue, poison: dict[tuple[MessageQueue, int], str], dt: float) -> None:
        free = self.threads - len(pq.holding)
        pq.budget += free * self.rate_per_thread * dt
        while pq.pending and pq.budget >= 1.0 and len(pq.holding) < self.threads:
            msg = pq.pending.popleft()
            pq.budget -= 1.0
            if msg in poison:
                pq.holding[len(pq.holding) + 1] = msg  # this thread never returns
                continue
            pq.wait_ack.pop(msg, None)  # consumed and acknowledged
        if not pq.pending:
            pq.budget = min(pq.budget, 1.0)

    def _revive(self, pq: PopQueue, broker: Broker, now: float, now_ms: int) -> None:
        due = [m for m, t in pq.wait_ack.items() if now - t >= self.settings.invisible_time_s and m not in pq.revived]
        for msg in due:
            pq.revived.add(msg)
            broker.put(pop_retry_topic(self.group, pq.topic), 0, now, now_ms, 255)
            key = (self.group, pq.topic)
            self.revive_totals[key] = self.revive_totals.get(key, 0) + 1

    def release(self) -> None:
        """Unblock every thread: the held messages finish and are acknowledged."""
        for pq in self.queues:
            for msg in pq.holding.values():
                pq.wait_ack.pop(msg, None)
            pq.holding.clear()
