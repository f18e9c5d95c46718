"""A 5.x broker's native `/metrics` page from the model, in the real 5.3.3 shape.

As shared/fixtures/rocketmq-5.3.3/metrics-*.txt: `target_info` and `otel_scope_info` first; `# TYPE`
and `# HELP` name the instrument without the unit suffix its samples carry; every sample carries
`otel_scope_name`, `cluster`, `node_id` (the broker name), `node_type` and a millisecond timestamp;
values are doubles; families a monitor may not read (rpc latency histograms, watermarks) are there too.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from daemon.simulator.broker import Broker
from daemon.simulator.retry import DLQ_PREFIX

Labels = dict[str, str]


def _labels(base: Labels, extra: Labels) -> str:
    return ",".join(f'{k}="{v}"' for k, v in {**base, **extra}.items())


class _Page:
    def __init__(self, ts_ms: int) -> None:
        self.lines = ["# TYPE target info", "# HELP target Target metadata", "target_info{} 1",
                      "# TYPE otel_scope_info info", "# HELP otel_scope_info Scope metadata",
                      'otel_scope_info{otel_scope_name="broker-meter"} 1']
        self.ts = ts_ms

    def family(self, instrument: str, kind: str, samples: Iterable[tuple[str, Labels, float]]) -> None:
        """`instrument`'s TYPE/HELP lines (no unit suffix), then its samples (with it)."""
        samples = list(samples)
        if not samples:
            return
        self.lines += [f"# TYPE {instrument} {kind}", f"# HELP {instrument} default view for {kind}."]
        self.lines += [f"{name}{{{_labels({'otel_scope_name': 'broker-meter'}, labels)}}} {float(value)!r} {self.ts}"
                       for name, labels, value in samples]


