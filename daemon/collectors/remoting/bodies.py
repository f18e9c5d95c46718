"""Typed decoders for the fastjson response bodies the monitor reads (ref §3).

fastjson omits null values, so every key may be missing: numbers then read as 0 (or None where
the reference says a value is optional), strings as "", doubles as NaN. A `null` double (how
fastjson writes NaN/Infinity) also reads as NaN. Decoders raise BodyError on a wrong shape.
ConsumerRunningInfo (307) lives in running_info.py and is re-exported here.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from daemon.collectors.remoting._values import (
    BodyError,
    MessageQueue,
    SubscriptionData,
    as_bool,
    as_float,
    as_int,
    as_list,
    as_obj,
    as_str,
    message_queue,
    opt_int,
    root_object,
    subscription,
)
from daemon.collectors.remoting.running_info import (
    ConsumerRunningInfo,
    ConsumerSettings,
    ConsumeStatus,
    ProcessQueueInfo,
    consumer_settings,
    decode_consumer_running_info,
)

__all__ = [
    "BodyError",
    "BrokerData",
    "ClusterInfo",
    "Connection",
    "ConsumeStats",
    "ConsumeStatus",
    "ConsumerConnection",
    "ConsumerRunningInfo",
    "ConsumerSettings",
    "MessageQueue",
    "OffsetWrapper",
    "ProcessQueueInfo",
    "QueueData",
    "QueueTimeSpan",
    "SubscriptionData",
    "SubscriptionGroupConfig",
    "TopicOffset",
    "TopicRouteData",
    "TopicStatsTable",
    "consumer_settings",
    "decode_cluster_info",
    "decode_consume_stats",
    "decode_consume_time_span",
    "decode_consumer_connection",
    "decode_consumer_running_info",
    "decode_kv_table",
    "decode_subscription_groups",
    "decode_topic_route",
    "decode_topic_stats",
]

MASTER_ID = 0


# ---- 106 GET_BROKER_CLUSTER_INFO / 105 GET_ROUTEINFO_BY_TOPIC ----


@dataclass(frozen=True)
class BrokerData:
    """A broker name, its cluster, and its addresses by broker id (0 = master)."""

    broker_name: str
    cluster: str
    addrs: dict[int, str]

    @property
    def master_addr(self) -> str | None:
        """The master's address, or None when the master is down."""
        return self.addrs.get(MASTER_ID)


def _broker_data(raw: Any) -> BrokerData:
    raw = as_obj(raw, "BrokerData")
    # `{0:"…"}` (fastjson raw int key) and `{"0":"…"}` (namesrv ≥ V4_9_4 standard JSON) both occur.
    addrs = {as_int(k, -1): as_str(v) for k, v in as_obj(raw.get("brokerAddrs"), "brokerAddrs").items()}
    return BrokerData(as_str(raw.get("brokerName")), as_str(raw.get("cluster")), addrs)


@dataclass(frozen=True)
class ClusterInfo:
    """Brokers by name, and each cluster's broker names."""

    brokers: dict[str, BrokerData]
    clusters: dict[str, list[str]]


def decode_cluster_info(body: bytes | str) -> ClusterInfo:
    """ClusterInfo from a GET_BROKER_CLUSTER_INFO (106) body."""
    root = root_object(body, "ClusterInfo")
    brokers = {
        as_str(name): _broker_data(raw)
        for name, raw in as_obj(root.get("brokerAddrTable"), "brokerAddrTable").items()
    }
    clusters = {
        as_str(name): [as_str(b) for b in as_list(names, "clusterAddrTable entry")]
        for name, names in as_obj(root.get("clusterAddrTable"), "clusterAddrTable").items()
    }
    return ClusterInfo(brokers, clusters)


@dataclass(frozen=True)
class QueueData:
    """A topic's queues on one broker."""

    broker_name: str
    read_queue_nums: int
    write_queue_nums: int
    perm: int
    topic_sys_flag: int


@dataclass(frozen=True)
class TopicRouteData:
    """Which brokers serve a topic, and how many queues each has."""

    brokers: list[BrokerData]
    queues: list[QueueData]


