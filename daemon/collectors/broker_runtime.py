"""GET_BROKER_RUNTIME_INFO (28) KVTable -> one typed `broker` row (ref §3.8).

Every value arrives as a string, some with a trailing space; keys differ between 4.9.x and 5.x
and some exist only in one of them, so every column is nullable and a missing or unreadable key
is null, never an error.
"""

from __future__ import annotations

import logging
import math
import re
from collections.abc import Mapping
from datetime import datetime
from typing import Any

from daemon.collectors.timeconv import ms_to_datetime

log = logging.getLogger(__name__)

# The 13 PutMessageDistributeTime buckets, in the broker's order, and their column names.
PUT_BUCKETS = (
    ("<=0ms", "put_latency_le_0ms"),
    ("0~10ms", "put_latency_0_10ms"),
    ("10~50ms", "put_latency_10_50ms"),
    ("50~100ms", "put_latency_50_100ms"),
    ("100~200ms", "put_latency_100_200ms"),
    ("200~500ms", "put_latency_200_500ms"),
    ("500ms~1s", "put_latency_500ms_1s"),
    ("1~2s", "put_latency_1_2s"),
    ("2~3s", "put_latency_2_3s"),
    ("3~4s", "put_latency_3_4s"),
    ("4~5s", "put_latency_4_5s"),
    ("5~10s", "put_latency_5_10s"),
    ("10s~", "put_latency_ge_10s"),
)
SLOW_FROM = 4  # buckets from 100~200ms on are "over 100 ms"
_BUCKET = re.compile(r"\[([^\]]+)\]:(\d+)")
_SIZE = re.compile(r"^\s*([0-9.]+)\s*([KMGTPE]?i?B)\s*$")
_UNITS = {"B": 1, "KiB": 1024, "MiB": 1024**2, "GiB": 1024**3, "TiB": 1024**4, "PiB": 1024**5, "EiB": 1024**6}
# remainTransientStoreBufferNumbs when the pool is not in use (Integer.MAX_VALUE).
POOL_NOT_IN_USE = 2147483647


def parse_int(text: str | None) -> int | None:
    """An integer value, or None for a missing, empty or non-numeric one."""
    if text is None:
        return None
    try:
        return int(text.strip())
    except ValueError:
        try:
            number = float(text.strip())
        except ValueError:
            return None
        return int(number) if math.isfinite(number) else None


def parse_float(text: str | None) -> float | None:
    """A float value, or None (also for NaN and infinities, which no rule can compare)."""
    if text is None:
        return None
    try:
        number = float(text.strip())
    except ValueError:
        return None
    return number if math.isfinite(number) else None


def parse_size(text: str | None) -> int | None:
    """Bytes from a human size such as `12.3 KiB` or `0 B` (UtilAll.humanReadableByteCount, binary units)."""
    if text is None:
        return None
    m = _SIZE.match(text)
    if m is None or m[2] not in _UNITS:
        return None
    return int(float(m[1]) * _UNITS[m[2]])


def parse_tps(text: str | None) -> tuple[float | None, float | None, float | None]:
    """The 10 s, 60 s and 600 s TPS of a `putTps`-style value; an empty item is None."""
    items = (text or "").split(" ")
    values = [parse_float(items[i]) if i < len(items) and items[i].strip() else None for i in range(3)]
    return values[0], values[1], values[2]


def parse_put_distribution(text: str | None) -> dict[str, int] | None:
    """The 13 buckets by column name; None when the broker has no completed minute yet (`null`)."""
    if text is None or text.strip() in ("", "null"):
        return None
    found = dict(_BUCKET.findall(text))
    if len(found) != len(PUT_BUCKETS):
        return None
    return {column: int(found[label]) for label, column in PUT_BUCKETS}


def schedule_backlog(kv: Mapping[str, str]) -> int | None:
    """Messages of every delay level not yet delivered: Σ (max - delivered) of scheduleMessageOffset_<level>."""
    total, seen = 0, False
    for key, value in kv.items():
        if not key.startswith("scheduleMessageOffset_"):
            continue
        delivered, _, maximum = value.partition(",")
        d, m = parse_int(delivered), parse_int(maximum)
        if d is not None and m is not None:
            total += max(0, m - d)
            seen = True
    return total if seen else None


