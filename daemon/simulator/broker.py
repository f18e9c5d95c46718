"""Broker-side state of the simulated cluster: topics, consume queues, committed offsets, counters."""

from __future__ import annotations

import heapq
from array import array
from collections import deque
from dataclasses import dataclass, field
from typing import NamedTuple

from daemon.simulator.retry import DLQ_PREFIX, RETRY_PREFIX, Delayed, effective_max, retry_delay_s

PERM_RW = 6  # PermName.PERM_READ | PERM_WRITE
PERM_WRITE = 2  # PermName.PERM_WRITE: what a DLQ gets (nobody reads it by default)
PERM_RWI = 7  # … | PERM_INHERIT: what a broker gives TBW102, the cluster and the broker "topics"


class MessageQueue(NamedTuple):
    """(topic, brokerName, queueId); tuple order is Java's `MessageQueue.compareTo` order."""

    topic: str
    broker: str
    queue_id: int


@dataclass
class TopicConfig:
    """A topic as a broker's topics.json holds it."""

    name: str
    read_queue_nums: int
    write_queue_nums: int
    perm: int = PERM_RW


@dataclass
class ConsumeQueue:
    """One queue's messages: store timestamp (epoch ms) and size per logical offset."""

    store_ts: array = field(default_factory=lambda: array("q"))
    sizes: array = field(default_factory=lambda: array("i"))

    @property
    def max_offset(self) -> int:
        """Next offset to be written (= GET_MAX_OFFSET)."""
        return len(self.store_ts)

    @property
    def min_offset(self) -> int:
        """Lowest offset still stored; the simulator never deletes, so 0."""
        return 0

    def append(self, store_ts_ms: int, size: int) -> int:
        """Store one message; returns its offset."""
        self.store_ts.append(store_ts_ms)
        self.sizes.append(size)
        return len(self.store_ts) - 1

    def store_time(self, offset: int) -> int:
        """Store timestamp of the message at `offset`, 0 when there is none (as the broker)."""
        return self.store_ts[offset] if 0 <= offset < len(self.store_ts) else 0


class RateWindow:
    """Event counts in one-second buckets, for the TPS numbers brokers and clients report."""

    def __init__(self, start: float, keep_seconds: int = 600) -> None:
        self.start = start
        self.keep = keep_seconds
        self.buckets: deque[list[int]] = deque()  # [second, count]
        self.total = 0

    def add(self, now: float, count: int = 1) -> None:
        """Record `count` events at `now`."""
        sec = int(now)
        if self.buckets and self.buckets[-1][0] == sec:
            self.buckets[-1][1] += count
        else:
            self.buckets.append([sec, count])
        self.total += count
        while self.buckets and self.buckets[0][0] <= sec - self.keep:
            self.buckets.popleft()

    def tps(self, now: float, window: int = 60) -> float:
        """Events per second over the last `window` seconds (or since start, if shorter)."""
        span = min(float(window), max(now - self.start, 1.0))
        cutoff = now - span
        return sum(c for s, c in self.buckets if s >= cutoff) / span

    def has_window(self, now: float, window: int) -> bool:
        """True once `window` seconds of samples exist (the broker leaves younger items empty)."""
        return now - self.start >= window


@dataclass
class BrokerFault:
    """Injected misbehaviour: answer late, refuse connections, answer broken bytes, or leave some requests unanswered.

    `answer` is how each response goes out: "ok"; "drop" (half the frame, then the connection is
    closed, as when a broker dies mid-write); "malformed" (a well-framed SUCCESS whose body is cut
    off JSON); "garbage" (bytes that are no frame at all, as from a wrong service on the port).
    `unanswered` holds request codes the broker reads but never answers (a handler stuck on one
    kind of request while the others are served): the caller times out on those alone.
    """

    delay_s: float = 0.0
    refuse: bool = False
    answer: str = "ok"
    unanswered: frozenset[int] = frozenset()


