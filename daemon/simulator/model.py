"""The simulated cluster: brokers, topics, producers, consumer groups; advanced by `tick(now)`.

Time is the caller's monotonic seconds; `epoch_ms(now)` maps it to wall-clock milliseconds from
the model's start, so tests are deterministic (explicit ticks, no sleeps) and a served model
reports real-looking store, pull and consume times.
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field

from daemon.simulator.backlogs import BrokerBacklogs, TimedProducer, TransactionalProducer
from daemon.simulator.broker import PERM_RWI, Broker, MessageQueue, TopicConfig
from daemon.simulator.consumer import ConsumerClient, ConsumerSettings, ProcessQueue
from daemon.simulator.pop import PopConsumer, PopSettings, pop_queues_for
from daemon.simulator.retry import RETRY_PREFIX, FailurePlan

STEP_S = 0.02  # one sub-step ≈ one pull round trip on a LAN
PERSIST_INTERVAL_S = 5.0  # persistConsumerOffsetInterval

# Groups every 4.9.7 broker creates at boot (copied from the captured 201 body).
SYSTEM_GROUPS = (
    "SELF_TEST_C_GROUP", "CID_ONSAPI_OWNER", "CID_ONSAPI_PERMISSION", "TOOLS_CONSUMER",
    "CID_ONS-HTTP-PROXY", "FILTERSRV_CONSUMER", "CID_ONSAPI_PULL",
)  # fmt: skip


def system_topics(cluster: str, broker: str) -> list[TopicConfig]:
    """Topics a 4.9.7 broker registers at boot (as in the captured topics.json / 206 list)."""
    return [
        TopicConfig("TBW102", 8, 8, PERM_RWI),
        TopicConfig("SELF_TEST_TOPIC", 1, 1),
        TopicConfig("BenchmarkTest", 1024, 1024),
        TopicConfig("OFFSET_MOVED_EVENT", 1, 1),
        TopicConfig("RMQ_SYS_TRANS_HALF_TOPIC", 1, 1),
        TopicConfig("SCHEDULE_TOPIC_XXXX", 18, 18),
        TopicConfig(f"{cluster}_REPLY_TOPIC", 1, 1),
        TopicConfig(cluster, 16, 16, PERM_RWI),
        TopicConfig(broker, 1, 1, PERM_RWI),
    ]


@dataclass
class Producer:
    """Writes `rate` messages/s to each listed queue between `start` and `end` (model seconds)."""

    topic: str
    queues: list[tuple[str, int]]  # (brokerName, queueId)
    rate: float
    start: float
    end: float | None = None
    size: int = 255  # bytes per stored message (the capture's putMessageAverageSize ≈ 255)
    _acc: float = 0.0

    def due(self, t0: float, t1: float) -> int:
        """How many messages each queue receives in (t0, t1]."""
        lo = max(t0, self.start)
        hi = t1 if self.end is None else min(t1, self.end)
        if hi <= lo:
            return 0
        self._acc += self.rate * (hi - lo)
        n = int(self._acc)
        self._acc -= n
        return n


@dataclass
class ConsumerGroup:
    """A clustering push-consumer group, its subscriptions, clients and poisoned messages."""

    name: str
    topics: list[str]
    settings: ConsumerSettings
    clients: list[ConsumerClient] = field(default_factory=list)
    # (queue, offset) -> how the handler hangs on it ("sleep" or "socket"); any thread that takes
    # such a message never finishes it until released.
    poison: dict[tuple[MessageQueue, int], str] = field(default_factory=dict)
    failing: FailurePlan | None = None  # which messages the handler fails (sent back, retried, dead-lettered)
    # What the connection list says. A 5.x remoting client in pop mode is CONSUME_PASSIVELY too (ref §10);
    # CONSUME_POP is a proxy's gRPC client, which answers no running info.
    consume_type: str = "CONSUME_PASSIVELY"
    pop: PopSettings | None = None  # set: the clients consume the group's topics in pop mode

    @property
    def subscribed(self) -> list[str]:
        """Topics the clients subscribe: the group's own plus its retry topic."""
        return [*self.topics, RETRY_PREFIX + self.name]