def decode_topic_route(body: bytes | str) -> TopicRouteData:
    """TopicRouteData from a GET_ROUTEINFO_BY_TOPIC (105) body."""
    root = root_object(body, "TopicRouteData")
    brokers = [_broker_data(b) for b in as_list(root.get("brokerDatas"), "brokerDatas")]
    queues = [
        QueueData(
            as_str(q.get("brokerName")),
            as_int(q.get("readQueueNums")),
            as_int(q.get("writeQueueNums")),
            as_int(q.get("perm")),
            as_int(q.get("topicSysFlag")),
        )
        for q in (as_obj(raw, "QueueData") for raw in as_list(root.get("queueDatas"), "queueDatas"))
    ]
    return TopicRouteData(brokers, queues)


# ---- 206 GET_ALL_TOPIC_LIST_FROM_NAMESERVER ----


def decode_topic_list(body: bytes | str) -> list[str]:
    """Topic names of a TopicList (206) body, sorted; includes %RETRY%/%DLQ% and system topics."""
    root = root_object(body, "TopicList")
    return sorted(as_str(t) for t in as_list(root.get("topicList"), "topicList"))


# ---- 201 GET_ALL_SUBSCRIPTIONGROUP_CONFIG ----


@dataclass(frozen=True)
class SubscriptionGroupConfig:
    """A consumer group's broker-side configuration."""

    group_name: str
    consume_enable: bool
    consume_broadcast_enable: bool
    consume_message_orderly: bool
    retry_max_times: int
    retry_queue_nums: int
    broker_id: int


def decode_subscription_groups(body: bytes | str) -> dict[str, SubscriptionGroupConfig]:
    """Group name → config from a SubscriptionGroupWrapper (201) body."""
    root = root_object(body, "SubscriptionGroupWrapper")
    out: dict[str, SubscriptionGroupConfig] = {}
    for name, raw in as_obj(root.get("subscriptionGroupTable"), "subscriptionGroupTable").items():
        raw = as_obj(raw, "SubscriptionGroupConfig")
        out[as_str(name)] = SubscriptionGroupConfig(
            group_name=as_str(raw.get("groupName")) or as_str(name),
            consume_enable=as_bool(raw.get("consumeEnable", True)),
            consume_broadcast_enable=as_bool(raw.get("consumeBroadcastEnable", True)),
            consume_message_orderly=as_bool(raw.get("consumeMessageOrderly", False)),
            retry_max_times=as_int(raw.get("retryMaxTimes"), 16),
            retry_queue_nums=as_int(raw.get("retryQueueNums"), 1),
            broker_id=as_int(raw.get("brokerId")),
        )
    return out


# ---- 203 GET_CONSUMER_CONNECTION_LIST ----


@dataclass(frozen=True)
class Connection:
    """One connected client of a group, as the broker sees it."""

    client_id: str
    client_addr: str
    language: str
    version: int


@dataclass(frozen=True)
class ConsumerConnection:
    """A group's connected clients and its declared consumption mode."""

    connections: list[Connection]
    consume_type: str
    message_model: str
    consume_from_where: str
    subscriptions: dict[str, SubscriptionData]

    @property
    def client_ids(self) -> list[str]:
        """The connected clients' ids."""
        return [c.client_id for c in self.connections]


def decode_consumer_connection(body: bytes | str) -> ConsumerConnection:
    """ConsumerConnection from a GET_CONSUMER_CONNECTION_LIST (203) body."""
    root = root_object(body, "ConsumerConnection")
    conns = [
        Connection(
            as_str(c.get("clientId")),
            as_str(c.get("clientAddr")),
            as_str(c.get("language")),
            as_int(c.get("version")),
        )
        for c in (as_obj(raw, "Connection") for raw in as_list(root.get("connectionSet"), "connectionSet"))
    ]
    subs = {
        as_str(topic): subscription(raw)
        for topic, raw in as_obj(root.get("subscriptionTable"), "subscriptionTable").items()
    }
    return ConsumerConnection(
        conns,
        as_str(root.get("consumeType")),
        as_str(root.get("messageModel")),
        as_str(root.get("consumeFromWhere")),
        subs,
    )


# ---- 208 GET_CONSUME_STATS ----


@dataclass(frozen=True)
class OffsetWrapper:
    """Broker-side offsets of one queue for one group (ref §3.6)."""

    broker_offset: int
    consumer_offset: int
    last_timestamp: int
    pull_offset: int | None = None


