"""Rows of the client- and queue-level tables from decoded remoting answers (307, 208, 203, 202)."""

from __future__ import annotations

import hashlib
from collections.abc import Collection
from datetime import datetime
from typing import Any

from daemon.collectors.remoting._values import as_int
from daemon.collectors.remoting.bodies import ConsumerConnection, ConsumeStats, TopicStatsTable
from daemon.collectors.remoting.running_info import ConsumerRunningInfo, consumer_settings
from daemon.collectors.timeconv import ms_to_datetime

RETRY_PREFIX = "%RETRY%"
DLQ_PREFIX = "%DLQ%"


def topic_kind(topic: str, groups: Collection[str] = ()) -> tuple[str, str | None]:
    """(normal|retry|dlq, the group a retry/DLQ topic belongs to).

    A 5.x pop-mode group's retry topic is `%RETRY%<group>_<topic>` (V1) or `%RETRY%<group>+<topic>`
    (V2): with the known `groups` it is filed under its group, never under a group "<group>_<topic>".
    """
    if topic.startswith(RETRY_PREFIX):
        return "retry", retry_owner(topic[len(RETRY_PREFIX):], groups)
    if topic.startswith(DLQ_PREFIX):
        return "dlq", topic[len(DLQ_PREFIX):]
    return "normal", None


def retry_owner(name: str, groups: Collection[str]) -> str:
    """The group behind a retry topic's name (without %RETRY%): itself, or the known group of a pop retry topic."""
    if "+" in name:
        return name.split("+", 1)[0]
    if name in groups:
        return name
    owners = [g for g in groups if name.startswith(g + "_")]
    return max(owners, key=len) if owners else name


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


def topic_queue_rows(cluster: str, now: datetime, broker: str, topic: str, stats: TopicStatsTable,
                     groups: Collection[str] = ()) -> list[dict[str, Any]]:
    """One row per queue of `topic` on `broker` (the broker answers for its own queues only)."""
    kind, group = topic_kind(topic, groups)
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


# Java DefaultMQPushConsumer defaults for pop mode, used when a client does not report a property.
DEFAULT_POP_THRESHOLD_FOR_QUEUE = 96
DEFAULT_POP_INVISIBLE_TIME_MS = 60000
DEFAULT_POP_BATCH_NUMS = 32


def pop_queue_rows(
    cluster: str, now: datetime, group: str, client_id: str, info: ConsumerRunningInfo
) -> list[dict[str, Any]]:
    """`pop_queue` rows: one per mqPopTable entry of a pop-mode client, with its pop settings."""
    props = info.properties
    settings = consumer_settings(props)
    return [
        {
            "ts": now, "cluster": cluster, "group": group, "client_id": client_id, "topic": mq.topic,
            "broker": mq.broker_name, "queue_id": mq.queue_id, "wait_ack_count": pq.wait_ack_count,
            "last_pop_ts": ms_to_datetime(pq.last_pop_timestamp), "dropped": pq.dropped,
            "pop_threshold_for_queue": as_int(props.get("popThresholdForQueue"), DEFAULT_POP_THRESHOLD_FOR_QUEUE),
            "pop_invisible_time_ms": as_int(props.get("popInvisibleTime"), DEFAULT_POP_INVISIBLE_TIME_MS),
            "pop_batch_nums": as_int(props.get("popBatchNums"), DEFAULT_POP_BATCH_NUMS),
            "max_reconsume_times": settings.max_reconsume_times,
        }
        for mq, pq in sorted(info.mq_pop_table.items())
    ]


def mark_pop_groups(consumer_queue: list[dict[str, Any]], pop_queue: list[dict[str, Any]]) -> None:
    """Set `pop_mode` on every consumer_queue row: whether a client of its group reported a mqPopTable."""
    pop_groups = {r["group"] for r in pop_queue}
    for row in consumer_queue:
        row["pop_mode"] = row["group"] in pop_groups
