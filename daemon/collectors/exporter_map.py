"""Map a rocketmq-exporter `/metrics` page to rocketwatch's sample tables (ref §6, §7; DESIGN §4).

The exporter sums over queues: its offsets are per broker x topic (x group). They become rows
with `queue_id = -1`, meaning "all queues of this broker"; per-queue figures (pull offsets, last
consumed time, ProcessQueues) do not exist there. Every row carries the configured cluster name:
the exporter labels topic and group gauges with the first cluster it saw at startup, so one
exporter is one cluster. Two quirks of its cache shape what is trusted: a gauge disappears 60 s
after its last write, and labels outside a gauge's identity keep their first value (the
connected-client labels of `rocketmq_group_count`, `boottime`), so those labels are not read.
"""

from __future__ import annotations

from collections import defaultdict
from datetime import UTC, datetime
from typing import Any

from config.name_filter import is_system_group
from daemon.collectors.cluster import RETRY_PREFIX
from daemon.collectors.exporter_broker import broker_names, broker_rows
from daemon.collectors.exporter_parse import Sample, parse_exposition

ALL_QUEUES = -1
DLQ_PREFIX = "%DLQ%"

CONSUMER_QUEUE = "consumer_queue"
TOPIC_QUEUE = "topic_queue"
BROKER = "broker"
CONSUMER_STATUS = "consumer_status"
CONSUMER_CLIENT = "consumer_client"

GROUP_DIFF = "rocketmq_group_diff"
GROUP_RETRY_DIFF = "rocketmq_group_retrydiff"
GROUP_COUNT = "rocketmq_group_count"
PRODUCER_OFFSET = "rocketmq_producer_offset"
TOPIC_RETRY_OFFSET = "rocketmq_topic_retry_offset"
TOPIC_DLQ_OFFSET = "rocketmq_topic_dlq_offset"
CONSUMER_OFFSET = "rocketmq_consumer_offset"
GROUP_LATENCY = "rocketmq_group_get_latency_by_storetime"

# consumer_status column -> the exporter's copy of that ConsumerRunningInfo statusTable field.
CLIENT_GAUGES = {
    "pull_rt_ms": "rocketmq_client_consumer_pull_rt",
    "pull_tps": "rocketmq_client_consumer_pull_tps",
    "consume_rt_ms": "rocketmq_client_consume_rt",
    "consume_ok_tps": "rocketmq_client_consume_ok_msg_tps",
    "consume_failed_tps": "rocketmq_client_consume_fail_msg_tps",
    "consume_failed_msgs_1h": "rocketmq_client_consume_fail_msg_count",
}
MESSAGE_MODELS = {"0": "BROADCASTING", "1": "CLUSTERING"}  # MessageModel ordinals

# Topics RocketMQ creates for itself (ref §5.1); cluster and broker names are topics too.
SYSTEM_TOPICS = frozenset(
    {
        "TBW102",
        "SCHEDULE_TOPIC_XXXX",
        "RMQ_SYS_TRANS_HALF_TOPIC",
        "RMQ_SYS_TRANS_OP_HALF_TOPIC",
        "TRANS_CHECK_MAX_TIME_TOPIC",
        "RMQ_SYS_TRACE_TOPIC",
        "SELF_TEST_TOPIC",
        "OFFSET_MOVED_EVENT",
        "BenchmarkTest",
        "CHECKPOINT_TOPIC",
    }
)

BrokerTopic = tuple[str, str]
GroupTopic = tuple[str, str]


def exporter_rows(text: str, cluster: str, now: datetime) -> dict[str, list[dict[str, Any]]]:
    """Rows per table from one `/metrics` page; raises ExpositionError when the page is unusable."""
    now = now.replace(tzinfo=UTC) if now.tzinfo is None else now.astimezone(UTC)
    return rows_from_samples(parse_exposition(text), cluster, now)


def rows_from_samples(
    samples: dict[str, list[Sample]], cluster: str, now: datetime
) -> dict[str, list[dict[str, Any]]]:
    """Rows per table from parsed samples (see exporter_rows)."""
    clients = _online_clients(samples)
    return {
        CONSUMER_QUEUE: consumer_queue_rows(samples, cluster, now),
        TOPIC_QUEUE: topic_queue_rows(samples, cluster, now),
        BROKER: broker_rows(samples, cluster, now),
        CONSUMER_STATUS: consumer_status_rows(samples, clients, cluster, now),
        CONSUMER_CLIENT: consumer_client_rows(samples, clients, cluster, now),
    }


