"""Scenarios: a cluster set-up, timed events and named actions a test or the demo can trigger.

Scenario times are given at time_scale 1 and multiplied by `time_scale` (as is the client's
offset-persist interval), so the demo can play an incident in under a minute while message rates
stay per real second. `stuck-consumer` re-enacts the 4.9.7 capture (fixtures README): one
handler hangs on a message of broker-a queue 3, a burst follows, then a second message more than
2000 offsets later hangs too and the client stops pulling that queue for good.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

from daemon.simulator.broker import BrokerFault, MessageQueue
from daemon.simulator.consumer import ConsumerSettings
from daemon.simulator.model import PERSIST_INTERVAL_S, ClusterModel, Producer

Action = Callable[["Scenario", float], None]


@dataclass
class Scenario:
    """A model plus what happens to it: events (model time, action name) and named actions."""

    name: str
    description: str
    model: ClusterModel
    actions: dict[str, Action]
    events: list[tuple[float, str]] = field(default_factory=list)
    done: set[str] = field(default_factory=set)  # actions that already ran (each runs once)
    log: list[tuple[float, str]] = field(default_factory=list)
    time_scale: float = 1.0
    info: dict[str, object] = field(default_factory=dict)
    # Broker name -> what its process or port does wrong from the moment serving starts.
    broker_faults: dict[str, BrokerFault] = field(default_factory=dict)
    server_version: int | None = None  # the MQVersion ordinal it is served as unless told otherwise

    def at(self, seconds: float, action: str) -> None:
        """Schedule `action` at `seconds` scenario time after the start (scaled by time_scale)."""
        self.events.append((self.model.start + seconds * self.time_scale, action))
        self.events.sort()

    def after(self, seconds: float, action: str) -> None:
        """Schedule `action` `seconds` (scaled) after the model's current time."""
        self.events.append((self.model.now + seconds * self.time_scale, action))
        self.events.sort()

    def trigger(self, action: str) -> bool:
        """Run a named action now; False when it already ran. Unknown names raise KeyError."""
        fn = self.actions[action]
        if action in self.done:
            return False
        self.done.add(action)
        self.log.append((self.model.now, action))
        fn(self, self.model.now)
        return True

    def tick(self, now: float) -> None:
        """Advance the model to `now`, running each due event at its own time."""
        while self.events and self.events[0][0] <= now:
            when, action = self.events.pop(0)
            self.model.tick(max(when, self.model.now))
            self.trigger(action)
        self.model.tick(now)


def cluster_model(time_scale: float, start: float, start_epoch_ms: int | None, cluster: str) -> ClusterModel:
    kwargs: dict[str, object] = {"start": start, "persist_interval_s": PERSIST_INTERVAL_S * time_scale}
    if start_epoch_ms is not None:
        kwargs["start_epoch_ms"] = start_epoch_ms
    return ClusterModel(cluster=cluster, **kwargs)  # type: ignore[arg-type]


def order_traffic(model: ClusterModel, topic: str, rate: float) -> None:
    model.add_topic(topic, queues_per_broker=4)
    queues = [(mq.broker, mq.queue_id) for mq in model.queues_of(topic)]
    model.add_producer(Producer(topic, queues, rate, start=model.start))


def healthy(
    time_scale: float = 1.0,
    start: float = 0.0,
    start_epoch_ms: int | None = None,
    cluster: str = "DefaultCluster",
    rate_per_queue: float = 5.0,
    group_a: str = "orderConsumerA",
    group_b: str = "orderConsumerB",
) -> Scenario:
    """From the start: a busy cluster, nothing wrong; two groups keep up with steady traffic on OrderTopic."""
    model = cluster_model(time_scale, start, start_epoch_ms, cluster)
    order_traffic(model, "OrderTopic", rate_per_queue)
    settings = ConsumerSettings(
        consume_thread_min=4, consume_thread_max=4, consume_from_where="CONSUME_FROM_FIRST_OFFSET"
    )
    model.add_group(group_a, ["OrderTopic"], settings)
    model.add_group(group_b, ["OrderTopic"], settings)
    return Scenario("healthy", healthy.__doc__ or "", model, {}, time_scale=time_scale)


STUCK_BROKER = "broker-a"
STUCK_QUEUE = 3
BLOCK_AT_S = 60.0  # healthy warm-up before the first handler hangs
BURST_DELAY_S = 2.0
BURST_SECONDS = 6.0
SECOND_BLOCK_GAP = 3626  # offsets between the two hung messages, as in the capture (0 and 3626)


def stuck_consumer(
    time_scale: float = 1.0,
    start: float = 0.0,
    start_epoch_ms: int | None = None,
    cluster: str = "DefaultCluster",
    rate_per_queue: float = 5.0,
    group_a: str = "orderConsumerA",
    group_b: str = "orderConsumerB",
    block_at: float | None = BLOCK_AT_S,
    release_at: float | None = None,
) -> Scenario:
    """At 60 s: group A hangs on two messages of broker-a/OrderTopic/3 (span > 2000) and stops pulling it."""
    model = cluster_model(time_scale, start, start_epoch_ms, cluster)
    order_traffic(model, "OrderTopic", rate_per_queue)
    settings = ConsumerSettings(
        consume_thread_min=4, consume_thread_max=4, consume_from_where="CONSUME_FROM_FIRST_OFFSET"
    )
    model.add_group(group_a, ["OrderTopic"], settings)
    model.add_group(group_b, ["OrderTopic"], settings)
    mq = MessageQueue("OrderTopic", STUCK_BROKER, STUCK_QUEUE)

    def block(sc: Scenario, now: float) -> None:
        first = model.poison_next(group_a, mq, 0, "sleep")
        second = model.poison_next(group_a, mq, SECOND_BLOCK_GAP, "sleep")
        sc.info.update(first_blocked_offset=first, second_blocked_offset=second)
        sc.after(BURST_DELAY_S, "burst")

    def burst(sc: Scenario, now: float) -> None:
        # Enough messages (≈3600) that the second hung message is written by the end of the
        # burst whatever the time scale; steady traffic during the burst only adds a few more.
        target = int(sc.info["second_blocked_offset"]) + 1  # type: ignore[call-overload]
        count = max(target - model.max_offset(mq), 0)
        seconds = BURST_SECONDS * sc.time_scale
        sc.info["burst_messages"] = count
        model.add_producer(
            Producer("OrderTopic", [(STUCK_BROKER, STUCK_QUEUE)], count / seconds, now, now + seconds)
        )

    def release(sc: Scenario, now: float) -> None:
        sc.info["released_threads"] = model.release(group_a)

    sc = Scenario(
        "stuck-consumer",
        stuck_consumer.__doc__ or "",
        model,
        {"block": block, "burst": burst, "release": release},
        time_scale=time_scale,
        info={
            "group_a": group_a,
            "group_b": group_b,
            "topic": "OrderTopic",
            "broker": STUCK_BROKER,
            "queue_id": STUCK_QUEUE,
        },
    )
    if block_at is not None:
        sc.at(block_at, "block")
    if release_at is not None:
        sc.at(release_at, "release")
    return sc