class ClusterModel:
    """Cluster state plus the rules that move it forward in time."""

    def __init__(
        self,
        cluster: str = "DefaultCluster",
        brokers: tuple[str, ...] = ("broker-a", "broker-b"),
        start: float = 0.0,
        start_epoch_ms: int = 1_795_304_100_000,
        seed: int = 7,
        persist_interval_s: float = PERSIST_INTERVAL_S,
        step_s: float = STEP_S,
    ) -> None:
        self.cluster = cluster
        self.step_s = step_s  # coarser for thousands of queues, so the model keeps up with the clock
        self.version = 407  # the brokers' MQVersion ordinal (V4_9_7); 413+ answers as 5.x
        self.start = start
        self.now = start
        self.start_epoch_ms = start_epoch_ms
        self.persist_interval_s = persist_interval_s
        self.rng = random.Random(seed)
        self.brokers: dict[str, Broker] = {}
        for name in brokers:
            b = Broker(name, cluster, start, start_epoch_ms - 5_000)
            for cfg in system_topics(cluster, name):
                b.add_topic(cfg, start_epoch_ms)
            self.brokers[name] = b
        self.groups: dict[str, ConsumerGroup] = {}
        self.producers: list[Producer] = []
        self.subscription_groups: list[str] = list(SYSTEM_GROUPS)
        self.subscription_version = 1
        self._last_persist = start
        self.pull_delay_s: dict[str, float] = {}  # broker → seconds it takes to answer a pull
        # broker → GET_BROKER_RUNTIME_INFO entries answered instead of the modelled ones (store trouble)
        self.runtime_overrides: dict[str, dict[str, str]] = {}
        # 5.x: timer wheels and half messages per broker, and the producers that fill them.
        self.backlogs = BrokerBacklogs(start)
        self.timed_producers: list[TimedProducer] = []
        self.tx_producers: list[TransactionalProducer] = []

    def epoch_ms(self, t: float | None = None) -> int:
        """Wall-clock epoch milliseconds of model time `t` (default: now)."""
        return self.start_epoch_ms + round(((self.now if t is None else t) - self.start) * 1000)

    def add_topic(self, name: str, queues_per_broker: int = 4, brokers: list[str] | None = None) -> None:
        """Create a topic with the same number of read/write queues on each listed broker."""
        for bname in brokers or list(self.brokers):
            self.brokers[bname].add_topic(
                TopicConfig(name, queues_per_broker, queues_per_broker), self.epoch_ms()
            )

    def queues_of(self, topic: str) -> list[MessageQueue]:
        """All readable queues of a topic in the cluster, sorted (what rebalance allocates)."""
        out = [
            MessageQueue(topic, b.name, q)
            for b in self.brokers.values()
            if (cfg := b.topics.get(topic)) is not None
            for q in range(cfg.read_queue_nums)
        ]
        return sorted(out)

    def add_producer(self, producer: Producer) -> None:
        """Start a producer."""
        self.producers.append(producer)

    def add_group(
        self, name: str, topics: list[str], settings: ConsumerSettings, clients: int = 1
    ) -> ConsumerGroup:
        """Create a group with `clients` running clients; creates its retry topic and subscription group."""
        group = ConsumerGroup(name, list(topics), settings)
        self.groups[name] = group
        for b in self.brokers.values():
            b.add_topic(TopicConfig(RETRY_PREFIX + name, 1, 1), self.epoch_ms())
        self.subscription_groups.append(name)
        self.subscription_version += 1
        for _ in range(clients):
            self.add_client(name)
        return group

    def add_client(self, group_name: str) -> ConsumerClient:
        """Start one more client in a group (clientId `192.0.2.2@<pid>#<nanotime>`) and rebalance."""
        group = self.groups[group_name]
        pid = self.rng.randint(2000, 60000)
        nano = self.rng.randint(10**12, 10**13)
        port = self.rng.randint(40000, 65000)
        client = ConsumerClient(
            group_name,
            f"192.0.2.2@{pid}#{nano}",
            f"127.0.0.1:{port}",
            group.settings,
            self.now,
            self.epoch_ms(),
        )
        for topic in group.subscribed:
            client.sub_versions[topic] = self.epoch_ms()
        if group.pop is not None:
            client.pop = PopConsumer(group_name, group.pop, group.settings.consume_thread_max,
                                     group.settings.consume_rate_per_thread,
                                     pop_queues_for(group_name, group.topics, self.brokers, self.epoch_ms()))
        group.clients.append(client)
        self.rebalance(group)
        return client

    def remove_client(self, group_name: str, client_id: str) -> None:
        """Shut a client down cleanly (it persists its offsets first) and rebalance."""
        group = self.groups[group_name]
        for c in list(group.clients):
            if c.client_id == client_id:
                c.persist(self.brokers)
                group.clients.remove(c)
        self.rebalance(group)

    def rebalance(self, group: ConsumerGroup) -> None:
        """AllocateMessageQueueAveragely per subscribed topic over the sorted client ids."""
        cids = sorted(c.client_id for c in group.clients)
        by_id = {c.client_id: c for c in group.clients}
        # A pop-mode client holds a ProcessQueue only for the classic retry topic (as in the 5.3.3 capture).
        for topic in group.subscribed if group.pop is None else [RETRY_PREFIX + group.name]:
            mqs = self.queues_of(topic)
            for idx, cid in enumerate(cids):
                mine = set(_allocate_averagely(mqs, len(cids), idx))
                client = by_id[cid]
                for mq in [m for m in client.pqs if m.topic == topic and m not in mine]:
                    client.pqs[mq].dropped = True
                    client.persist(self.brokers)
                    del client.pqs[mq]
                for mq in sorted(mine - set(client.pqs)):
                    client.pqs[mq] = self._new_pq(group, mq)
            for c in group.clients:
                c.pqs = dict(sorted(c.pqs.items()))

    def _new_pq(self, group: ConsumerGroup, mq: MessageQueue) -> ProcessQueue:
        broker = self.brokers[mq.broker]
        stored = broker.committed(group.name, mq.topic, mq.queue_id)
        if stored >= 0:
            start = stored
        elif group.settings.consume_from_where == "CONSUME_FROM_FIRST_OFFSET" or mq.topic.startswith(
            RETRY_PREFIX
        ):
            start = 0
        else:
            cq = broker.queue(mq.topic, mq.queue_id)
            start = cq.max_offset if cq is not None else 0
        now_ms = self.epoch_ms()
        return ProcessQueue(
            next_offset=start, commit_offset=start, last_lock_ms=now_ms, last_consume_ms=now_ms
        )

    def tick(self, now: float) -> None:
        """Advance the cluster to model time `now` in sub-steps of at most `step_s`."""
        while self.now < now - 1e-9:
            t1 = min(now, self.now + self.step_s)
            self._step(self.now, t1)
            self.now = t1
        self.now = max(self.now, now)  # absorb float dust so scheduled events land on their time

    def _step(self, t0: float, t1: float) -> None:
        now_ms = self.epoch_ms(t1)
        for p in self.producers:
            n = p.due(t0, t1)
            for bname, qid in p.queues:
                for _ in range(n):
                    self.brokers[bname].put(p.topic, qid, t1, now_ms, p.size)
        for broker in self.brokers.values():
            broker.deliver_due(t1, now_ms)
        for timed in self.timed_producers:
            timed.step(self.backlogs, t0, t1)
        for tx in self.tx_producers:
            tx.step(self.backlogs, self.brokers, t0, t1, now_ms)
        for bname, wheel in self.backlogs.timers.items():
            wheel.deliver(self.brokers[bname], t1, now_ms)
        for group in self.groups.values():
            for client in group.clients:
                client.pull_step(self.brokers, t1, now_ms, self.pull_delay_s)
                client.consume_step(t1 - t0, t1, now_ms, group.poison, group.failing, self.brokers)
                if client.pop is not None:
                    client.pop.step(self.brokers, group.poison, t1 - t0, t1, now_ms)
        if t1 - self._last_persist >= self.persist_interval_s - 1e-9:
            self._last_persist = t1
            for group in self.groups.values():
                for client in group.clients:
                    client.persist(self.brokers)

    # Read-side helpers for tests and the demo (the wire bodies are built in bodies.py).

    def max_offset(self, mq: MessageQueue) -> int:
        """Broker max offset of a queue."""
        cq = self.brokers[mq.broker].queue(mq.topic, mq.queue_id)
        return cq.max_offset if cq is not None else 0

    def broker_lag(self, group: str, mq: MessageQueue) -> int:
        """maxOffset − committed offset on the broker (−1 counts as 0, like ConsumeStats)."""
        committed = self.brokers[mq.broker].committed(group, mq.topic, mq.queue_id)
        return self.max_offset(mq) - max(committed, 0)

    def process_queue(self, group: str, mq: MessageQueue) -> ProcessQueue | None:
        """The ProcessQueue some client of `group` holds for `mq`."""
        for c in self.groups[group].clients:
            if mq in c.pqs:
                return c.pqs[mq]
        return None

    def client_of(self, group: str, client_id: str) -> ConsumerClient | None:
        """A running client of a group by id."""
        g = self.groups.get(group)
        return next((c for c in g.clients if c.client_id == client_id), None) if g else None

    def poison_next(self, group: str, mq: MessageQueue, ahead: int = 0, style: str = "sleep") -> int:
        """Make `group`'s handler hang on the message `ahead` offsets after the next one written to `mq`."""
        offset = self.max_offset(mq) + ahead
        self.groups[group].poison[(mq, offset)] = style
        return offset

    def release(self, group: str) -> int:
        """Unblock every thread of `group` and forget its poisoned messages."""
        g = self.groups[group]
        g.poison.clear()
        for c in g.clients:
            if c.pop is not None:
                c.pop.release()
        return sum(c.release(self.now, self.epoch_ms()) for c in g.clients)


def _allocate_averagely(mqs: list[MessageQueue], n_clients: int, index: int) -> list[MessageQueue]:
    """AllocateMessageQueueAveragely: contiguous blocks, the first `len % n` clients get one more."""
    if n_clients == 0 or not mqs:
        return []
    total = len(mqs)
    mod = total % n_clients
    size = 1 if total <= n_clients else total // n_clients + (1 if mod > 0 and index < mod else 0)
    start = index * size if mod > 0 and index < mod else index * size + mod
    return mqs[start : start + min(size, total - start)] if start < total else []