@dataclass(frozen=True)
class ConsumeStats:
    """A group's offsets on one broker, and its pull TPS there."""

    consume_tps: float
    offsets: dict[MessageQueue, OffsetWrapper]

    @property
    def total_diff(self) -> int:
        """Σ (brokerOffset − consumerOffset): what mqadmin calls Diff Total."""
        return sum(o.broker_offset - o.consumer_offset for o in self.offsets.values())


def decode_consume_stats(body: bytes | str) -> ConsumeStats:
    """ConsumeStats from a GET_CONSUME_STATS (208) body."""
    root = root_object(body, "ConsumeStats")
    offsets: dict[MessageQueue, OffsetWrapper] = {}
    for key, raw in as_obj(root.get("offsetTable"), "offsetTable").items():
        raw = as_obj(raw, "OffsetWrapper")
        offsets[message_queue(key)] = OffsetWrapper(
            broker_offset=as_int(raw.get("brokerOffset")),
            consumer_offset=as_int(raw.get("consumerOffset")),
            last_timestamp=as_int(raw.get("lastTimestamp")),
            pull_offset=opt_int(raw.get("pullOffset")),
        )
    return ConsumeStats(as_float(root.get("consumeTps")), offsets)


# ---- 202 GET_TOPIC_STATS_INFO ----


@dataclass(frozen=True)
class TopicOffset:
    """Min/max logical offsets of one queue and when it was last written."""

    min_offset: int
    max_offset: int
    last_update_timestamp: int


@dataclass(frozen=True)
class TopicStatsTable:
    """A topic's queues on one broker; `topic_put_tps` only from 5.3.3 on."""

    offsets: dict[MessageQueue, TopicOffset]
    topic_put_tps: float | None = None


def decode_topic_stats(body: bytes | str) -> TopicStatsTable:
    """TopicStatsTable from a GET_TOPIC_STATS_INFO (202) body."""
    root = root_object(body, "TopicStatsTable")
    offsets = {
        message_queue(k): TopicOffset(
            as_int(v.get("minOffset")), as_int(v.get("maxOffset")), as_int(v.get("lastUpdateTimestamp"))
        )
        for k, v in (
            (k, as_obj(raw, "TopicOffset"))
            for k, raw in as_obj(root.get("offsetTable"), "offsetTable").items()
        )
    }
    tps = root.get("topicPutTps")
    return TopicStatsTable(offsets, None if "topicPutTps" not in root else as_float(tps))


# ---- 28 GET_BROKER_RUNTIME_INFO ----


def decode_kv_table(body: bytes | str) -> dict[str, str]:
    """The string map of a KVTable (28) body; values kept verbatim (some end in a space)."""
    root = root_object(body, "KVTable")
    return {as_str(k): as_str(v) for k, v in as_obj(root.get("table"), "table").items()}


# ---- 303 QUERY_CONSUME_TIME_SPAN ----


@dataclass(frozen=True)
class QueueTimeSpan:
    """Store times of a queue's first, last and next-to-consume messages, and the delay (ref §7)."""

    message_queue: MessageQueue
    min_timestamp: int
    max_timestamp: int
    consume_timestamp: int
    delay_time: int


def decode_consume_time_span(body: bytes | str) -> list[QueueTimeSpan]:
    """Per-queue time spans from a QueryConsumeTimeSpanBody (303)."""
    root = root_object(body, "QueryConsumeTimeSpanBody")
    return [
        QueueTimeSpan(
            message_queue(s.get("messageQueue")),
            as_int(s.get("minTimeStamp")),
            as_int(s.get("maxTimeStamp")),
            as_int(s.get("consumeTimeStamp")),
            as_int(s.get("delayTime")),
        )
        for s in (
            as_obj(raw, "QueueTimeSpan")
            for raw in as_list(root.get("consumeTimeSpanSet"), "consumeTimeSpanSet")
        )
    ]


# ---- 300 QUERY_TOPIC_CONSUME_BY_WHO ----


def decode_group_list(body: bytes | str) -> list[str]:
    """The group names of a GroupList (300) body: online subscribers and groups with stored offsets."""
    root = root_object(body, "GroupList")
    return sorted(as_str(g) for g in as_list(root.get("groupList"), "groupList"))
