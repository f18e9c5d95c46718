"""The sample tables: the vocabulary every rule is written in.

Declared once here; the Parquet writer derives its pyarrow schema from it, Spark its
StructType, `rocketwatch tables` prints it. This module imports neither pyarrow nor pyspark,
so `rocketwatch check` can validate rules against it without a JVM. Column and Table are declared in
rules/table_types.py, the views in rules/views_catalog.py (both re-exported here).
"""

from __future__ import annotations

from rules.table_types import (  # noqa: F401  (re-exported: the vocabulary is imported from here)
    BOOL,
    COLUMN_TYPES,
    FLOAT64,
    INT32,
    INT64,
    STRING,
    TIMESTAMP,
    Column,
    Table,
)
from rules.table_types import common_columns as _common
from rules.tables_native import NATIVE_TABLES
from rules.tables_pop import POP_QUEUE
from rules.views_catalog import LAGGING_MESSAGES, VIEWS  # noqa: F401  (re-exported)

PROCESS_QUEUE = Table(
    name="process_queue",
    description="One row per client x message queue it holds: the client's ProcessQueue.",
    source="GET_CONSUMER_RUNNING_INFO (307) mqTable + properties",
    key=("cluster", "group", "topic", "broker", "queue_id", "client_id"),
    columns=_common()
    + (
        Column("group", STRING, "consumer group"),
        Column("client_id", STRING, "client id, ip@instance"),
        Column("topic", STRING, "topic of the queue (may be %RETRY%<group>)"),
        Column("broker", STRING, "broker name that owns the queue"),
        Column("queue_id", INT32, "queue id on that broker"),
        Column("cached_msg_count", INT64, "messages pulled and not yet consumed", "messages"),
        Column("cached_msg_size_mib", INT64, "size of the cached messages (floor)", "MiB"),
        Column("cached_min_offset", INT64, "lowest cached offset (0 when the cache is empty)", "offset"),
        Column("cached_max_offset", INT64, "highest cached offset (0 when the cache is empty)", "offset"),
        Column("commit_offset", INT64, "client's in-memory committed offset", "offset"),
        Column("last_pull_ts", TIMESTAMP, "last pull of this queue", nullable=True),
        Column("last_consume_ts", TIMESTAMP, "last consumption from this queue", nullable=True),
        Column("locked", BOOL, "orderly lock held"),
        Column("dropped", BOOL, "ProcessQueue dropped (queue moved away)"),
        Column("try_unlock_times", INT64, "failed unlock attempts (orderly)"),
        Column("pull_threshold_for_queue", INT64, "client's effective pullThresholdForQueue", "messages"),
        Column("pull_threshold_size_mib", INT64, "client's pullThresholdSizeForQueue", "MiB"),
        Column("max_span", INT64, "client's consumeConcurrentlyMaxSpan", "offsets"),
        Column("consume_timeout_min", INT64, "client's consumeTimeout", "minutes"),
        Column("max_reconsume_times", INT64, "client's effective maxReconsumeTimes"),
        Column("orderly", BOOL, "client consumes orderly (PROP_CONSUMEORDERLY)"),
        Column(
            "since_consume_s",
            FLOAT64,
            "seconds from the last consumption of this queue to the sample",
            "s",
            nullable=True,
            derived="(ts - last_consume_ts) / 1000",
        ),
        Column(
            "span",
            INT64,
            "offsets between the lowest and highest cached message",
            "offsets",
            derived="cached_max_offset - cached_min_offset",
        ),
    ),
)

