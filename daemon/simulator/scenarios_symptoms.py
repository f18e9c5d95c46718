"""One scenario per symptom an operator pages on, each playing its incident in seconds.

Every factory takes `warmup` (model seconds played before the simulator serves): the model's
clock is set back by that much, so when serving starts the incident already has its history
(blocked threads for minutes, a backlog of tens of thousands) and model time equals wall time.
Event times are scaled by `time_scale`, like `stuck-consumer`'s.
"""

from __future__ import annotations

import time
from collections.abc import Callable

from daemon.collectors.remoting.codes import RequestCode
from daemon.simulator.broker import BrokerFault, MessageQueue
from daemon.simulator.consumer import ConsumerSettings
from daemon.simulator.model import ClusterModel
from daemon.simulator.retry import FailurePlan
from daemon.simulator.scenario import Scenario, cluster_model, order_traffic, stuck_consumer

TOPIC = "OrderTopic"
GROUP_A, GROUP_B = "orderConsumerA", "orderConsumerB"
WARMUP_S = 90.0  # long enough for ConsumptionBlocked's 60 s warning and a 10 000+ backlog


def _settings(threads: int = 4, rate: float = 500.0) -> ConsumerSettings:
    return ConsumerSettings(
        consume_thread_min=threads, consume_thread_max=threads,
        consume_from_where="CONSUME_FROM_FIRST_OFFSET", consume_rate_per_thread=rate,
    )  # fmt: skip


def _model(time_scale: float, start: float, start_epoch_ms: int | None, cluster: str, warmup: float) -> ClusterModel:
    epoch = int(time.time() * 1000) if start_epoch_ms is None else start_epoch_ms
    # Start the clock `warmup` earlier so the played-out history ends at the requested epoch.
    return cluster_model(time_scale, start, epoch - int(warmup * 1000), cluster)


def _finish(sc: Scenario, warmup: float) -> Scenario:
    sc.tick(sc.model.start + warmup)
    return sc


def _two_groups(
    time_scale: float, start: float, start_epoch_ms: int | None, cluster: str, warmup: float,
    rate: float = 5.0, settings_a: ConsumerSettings | None = None, settings_b: ConsumerSettings | None = None,
) -> ClusterModel:
    model = _model(time_scale, start, start_epoch_ms, cluster, warmup)
    order_traffic(model, TOPIC, rate)
    model.add_group(GROUP_A, [TOPIC], settings_a or _settings())
    model.add_group(GROUP_B, [TOPIC], settings_b or _settings())
    return model


def _info(**extra: object) -> dict[str, object]:
    return {"group_a": GROUP_A, "group_b": GROUP_B, "topic": TOPIC, **extra}


def stuck_far_apart(
    time_scale: float = 1.0, start: float = 0.0, start_epoch_ms: int | None = None,
    cluster: str = "DefaultCluster", warmup: float = 60.0,
) -> Scenario:
    """From the start: two hung messages 3626 offsets apart on broker-a/3 (span over 2000), the queue no longer pulled."""
    epoch = int(time.time() * 1000) if start_epoch_ms is None else start_epoch_ms
    sc = stuck_consumer(time_scale=time_scale, start=start, start_epoch_ms=epoch - int(warmup * 1000),
                        cluster=cluster, group_a=GROUP_A, group_b=GROUP_B, block_at=10.0)
    sc.name = "stuck-far-apart"
    return _finish(sc, warmup)


def one_stuck_message(
    time_scale: float = 1.0, start: float = 0.0, start_epoch_ms: int | None = None,
    cluster: str = "DefaultCluster", warmup: float = WARMUP_S,
) -> Scenario:
    """From the start: group A's handler hangs on one message of broker-a/3; that queue's offset freezes, the rest flows."""
    model = _two_groups(time_scale, start, start_epoch_ms, cluster, warmup)
    mq = MessageQueue(TOPIC, "broker-a", 3)

    def block(sc: Scenario, now: float) -> None:
        sc.info["blocked_offset"] = model.poison_next(GROUP_A, mq, 0, "sleep")

    sc = Scenario("one-stuck-message", one_stuck_message.__doc__ or "", model, {"block": block},
                  time_scale=time_scale, info=_info(broker="broker-a", queue_id=3))
    sc.at(10.0, "block")
    return _finish(sc, warmup)


def slow_consumer(
    time_scale: float = 1.0, start: float = 0.0, start_epoch_ms: int | None = None,
    cluster: str = "DefaultCluster", warmup: float = WARMUP_S,
) -> Scenario:
    """From the start: group A consumes 10 msg/s on one thread; its lag grows on every queue while B keeps up."""
    model = _two_groups(time_scale, start, start_epoch_ms, cluster, warmup, rate=20.0,
                        settings_a=_settings(threads=1, rate=10.0))
    return _finish(Scenario("slow-consumer", slow_consumer.__doc__ or "", model, {},
                            time_scale=time_scale, info=_info(lagging=GROUP_A)), warmup)


