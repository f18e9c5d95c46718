"""ConsumerRunningInfo (307): a client's report on itself, and the settings it actually runs with (ref §3.7, §4).

The body is produced by the *client* and relayed verbatim by the broker, so it follows the client
language's serializer: Java writes `droped`, Go `dropped`; MessageQueue keys come in any key order.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from daemon.collectors.remoting._values import (
    MessageQueue,
    SubscriptionData,
    as_bool,
    as_float,
    as_int,
    as_list,
    as_obj,
    as_str,
    message_queue,
    root_object,
    subscription,
)

# Java client defaults (ref §4), used when a client does not report a property.
DEFAULT_PULL_THRESHOLD_FOR_QUEUE = 1000
DEFAULT_PULL_THRESHOLD_SIZE_MIB = 100
DEFAULT_MAX_SPAN = 2000
DEFAULT_CONSUME_TIMEOUT_MIN = 15
# maxReconsumeTimes −1 means "default": 16 for concurrent consumers, Integer.MAX_VALUE for orderly ones.
CONCURRENT_MAX_RECONSUME = 16
ORDERLY_MAX_RECONSUME = 2147483647


@dataclass(frozen=True)
class ProcessQueueInfo:
    """A client's ProcessQueue for one queue (ref §3.7)."""

    commit_offset: int
    cached_msg_min_offset: int
    cached_msg_max_offset: int
    cached_msg_count: int
    cached_msg_size_mib: int
    transaction_msg_min_offset: int
    transaction_msg_max_offset: int
    transaction_msg_count: int
    locked: bool
    try_unlock_times: int
    last_lock_timestamp: int
    dropped: bool
    last_pull_timestamp: int
    last_consume_timestamp: int


def _process_queue(raw: Any) -> ProcessQueueInfo:
    raw = as_obj(raw, "ProcessQueueInfo")
    # Java's getter isDroped() yields "droped"; the Go client writes "dropped".
    dropped = raw.get("droped", raw.get("dropped", False))
    return ProcessQueueInfo(
        commit_offset=as_int(raw.get("commitOffset")),
        cached_msg_min_offset=as_int(raw.get("cachedMsgMinOffset")),
        cached_msg_max_offset=as_int(raw.get("cachedMsgMaxOffset")),
        cached_msg_count=as_int(raw.get("cachedMsgCount")),
        cached_msg_size_mib=as_int(raw.get("cachedMsgSizeInMiB")),
        transaction_msg_min_offset=as_int(raw.get("transactionMsgMinOffset")),
        transaction_msg_max_offset=as_int(raw.get("transactionMsgMaxOffset")),
        transaction_msg_count=as_int(raw.get("transactionMsgCount")),
        locked=as_bool(raw.get("locked", False)),
        try_unlock_times=as_int(raw.get("tryUnlockTimes")),
        last_lock_timestamp=as_int(raw.get("lastLockTimestamp")),
        dropped=as_bool(dropped),
        last_pull_timestamp=as_int(raw.get("lastPullTimestamp")),
        last_consume_timestamp=as_int(raw.get("lastConsumeTimestamp")),
    )


@dataclass(frozen=True)
class PopProcessQueueInfo:
    """A 5.x pop-mode client's PopProcessQueue for one queue (queue id -1: popped from every queue)."""

    wait_ack_count: int
    last_pop_timestamp: int
    dropped: bool


def _pop_process_queue(raw: Any) -> PopProcessQueueInfo:
    raw = as_obj(raw, "PopProcessQueueInfo")
    return PopProcessQueueInfo(
        wait_ack_count=as_int(raw.get("waitAckCount")),
        last_pop_timestamp=as_int(raw.get("lastPopTimestamp")),
        dropped=as_bool(raw.get("droped", raw.get("dropped", False))),
    )


@dataclass(frozen=True)
class ConsumeStatus:
    """A client's consumption statistics for one topic (1-minute windows)."""

    pull_rt: float
    pull_tps: float
    consume_rt: float
    consume_ok_tps: float
    consume_failed_tps: float
    consume_failed_msgs: int