CONSUMER_QUEUE = Table(
    name="consumer_queue",
    description="One row per group x topic x broker x queue: the broker's view of consumption.",
    source="GET_CONSUME_STATS (208), QUERY_CONSUME_TIME_SPAN (303)",
    key=("cluster", "group", "topic", "broker", "queue_id"),
    columns=_common()
    + (
        Column("group", STRING, "consumer group"),
        Column("topic", STRING, "topic (normal or %RETRY%<group>)"),
        Column("broker", STRING, "broker name"),
        Column("queue_id", INT32, "queue id"),
        Column("broker_offset", INT64, "next offset the broker will write", "offset"),
        Column("consumer_offset", INT64, "committed offset (next to consume)", "offset"),
        Column("pull_offset", INT64, "last pull's next offset (5.1+)", "offset", nullable=True),
        Column("last_consumed_store_ts", TIMESTAMP, "store time of the last consumed message", nullable=True),
        Column("consume_delay_ms", INT64, "now - store time of the next message to consume", "ms", nullable=True),
        Column("topic_kind", STRING, "normal or retry"),
        Column("pop_mode", BOOL, "5.x: a client of the group pops (its running info has a mqPopTable): the broker "
               "moves the offset at the pop, no ProcessQueue holds it; null when not known", nullable=True),
        Column("lag", INT64, "messages not yet committed", "messages", derived="broker_offset - consumer_offset"),
        Column(
            "inflight",
            INT64,
            "pulled but not committed",
            "messages",
            derived="coalesce(pull_offset, consumer_offset) - consumer_offset",
        ),
        Column(
            "available",
            INT64,
            "written but not pulled",
            "messages",
            derived="broker_offset - coalesce(pull_offset, consumer_offset)",
        ),
    ),
)

CONSUMER_STATUS = Table(
    name="consumer_status",
    description="One row per client x topic: the client's own consumption statistics (1-minute windows).",
    source="GET_CONSUMER_RUNNING_INFO (307) statusTable",
    key=("cluster", "group", "topic", "client_id"),
    columns=_common()
    + (
        Column("group", STRING, "consumer group"),
        Column("client_id", STRING, "client id, ip@instance"),
        Column("topic", STRING, "subscribed topic (may be %RETRY%<group>)"),
        Column("pull_rt_ms", FLOAT64, "average pull round trip", "ms"),
        Column("pull_tps", FLOAT64, "messages pulled per second", "msg/s"),
        Column("consume_rt_ms", FLOAT64, "average time the listener took per message", "ms"),
        Column("consume_ok_tps", FLOAT64, "messages consumed successfully per second", "msg/s"),
        Column("consume_failed_tps", FLOAT64, "messages whose consumption failed per second", "msg/s"),
        Column("consume_failed_msgs_1h", INT64, "failed consumptions in the last hour", "messages"),
    ),
)

CONSUMER_CLIENT = Table(
    name="consumer_client",
    description="One row per online client of a group, as the broker sees its connections.",
    source="GET_CONSUMER_CONNECTION_LIST (203)",
    key=("cluster", "group", "client_id"),
    columns=_common()
    + (
        Column("group", STRING, "consumer group"),
        Column("client_id", STRING, "client id, ip@instance"),
        Column("client_addr", STRING, "client socket address ip:port"),
        Column("language", STRING, "client language, e.g. JAVA", nullable=True),
        Column("version", INT32, "client version ordinal (MQVersion)", nullable=True),
        Column("consume_type", STRING, "CONSUME_PASSIVELY (push), CONSUME_ACTIVELY (pull) or CONSUME_POP", nullable=True),
        Column("message_model", STRING, "CLUSTERING or BROADCASTING", nullable=True),
        Column("subscriptions", STRING, "subscribed topics and expressions, 'topic=expr;...' sorted", nullable=True),
    ),
)

TOPIC_QUEUE = Table(
    name="topic_queue",
    description="One row per topic x broker x queue (normal, %RETRY%, %DLQ% topics): what was written.",
    source="GET_TOPIC_STATS_INFO (202)",
    key=("cluster", "topic", "broker", "queue_id"),
    columns=_common()
    + (
        Column("topic", STRING, "topic name"),
        Column("topic_kind", STRING, "normal, retry, dlq or system"),
        Column("group", STRING, "the group a %RETRY%/%DLQ% topic belongs to", nullable=True),
        Column("broker", STRING, "broker name"),
        Column("queue_id", INT32, "queue id"),
        Column("min_offset", INT64, "lowest offset still stored", "offset", nullable=True),
        Column("max_offset", INT64, "next offset to write", "offset"),
        Column("last_update_ts", TIMESTAMP, "store time of the newest message", nullable=True),
        Column("messages", INT64, "messages stored", "messages", derived="max_offset - min_offset"),
    ),
)

