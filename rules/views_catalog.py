"""The views: derived tables for what needs a join or an aggregate across tables (DESIGN §4).

Declared here (columns, key, descriptions), computed by spark/views.py from the tables' windows.
"""

from __future__ import annotations

from rules.table_types import BOOL, FLOAT64, INT32, INT64, STRING, TIMESTAMP, Column, Table
from rules.table_types import common_columns as _common

# Views: derived tables for what needs a join or an aggregate across tables (DESIGN §4), computed
# by spark/views.py from the tables' windows. Rows of the tables are joined on `ts`: one collection
# cycle stamps every table it writes with the same ts.
LAGGING_MESSAGES = 1000  # a peer group counts as lagging in consumer_group above this lag

CONSUMER_GROUP = Table(
    name="consumer_group",
    description="One row per group x normal topic per cycle: the group's consumption of that topic, with its peers.",
    source="view of consumer_queue, consumer_client, consumer_status, topic_queue",
    key=("cluster", "group", "topic"),
    columns=_common()
    + (
        Column("group", STRING, "consumer group"),
        Column("topic", STRING, "normal topic the group consumes"),
        Column("queues", INT64, "queues of the topic the broker reports offsets for", "queues"),
        Column("lag", INT64, "messages not yet committed, all queues of the topic", "messages"),
        Column("available", INT64, "messages written but not yet pulled, all queues", "messages"),
        Column("max_consume_delay_ms", INT64, "worst queue: age of the next message to consume", "ms", nullable=True),
        Column("online_clients", INT64, "clients of the group connected to the brokers", "clients"),
        Column("consume_ok_tps", FLOAT64, "messages of the topic consumed per second, all clients", "msg/s"),
        Column("consume_failed_tps", FLOAT64, "failed consumptions per second, all clients", "msg/s"),
        Column("is_broadcast", BOOL, "a client of the group consumes BROADCASTING: broker-side lag means nothing"),
        Column("tag_filtered", BOOL, "a client subscribes the topic with an expression other than *: lag counts filtered-out messages"),
        Column("retry_lag", INT64, "messages waiting in the group's %RETRY% topic", "messages"),
        Column("dlq_total", INT64, "messages ever written to the group's %DLQ% topic (sum of max offsets)", "messages"),
        Column("retry_total", INT64, "messages ever written to the group's %RETRY% topic (sum of max offsets)", "messages"),
        Column("peer_groups", INT64, "other groups consuming the same topic", "groups"),
        Column("peer_groups_lagging", INT64, f"of those, groups with lag above {LAGGING_MESSAGES}", "groups"),
    ),
)

QUEUE_OWNER = Table(
    name="queue_owner",
    description="One row per group x queue per cycle: which clients hold the queue (should be exactly one).",
    source="view of process_queue",
    key=("cluster", "group", "topic", "broker", "queue_id"),
    columns=_common()
    + (
        Column("group", STRING, "consumer group"),
        Column("topic", STRING, "topic of the queue"),
        Column("broker", STRING, "broker name"),
        Column("queue_id", INT32, "queue id"),
        Column("owners", INT64, "distinct clients holding a non-dropped ProcessQueue for it", "clients"),
        Column("clients", STRING, "those clients' ids, sorted, comma separated"),
    ),
)

TOPIC_ACTIVITY = Table(
    name="topic_activity",
    description="One row per topic x broker per cycle: when the topic was last written vs the broker's put rate.",
    source="view of topic_queue, broker",
    key=("cluster", "topic", "broker"),
    columns=_common()
    + (
        Column("topic", STRING, "topic name"),
        Column("topic_kind", STRING, "normal, retry, dlq or system"),
        Column("broker", STRING, "broker name"),
        Column("max_offset_total", INT64, "sum of the queues' max offsets: messages ever written here", "messages"),
        Column("last_update_ts", TIMESTAMP, "store time of the newest message, all queues", nullable=True),
        Column("update_age_s", FLOAT64, "seconds from the newest message to the sample", "s", nullable=True),
        Column("broker_put_tps", FLOAT64, "the master broker's put rate over 10 s", "msg/s", nullable=True),
    ),
)

DLQ_QUEUE = Table(
    name="dlq_queue",
    description="One row per %DLQ% queue per cycle: the dead letters written, with the retry limit the group's "
                "clients run with.",
    source="view of topic_queue, process_queue",
    key=("cluster", "topic", "broker", "queue_id"),
    columns=_common()
    + (
        Column("topic", STRING, "the %DLQ%<group> topic"),
        Column("group", STRING, "the group it belongs to", nullable=True),
        Column("broker", STRING, "broker name"),
        Column("queue_id", INT32, "queue id"),
        Column("max_offset", INT64, "next offset to write: dead letters ever written to this queue", "messages"),
        Column("reporting_clients", INT64,
               "clients of the group whose running info listed a queue this cycle (0: none online, or running "
               "info not collected)", "clients"),
        # maxReconsumeTimes as the client applies it (the collector turns -1 into 16, or "unlimited" for
        # orderly clients): a dead letter is a message the client failed one time more than this.
        Column("max_reconsume_times", INT64,
               "the lowest effective maxReconsumeTimes those clients run with; null when none reported",
               nullable=True),
        Column("max_reconsume_times_highest", INT64,
               "the highest; differs from max_reconsume_times when the clients are configured differently",
               nullable=True),
        Column("orderly", BOOL, "one of those clients consumes orderly (it retries in place, not via %RETRY%)"),
    ),
)

VIEWS: dict[str, Table] = {t.name: t for t in (CONSUMER_GROUP, QUEUE_OWNER, TOPIC_ACTIVITY, DLQ_QUEUE)}
