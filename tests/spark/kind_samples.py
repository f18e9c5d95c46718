"""Sample rows and rule text for the rule-kind tests (fixtures `write` and `evaluate` are in conftest)."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from typing import Any

NOW = datetime(2026, 11, 21, 12, 0, 0, tzinfo=UTC)
STALE = timedelta(seconds=60)
RUNBOOK = {"summary": "s {value}", "diagnosis": "d", "next_steps": "n"}


def at(seconds_ago: float) -> datetime:
    """The sample time `seconds_ago` before NOW."""
    return NOW - timedelta(seconds=seconds_ago)


def cq_row(ts: datetime, group: str, queue_id: int, *, broker_offset: int, consumer_offset: int,
           topic: str = "OrderTopic", **extra: Any) -> dict[str, Any]:
    """A consumer_queue row."""
    row = dict(ts=ts, cluster="c1", group=group, topic=topic, broker="broker-a", queue_id=queue_id,
               broker_offset=broker_offset, consumer_offset=consumer_offset,
               topic_kind="retry" if topic.startswith("%RETRY%") else "normal")
    row.update(extra)
    return row


def pq_row(ts: datetime, group: str, queue_id: int, client: str, **extra: Any) -> dict[str, Any]:
    """A process_queue row with a healthy empty cache unless `extra` says otherwise."""
    row = dict(ts=ts, cluster="c1", group=group, client_id=client, topic="OrderTopic", broker="broker-a",
               queue_id=queue_id, cached_msg_count=0, cached_msg_size_mib=0, cached_min_offset=0,
               cached_max_offset=0, commit_offset=0, last_pull_ts=ts, last_consume_ts=ts, locked=False,
               dropped=False, try_unlock_times=0, pull_threshold_for_queue=1000, pull_threshold_size_mib=100,
               max_span=2000, consume_timeout_min=15, max_reconsume_times=16, orderly=False)
    row.update(extra)
    return row


def tq_row(ts: datetime, topic: str, queue_id: int, max_offset: int, *, kind: str = "normal",
           group: str | None = None, broker: str = "broker-a", **extra: Any) -> dict[str, Any]:
    """A topic_queue row."""
    row = dict(ts=ts, cluster="c1", topic=topic, topic_kind=kind, group=group, broker=broker, queue_id=queue_id,
               min_offset=0, max_offset=max_offset)
    row.update(extra)
    return row


def rule_yaml(*rules: dict[str, Any]) -> str:
    """A rule file holding `rules` (each a dict of fields; the runbook text is filled in)."""
    body = [{**RUNBOOK, **r} for r in rules]
    return json.dumps({"groups": [{"name": "test", "rules": body}]})


def comparable(findings: list) -> list[tuple]:
    """Findings as sortable tuples (rule, labels, severity, value, threshold, no_data, annotations),
    to compare two evaluations."""
    return sorted((f.rule, sorted(f.labels.items()), f.severity, f.value, f.threshold, f.no_data,
                   sorted(f.annotations.items())) for f in findings)