class Broker:
    """A master broker (brokerId 0): topics, queues, the consumer offsets clients committed."""

    def __init__(self, name: str, cluster: str, start: float, boot_epoch_ms: int) -> None:
        self.name = name
        self.cluster = cluster
        self.broker_id = 0
        self.addr = ""  # set by the server once its port is known
        self.boot_epoch_ms = boot_epoch_ms
        self.topics: dict[str, TopicConfig] = {}
        self.queues: dict[tuple[str, int], ConsumeQueue] = {}
        # (group, topic, queueId) -> committed offset, as consumerOffset.json holds it
        self.consumer_offsets: dict[tuple[str, str, int], int] = {}
        self.pull_offsets: dict[tuple[str, str, int], int] = {}
        self.put_stats = RateWindow(start)
        self.get_stats = RateWindow(start)
        self.group_get_stats: dict[tuple[str, str], RateWindow] = {}  # (group, topic)
        self.put_bytes = 0
        self.start = start
        self.fault = BrokerFault()
        self.topic_config_version = 0
        self.topic_config_timestamp = boot_epoch_ms
        self.delayed: list[Delayed] = []  # sent-back messages waiting for redelivery (a heap)
        self.reconsume_times: dict[tuple[str, int], int] = {}  # (%RETRY% topic, offset) -> attempts failed

    def add_topic(self, cfg: TopicConfig, epoch_ms: int) -> None:
        """Create (or replace) a topic and its consume queues."""
        self.topics[cfg.name] = cfg
        for qid in range(max(cfg.read_queue_nums, cfg.write_queue_nums)):
            self.queues.setdefault((cfg.name, qid), ConsumeQueue())
        self.topic_config_version += 1
        self.topic_config_timestamp = epoch_ms

    def queue(self, topic: str, queue_id: int) -> ConsumeQueue | None:
        """The consume queue, or None if this broker does not have it."""
        return self.queues.get((topic, queue_id))

    def put(self, topic: str, queue_id: int, now: float, epoch_ms: int, size: int) -> int:
        """Append one message to a queue; returns its offset."""
        offset = self.queues[(topic, queue_id)].append(epoch_ms, size)
        self.put_stats.add(now)
        self.put_bytes += size
        return offset

    def record_get(self, group: str, topic: str, now: float, count: int) -> None:
        """Count messages a group pulled (GROUP_GET_NUMS; drives ConsumeStats.consumeTps)."""
        self.get_stats.add(now, count)
        stats = self.group_get_stats.get((group, topic))
        if stats is None:
            stats = self.group_get_stats[(group, topic)] = RateWindow(now)
        stats.add(now, count)

    def commit(self, group: str, topic: str, queue_id: int, offset: int) -> None:
        """Store a committed offset sent by a client (UPDATE_CONSUMER_OFFSET or a pull's commitOffset)."""
        if offset >= 0:
            self.consumer_offsets[(group, topic, queue_id)] = offset

    def committed(self, group: str, topic: str, queue_id: int) -> int:
        """The committed offset, −1 when the group has none for the queue."""
        return self.consumer_offsets.get((group, topic, queue_id), -1)

    def topics_with_offsets(self, group: str) -> list[str]:
        """Topics for which `group` has committed offsets on this broker."""
        return sorted({t for g, t, _ in self.consumer_offsets if g == group})

    def send_back(self, group: str, size: int, failed_times: int, max_reconsume_times: int,
                  now: float, epoch_ms: int) -> None:
        """CONSUMER_SEND_MSG_BACK: hold the message for its retry delay, or dead-letter it."""
        if failed_times > effective_max(max_reconsume_times):
            dlq = DLQ_PREFIX + group
            if dlq not in self.topics:
                # The broker creates the DLQ on the first dead letter: write-only, one queue.
                self.add_topic(TopicConfig(dlq, 1, 1, perm=PERM_WRITE), epoch_ms)
            self.put(dlq, 0, now, epoch_ms, size)
            return
        heapq.heappush(self.delayed, Delayed(now + retry_delay_s(failed_times - 1), group, size, failed_times))

    def deliver_due(self, now: float, epoch_ms: int) -> None:
        """ScheduleMessageService: due sent-back messages move to their group's %RETRY% topic."""
        while self.delayed and self.delayed[0].due <= now:
            msg = heapq.heappop(self.delayed)
            topic = RETRY_PREFIX + msg.group
            offset = self.put(topic, 0, now, epoch_ms, msg.size)
            self.reconsume_times[(topic, offset)] = msg.reconsume_times
