"""The pop-mode consumers' table: a 5.x client in pop mode keeps PopProcessQueues, not ProcessQueues.

A remoting push consumer in pop mode is listed by its broker as CONSUME_PASSIVELY, like any push
consumer; what tells it apart is a non-empty `mqPopTable` in its running info (ref §3.7, §10).
"""

from __future__ import annotations

from rules.table_types import BOOL, FLOAT64, INT32, INT64, STRING, TIMESTAMP, Column, Table
from rules.table_types import common_columns as _common

POP_QUEUE = Table(
    name="pop_queue",
    description="One row per pop-mode client x queue it pops (queue_id -1: every queue of the topic): "
                "its PopProcessQueue and pop settings.",
    source="GET_CONSUMER_RUNNING_INFO (307) mqPopTable + properties",
    key=("cluster", "group", "topic", "broker", "queue_id", "client_id"),
    columns=_common()
    + (
        Column("group", STRING, "consumer group"),
        Column("client_id", STRING, "client id, ip@instance"),
        Column("topic", STRING, "topic popped"),
        Column("broker", STRING, "broker name"),
        Column("queue_id", INT32, "queue id; -1 when the client pops from every queue of the topic"),
        Column("wait_ack_count", INT64, "messages popped and not yet acknowledged (waitAckCount)", "messages"),
        Column("last_pop_ts", TIMESTAMP, "the client's last pop of this queue", nullable=True),
        Column("dropped", BOOL, "PopProcessQueue dropped (the queue moved away)"),
        Column("pop_threshold_for_queue", INT64, "client's popThresholdForQueue: above it the client stops popping",
               "messages"),
        Column("pop_invisible_time_ms", INT64, "client's popInvisibleTime: an unacknowledged message is revived "
               "(redelivered through %RETRY%<group>_<topic>) this long after its pop", "ms"),
        Column("pop_batch_nums", INT64, "client's popBatchNums: messages per pop", "messages"),
        Column("max_reconsume_times", INT64, "client's effective maxReconsumeTimes"),
        Column("since_pop_s", FLOAT64, "seconds from the last pop of this queue to the sample", "s", nullable=True,
               derived="(ts - last_pop_ts) / 1000"),
    ),
)
