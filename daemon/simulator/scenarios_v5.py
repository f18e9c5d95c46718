"""RocketMQ 5.3.3 as the field runs it: a stuck pop-mode consumer, a growing timer backlog, unresolved
half messages (shared/fixtures/rocketmq-5.3.3/README.md). Each is served as 5.3.3 (native /metrics on)
unless another version is asked for, and keeps a healthy group beside the one in trouble.
"""

from __future__ import annotations

from daemon.simulator.backlogs import TimedProducer, TransactionalProducer
from daemon.simulator.broker import MessageQueue
from daemon.simulator.consumer import ConsumerSettings
from daemon.simulator.pop import PopSettings
from daemon.simulator.scenario import Scenario, cluster_model, order_traffic

V5_3_3 = 479
TROUBLE_AT_S = 60.0  # healthy warm-up first


def _settings(threads: int = 4) -> ConsumerSettings:
    return ConsumerSettings(consume_thread_min=threads, consume_thread_max=threads,
                            consume_from_where="CONSUME_FROM_FIRST_OFFSET")


def pop_stuck(time_scale: float = 1.0, start: float = 0.0, start_epoch_ms: int | None = None,
              cluster: str = "DefaultCluster", rate_per_queue: float = 2.0) -> Scenario:
    """At 60 s all 4 consume threads of popGroup (pop mode) block; it stops popping at waitAckCount > 96; mailGroup stays healthy."""
    model = cluster_model(time_scale, start, start_epoch_ms, cluster)
    order_traffic(model, "PopTopic", rate_per_queue)
    order_traffic(model, "MailTopic", rate_per_queue)
    pop = model.add_group("popGroup", ["PopTopic"], _settings(), clients=0)
    pop.pop = PopSettings()
    model.add_client("popGroup")
    model.add_group("mailGroup", ["MailTopic"], _settings())

    def block(sc: Scenario, now: float) -> None:
        # The next message of four queues hangs the thread that takes it (STUCK-P1.. in the capture).
        for qid in range(4):
            sc.model.poison_next("popGroup", MessageQueue("PopTopic", "broker-a", qid))

    def release(sc: Scenario, now: float) -> None:
        sc.model.release("popGroup")

    sc = Scenario("pop-stuck", pop_stuck.__doc__ or "", model, {"block": block, "release": release},
                  time_scale=time_scale, server_version=V5_3_3)
    sc.at(TROUBLE_AT_S, "block")
    return sc


def timer_backlog(time_scale: float = 1.0, start: float = 0.0, start_epoch_ms: int | None = None,
                  cluster: str = "DefaultCluster", rate: float = 400.0) -> Scenario:
    """At 60 s a producer starts scheduling 400 timer messages/s to TimerTopic on broker-a, each due in 1 h; orderConsumer stays healthy."""
    model = cluster_model(time_scale, start, start_epoch_ms, cluster)
    order_traffic(model, "OrderTopic", 5.0)
    model.add_topic("TimerTopic", queues_per_broker=4)
    model.add_group("orderConsumer", ["OrderTopic"], _settings())
    model.add_group("timerGroup", ["TimerTopic"], _settings())
    # The capture's small batch first: 40 messages due a minute later, delivered on time.
    model.timed_producers.append(TimedProducer("broker-a", "TimerTopic", 40.0, 60.0, start=model.start,
                                               end=model.start + 1.0))
    model.timed_producers.append(TimedProducer("broker-a", "TimerTopic", rate, 3600.0,
                                               start=model.start + TROUBLE_AT_S * time_scale))
    return Scenario("timer-backlog", timer_backlog.__doc__ or "", model, {}, time_scale=time_scale,
                    server_version=V5_3_3)


def half_unresolved(time_scale: float = 1.0, start: float = 0.0, start_epoch_ms: int | None = None,
                    cluster: str = "DefaultCluster", rate: float = 5.0) -> Scenario:
    """At 60 s one in five transactions on TxTopic starts staying half (the checker gets UNKNOW); txGroup consumes the committed ones."""
    model = cluster_model(time_scale, start, start_epoch_ms, cluster)
    model.add_topic("TxTopic", queues_per_broker=4, brokers=["broker-a"])
    model.add_group("txGroup", ["TxTopic"], _settings())
    producer = TransactionalProducer("broker-a", "TxTopic", rate, start=model.start)
    model.tx_producers.append(producer)

    def unresolve(sc: Scenario, now: float) -> None:
        producer.unknown = 0.2

    def resolve(sc: Scenario, now: float) -> None:
        producer.unknown = 0.0
        tx = sc.model.backlogs.tx("broker-a")
        tx.committed["TxTopic"] += tx.half["TxTopic"]
        tx.half["TxTopic"] = 0

    sc = Scenario("half-unresolved", half_unresolved.__doc__ or "", model,
                  {"unresolve": unresolve, "resolve": resolve}, time_scale=time_scale, server_version=V5_3_3)
    sc.at(TROUBLE_AT_S, "unresolve")
    return sc


V5_SCENARIOS = {"pop-stuck": pop_stuck, "timer-backlog": timer_backlog, "half-unresolved": half_unresolved}
