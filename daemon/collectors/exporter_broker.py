"""`broker` rows from the exporter's `rocketmq_brokeruntime_*` gauges (ref §3.8, §6).

The exporter reads GET_BROKER_RUNTIME_INFO of each **master** only and labels the gauges with
cluster, brokerIP (the master's address), brokerHost (""), des (brokerVersionDesc), boottime and
broker_version, but not the broker name: that comes from `rocketmq_broker_tps`/`_qps`, whose
brokerIP is the same master address. Only gauges whose meaning is exactly a column's are used.
"""

from __future__ import annotations

from collections import defaultdict
from datetime import datetime
from typing import Any

from daemon.collectors.exporter_parse import Sample
from daemon.collectors.timeconv import ms_to_datetime

RUNTIME_PREFIX = "rocketmq_brokeruntime_"
BROKER_NAME_SOURCES = ("rocketmq_broker_tps", "rocketmq_broker_qps")

# The exporter writes Integer.MAX_VALUE when the TransientStorePool is not in use (ref §3.8).
POOL_NOT_IN_USE = 2147483647

# The 13 PutMessageDistributeTime buckets of the last minute, in the broker's order.
PUT_LATENCY_BUCKETS = (
    ("put_latency_le_0ms", "pmdt_0ms"),
    ("put_latency_0_10ms", "pmdt_0to10ms"),
    ("put_latency_10_50ms", "pmdt_10to50ms"),
    ("put_latency_50_100ms", "pmdt_50to100ms"),
    ("put_latency_100_200ms", "pmdt_100to200ms"),
    ("put_latency_200_500ms", "pmdt_200to500ms"),
    ("put_latency_500ms_1s", "pmdt_500to1s"),
    ("put_latency_1_2s", "pmdt_1to2s"),
    ("put_latency_2_3s", "pmdt_2to3s"),
    ("put_latency_3_4s", "pmdt_3to4s"),
    ("put_latency_4_5s", "pmdt_4to5s"),
    ("put_latency_5_10s", "pmdt_5to10s"),
    ("put_latency_ge_10s", "pmdt_10stomore"),
)
SLOW_BUCKETS = tuple(column for column, _ in PUT_LATENCY_BUCKETS[4:])  # 100 ms and more

# column -> gauge suffix; integers (counts, bytes, ms).
INT_GAUGES = {
    **dict(PUT_LATENCY_BUCKETS),
    "commitlog_min_offset": "commitlog_minoffset",
    "commitlog_max_offset": "commitlog_maxoffset",
    "dispatch_behind_bytes": "dispatch_behind_bytes",
    "page_cache_lock_ms": "pagecache_lock_time_mills",
    "put_max_ms": "putmessage_entire_time_max",
    "send_queue_size": "send_threadpool_queue_size",
    "send_queue_capacity": "send_threadpoolqueue_capacity",
    "send_queue_head_wait_ms": "send_threadpoolqueue_headwait_timemills",
    "pull_queue_size": "pull_threadpoolqueue_size",
    "pull_queue_capacity": "pull_threadpoolqueue_capacity",
    "pull_queue_head_wait_ms": "pull_threadpoolqueue_headwait_timemills",
}
# column -> gauge suffix; the 10 s item of a TPS triple is what put_tps & co. mean.
FLOAT_GAUGES = {
    "put_tps": "put_tps10",
    "put_tps_1m": "put_tps60",
    "get_found_tps": "getfound_tps10",
    "get_miss_tps": "getmiss_tps10",
    "get_transferred_tps": "gettransfered_tps10",
}
# The exporter writes -1 for "unknown" here: putLatency99/999 absent before 4.9.4, disk ratio of
# a missing path. -1 is no latency or ratio, so it becomes null.
NON_NEGATIVE_FLOAT_GAUGES = {
    "put_p99_ms": "put_latency_99",
    "put_p999_ms": "put_latency_999",
    "commitlog_disk_ratio": "commitlog_disk_ratio",
    "consume_queue_disk_ratio": "consumequeue_disk_ratio",
}


def broker_names(samples: dict[str, list[Sample]]) -> dict[str, str]:
    """Master address -> broker name, from the gauges that carry both."""
    names: dict[str, str] = {}
    for metric in BROKER_NAME_SOURCES:
        for s in samples.get(metric, ()):
            addr, name = s.labels.get("brokerIP"), s.labels.get("broker")
            if addr and name:
                names[addr] = name
    return names


def broker_rows(samples: dict[str, list[Sample]], cluster: str, now: datetime) -> list[dict[str, Any]]:
    """One `broker` row per master address the runtime gauges describe."""
    gauges: dict[str, dict[str, float]] = defaultdict(dict)
    versions: dict[str, str] = {}
    for metric, metric_samples in samples.items():
        if not metric.startswith(RUNTIME_PREFIX):
            continue
        suffix = metric[len(RUNTIME_PREFIX) :]
        for s in metric_samples:
            addr = s.labels.get("brokerIP")
            if not addr:
                continue
            gauges[addr][suffix] = s.value
            if s.labels.get("des"):
                versions[addr] = s.labels["des"]
    names = broker_names(samples)
    # Without broker_tps/qps for an address (no put on that broker since its boot), its address
    # stands in for the name, so the row still carries the broker's store and queue figures.
    return [
        _broker_row(cluster, now, names.get(addr, addr), addr, versions.get(addr), gauges[addr])
        for addr in sorted(gauges)
    ]


def _broker_row(
    cluster: str, now: datetime, name: str, addr: str, version: str | None, g: dict[str, float]
) -> dict[str, Any]:
    row: dict[str, Any] = {
        "ts": now,
        "cluster": cluster,
        "broker": name,
        "broker_id": 0,  # the exporter reads masters only
        "addr": addr,
        # des is frozen at the first scrape of this address (the exporter's cache keeps the first
        # key), so it can lag an in-place upgrade by a restart; boottime is frozen the same way,
        # which is why boot_ts stays null: a restart would never show.
        "version": version,
    }
    for column, suffix in INT_GAUGES.items():
        row[column] = _int(g.get(suffix))
    for column, suffix in FLOAT_GAUGES.items():
        row[column] = g.get(suffix)
    for column, suffix in NON_NEGATIVE_FLOAT_GAUGES.items():
        value = g.get(suffix)
        row[column] = value if value is not None and value >= 0 else None
    buckets = [row[c] for c in SLOW_BUCKETS]
    row["put_slow_100ms"] = sum(buckets) if all(b is not None for b in buckets) else None
    pool = _int(g.get("remain_transientstore_buffer_numbs"))
    row["remain_transient_buffers"] = None if pool == POOL_NOT_IN_USE else pool
    row["earliest_message_ts"] = ms_to_datetime(_int(g.get("earliest_message_timestamp")))
    put_now, put_midnight = _int(g.get("msg_put_total_today_now")), _int(g.get("msg_puttotal_todaymorning"))
    row["msg_put_today"] = (
        put_now - put_midnight if put_now is not None and put_midnight is not None else None
    )
    # Not in the exporter, or not exactly: remainHowManyDataToFlush loses its unit there ("15.4 KiB"
    # becomes 15.4), failed puts, the commit backlog, schedule backlog and brokerActive are absent.
    for column in (
        "boot_ts",
        "remain_to_flush_bytes",
        "put_failed_total",
        "remain_to_commit_bytes",
        "schedule_backlog",
        "broker_active",
    ):
        row[column] = None
    return row


def _int(value: float | None) -> int | None:
    return None if value is None else int(round(value))