BROKER = Table(
    name="broker",
    description="One row per broker address: the broker's runtime figures.",
    source="GET_BROKER_RUNTIME_INFO (28)",
    key=("cluster", "broker", "broker_id"),
    columns=_common()
    + (
        Column("broker", STRING, "broker name"),
        Column("broker_id", INT64, "0 for the master, >0 for slaves"),
        Column("addr", STRING, "broker address ip:port"),
        Column("version", STRING, "brokerVersionDesc, e.g. V4_9_7", nullable=True),
        Column("boot_ts", TIMESTAMP, "store start time", nullable=True),
        Column("commitlog_min_offset", INT64, "lowest commitlog byte offset", "bytes", nullable=True),
        Column("commitlog_max_offset", INT64, "next commitlog byte offset to write", "bytes", nullable=True),
        Column("replication_behind_bytes", INT64,
               "slaves only: the master's commitlog_max_offset minus this slave's, same cycle", "bytes", nullable=True),
        Column("dispatch_behind_bytes", INT64, "commitlog bytes not yet dispatched to consume queues", "bytes", nullable=True),
        Column("page_cache_lock_ms", INT64, "how long the commitlog put lock is held right now", "ms", nullable=True),
        Column("put_latency_le_0ms", INT64, "puts in the last minute taking <=0 ms", "puts", nullable=True),
        Column("put_latency_0_10ms", INT64, "puts in the last minute taking 0-10 ms", "puts", nullable=True),
        Column("put_latency_10_50ms", INT64, "puts in the last minute taking 10-50 ms", "puts", nullable=True),
        Column("put_latency_50_100ms", INT64, "puts in the last minute taking 50-100 ms", "puts", nullable=True),
        Column("put_latency_100_200ms", INT64, "puts in the last minute taking 100-200 ms", "puts", nullable=True),
        Column("put_latency_200_500ms", INT64, "puts in the last minute taking 200-500 ms", "puts", nullable=True),
        Column("put_latency_500ms_1s", INT64, "puts in the last minute taking 500 ms-1 s", "puts", nullable=True),
        Column("put_latency_1_2s", INT64, "puts in the last minute taking 1-2 s", "puts", nullable=True),
        Column("put_latency_2_3s", INT64, "puts in the last minute taking 2-3 s", "puts", nullable=True),
        Column("put_latency_3_4s", INT64, "puts in the last minute taking 3-4 s", "puts", nullable=True),
        Column("put_latency_4_5s", INT64, "puts in the last minute taking 4-5 s", "puts", nullable=True),
        Column("put_latency_5_10s", INT64, "puts in the last minute taking 5-10 s", "puts", nullable=True),
        Column("put_latency_ge_10s", INT64, "puts in the last minute taking 10 s or more", "puts", nullable=True),
        Column("put_slow_100ms", INT64, "puts in the last minute taking over 100 ms (sum of the buckets)", "puts", nullable=True),
        Column("put_p99_ms", FLOAT64, "99th percentile put latency (4.9.4+)", "ms", nullable=True),
        Column("put_p999_ms", FLOAT64, "99.9th percentile put latency (4.9.4+)", "ms", nullable=True),
        Column("put_max_ms", INT64, "max put latency since boot (never reset)", "ms", nullable=True),
        Column("put_tps", FLOAT64, "messages put per second over 10 s", "msg/s", nullable=True),
        Column("put_tps_1m", FLOAT64, "messages put per second over 60 s", "msg/s", nullable=True),
        Column("get_found_tps", FLOAT64, "messages found by pulls per second over 10 s", "msg/s", nullable=True),
        Column("get_miss_tps", FLOAT64, "pulls finding nothing per second over 10 s", "req/s", nullable=True),
        Column("get_transferred_tps", FLOAT64, "messages sent to consumers per second over 10 s", "msg/s", nullable=True),
        Column("put_failed_total", INT64, "failed puts since boot (4.9.3+)", "puts", nullable=True),
        Column("remain_transient_buffers", INT64, "free TransientStorePool buffers; null when the pool is not in use", nullable=True),
        Column("remain_to_commit_bytes", INT64, "bytes written to the pool but not yet committed (pool in use only)", "bytes", nullable=True),
        Column("remain_to_flush_bytes", INT64, "bytes not yet flushed to disk", "bytes", nullable=True),
        Column("commitlog_disk_ratio", FLOAT64, "used fraction of the commitlog partition", "ratio", nullable=True),
        Column("consume_queue_disk_ratio", FLOAT64, "used fraction of the consume queue partition", "ratio", nullable=True),
        Column("send_queue_size", INT64, "send requests queued in the broker", "requests", nullable=True),
        Column("send_queue_capacity", INT64, "send queue capacity", "requests", nullable=True),
        Column("send_queue_head_wait_ms", INT64, "age of the oldest queued send request", "ms", nullable=True),
        Column("pull_queue_size", INT64, "pull requests queued in the broker", "requests", nullable=True),
        Column("pull_queue_capacity", INT64, "pull queue capacity", "requests", nullable=True),
        Column("pull_queue_head_wait_ms", INT64, "age of the oldest queued pull request", "ms", nullable=True),
        Column("earliest_message_ts", TIMESTAMP, "store time of the oldest commitlog message", nullable=True),
        Column("schedule_backlog", INT64, "delay-level messages not yet delivered, all levels", "messages", nullable=True),
        Column("msg_put_today", INT64, "messages put since local midnight", "messages", nullable=True),
        Column("broker_active", BOOL, "5.x: acting as master (schedule/transaction services run)", nullable=True),
        # 5.x timer wheel (timerWheelEnable), "0" when it is off; read over remoting so the figures need no exporter.
        Column("timer_read_behind_s", INT64, "5.x timerReadBehind: how far the wheel's delivery trails the clock",
               "s", nullable=True),
        Column("timer_offset_behind", INT64, "5.x timerOffsetBehind: timer messages written, not yet in the wheel",
               "messages", nullable=True),
        Column("timer_congest_num", INT64, "5.x timerCongestNum: timer messages in the wheel, not yet delivered",
               "messages", nullable=True),
        Column("timer_enqueue_tps", FLOAT64, "5.x timerEnqueueTps: timer messages taken in per second", "msg/s",
               nullable=True),
        Column("timer_dequeue_tps", FLOAT64, "5.x timerDequeueTps: timer messages delivered per second", "msg/s",
               nullable=True),
    ),
)

