"""Rows of the client- and queue-level tables from decoded remoting answers (307, 208, 203, 202)."""

from __future__ import annotations

import hashlib
from datetime import datetime
from typing import Any

from daemon.collectors.remoting.bodies import ConsumerConnection, ConsumeStats, TopicStatsTable
from daemon.collectors.remoting.running_info import ConsumerRunningInfo, consumer_settings
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


def process_queue_rows(
    cluster: str, now: datetime, group: str, client_id: str, info: ConsumerRunningInfo
) -> list[dict[str, Any]]:
    """`process_queue` rows: one per mqTable entry, with the client's effective settings."""
    settings = consumer_settings(info.properties)
    rows = []
    for mq, pq in sorted(info.mq_table.items()):
        rows.append(
            {
                "ts": now,
                "cluster": cluster,
                "group": group,
                "client_id": client_id,
                "topic": mq.topic,
                "broker": mq.broker_name,
                "queue_id": mq.queue_id,
                "cached_msg_count": pq.cached_msg_count,
                "cached_msg_size_mib": pq.cached_msg_size_mib,
                "cached_min_offset": pq.cached_msg_min_offset,
                "cached_max_offset": pq.cached_msg_max_offset,
                "commit_offset": pq.commit_offset,
                "last_pull_ts": ms_to_datetime(pq.last_pull_timestamp),
                "last_consume_ts": ms_to_datetime(pq.last_consume_timestamp),
                "locked": pq.locked,
                "dropped": pq.dropped,
                "try_unlock_times": pq.try_unlock_times,
                "pull_threshold_for_queue": settings.pull_threshold_for_queue,
                "pull_threshold_size_mib": settings.pull_threshold_size_mib,
                "max_span": settings.max_span,
                "consume_timeout_min": settings.consume_timeout_min,
                "max_reconsume_times": settings.max_reconsume_times,
                "orderly": settings.orderly,
            }
        )
    return rows


def consumer_queue_rows(cluster: str, now: datetime, group: str, stats: ConsumeStats) -> list[dict[str, Any]]:
    """`consumer_queue` rows: one per offsetTable entry of a GET_CONSUME_STATS answer."""
    rows = []
    for mq, off in sorted(stats.offsets.items()):
        rows.append(
            {
                "ts": now,
                "cluster": cluster,
                "group": group,
                "topic": mq.topic,
                "broker": mq.broker_name,
                "queue_id": mq.queue_id,
                "broker_offset": off.broker_offset,
                "consumer_offset": off.consumer_offset,
                "pull_offset": off.pull_offset,
                # lastTimestamp 0 = nothing consumed yet, or the message is gone (ref §3.6).
                "last_consumed_store_ts": ms_to_datetime(off.last_timestamp),
                "consume_delay_ms": None,
                "topic_kind": "retry" if mq.topic.startswith(RETRY_PREFIX) else "normal",
            }
        )
    return rows


def thread_dump_rows(cluster: str, now: datetime, group: str, client_id: str, jstack: str) -> list[dict[str, Any]]:
    """thread_dump rows from a client's running-info jstack text: state, top frame, stack hash per thread."""
    from daemon.collectors.threads import parse_any

    return [
        {
            "ts": now, "cluster": cluster, "group": group, "client_id": client_id, "thread": t.name,
            "state": t.state, "top_frame": t.frames[0] if t.frames else None,
            # Same stack in two dumps → same hash: the rules see a thread stuck in one place.
            "stack_hash": hashlib.sha1("\n".join(t.frames).encode()).hexdigest()[:16],
        }
        for t in parse_any(jstack).values()
    ]