def _by_broker_topic(samples: list[Sample]) -> dict[BrokerTopic, float]:
    return {(s.labels["broker"], s.labels["topic"]): s.value for s in samples if _has(s, "broker", "topic")}


def _has(sample: Sample, *labels: str) -> bool:
    return all(sample.labels.get(name) for name in labels)


def _clustering_pairs(samples: dict[str, list[Sample]]) -> set[GroupTopic]:
    """(group, topic) pairs the exporter computed a diff for: it does so for CLUSTERING groups only."""
    return {
        (s.labels["group"], s.labels["topic"])
        for metric in (GROUP_DIFF, GROUP_RETRY_DIFF)
        for s in samples.get(metric, ())
        if _has(s, "group", "topic")
    }


def consumer_queue_rows(
    samples: dict[str, list[Sample]], cluster: str, now: datetime
) -> list[dict[str, Any]]:
    """One row per group x topic x broker (queue_id -1): summed broker and committed offsets, max delay."""
    normal = _by_broker_topic(samples.get(PRODUCER_OFFSET, []))
    retry = _by_broker_topic(samples.get(TOPIC_RETRY_OFFSET, []))
    clustering = _clustering_pairs(samples)
    delay = {
        (s.labels["group"], s.labels["broker"], s.labels["topic"]): s.value
        for s in samples.get(GROUP_LATENCY, ())
        if _has(s, "group", "broker", "topic")
    }
    rows = []
    for s in samples.get(CONSUMER_OFFSET, ()):
        if not _has(s, "group", "broker", "topic"):
            continue
        group, broker, topic = s.labels["group"], s.labels["broker"], s.labels["topic"]
        # Broadcasting groups keep offsets on the clients: the broker's numbers mean nothing (ref §7).
        if is_system_group(group) or (group, topic) not in clustering:
            continue
        is_retry = topic.startswith(RETRY_PREFIX)
        broker_offset = (retry if is_retry else normal).get((broker, topic))
        if broker_offset is None:
            # The topic's offsets expired from the exporter's cache or its stats call failed:
            # a lag computed against nothing would be a lie.
            continue
        latency = delay.get((group, broker, topic))
        rows.append(
            {
                "ts": now,
                "cluster": cluster,
                "group": group,
                "topic": topic,
                "broker": broker,
                "queue_id": ALL_QUEUES,
                "broker_offset": int(round(broker_offset)),
                "consumer_offset": int(round(s.value)),
                "pull_offset": None,
                "last_consumed_store_ts": None,
                # Max over the broker's queues of now - store time of the next message to consume;
                # 0 when caught up: the per-queue consume delay, aggregated like the offsets.
                "consume_delay_ms": None if latency is None else int(round(latency)),
                "topic_kind": "retry" if is_retry else "normal",
            }
        )
    return sorted(rows, key=lambda r: (r["group"], r["topic"], r["broker"]))


def topic_kind(topic: str, infrastructure_names: set[str]) -> str:
    """normal, retry, dlq or system (ref §5.1); cluster and broker names count as system topics."""
    if topic.startswith(RETRY_PREFIX):
        return "retry"
    if topic.startswith(DLQ_PREFIX):
        return "dlq"
    if (
        topic in SYSTEM_TOPICS
        or topic in infrastructure_names
        or topic.lower().startswith("rmq_sys_")
        or topic.endswith("_REPLY_TOPIC")
    ):
        return "system"
    return "normal"


def _infrastructure_names(samples: dict[str, list[Sample]], cluster: str) -> set[str]:
    names = {cluster}
    for metric_samples in samples.values():
        for s in metric_samples:
            names.update(v for k, v in s.labels.items() if k in ("cluster", "broker") and v)
    names.update(broker_names(samples).values())
    return names