def _consume_status(raw: Any) -> ConsumeStatus:
    raw = as_obj(raw, "ConsumeStatus")
    return ConsumeStatus(
        pull_rt=as_float(raw.get("pullRT")),
        pull_tps=as_float(raw.get("pullTPS")),
        consume_rt=as_float(raw.get("consumeRT")),
        consume_ok_tps=as_float(raw.get("consumeOKTPS")),
        consume_failed_tps=as_float(raw.get("consumeFailedTPS")),
        consume_failed_msgs=as_int(raw.get("consumeFailedMsgs")),
    )


@dataclass(frozen=True)
class ConsumerRunningInfo:
    """What a client reports about itself: settings, ProcessQueues, statistics, optional jstack."""

    properties: dict[str, str]
    mq_table: dict[MessageQueue, ProcessQueueInfo]
    status_table: dict[str, ConsumeStatus]
    subscriptions: list[SubscriptionData] = field(default_factory=list)
    jstack: str | None = None
    # 5.x: a client in pop mode keeps a PopProcessQueue per queue it pops instead of a ProcessQueue.
    mq_pop_table: dict[MessageQueue, PopProcessQueueInfo] = field(default_factory=dict)


def decode_consumer_running_info(body: bytes | str) -> ConsumerRunningInfo:
    """ConsumerRunningInfo from a GET_CONSUMER_RUNNING_INFO (307) body."""
    root = root_object(body, "ConsumerRunningInfo")
    props = {as_str(k): as_str(v) for k, v in as_obj(root.get("properties"), "properties").items()}
    mq_table = {
        message_queue(k): _process_queue(v) for k, v in as_obj(root.get("mqTable"), "mqTable").items()
    }
    status = {
        as_str(t): _consume_status(raw) for t, raw in as_obj(root.get("statusTable"), "statusTable").items()
    }
    subs = [subscription(s) for s in as_list(root.get("subscriptionSet"), "subscriptionSet")]
    jstack = root.get("jstack")
    pop_table = {
        message_queue(k): _pop_process_queue(v) for k, v in as_obj(root.get("mqPopTable"), "mqPopTable").items()
    }
    return ConsumerRunningInfo(props, mq_table, status, subs, None if jstack is None else as_str(jstack), pop_table)


@dataclass(frozen=True)
class ConsumerSettings:
    """The flow-control and retry settings a client runs with, defaults filled in."""

    pull_threshold_for_queue: int
    pull_threshold_size_mib: int
    max_span: int
    consume_timeout_min: int
    max_reconsume_times: int
    orderly: bool


def consumer_settings(properties: Mapping[str, str]) -> ConsumerSettings:
    """Effective settings from a running info's `properties`, Java defaults where absent."""
    orderly = as_bool(properties.get("PROP_CONSUMEORDERLY", "false"))
    max_reconsume = as_int(properties.get("maxReconsumeTimes"), -1)
    if max_reconsume == -1:
        max_reconsume = ORDERLY_MAX_RECONSUME if orderly else CONCURRENT_MAX_RECONSUME
    return ConsumerSettings(
        # The reported pullThresholdForQueue is already the per-queue value after any topic-level split.
        pull_threshold_for_queue=as_int(
            properties.get("pullThresholdForQueue"), DEFAULT_PULL_THRESHOLD_FOR_QUEUE
        ),
        pull_threshold_size_mib=as_int(
            properties.get("pullThresholdSizeForQueue"), DEFAULT_PULL_THRESHOLD_SIZE_MIB
        ),
        max_span=as_int(properties.get("consumeConcurrentlyMaxSpan"), DEFAULT_MAX_SPAN),
        consume_timeout_min=as_int(properties.get("consumeTimeout"), DEFAULT_CONSUME_TIMEOUT_MIN),
        max_reconsume_times=max_reconsume,
        orderly=orderly,
    )