def native_page(model: Any, brokers: Iterable[Broker]) -> str:
    """The page of `brokers` (one broker, or every broker behind one address)."""
    page = _Page(model.epoch_ms())
    brokers = list(brokers)
    bases = {b.name: {"cluster": model.cluster, "node_id": b.name, "node_type": "broker"} for b in brokers}
    consumer = [(b, g, t, _consumer_figures(model, b, g, t)) for b in brokers for g in model.groups.values()
                for t in g.topics if t in b.topics]
    for column, instrument, suffix in (("lag", "rocketmq_consumer_lag_messages", ""),
                                       ("inflight", "rocketmq_consumer_inflight_messages", ""),
                                       ("ready", "rocketmq_consumer_ready_messages", ""),
                                       ("lag_latency", "rocketmq_consumer_lag_latency", "_milliseconds"),
                                       ("queueing_latency", "rocketmq_consumer_queueing_latency", "_milliseconds")):
        page.family(instrument, "gauge", (
            (instrument + suffix, {**bases[b.name], "consumer_group": g.name, "is_retry": "false",
                                   "is_system": "false", "topic": t}, figures[column])
            for b, g, t, figures in consumer))
    page.family("rocketmq_send_to_dlq_messages_total", "counter", (
        ("rocketmq_send_to_dlq_messages_total", {**bases[b.name], "consumer_group": g.name, "is_system": "false",
                                                 "topic": g.topics[0]}, dlq)
        for b in brokers for g in model.groups.values()
        if g.topics and (dlq := _max_offsets(b, DLQ_PREFIX + g.name)) > 0))
    page.family("rocketmq_pop_revive_retry_messages_total", "counter", (
        ("rocketmq_pop_revive_retry_messages_total", {**bases[b.name], "consumer_group": grp, "put_status": "PUT_OK",
                                                      "topic": topic}, n)
        for b in brokers for (grp, topic), n in _revives(model, b.name).items()))
    store = {"storage_medium": "disk", "storage_type": "local"}
    wheels = [(b, model.backlogs.timers[b.name]) for b in brokers if b.name in model.backlogs.timers]
    page.family("rocketmq_timing_messages", "gauge", (
        ("rocketmq_timing_messages", {**bases[b.name], **store, "topic": t}, n)
        for b, w in wheels for t, n in sorted(w.waiting.items())))
    page.family("rocketmq_timer_enqueue_total", "counter", (
        ("rocketmq_timer_enqueue_total", {**bases[b.name], **store, "topic": t}, n)
        for b, w in wheels for t, n in sorted(w.enqueued.items())))
    page.family("rocketmq_timer_dequeue_total", "counter", (
        ("rocketmq_timer_dequeue_total", {**bases[b.name], **store, "topic": t}, n)
        for b, w in wheels for t, n in sorted(w.dequeued.items()) if n))
    txs = [(b, model.backlogs.transactions[b.name]) for b in brokers if b.name in model.backlogs.transactions]
    page.family("rocketmq_half_messages", "gauge", (
        ("rocketmq_half_messages", {**bases[b.name], "topic": t}, n) for b, tx in txs for t, n in sorted(tx.half.items())))
    page.family("rocketmq_commit_messages_total", "counter", (
        ("rocketmq_commit_messages_total", {**bases[b.name], "topic": t}, n)
        for b, tx in txs for t, n in sorted(tx.committed.items())))
    page.family("rocketmq_storage_dispatch_behind_bytes", "gauge", (
        ("rocketmq_storage_dispatch_behind_bytes", {**bases[b.name], **store}, 0) for b in brokers))
    page.family("rocketmq_broker_permission", "gauge", (
        ("rocketmq_broker_permission", bases[b.name], 6) for b in brokers))
    page.family("rocketmq_topic_number", "gauge", (
        ("rocketmq_topic_number", bases[b.name], len(b.topics)) for b in brokers))
    page.family("rocketmq_consumer_connections", "gauge", (
        ("rocketmq_consumer_connections", {**bases[b.name], "consume_mode": "push", "consumer_group": g.name,
                                           "is_system": "false", "language": "java", "protocol_type": "remoting",
                                           "version": "v5_3_3"}, len(g.clients))
        for b in brokers for g in model.groups.values() if g.clients))
    # A family rocketwatch does not read, with its unit-suffix quirk: counted, ignored.
    page.family("rocketmq_rpc_latency", "histogram", (
        (f"rocketmq_rpc_latency_milliseconds_{part}", {**bases[b.name], "protocol_type": "remoting",
                                                       "request_code": "pull_message"}, 1)
        for b in brokers for part in ("count", "sum")))
    return "\n".join(page.lines) + "\n"


def _max_offsets(broker: Broker, topic: str) -> int:
    cfg = broker.topics.get(topic)
    if cfg is None:
        return 0
    return sum(cq.max_offset for q in range(cfg.read_queue_nums) if (cq := broker.queue(topic, q)) is not None)


def _revives(model: Any, broker: str) -> dict[tuple[str, str], int]:
    totals: dict[tuple[str, str], int] = {}
    for g in model.groups.values():
        for c in g.clients:
            if c.pop is not None and any(pq.broker == broker for pq in c.pop.queues):
                for key, n in c.pop.revive_totals.items():
                    totals[key] = totals.get(key, 0) + n
    return totals


def _consumer_figures(model: Any, broker: Broker, group: Any, topic: str) -> dict[str, float]:
    """ConsumerLagCalculator's figures of one group and topic on one broker (ref §7)."""
    cfg = broker.topics[topic]
    now_ms = model.epoch_ms()
    lag = inflight = 0
    lag_latency = queueing = 0
    for q in range(cfg.read_queue_nums):
        cq = broker.queue(topic, q)
        if cq is None:
            continue
        commit = max(broker.committed(group.name, topic, q), 0)
        pulled = max(commit, broker.pull_offsets.get((group.name, topic, q), commit))
        lag += cq.max_offset - commit
        inflight += pulled - commit
        if commit < cq.max_offset:
            lag_latency = max(lag_latency, now_ms - cq.store_time(commit))
        if pulled < cq.max_offset:
            queueing = max(queueing, now_ms - cq.store_time(pulled))
    return {"lag": lag, "inflight": inflight, "ready": lag - inflight, "lag_latency": lag_latency,
            "queueing_latency": queueing}