def topic_queue_rows(samples: dict[str, list[Sample]], cluster: str, now: datetime) -> list[dict[str, Any]]:
    """One row per topic x broker (queue_id -1): the summed max offset of normal, %RETRY% and %DLQ% topics."""
    infra = _infrastructure_names(samples, cluster)
    found: list[tuple[str, str, float]] = []  # (topic, broker, max offset)
    for metric in (PRODUCER_OFFSET, TOPIC_RETRY_OFFSET):
        found += [
            (s.labels["topic"], s.labels["broker"], s.value)
            for s in samples.get(metric, ())
            if _has(s, "topic", "broker")
        ]
    # The DLQ gauge names the group, not the topic (`%DLQ%` stripped).
    found += [
        (DLQ_PREFIX + s.labels["group"], s.labels["broker"], s.value)
        for s in samples.get(TOPIC_DLQ_OFFSET, ())
        if _has(s, "group", "broker")
    ]
    rows = []
    for topic, broker, max_offset in sorted(found):
        kind = topic_kind(topic, infra)
        owner = (
            topic[len(RETRY_PREFIX) :]
            if kind == "retry"
            else topic[len(DLQ_PREFIX) :]
            if kind == "dlq"
            else None
        )
        rows.append(
            {
                "ts": now,
                "cluster": cluster,
                "topic": topic,
                "topic_kind": kind,
                "group": owner,
                "broker": broker,
                "queue_id": ALL_QUEUES,
                "min_offset": None,  # the exporter reports max offsets only
                "max_offset": int(round(max_offset)),
                "last_update_ts": None,
            }
        )
    return rows


def _online_clients(samples: dict[str, list[Sample]]) -> dict[tuple[str, str], str]:
    """(group, client id) -> client address of clients that answered running info, minus offline groups.

    The client gauges linger 60 s after a client leaves; `rocketmq_group_count` is rewritten every
    minute, so a group it counts 0 has no client online whatever gauges are left.
    """
    offline = {s.labels["group"] for s in samples.get(GROUP_COUNT, ()) if _has(s, "group") and s.value <= 0}
    clients: dict[tuple[str, str], str] = {}
    for metric in CLIENT_GAUGES.values():
        for s in samples.get(metric, ()):
            if not _has(s, "group", "clientId"):
                continue
            group = s.labels["group"]
            if group in offline or is_system_group(group):
                continue
            clients[(group, s.labels["clientId"])] = s.labels.get("clientAddr", "")
    return clients


def consumer_status_rows(
    samples: dict[str, list[Sample]], clients: dict[tuple[str, str], str], cluster: str, now: datetime
) -> list[dict[str, Any]]:
    """One row per online client x topic with all six statusTable figures."""
    values: dict[tuple[str, str, str], dict[str, float]] = defaultdict(dict)
    for column, metric in CLIENT_GAUGES.items():
        for s in samples.get(metric, ()):
            key = (s.labels.get("group", ""), s.labels.get("clientId", ""), s.labels.get("topic", ""))
            if (key[0], key[1]) in clients and key[2]:
                values[key][column] = s.value
    rows = []
    for (group, client_id, topic), figures in sorted(values.items()):
        # The six gauges are written together; a partial set is a scrape racing a write.
        if len(figures) < len(CLIENT_GAUGES):
            continue
        row: dict[str, Any] = {
            "ts": now,
            "cluster": cluster,
            "group": group,
            "client_id": client_id,
            "topic": topic,
        }
        row.update(figures)
        row["consume_failed_msgs_1h"] = int(round(figures["consume_failed_msgs_1h"]))
        rows.append(row)
    return rows


def consumer_client_rows(
    samples: dict[str, list[Sample]], clients: dict[tuple[str, str], str], cluster: str, now: datetime
) -> list[dict[str, Any]]:
    """One row per online client; language, version, consume type and subscriptions are not exported."""
    models = {
        s.labels["group"]: MESSAGE_MODELS.get(s.labels.get("msgModel", ""))
        for metric in (GROUP_DIFF, GROUP_RETRY_DIFF)
        for s in samples.get(metric, ())
        if _has(s, "group")
    }
    return [
        {
            "ts": now,
            "cluster": cluster,
            "group": group,
            "client_id": client_id,
            "client_addr": addr,
            "language": None,
            "version": None,
            "consume_type": None,
            "message_model": models.get(group),
            "subscriptions": None,
        }
        for (group, client_id), addr in sorted(clients.items())
    ]
