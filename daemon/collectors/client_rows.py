"""Rows of `consumer_status`, `consumer_client` and `topic_queue` from decoded remoting answers."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from daemon.collectors.remoting.bodies import ConsumerConnection, TopicStatsTable
from daemon.collectors.remoting.running_info import ConsumerRunningInfo
from daemon.collectors.timeconv import ms_to_datetime

RETRY_PREFIX = "%RETRY%"
DLQ_PREFIX = "%DLQ%"


def topic_kind(topic: str) -> tuple[str, str | None]:
    """(normal|retry|dlq, the group a retry/DLQ topic belongs to)."""
    if topic.startswith(RETRY_PREFIX):
        return "retry", topic[len(RETRY_PREFIX):]
    if topic.startswith(DLQ_PREFIX):
        return "dlq", topic[len(DLQ_PREFIX):]
    return "normal", None


def consumer_status_rows(
    cluster: str, now: datetime, group: str, client_id: str, info: ConsumerRunningInfo
) -> list[dict[str, Any]]:
    """One row per topic of the client's statusTable (its own 1-minute statistics)."""
    return [
        {
            "ts": now, "cluster": cluster, "group": group, "client_id": client_id, "topic": topic,
            "pull_rt_ms": s.pull_rt, "pull_tps": s.pull_tps, "consume_rt_ms": s.consume_rt,
            "consume_ok_tps": s.consume_ok_tps, "consume_failed_tps": s.consume_failed_tps,
            "consume_failed_msgs_1h": s.consume_failed_msgs,
        }
        for topic, s in sorted(info.status_table.items())
    ]


def consumer_client_rows(cluster: str, now: datetime, group: str, conn: ConsumerConnection) -> list[dict[str, Any]]:
    """One row per connected client of the group, with the group's subscriptions."""
    subscriptions = ";".join(
        f"{topic}={sub.sub_string or '*'}" for topic, sub in sorted(conn.subscriptions.items())
    )
    return [
        {
            "ts": now, "cluster": cluster, "group": group, "client_id": c.client_id, "client_addr": c.client_addr,
            "language": c.language or None, "version": c.version, "consume_type": conn.consume_type or None,
            "message_model": conn.message_model or None, "subscriptions": subscriptions,
        }
        for c in sorted(conn.connections, key=lambda c: c.client_id)
    ]


def topic_queue_rows(cluster: str, now: datetime, broker: str, topic: str, stats: TopicStatsTable) -> list[dict[str, Any]]:
    """One row per queue of `topic` on `broker` (the broker answers for its own queues only)."""
    kind, group = topic_kind(topic)
    return [
        {
            "ts": now, "cluster": cluster, "topic": mq.topic or topic, "topic_kind": kind, "group": group,
            "broker": mq.broker_name or broker, "queue_id": mq.queue_id, "min_offset": off.min_offset,
            "max_offset": off.max_offset,
            # 0 when the queue is empty or the newest message is gone.
            "last_update_ts": ms_to_datetime(off.last_update_timestamp),
        }
        for mq, off in sorted(stats.offsets.items())
    ]
