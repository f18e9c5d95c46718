"""One scenario per symptom an operator pages on, each playing its incident in seconds.

Every factory takes `warmup` (model seconds played before the simulator serves): the model's
clock is set back by that much, so when serving starts the incident already has its history
(blocked threads for minutes, a backlog of tens of thousands) and model time equals wall time.
Event times are scaled by `time_scale`, like `stuck-consumer`'s.
"""

from __future__ import annotations

import time
from collections.abc import Callable

from daemon.simulator.broker import MessageQueue
from daemon.simulator.consumer import ConsumerSettings
from daemon.simulator.model import ClusterModel
from daemon.simulator.scenario import Scenario, _cluster, _order_traffic, stuck_consumer

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
    return _cluster(time_scale, start, epoch - int(warmup * 1000), cluster)


def _finish(sc: Scenario, warmup: float) -> Scenario:
    sc.tick(sc.model.start + warmup)
    return sc


def _two_groups(
    time_scale: float, start: float, start_epoch_ms: int | None, cluster: str, warmup: float,
    rate: float = 5.0, settings_a: ConsumerSettings | None = None, settings_b: ConsumerSettings | None = None,
) -> ClusterModel:
    model = _model(time_scale, start, start_epoch_ms, cluster, warmup)
    _order_traffic(model, TOPIC, rate)
    model.add_group(GROUP_A, [TOPIC], settings_a or _settings())
    model.add_group(GROUP_B, [TOPIC], settings_b or _settings())
    return model


def _info(**extra: object) -> dict[str, object]:
    return {"group_a": GROUP_A, "group_b": GROUP_B, "topic": TOPIC, **extra}


def stuck_far_apart(time_scale: float = 1.0, **kwargs: object) -> Scenario:
    """Two hung messages 3626 offsets apart on broker-a/3: span over 2000, the queue is no longer pulled."""
    sc = stuck_consumer(time_scale=time_scale, **kwargs)  # type: ignore[arg-type]
    sc.name = "stuck-far-apart"
    return sc


def one_stuck_message(
    time_scale: float = 1.0, start: float = 0.0, start_epoch_ms: int | None = None,
    cluster: str = "DefaultCluster", warmup: float = WARMUP_S,
) -> Scenario:
    """Group A's handler hangs on one message of broker-a/3: that queue's committed offset freezes, the rest flows."""
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
    """Group A's handler takes 100 ms per message on one thread: its lag grows on every queue while B keeps up."""
    model = _two_groups(time_scale, start, start_epoch_ms, cluster, warmup, rate=20.0,
                        settings_a=_settings(threads=1, rate=10.0))
    return _finish(Scenario("slow-consumer", slow_consumer.__doc__ or "", model, {},
                            time_scale=time_scale, info=_info(lagging=GROUP_A)), warmup)


def blocked_consumer(
    time_scale: float = 1.0, start: float = 0.0, start_epoch_ms: int | None = None,
    cluster: str = "DefaultCluster", warmup: float = WARMUP_S,
) -> Scenario:
    """Every consume thread of group A hangs (a dead downstream): nothing is consumed, caches stay full."""
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
    """A rolling deploy of group A: a client joins and one leaves every 5 s, each time a rebalance moves queues."""
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
    """Of two groups on OrderTopic only A falls behind (it stopped consuming): its lag is A's problem."""
    model = _two_groups(time_scale, start, start_epoch_ms, cluster, warmup, rate=20.0,
                        settings_a=_settings(threads=1, rate=0.5))
    return _finish(Scenario("one-group-lagging", one_group_lagging.__doc__ or "", model, {},
                            time_scale=time_scale, info=_info(lagging=GROUP_A)), warmup)


def all_groups_lagging(
    time_scale: float = 1.0, start: float = 0.0, start_epoch_ms: int | None = None,
    cluster: str = "DefaultCluster", warmup: float = WARMUP_S,
) -> Scenario:
    """Both groups on OrderTopic fall behind together: a broker- or topic-side cause, not one team's consumer."""
    slow = _settings(threads=1, rate=0.5)
    model = _two_groups(time_scale, start, start_epoch_ms, cluster, warmup, rate=20.0,
                        settings_a=slow, settings_b=slow)
    return _finish(Scenario("all-groups-lagging", all_groups_lagging.__doc__ or "", model, {},
                            time_scale=time_scale, info=_info()), warmup)


def group_offline(
    time_scale: float = 1.0, start: float = 0.0, start_epoch_ms: int | None = None,
    cluster: str = "DefaultCluster", warmup: float = WARMUP_S,
) -> Scenario:
    """Group A's only client shuts down at 20 s: the connection list is empty (206) but its offsets stay, lag grows."""
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
    """broker-b's process is gone (serve it, then `set_fault("broker-b", refuse=True)`); the name server still lists it."""
    model = _two_groups(time_scale, start, start_epoch_ms, cluster, warmup)
    sc = Scenario("broker-down", broker_down.__doc__ or "", model, {},
                  time_scale=time_scale, info=_info(broker="broker-b"))
    return _finish(sc, warmup)


def healthy_busy(
    time_scale: float = 1.0, start: float = 0.0, start_epoch_ms: int | None = None,
    cluster: str = "DefaultCluster", warmup: float = 30.0,
) -> Scenario:
    """High traffic (100 msg/s per queue) that both groups keep up with: only in-flight lag, nothing to page."""
    model = _two_groups(time_scale, start, start_epoch_ms, cluster, warmup, rate=100.0,
                        settings_a=_settings(threads=8), settings_b=_settings(threads=8))
    return _finish(Scenario("healthy-busy", healthy_busy.__doc__ or "", model, {},
                            time_scale=time_scale, info=_info()), warmup)


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
    "healthy-busy": healthy_busy,
}