THREAD_DUMP = Table(
    name="thread_dump",
    description="One row per thread of a client that has jstack enabled (jstackEnable=true).",
    source="GET_CONSUMER_RUNNING_INFO (307) jstack",
    key=("cluster", "group", "client_id", "thread"),
    columns=_common()
    + (
        Column("group", STRING, "consumer group"),
        Column("client_id", STRING, "client id, ip@instance"),
        Column("thread", STRING, "thread name, e.g. ConsumeMessageThread_3"),
        Column("state", STRING, "RUNNABLE, BLOCKED, WAITING, TIMED_WAITING, ..."),
        Column("top_frame", STRING, "the innermost stack frame", nullable=True),
        Column("stack_hash", STRING, "hash of the whole stack, to see a thread stuck in one place"),
    ),
)

LOG_EVENT = Table(
    name="log_event",
    description="One row per log line that means something: flow control, store stats, membership changes.",
    source="rocketmq_client.log, store.log, broker.log",
    key=("cluster", "host", "source", "event", "group", "topic", "broker", "queue_id", "client_id"),
    columns=_common()
    + (
        Column("host", STRING, "host or file the line came from"),
        Column("source", STRING, "client, store or broker"),
        Column("event", STRING, "what the line means: flow_control_count|size|span, rebalance_assigned, "
               "consumer_registered|unregistered|channel_removed, dlq_topic_created, dlq_moved, store_tps, "
               "put_latency, unclean_shutdown (daemon/collectors/logparse)"),
        Column("group", STRING, "consumer group", nullable=True),
        Column("topic", STRING, "topic", nullable=True),
        Column("broker", STRING, "broker name", nullable=True),
        Column("queue_id", INT32, "queue id", nullable=True),
        Column("client_id", STRING, "client id", nullable=True),
        Column("value", FLOAT64, "the number the line reports (span, count, ms...)", nullable=True),
        Column("detail", STRING, "the line itself, trimmed", nullable=True),
    ),
)

