"""The sample tables of a 5.1+ broker's native metrics (`metricsExporterType=PROM`, DESIGN §5).

Series are keyed by the scrape address (`target`): `node_id`, which becomes `broker`, is the broker
*name*, the same on its master and its slaves. Names and units follow the real 5.3.3 page
(shared/fixtures/rocketmq-5.3.3/): the consumer gauges are per consumer group x topic (no queue,
no client), the timer and half-message gauges per topic, the revive gauges per revive queue.
"""

from __future__ import annotations

from rules.table_types import BOOL, FLOAT64, INT64, STRING, Column, Table
from rules.table_types import common_columns as _common


def _scrape() -> tuple[Column, ...]:
    return _common() + (
        Column("target", STRING, "the scraped endpoint, host:port (a broker's metricsPromExporterPort, or a proxy)"),
        Column("broker", STRING, "broker name (the samples' node_id: equal on master and slave)"),
    )


NATIVE_CONSUMER = Table(
    name="native_consumer",
    description="One row per endpoint x consumer group x topic: consumption as the 5.x broker itself computes it.",
    source="5.1+ broker /metrics: rocketmq_consumer_*, rocketmq_send_to_dlq_messages_total, "
           "rocketmq_pop_revive_retry_messages_total",
    key=("cluster", "target", "broker", "group", "topic", "is_retry"),
    columns=_scrape()
    + (
        Column("group", STRING, "consumer group (consumer_group)"),
        Column("topic", STRING, "topic"),
        Column("is_retry", BOOL, "the figures are of the group's retry topic"),
        Column("is_system", BOOL, "a RocketMQ system group or topic"),
        Column("lag", INT64, "rocketmq_consumer_lag_messages: not yet committed", "messages", nullable=True),
        Column("inflight", INT64, "rocketmq_consumer_inflight_messages: pulled, not committed (pop-mode clients' "
               "popped messages do not count: it stays 0 while they hold them)", "messages", nullable=True),
        Column("ready", INT64, "rocketmq_consumer_ready_messages: written, not yet pulled or popped", "messages",
               nullable=True),
        Column("lag_latency_ms", INT64, "rocketmq_consumer_lag_latency: age of the oldest uncommitted message", "ms",
               nullable=True),
        Column("queueing_latency_ms", INT64, "rocketmq_consumer_queueing_latency: age of the oldest message not yet "
               "pulled", "ms", nullable=True),
        Column("dlq_total", INT64, "rocketmq_send_to_dlq_messages_total: messages sent to the group's DLQ since the "
               "broker started", "messages", nullable=True),
        Column("revive_retry_total", INT64, "rocketmq_pop_revive_retry_messages_total: popped, unacknowledged "
               "messages put back into %RETRY%<group>_<topic> after their invisible time, since start", "messages",
               nullable=True),
    ),
)

NATIVE_TOPIC = Table(
    name="native_topic",
    description="One row per endpoint x topic: transactional (half) and timer backlogs, as the 5.x broker counts them.",
    source="5.1+ broker /metrics: rocketmq_half_messages, rocketmq_timing_messages, rocketmq_timer_*_total, "
           "rocketmq_commit/rollback_messages_total",
    key=("cluster", "target", "broker", "topic"),
    columns=_scrape()
    + (
        Column("topic", STRING, "topic"),
        Column("is_system", BOOL, "a topic RocketMQ keeps for itself (rmq_sys_*, RMQ_SYS_*, SCHEDULE_TOPIC_XXXX)"),
        Column("half_messages", INT64, "prepared (half) messages neither committed nor rolled back (no age is "
               "exported)", "messages", nullable=True),
        Column("timing_messages", INT64, "timer messages stored and not yet due", "messages", nullable=True),
        Column("timer_enqueue_total", INT64, "timer messages taken into the timer wheel since start", "messages",
               nullable=True),
        Column("timer_dequeue_total", INT64, "timer messages delivered since start", "messages", nullable=True),
        Column("commit_total", INT64, "transactions committed since start", "messages", nullable=True),
        Column("rollback_total", INT64, "transactions rolled back since start", "messages", nullable=True),
    ),
)

NATIVE_BROKER = Table(
    name="native_broker",
    description="One row per endpoint x broker: store, timer and POP-revive figures of the 5.x broker's page.",
    source="5.1+ broker /metrics",
    key=("cluster", "target", "broker"),
    columns=_scrape()
    + (
        Column("dispatch_behind_bytes", INT64, "commitlog bytes not yet dispatched to consume queues", "bytes",
               nullable=True),
        Column("flush_behind_bytes", INT64, "commitlog bytes not yet flushed", "bytes", nullable=True),
        Column("timer_enqueue_lag", INT64, "timer messages waiting to enter the wheel", "messages", nullable=True),
        Column("timer_dequeue_lag", INT64, "due timer messages waiting to be delivered", "messages", nullable=True),
        Column("timer_enqueue_latency_ms", INT64, "how far the wheel's enqueue trails", "ms", nullable=True),
        Column("timer_dequeue_latency_ms", INT64, "how far the wheel's delivery trails", "ms", nullable=True),
        Column("pop_revive_lag_max", INT64, "worst revive queue: checkpoints waiting to be revived", "messages",
               nullable=True),
        Column("pop_revive_latency_max_ms", INT64, "worst revive queue: how far revive trails", "ms", nullable=True),
        Column("permission", INT64, "broker permission (6 = read and write)", nullable=True),
        Column("topics", INT64, "rocketmq_topic_number", "topics", nullable=True),
        Column("consumer_groups", INT64, "rocketmq_consumer_group_number", "groups", nullable=True),
        Column("producer_connections", INT64, "producer connections, all groups", "connections", nullable=True),
        Column("consumer_connections", INT64, "consumer connections, all groups", "connections", nullable=True),
        Column("sample_age_s", FLOAT64, "collection time minus the page's newest sample timestamp", "s",
               nullable=True),
        Column("unknown_families", INT64, "sample names on the page rocketwatch does not read (counted, ignored)"),
    ),
)

NATIVE_TABLES = (NATIVE_CONSUMER, NATIVE_TOPIC, NATIVE_BROKER)