def blocked_consumer(
    time_scale: float = 1.0, start: float = 0.0, start_epoch_ms: int | None = None,
    cluster: str = "DefaultCluster", warmup: float = WARMUP_S,
) -> Scenario:
    """From the start: every consume thread of group A hangs (a dead downstream); nothing consumed, caches full."""
    model = _two_groups(time_scale, start, start_epoch_ms, cluster, warmup)

    def block(sc: Scenario, now: float) -> None:
        # One hung message per queue: 8 queues, 4 threads, so every thread ends up holding one.
        for mq in model.queues_of(TOPIC):
            model.poison_next(GROUP_A, mq, 0, "socket")

    sc = Scenario("blocked-consumer", blocked_consumer.__doc__ or "", model, {"block": block},
                  time_scale=time_scale, info=_info(blocked=GROUP_A))
    sc.at(10.0, "block")
    return _finish(sc, warmup)


def retry_storm(
    time_scale: float = 1.0, start: float = 0.0, start_epoch_ms: int | None = None,
    cluster: str = "DefaultCluster", warmup: float = WARMUP_S,
) -> Scenario:
    """Every 5 s, a rolling deploy of group A: a client joins and one leaves, each time a rebalance moves queues."""
    model = _two_groups(time_scale, start, start_epoch_ms, cluster, warmup)
    step = 5.0

    def churn(sc: Scenario, now: float) -> None:
        group = model.groups[GROUP_A]
        old = group.clients[0].client_id
        model.add_client(GROUP_A)
        model.remove_client(GROUP_A, old)
        sc.info["rebalances"] = int(sc.info.get("rebalances", 0)) + 2  # type: ignore[call-overload]
        sc.done.discard("churn")  # runs again at its next event
        sc.after(step, "churn")

    sc = Scenario("retry-storm", retry_storm.__doc__ or "", model, {"churn": churn},
                  time_scale=time_scale, info=_info(churning=GROUP_A))
    sc.at(step, "churn")
    return _finish(sc, warmup)


def one_group_lagging(
    time_scale: float = 1.0, start: float = 0.0, start_epoch_ms: int | None = None,
    cluster: str = "DefaultCluster", warmup: float = WARMUP_S,
) -> Scenario:
    """From the start: of two groups on OrderTopic only A falls behind (it consumes 0.5 msg/s); B keeps up."""
    model = _two_groups(time_scale, start, start_epoch_ms, cluster, warmup, rate=20.0,
                        settings_a=_settings(threads=1, rate=0.5))
    return _finish(Scenario("one-group-lagging", one_group_lagging.__doc__ or "", model, {},
                            time_scale=time_scale, info=_info(lagging=GROUP_A)), warmup)


def all_groups_lagging(
    time_scale: float = 1.0, start: float = 0.0, start_epoch_ms: int | None = None,
    cluster: str = "DefaultCluster", warmup: float = WARMUP_S,
) -> Scenario:
    """From the start: both groups on OrderTopic fall behind together; the brokers answer each pull 0.5 s late."""
    model = _two_groups(time_scale, start, start_epoch_ms, cluster, warmup, rate=100.0)
    # 32 messages per pull every 0.5 s is 64/s a queue against 100/s written; the clients' caches
    # stay nearly empty, which is what tells a broker-side cause from slow consumers.
    model.pull_delay_s = {name: 0.5 for name in model.brokers}
    return _finish(Scenario("all-groups-lagging", all_groups_lagging.__doc__ or "", model, {},
                            time_scale=time_scale, info=_info()), warmup)


def group_offline(
    time_scale: float = 1.0, start: float = 0.0, start_epoch_ms: int | None = None,
    cluster: str = "DefaultCluster", warmup: float = WARMUP_S,
) -> Scenario:
    """From the start: group A's only client is gone (empty connection list, 206); its offsets stay, its lag grows."""
    model = _two_groups(time_scale, start, start_epoch_ms, cluster, warmup, rate=20.0)

    def stop(sc: Scenario, now: float) -> None:
        for c in list(model.groups[GROUP_A].clients):
            model.remove_client(GROUP_A, c.client_id)

    sc = Scenario("group-offline", group_offline.__doc__ or "", model, {"stop": stop},
                  time_scale=time_scale, info=_info(offline=GROUP_A))
    sc.at(20.0, "stop")
    return _finish(sc, warmup)


def broker_down(
    time_scale: float = 1.0, start: float = 0.0, start_epoch_ms: int | None = None,
    cluster: str = "DefaultCluster", warmup: float = 30.0,
) -> Scenario:
    """From the start: broker-b's process is gone (its port refuses connections); the name server still lists it."""
    model = _two_groups(time_scale, start, start_epoch_ms, cluster, warmup)
    sc = Scenario("broker-down", broker_down.__doc__ or "", model, {},
                  time_scale=time_scale, info=_info(broker="broker-b"),
                  broker_faults={"broker-b": BrokerFault(refuse=True)})
    return _finish(sc, warmup)


