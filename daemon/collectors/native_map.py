"""Read a 5.1+ broker's native `/metrics` page into the native_* tables (rules/tables_native.py).

The page is OpenTelemetry 1.29's Prometheus exporter as RocketMQ 5.3.3 configures it, with the
quirks the real capture shows (shared/fixtures/rocketmq-5.3.3/README.md):
- `# TYPE`/`# HELP` name the instrument without the unit suffix the samples carry
  (`# TYPE rocketmq_consumer_lag_latency gauge` then `rocketmq_consumer_lag_latency_milliseconds{...}`),
  so prometheus-client files those samples under families of their own: samples are read by
  *sample* name, never by family;
- every sample carries a millisecond timestamp (prometheus-client gives seconds);
- `target_info` and `otel_scope_info` lead the page; families rocketwatch does not read are
  counted (`unknown_families`) and ignored, so a newer broker's additions cost nothing.
"""

from __future__ import annotations

import math
import re
from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from prometheus_client.parser import text_string_to_metric_families

NATIVE_CONSUMER = "native_consumer"
NATIVE_TOPIC = "native_topic"
NATIVE_BROKER = "native_broker"
NATIVE_ROW_TABLES = (NATIVE_CONSUMER, NATIVE_TOPIC, NATIVE_BROKER)

# native_consumer column -> sample name (per consumer_group x topic x is_retry).
CONSUMER_GAUGES = {
    "lag": "rocketmq_consumer_lag_messages",
    "inflight": "rocketmq_consumer_inflight_messages",
    "ready": "rocketmq_consumer_ready_messages",
    "lag_latency_ms": "rocketmq_consumer_lag_latency_milliseconds",
    "queueing_latency_ms": "rocketmq_consumer_queueing_latency_milliseconds",
}
# Counters per consumer_group x topic, without is_retry on the page: summed into the is_retry=false row.
CONSUMER_COUNTERS = {
    "dlq_total": "rocketmq_send_to_dlq_messages_total",
    "revive_retry_total": "rocketmq_pop_revive_retry_messages_total",
}
TOPIC_SAMPLES = {
    "half_messages": "rocketmq_half_messages",
    "timing_messages": "rocketmq_timing_messages",
    "timer_enqueue_total": "rocketmq_timer_enqueue_total",
    "timer_dequeue_total": "rocketmq_timer_dequeue_total",
    "commit_total": "rocketmq_commit_messages_total",
    "rollback_total": "rocketmq_rollback_messages_total",
}
# native_broker column -> (sample name, how values of several series combine).
BROKER_SAMPLES = {
    "dispatch_behind_bytes": ("rocketmq_storage_dispatch_behind_bytes", max),
    "flush_behind_bytes": ("rocketmq_storage_flush_behind_bytes", max),
    "timer_enqueue_lag": ("rocketmq_timer_enqueue_lag", max),
    "timer_dequeue_lag": ("rocketmq_timer_dequeue_lag", max),
    "timer_enqueue_latency_ms": ("rocketmq_timer_enqueue_latency_milliseconds", max),
    "timer_dequeue_latency_ms": ("rocketmq_timer_dequeue_latency_milliseconds", max),
    # A count per revive queue, whatever the unit suffix says (the instrument has no unit; OTel adds it).
    "pop_revive_lag_max": ("rocketmq_pop_revive_lag_milliseconds", max),
    "pop_revive_latency_max_ms": ("rocketmq_pop_revive_latency_milliseconds", max),
    "permission": ("rocketmq_broker_permission", max),
    "topics": ("rocketmq_topic_number", max),
    "consumer_groups": ("rocketmq_consumer_group_number", max),
    "producer_connections": ("rocketmq_producer_connections", sum),
    "consumer_connections": ("rocketmq_consumer_connections", sum),
}
READ_NAMES = frozenset(
    [*CONSUMER_GAUGES.values(), *CONSUMER_COUNTERS.values(), *TOPIC_SAMPLES.values()]
    + [name for name, _ in BROKER_SAMPLES.values()]
)
_SAMPLE_NAME = re.compile(r"[a-zA-Z_:][a-zA-Z0-9_:]*")
# What OTel's exporter writes about itself: neither read nor unknown.
PREAMBLE = frozenset({"target_info", "otel_scope_info"})


def is_system_topic(topic: str) -> bool:
    """A topic the broker keeps for itself: timer and revive logs, transactions, delay levels."""
    return topic.lower().startswith("rmq_sys_") or topic in ("SCHEDULE_TOPIC_XXXX", "TBW102")


class NativePageError(ValueError):
    """The page is not Prometheus text, or holds nothing a RocketMQ broker writes."""


@dataclass(frozen=True)
class NativeSample:
    """One sample line: labels, value, and the broker's own timestamp (epoch ms, None when absent)."""

    labels: dict[str, str]
    value: float
    ts_ms: int | None


@dataclass(frozen=True)
class NativePage:
    """The samples rocketwatch reads, by sample name, and how many other sample names the page had."""

    samples: dict[str, list[NativeSample]]
    unknown_families: int
    newest_ms: int | None