COLLECTOR_HEALTH = Table(
    name="collector_health",
    description="One row per call a collector made: whether the target answered.",
    source="every collector",
    key=("cluster", "target", "call"),
    columns=_common()
    + (
        Column("target", STRING, "address or name the call went to"),
        Column("call", STRING, "request name, e.g. GET_CONSUME_STATS"),
        Column("ok", BOOL, "the call succeeded"),
        Column("error", STRING, "what went wrong, for an operator", nullable=True),
        Column("latency_ms", FLOAT64, "time to answer or fail", "ms"),
        # Per target, so a rule tells a broker that answers nothing from one that fails one call.
        Column("target_ok_calls", INT64, "calls to the same target that succeeded in the same cycle", "calls",
               nullable=True),
        Column("target_failing", STRING, "the calls to the same target that failed in the same cycle, "
               "comma separated (null when none did)", nullable=True),
        # From the cluster info's brokerAddrTable, so a rule's alert about a broker address names the
        # broker the broker-side rules name (their causal links match on cluster + broker).
        Column("broker", STRING, "the broker at `target`, when the target is a broker; null for a name server, "
               "an exporter or a log", nullable=True),
        Column("broker_id", INT64, "that broker's id: 0 for the master, >0 for slaves; null when `broker` is",
               nullable=True),
    ),
)

# rocketwatch watching itself: written by the daemon before each evaluation, read by
# rules/builtin/rocketwatch-self.yaml, so a failing or lagging daemon alerts like a broker does.
SELF_CLUSTER = "rocketwatch"

DAEMON_HEALTH = Table(
    name="daemon_health",
    description=f"One row per evaluation cycle: rocketwatch's own health (cluster is always {SELF_CLUSTER!r}).",
    source="the daemon itself, before each evaluation",
    key=("cluster", "host"),
    columns=_common()
    + (
        Column("host", STRING, "host name the daemon runs on"),
        Column("evaluate_seconds", FLOAT64, "duration of the last completed evaluation", "s", nullable=True),
        Column("evaluate_interval_s", FLOAT64, "the configured evaluation interval", "s"),
        Column("evaluation_failures", INT64, "evaluations failed in a row up to this sample (0 once one succeeds)"),
        Column("last_cycle_age_s", FLOAT64, "seconds since the last completed evaluation cycle", "s", nullable=True),
        Column("outbox_depth", INT64, "notifications not yet delivered", "notifications"),
        Column("outbox_oldest_age_s", FLOAT64, "age of the oldest undelivered notification (0 when none)", "s"),
        Column("store_free_bytes", INT64, "free space on the sample store's file system", "bytes"),
        Column("store_free_ratio", FLOAT64, "free share of the sample store's file system, 0 to 1"),
        Column("held_notifications", INT64, "notifications held: queued while no coordinator answered, or unsent "
               "when this daemon lost the dispatch lease (sent or dropped once a coordinator answers)",
               "notifications"),
        Column("held_oldest_age_s", FLOAT64, "age of the oldest held notification (0 when none)", "s"),
        Column("ha_coordinator_up", INT64, "1 while the coordinator answers this daemon (always 1 without `ha:`, "
               "whose coordinator is the local state file), 0 while it does not"),
    ),
)

TABLES: dict[str, Table] = {
    t.name: t
    for t in (
        PROCESS_QUEUE,
        CONSUMER_QUEUE,
        CONSUMER_STATUS,
        CONSUMER_CLIENT,
        TOPIC_QUEUE,
        BROKER,
        THREAD_DUMP,
        LOG_EVENT,
        COLLECTOR_HEALTH,
        DAEMON_HEALTH,
        *NATIVE_TABLES,
        POP_QUEUE,
    )
}


def get_table(name: str) -> Table:
    """The table called `name`; KeyError lists the known ones."""
    try:
        return TABLES[name]
    except KeyError:
        raise KeyError(f"unknown table {name!r}; known tables: {', '.join(sorted(TABLES))}") from None
