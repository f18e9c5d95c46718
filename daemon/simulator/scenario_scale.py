"""A production-sized cluster: brokers × topics × groups × queues, for collection at scale.

Default: 3 brokers, 300 topics of 8 queues on each broker (7,200 queues), 100 groups consuming 3
topics each (72 queues per group) with 2 clients each, light steady traffic. Everything is
healthy; the point is volume: one collection cycle asks every broker for every group and topic
and every client for its ProcessQueues, as a real site of that size would be asked.
"""

from __future__ import annotations

import time

from daemon.simulator.consumer import ConsumerSettings
from daemon.simulator.model import PERSIST_INTERVAL_S, ClusterModel, Producer
from daemon.simulator.scenario import Scenario

STEP_S = 0.5  # 7,200 ProcessQueues stepped 50 times a second would not keep up with the clock


def scale_names(brokers: int, topics: int, groups: int) -> tuple[list[str], list[str], list[str]]:
    """Broker, topic and group names of the scale scenario."""
    return ([f"broker-{i:02d}" for i in range(brokers)], [f"ScaleTopic{t:03d}" for t in range(topics)],
            [f"scaleGroup{g:03d}" for g in range(groups)])


def scale(
    time_scale: float = 1.0, start: float = 0.0, start_epoch_ms: int | None = None, cluster: str = "DefaultCluster",
    brokers: int = 3, topics: int = 300, groups: int = 100, queues: int = 8, clients_per_group: int = 2,
    topics_per_group: int = 3, rate_per_queue: float = 0.5, warmup: float = 10.0,
) -> Scenario:
    """From the start: 3 brokers x 300 topics x 100 groups x 8 queues, 2 clients per group; healthy, at scale."""
    broker_names, topic_names, group_names = scale_names(brokers, topics, groups)
    epoch = int(time.time() * 1000) if start_epoch_ms is None else start_epoch_ms
    model = ClusterModel(cluster=cluster, brokers=tuple(broker_names), start=start,
                         start_epoch_ms=epoch - int(warmup * 1000),
                         persist_interval_s=PERSIST_INTERVAL_S * time_scale, step_s=STEP_S)
    for topic in topic_names:
        model.add_topic(topic, queues_per_broker=queues)
        qs = [(mq.broker, mq.queue_id) for mq in model.queues_of(topic)]
        model.add_producer(Producer(topic, qs, rate_per_queue, start=model.start))
    settings = ConsumerSettings(consume_thread_min=4, consume_thread_max=4,
                                consume_from_where="CONSUME_FROM_FIRST_OFFSET")
    for g, group in enumerate(group_names):
        subscribed = [topic_names[(g * topics_per_group + k) % topics] for k in range(topics_per_group)]
        model.add_group(group, subscribed, settings, clients=clients_per_group)
    sc = Scenario("scale", scale.__doc__ or "", model, {}, time_scale=time_scale,
                  info={"brokers": brokers, "topics": topics, "groups": groups, "queues": queues})
    sc.tick(model.start + warmup)
    return sc