def call_timeout(
    time_scale: float = 1.0, start: float = 0.0, start_epoch_ms: int | None = None,
    cluster: str = "DefaultCluster", warmup: float = 30.0,
) -> Scenario:
    """From the start: broker-a never answers QUERY_CONSUME_TIME_SPAN (303); it answers every other request."""
    model = _two_groups(time_scale, start, start_epoch_ms, cluster, warmup)
    stuck = frozenset({int(RequestCode.QUERY_CONSUME_TIME_SPAN)})
    sc = Scenario("call-timeout", call_timeout.__doc__ or "", model, {},
                  time_scale=time_scale, info=_info(broker="broker-a", call="QUERY_CONSUME_TIME_SPAN"),
                  broker_faults={"broker-a": BrokerFault(unanswered=stuck)})
    return _finish(sc, warmup)


def healthy_busy(
    time_scale: float = 1.0, start: float = 0.0, start_epoch_ms: int | None = None,
    cluster: str = "DefaultCluster", warmup: float = 30.0,
) -> Scenario:
    """From the start: 100 msg/s per queue that both groups keep up with; only in-flight lag, nothing to page."""
    model = _two_groups(time_scale, start, start_epoch_ms, cluster, warmup, rate=100.0,
                        settings_a=_settings(threads=8), settings_b=_settings(threads=8))
    return _finish(Scenario("healthy-busy", healthy_busy.__doc__ or "", model, {},
                            time_scale=time_scale, info=_info()), warmup)


def dispatch_lag(
    time_scale: float = 1.0, start: float = 0.0, start_epoch_ms: int | None = None,
    cluster: str = "DefaultCluster", warmup: float = 30.0,
) -> Scenario:
    """From the start: broker-a's ReputMessageService is 300 MiB behind the commitlog; acked writes not consumable."""
    model = _two_groups(time_scale, start, start_epoch_ms, cluster, warmup)
    model.runtime_overrides["broker-a"] = {"dispatchBehindBytes": str(300 * 1024 * 1024)}
    return _finish(Scenario("dispatch-lag", dispatch_lag.__doc__ or "", model, {},
                            time_scale=time_scale, info=_info(broker="broker-a")), warmup)


def put_latency(
    time_scale: float = 1.0, start: float = 0.0, start_epoch_ms: int | None = None,
    cluster: str = "DefaultCluster", warmup: float = 90.0,
) -> Scenario:
    """From the start: broker-b's puts are slow (PAGECACHERT: 170 puts of the last minute took 500 ms or more)."""
    model = _two_groups(time_scale, start, start_epoch_ms, cluster, warmup)
    model.runtime_overrides["broker-b"] = {"putMessageDistributeTime": (
        "[<=0ms]:1200 [0~10ms]:300 [10~50ms]:80 [50~100ms]:40 [100~200ms]:30 [200~500ms]:25 "
        "[500ms~1s]:150 [1~2s]:20 [2~3s]:0 [3~4s]:0 [4~5s]:0 [5~10s]:0 [10s~]:0 "
    )}
    return _finish(Scenario("put-latency", put_latency.__doc__ or "", model, {},
                            time_scale=time_scale, info=_info(broker="broker-b")), warmup)


def dlq_growth(
    time_scale: float = 1.0, start: float = 0.0, start_epoch_ms: int | None = None,
    cluster: str = "DefaultCluster", warmup: float = WARMUP_S,
) -> Scenario:
    """From the start: group A fails every 10th message, maxReconsumeTimes 2; %DLQ% has messages and keeps growing."""
    # 16 retries would take 4 h 46 m to dead-letter; a team that set maxReconsumeTimes=2 sees it in
    # 10 s + 30 s, which is what makes the incident playable in a test.
    settings_a = _settings()
    settings_a.max_reconsume_times = 2
    model = _two_groups(time_scale, start, start_epoch_ms, cluster, warmup, settings_a=settings_a)
    model.groups[GROUP_A].failing = FailurePlan(every=10)
    return _finish(Scenario("dlq-growth", dlq_growth.__doc__ or "", model, {},
                            time_scale=time_scale, info=_info(failing=GROUP_A)), warmup)


SYMPTOM_SCENARIOS: dict[str, Callable[..., Scenario]] = {
    "stuck-far-apart": stuck_far_apart,
    "one-stuck-message": one_stuck_message,
    "slow-consumer": slow_consumer,
    "blocked-consumer": blocked_consumer,
    "retry-storm": retry_storm,
    "one-group-lagging": one_group_lagging,
    "all-groups-lagging": all_groups_lagging,
    "group-offline": group_offline,
    "broker-down": broker_down,
    "call-timeout": call_timeout,
    "healthy-busy": healthy_busy,
    "dispatch-lag": dispatch_lag,
    "put-latency": put_latency,
    "dlq-growth": dlq_growth,
}

