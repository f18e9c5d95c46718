"""A simulated 4.9.x push consumer client: ProcessQueues, pulls with flow control, consume threads.

It follows `DefaultMQPushConsumerImpl.pullMessage` and `ConsumeMessageConcurrentlyService`: a
pulled message stays in its queue's ProcessQueue until a consume thread finishes it, and the
committed offset is the lowest offset still cached, so one message that never finishes pins it.
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from daemon.simulator.broker import Broker, MessageQueue, RateWindow
from daemon.simulator.retry import FailurePlan

if TYPE_CHECKING:
    from daemon.simulator.pop import PopConsumer

MIB = 1024 * 1024
FLOW_CONTROL_DELAY_S = 0.05  # PULL_TIME_DELAY_MILLS_WHEN_FLOW_CONTROL
LONG_POLL_S = 15.0  # BROKER_SUSPEND_MAX_TIME_MILLIS: an idle pull is re-issued this often


@dataclass
class ConsumerSettings:
    """The DefaultMQPushConsumer settings the model uses (4.9.x defaults; ref §4)."""

    consume_thread_min: int = 20
    consume_thread_max: int = 20
    pull_batch_size: int = 32
    pull_threshold_for_queue: int = 1000
    pull_threshold_size_for_queue_mib: int = 100
    consume_concurrently_max_span: int = 2000
    consume_message_batch_max_size: int = 1
    consume_timeout_min: int = 15
    max_reconsume_times: int = -1
    consume_from_where: str = "CONSUME_FROM_LAST_OFFSET"
    consume_rate_per_thread: float = 500.0  # messages/s one thread finishes (2 ms handler)


@dataclass
class ProcessQueue:
    """Messages pulled and not yet consumed for one queue (Java's msgTreeMap), plus its counters."""

    next_offset: int
    commit_offset: int  # the client's in-memory offset store value for this queue
    last_lock_ms: int
    msgs: dict[int, int] = field(default_factory=dict)  # offset -> size; pulls come in offset order
    msg_size: int = 0
    queue_offset_max: int = -1
    last_pull_ms: int = 0
    last_consume_ms: int = 0
    last_pull_at: float = 0.0
    pull_not_before: float = 0.0
    dropped: bool = False
    # Flow-control counters as the client keeps them (per reason).
    count_flow_control: int = 0
    size_flow_control: int = 0
    span_flow_control: int = 0

    @property
    def count(self) -> int:
        """cachedMsgCount."""
        return len(self.msgs)

    @property
    def min_offset(self) -> int:
        """cachedMsgMinOffset (first key of the tree; 0 when empty)."""
        return next(iter(self.msgs)) if self.msgs else 0

    @property
    def max_offset(self) -> int:
        """cachedMsgMaxOffset (last key of the tree; 0 when empty)."""
        return next(reversed(self.msgs)) if self.msgs else 0

    @property
    def span(self) -> int:
        """`getMaxSpan()`: last key − first key; 0 with fewer than two messages."""
        return self.max_offset - self.min_offset

    @property
    def size_mib(self) -> int:
        """cachedMsgSizeInMiB (floor)."""
        return self.msg_size // MIB

    def remove(self, offset: int, now_ms: int) -> int:
        """`ProcessQueue.removeMessage`: drop a finished message; returns the offset to commit."""
        self.last_consume_ms = now_ms
        if not self.msgs:
            return -1
        size = self.msgs.pop(offset, None)
        if size is not None:
            self.msg_size -= size
        return self.min_offset if self.msgs else self.queue_offset_max + 1


@dataclass
class ConsumeThread:
    """One `ConsumeMessageThread_<group>_<n>`: idle, or blocked holding one message."""

    index: int
    budget: float = 0.0
    holding: tuple[MessageQueue, int] | None = None
    blocked_style: str = "sleep"
    blocked_since_ms: int = 0


@dataclass
class TopicStatus:
    """Per-topic client counters behind running info `statusTable`."""

    consume_ok: RateWindow
    pulled: RateWindow
    consume_failed: RateWindow
    pull_rt_sum: float = 0.0
    pull_rt_n: int = 0


class ConsumerClient:
    """One push-consumer JVM of a group (clustering, concurrent, AllocateMessageQueueAveragely)."""

    def __init__(
        self,
        group: str,
        client_id: str,
        client_addr: str,
        settings: ConsumerSettings,
        start: float,
        start_ms: int,
    ) -> None:
        self.group = group
        self.client_id = client_id
        self.client_addr = client_addr
        self.settings = settings
        self.start = start
        self.start_ms = start_ms
        self.pqs: dict[MessageQueue, ProcessQueue] = {}
        self.pending: deque[tuple[MessageQueue, int]] = deque()  # ConsumeRequests waiting for a thread
        self.threads = [ConsumeThread(i + 1) for i in range(settings.consume_thread_max)]
        self.status: dict[str, TopicStatus] = {}
        self.pop: PopConsumer | None = None  # 5.x pop mode: the PopProcessQueues of the group's topics
        self.sub_versions: dict[str, int] = {}
        self._rotate = 0

    def topic_status(self, topic: str, now: float) -> TopicStatus:
        """The statusTable entry of a topic, created on first use."""
        st = self.status.get(topic)
        if st is None:
            st = self.status[topic] = TopicStatus(RateWindow(now), RateWindow(now), RateWindow(now))
        return st

    def _flow_controlled(self, pq: ProcessQueue, now: float, now_ms: int) -> bool:
        """The three checks of `pullMessage`, in Java's order; a hit delays the next pull 50 ms."""
        s = self.settings
        if pq.count > s.pull_threshold_for_queue:
            pq.count_flow_control += 1
        elif pq.size_mib > s.pull_threshold_size_for_queue_mib:
            pq.size_flow_control += 1
        elif pq.span > s.consume_concurrently_max_span:
            pq.span_flow_control += 1
        else:
            return False
        # Java sets lastPullTimestamp before these checks, so a throttled queue still shows a
        # fresh pull time every 50 ms (the capture's queue 3 did).
        pq.last_pull_ms = now_ms
        pq.pull_not_before = now + FLOW_CONTROL_DELAY_S
        return True

    def pull_step(
        self, brokers: dict[str, Broker], now: float, now_ms: int, pull_delay: dict[str, float] | None = None
    ) -> None:
        """Issue at most one pull per ProcessQueue, skipping the flow-controlled ones.

        `pull_delay` (broker name → seconds) models a broker slow to answer pulls (a busy pull
        thread pool, cold pages read from disk): the next pull of its queues waits that long.
        """
        s = self.settings
        for mq, pq in self.pqs.items():
            if pq.dropped or now < pq.pull_not_before - 1e-9:
                continue
            if self._flow_controlled(pq, now, now_ms):
                continue
            broker = brokers[mq.broker]
            cq = broker.queue(mq.topic, mq.queue_id)
            if cq is None:
                continue
            available = cq.max_offset - pq.next_offset
            if available <= 0:
                # Long polling: the broker holds the request; it is re-issued when it times out.
                if now - pq.last_pull_at >= LONG_POLL_S:
                    pq.last_pull_at = now
                    pq.last_pull_ms = now_ms
                continue
            n = min(s.pull_batch_size, available)
            st = self.topic_status(mq.topic, now)
            st.pull_rt_sum += min(now - pq.last_pull_at, LONG_POLL_S) * 1000.0
            st.pull_rt_n += 1
            st.pulled.add(now, n)
            # A pull carries the client's commit offset; the broker stores it (commitOffset flag).
            if pq.commit_offset > 0:
                broker.commit(self.group, mq.topic, mq.queue_id, pq.commit_offset)
            for off in range(pq.next_offset, pq.next_offset + n):
                size = cq.sizes[off]
                pq.msgs[off] = size
                pq.msg_size += size
                self.pending.append((mq, off))
            pq.queue_offset_max = pq.next_offset + n - 1
            pq.next_offset += n
            broker.pull_offsets[(self.group, mq.topic, mq.queue_id)] = pq.next_offset
            broker.record_get(self.group, mq.topic, now, n)
            pq.last_pull_at = now
            pq.last_pull_ms = now_ms
            if pull_delay and mq.broker in pull_delay:
                pq.pull_not_before = now + pull_delay[mq.broker]
            # The pull callback issues the next pull at once (pullInterval 0), so the checks run
            # again on the batch just cached, before any thread has consumed it.
            self._flow_controlled(pq, now, now_ms)

    def consume_step(
        self, dt: float, now: float, now_ms: int, poison: dict[tuple[MessageQueue, int], str],
        failing: FailurePlan | None = None, brokers: dict[str, Broker] | None = None,
    ) -> None:
        """Let the free threads finish pending messages; a poisoned message blocks its thread, a failed
        one is sent back to its broker (`failing`) before it leaves the ProcessQueue."""
        rate = self.settings.consume_rate_per_thread
        n = len(self.threads)
        # Rotate which thread looks first so that work (and blocking) spreads over the pool.
        order = [self.threads[(self._rotate + i) % n] for i in range(n)]
        self._rotate = (self._rotate + 1) % n
        for th in order:
            if th.holding is not None:
                continue
            th.budget = min(th.budget + rate * dt, rate * dt + 1.0)
            while th.budget >= 1.0 and self.pending:
                mq, off = self.pending.popleft()
                pq = self.pqs.get(mq)
                if pq is None or pq.dropped or off not in pq.msgs:
                    continue  # the queue was rebalanced away; Java skips dropped requests too
                th.budget -= 1.0
                style = poison.get((mq, off))
                if style is not None:
                    th.holding = (mq, off)
                    th.blocked_style = style
                    th.blocked_since_ms = now_ms
                    break
                if failing is not None and brokers is not None and failing.fails(mq.topic, off):
                    self._send_back(brokers[mq.broker], mq, pq.msgs[off], off, now, now_ms)
                self._finish(mq, pq, off, now, now_ms)
            if not self.pending:
                th.budget = min(th.budget, 1.0)  # an idle thread does not bank work

    def _send_back(self, broker: Broker, mq: MessageQueue, size: int, off: int, now: float, now_ms: int) -> None:
        # The attempt count travels with the message: a copy from %RETRY% carries its reconsumeTimes.
        failed = broker.reconsume_times.get((mq.topic, off), 0) + 1
        broker.send_back(self.group, size, failed, self.settings.max_reconsume_times, now, now_ms)
        self.topic_status(mq.topic, now).consume_failed.add(now)

    def _finish(self, mq: MessageQueue, pq: ProcessQueue, off: int, now: float, now_ms: int) -> None:
        commit = pq.remove(off, now_ms)
        if commit >= 0:
            pq.commit_offset = max(pq.commit_offset, commit)  # offsetStore.updateOffset(increaseOnly)
        self.topic_status(mq.topic, now).consume_ok.add(now)

    def release(self, now: float, now_ms: int) -> int:
        """Let every blocked thread finish its message; returns how many were released."""
        released = 0
        for th in self.threads:
            if th.holding is None:
                continue
            mq, off = th.holding
            th.holding = None
            pq = self.pqs.get(mq)
            if pq is not None and off in pq.msgs:
                self._finish(mq, pq, off, now, now_ms)
            released += 1
        return released

    def blocked_threads(self) -> list[ConsumeThread]:
        """Threads currently holding a message they never finish."""
        return [th for th in self.threads if th.holding is not None]

    def persist(self, brokers: dict[str, Broker]) -> None:
        """`persistConsumerOffset`: send every queue's in-memory offset to its broker."""
        for mq, pq in self.pqs.items():
            if not pq.dropped:
                brokers[mq.broker].commit(self.group, mq.topic, mq.queue_id, pq.commit_offset)