def broker_row(
    cluster: str, now: datetime, broker: str, broker_id: int, addr: str, kv: Mapping[str, str]
) -> dict[str, Any]:
    """The `broker` row of one broker address from its runtime KVTable."""
    buckets = parse_put_distribution(kv.get("putMessageDistributeTime"))
    put_tps, put_tps_1m, _ = parse_tps(kv.get("putTps"))
    transferred = kv.get("getTransferredTps", kv.get("getTransferedTps"))  # 5.x / 4.x spelling
    remain_buffers = parse_int(kv.get("remainTransientStoreBufferNumbs"))
    today_now, today_morning = parse_int(kv.get("msgPutTotalTodayNow")), parse_int(kv.get("msgPutTotalTodayMorning"))
    active = kv.get("brokerActive")
    earliest = parse_int(kv.get("earliestMessageTimeStamp"))
    row: dict[str, Any] = {
        "ts": now,
        "cluster": cluster,
        "broker": broker,
        "broker_id": broker_id,
        "addr": addr,
        "version": (kv.get("brokerVersionDesc") or "").strip() or None,
        "boot_ts": ms_to_datetime(parse_int(kv.get("bootTimestamp"))),
        "commitlog_min_offset": parse_int(kv.get("commitLogMinOffset")),
        "commitlog_max_offset": parse_int(kv.get("commitLogMaxOffset")),
        "replication_behind_bytes": None,  # slaves: set once their master's row is in (fill_replication_behind)
        "dispatch_behind_bytes": parse_int(kv.get("dispatchBehindBytes")),
        "page_cache_lock_ms": parse_int(kv.get("pageCacheLockTimeMills")),
        **{column: (buckets or {}).get(column) for _, column in PUT_BUCKETS},
        "put_slow_100ms": sum(buckets[c] for _, c in PUT_BUCKETS[SLOW_FROM:]) if buckets else None,
        "put_p99_ms": parse_float(kv.get("putLatency99")),
        "put_p999_ms": parse_float(kv.get("putLatency999")),
        "put_max_ms": parse_int(kv.get("putMessageEntireTimeMax")),
        "put_tps": put_tps,
        "put_tps_1m": put_tps_1m,
        "get_found_tps": parse_tps(kv.get("getFoundTps"))[0],
        "get_miss_tps": parse_tps(kv.get("getMissTps"))[0],
        "get_transferred_tps": parse_tps(transferred)[0],
        "put_failed_total": parse_int(kv.get("putMessageFailedTimes")),
        "remain_transient_buffers": None if remain_buffers == POOL_NOT_IN_USE else remain_buffers,
        # Reported only while the pool is in use; absent otherwise.
        "remain_to_commit_bytes": parse_size(kv.get("remainHowManyDataToCommit")),
        "remain_to_flush_bytes": parse_size(kv.get("remainHowManyDataToFlush")),
        "commitlog_disk_ratio": _ratio(kv.get("commitLogDiskRatio")),
        "consume_queue_disk_ratio": _ratio(kv.get("consumeQueueDiskRatio")),
        "send_queue_size": parse_int(kv.get("sendThreadPoolQueueSize")),
        "send_queue_capacity": parse_int(kv.get("sendThreadPoolQueueCapacity")),
        "send_queue_head_wait_ms": parse_int(kv.get("sendThreadPoolQueueHeadWaitTimeMills")),
        "pull_queue_size": parse_int(kv.get("pullThreadPoolQueueSize")),
        "pull_queue_capacity": parse_int(kv.get("pullThreadPoolQueueCapacity")),
        "pull_queue_head_wait_ms": parse_int(kv.get("pullThreadPoolQueueHeadWaitTimeMills")),
        # -1 when the commitlog is empty.
        "earliest_message_ts": ms_to_datetime(earliest),
        "schedule_backlog": schedule_backlog(kv),
        "msg_put_today": today_now - today_morning if today_now is not None and today_morning is not None else None,
        "broker_active": None if active is None else active.strip().lower() == "true",
        "timer_read_behind_s": parse_int(kv.get("timerReadBehind")),
        "timer_offset_behind": parse_int(kv.get("timerOffsetBehind")),
        "timer_congest_num": parse_int(kv.get("timerCongestNum")),
        "timer_enqueue_tps": parse_float(kv.get("timerEnqueueTps")),
        "timer_dequeue_tps": parse_float(kv.get("timerDequeueTps")),
    }
    return row


def _ratio(text: str | None) -> float | None:
    # -1 means the path is missing: unknown, not an empty disk.
    value = parse_float(text)
    return None if value is None or value < 0 else value


def fill_replication_behind(rows: list[dict[str, Any]]) -> None:
    """Set replication_behind_bytes on every slave row: how far its commitlog trails its master's.

    Both offsets come from the same cycle, taken milliseconds apart, so a healthy slave under load
    trails by the bytes in flight; a slave that stopped replicating trails by everything written since.
    """
    masters = {(r["cluster"], r["broker"]): r.get("commitlog_max_offset") for r in rows if r["broker_id"] == 0}
    for row in rows:
        master = masters.get((row["cluster"], row["broker"]))
        if row["broker_id"] != 0 and master is not None and row.get("commitlog_max_offset") is not None:
            row["replication_behind_bytes"] = max(master - row["commitlog_max_offset"], 0)