def parse_native_page(text: str) -> NativePage:
    """The samples of a native page by sample name; NativePageError when it is not one."""
    # Most of a page is histogram buckets nobody reads: only the lines of read samples are parsed (the
    # sample name is what precedes `{` or the first space), the others are only counted.
    kept: list[str] = []
    unknown: set[str] = set()
    rocketmq = 0
    for line in text.splitlines():
        if not line or line.startswith("#"):
            continue
        name = _SAMPLE_NAME.match(line)
        sample = name.group(0) if name else ""
        rocketmq += sample.startswith("rocketmq_")
        if sample in READ_NAMES:
            kept.append(line)
        elif sample not in PREAMBLE:
            unknown.add(sample)
    try:
        families = list(text_string_to_metric_families("\n".join(kept) + "\n"))
    except Exception as exc:  # the parser raises ValueError, IndexError, ... on junk
        raise NativePageError(f"not Prometheus text format: {exc}") from None
    samples: dict[str, list[NativeSample]] = defaultdict(list)
    newest: int | None = None
    for family in families:
        for s in family.samples:
            ts_ms = round(s.timestamp * 1000) if s.timestamp is not None else None
            if ts_ms is not None:
                newest = ts_ms if newest is None else max(newest, ts_ms)
            if math.isfinite(s.value):
                samples[s.name].append(NativeSample(dict(s.labels), s.value, ts_ms))
    if not rocketmq:
        raise NativePageError("no rocketmq_* samples: is this a RocketMQ 5.1+ broker's metrics page "
                              "(metricsExporterType=PROM)?")
    return NativePage(dict(samples), len(unknown), newest)


def _int(value: float | None) -> int | None:
    return None if value is None else round(value)


def _flag(labels: dict[str, str], key: str) -> bool:
    return labels.get(key, "false").lower() == "true"


def native_rows(page: NativePage, cluster: str, target: str, now: datetime) -> dict[str, list[dict[str, Any]]]:
    """Rows per native table of one page scraped from `target` at `now`."""
    now = now.replace(tzinfo=UTC) if now.tzinfo is None else now.astimezone(UTC)
    base = {"ts": now, "cluster": cluster, "target": target}
    return {
        NATIVE_CONSUMER: _consumer_rows(page, base),
        NATIVE_TOPIC: _topic_rows(page, base),
        NATIVE_BROKER: _broker_rows(page, base, now),
    }


def _consumer_rows(page: NativePage, base: dict[str, Any]) -> list[dict[str, Any]]:
    rows: dict[tuple[str, str, str, bool], dict[str, Any]] = {}

    def row(labels: dict[str, str], is_retry: bool) -> dict[str, Any]:
        key = (labels.get("node_id", ""), labels.get("consumer_group", ""), labels.get("topic", ""), is_retry)
        if key not in rows:
            rows[key] = {**base, "broker": key[0], "group": key[1], "topic": key[2], "is_retry": is_retry,
                         "is_system": _flag(labels, "is_system"),
                         **dict.fromkeys(CONSUMER_GAUGES), **dict.fromkeys(CONSUMER_COUNTERS)}
        return rows[key]

    for column, name in CONSUMER_GAUGES.items():
        for s in page.samples.get(name, ()):
            row(s.labels, _flag(s.labels, "is_retry"))[column] = _int(s.value)
    for column, name in CONSUMER_COUNTERS.items():
        # The revive counter is split by put_status and by the topic the revived copy came from.
        for s in page.samples.get(name, ()):
            target = row(s.labels, s.labels.get("topic", "").startswith("%RETRY%"))
            target[column] = (target[column] or 0) + _int(s.value)
    return sorted(rows.values(), key=lambda r: (r["broker"], r["group"], r["topic"], r["is_retry"]))


def _topic_rows(page: NativePage, base: dict[str, Any]) -> list[dict[str, Any]]:
    rows: dict[tuple[str, str], dict[str, Any]] = {}
    for column, name in TOPIC_SAMPLES.items():
        for s in page.samples.get(name, ()):
            key = (s.labels.get("node_id", ""), s.labels.get("topic", ""))
            row = rows.setdefault(key, {**base, "broker": key[0], "topic": key[1], "is_system": is_system_topic(key[1]),
                                        **dict.fromkeys(TOPIC_SAMPLES)})
            row[column] = (row[column] or 0) + _int(s.value)
    return sorted(rows.values(), key=lambda r: (r["broker"], r["topic"]))


def _broker_rows(page: NativePage, base: dict[str, Any], now: datetime) -> list[dict[str, Any]]:
    by_broker: dict[str, dict[str, list[float]]] = defaultdict(lambda: defaultdict(list))
    for column, (name, _) in BROKER_SAMPLES.items():
        for s in page.samples.get(name, ()):
            by_broker[s.labels.get("node_id", "")][column].append(s.value)
    # A broker that has only consumer or topic series still gets its row (the page's health figures).
    for samples in page.samples.values():
        for s in samples:
            by_broker[s.labels.get("node_id", "")]
    age = None if page.newest_ms is None else (now.timestamp() * 1000 - page.newest_ms) / 1000.0
    return [
        {**base, "broker": broker,
         **{column: _combined(values.get(column), how) for column, (_, how) in BROKER_SAMPLES.items()},
         "sample_age_s": age, "unknown_families": page.unknown_families}
        for broker, values in sorted(by_broker.items())
    ]


def _combined(values: Iterable[float] | None, how: Any) -> int | None:
    values = list(values or ())
    return _int(how(values)) if values else None
