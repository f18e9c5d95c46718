"""Per-queue evidence and peers from the samples: the numbers an expert lines up by hand.

One row per queue of the group's normal topics (broker offset, committed, pulled, lag, delay,
the owner's cache vs its limits) with anomalies marked, compared across the samples where it
matters (a committed offset that never moves while messages wait).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from daemon.collectors.group_sample import Sample
from rules.tables import LAGGING_MESSAGES

BLOCKED_AFTER_S = 60  # the client's own check: cached messages and no consume for 60 s (ref §3.7)
IN_FLIGHT_SLACK = 100  # messages between the broker and the client: a pull batch or two in transit

# Marks, as printed and as the json carries them.
SPAN = "SPAN"  # span above consumeConcurrentlyMaxSpan: the client stopped pulling this queue
COUNT = "COUNT"  # cached count above pullThresholdForQueue
SIZE = "SIZE"  # cached size above pullThresholdSizeForQueue
BLOCKED = "BLOCKED"  # cached messages and nothing consumed for a minute
FROZEN = "FROZEN"  # committed offset did not move across the samples while messages wait
LAG = "LAG"  # backlog beyond what is in flight, and not shrinking
CONSUMER_MARKS = (SPAN, COUNT, SIZE, BLOCKED, FROZEN)


@dataclass
class QueueEvidence:
    """One queue of the group at the last sample, with what the samples showed."""

    topic: str
    broker: str
    queue_id: int
    broker_offset: int
    committed: int
    pulled: int | None  # the broker's pull offset (5.x); 4.x brokers do not report it
    lag: int
    delay_ms: int | None
    owner: str | None = None
    cached_count: int | None = None
    cached_span: int | None = None
    cached_size_mib: int | None = None
    cached_min_offset: int | None = None
    limit_count: int | None = None
    limit_span: int | None = None
    limit_size_mib: int | None = None
    pulled_at_least: int | None = None  # without `pulled`: the client pulled at least this far
    backlog: int = 0  # messages the client has not yet finished: broker offset - its freshest commit
    backlog_first: int = 0
    marks: list[str] = field(default_factory=list)

    @property
    def key(self) -> str:
        """topic/broker/queue as an operator writes it."""
        return f"{self.topic}/{self.broker}/{self.queue_id}"

    def as_json(self) -> dict[str, Any]:
        """A JSON-ready dict."""
        out = {k: v for k, v in self.__dict__.items() if k != "backlog_first"}
        out["queue"] = self.key
        return out


@dataclass
class Peer:
    """Another group consuming the same topic(s)."""

    group: str
    online_clients: int
    lag: int
    lagging: bool

    def as_json(self) -> dict[str, Any]:
        """A JSON-ready dict."""
        return dict(self.__dict__)


def _queue_key(row: dict[str, Any]) -> tuple[str, str, int]:
    return row["topic"], row["broker"], row["queue_id"]


def _own_queues(sample: Sample, group: str) -> dict[tuple[str, str, int], dict[str, Any]]:
    return {_queue_key(r): r for r in sample.rows["consumer_queue"]
            if r["group"] == group and r["topic_kind"] == "normal"}


def _held(sample: Sample) -> dict[tuple[str, str, int], dict[str, Any]]:
    """The ProcessQueue of each queue held by a client (a dropped one has moved on)."""
    held: dict[tuple[str, str, int], dict[str, Any]] = {}
    for row in sample.rows["process_queue"]:
        if not row["dropped"]:
            held[_queue_key(row)] = row
    return held


def queue_evidence(samples: Sequence[Sample], group: str) -> list[QueueEvidence]:
    """Evidence per queue of the group's normal topics, marked (see the marks above)."""
    last, first = samples[-1], samples[0]
    first_rows = _own_queues(first, group)
    committed_seen: dict[tuple[str, str, int], set[int]] = {}
    min_seen: dict[tuple[str, str, int], set[int]] = {}
    for s in samples:
        for key, row in _own_queues(s, group).items():
            committed_seen.setdefault(key, set()).add(row["consumer_offset"])
        for key, pq in _held(s).items():
            if pq["cached_msg_count"] > 0:
                min_seen.setdefault(key, set()).add(pq["cached_min_offset"])
    first_held = _held(first)
    held = _held(last)
    out = []
    for key, row in sorted(_own_queues(last, group).items()):
        lag = max(0, row["broker_offset"] - row["consumer_offset"])
        pq = held.get(key)
        ev = QueueEvidence(
            topic=key[0], broker=key[1], queue_id=key[2], broker_offset=row["broker_offset"],
            committed=row["consumer_offset"], pulled=row.get("pull_offset"), lag=lag,
            delay_ms=row.get("consume_delay_ms"), backlog=_backlog(row, pq),
            backlog_first=_backlog(first_rows[key], first_held.get(key)) if key in first_rows else 0,
        )
        if pq is not None:
            _add_cache(ev, pq, last.ts)
        _mark_progress(ev, len(samples), committed_seen.get(key, set()), min_seen.get(key, set()))
        out.append(ev)
    return out


def _backlog(row: dict[str, Any], pq: dict[str, Any] | None) -> int:
    """Broker offset minus the freshest committed offset: the client's own (it reaches the broker
    only every 5 s, ref §7), else the broker's."""
    committed = row["consumer_offset"]
    if pq is not None:
        committed = max(committed, pq["commit_offset"])
    return max(0, row["broker_offset"] - committed)


def _add_cache(ev: QueueEvidence, pq: dict[str, Any], now: datetime) -> None:
    count = pq["cached_msg_count"]
    ev.owner = pq["client_id"]
    ev.cached_count, ev.cached_size_mib = count, pq["cached_msg_size_mib"]
    ev.cached_span = pq["cached_max_offset"] - pq["cached_min_offset"] if count > 0 else 0
    ev.cached_min_offset = pq["cached_min_offset"] if count > 0 else None
    ev.limit_count, ev.limit_span = pq["pull_threshold_for_queue"], pq["max_span"]
    ev.limit_size_mib = pq["pull_threshold_size_mib"]
    if ev.pulled is None:
        # 4.x brokers report no pullOffset. The client's newest cached offset + 1 is only a floor: the
        # messages it pulled after that and consumed already left the cache (one stuck message in a
        # drained queue: cached up to 49, pulled past 449).
        ev.pulled_at_least = pq["cached_max_offset"] + 1 if count > 0 else pq["commit_offset"]
    if count > 0 and not pq["orderly"] and ev.limit_span is not None and ev.cached_span > ev.limit_span:
        ev.marks.append(SPAN)
    if ev.limit_count is not None and count > ev.limit_count:
        ev.marks.append(COUNT)
    if ev.limit_size_mib is not None and ev.cached_size_mib > ev.limit_size_mib:
        ev.marks.append(SIZE)
    last_consume = pq["last_consume_ts"]
    if count > 0 and (last_consume is None or (now - last_consume).total_seconds() > BLOCKED_AFTER_S):
        ev.marks.append(BLOCKED)


def _mark_progress(ev: QueueEvidence, samples: int, committed: set[int], cached_min: set[int]) -> None:
    in_flight = (ev.cached_count or 0) + IN_FLIGHT_SLACK
    waiting = ev.backlog > in_flight
    frozen = samples >= 2 and len(committed) == 1 and len(cached_min) == 1
    if frozen and waiting and (ev.cached_count or 0) > 0:
        ev.marks.append(FROZEN)
    # More waiting than in flight, and not shrinking: the client is not catching up.
    if waiting and (samples < 2 or ev.backlog >= ev.backlog_first or frozen):
        ev.marks.append(LAG)


def peers(samples: Sequence[Sample], group: str) -> list[Peer]:
    """The other groups on the group's topics at the last sample, with their lag."""
    last = samples[-1]
    lag: dict[str, int] = {}
    for row in last.rows["consumer_queue"]:
        if row["group"] != group and row["topic_kind"] == "normal":
            lag[row["group"]] = lag.get(row["group"], 0) + max(0, row["broker_offset"] - row["consumer_offset"])
    out = []
    for name in sorted(last.peers):
        conn = last.peer_connections.get(name)
        online = len(conn.connections) if conn is not None else 0
        out.append(Peer(name, online, lag.get(name, 0), lag.get(name, 0) > LAGGING_MESSAGES))
    return out


def dlq_growth(samples: Sequence[Sample], group: str) -> int:
    """Messages that reached %DLQ%<group> between the first and the last sample."""
    def total(s: Sample) -> int:
        return sum(r["max_offset"] for r in s.rows["topic_queue"] if r["topic_kind"] == "dlq" and r["group"] == group)
    return total(samples[-1]) - total(samples[0])


def client_status(sample: Sample, group: str) -> list[dict[str, Any]]:
    """Per online client of the group: its own 1-minute statistics summed over topics, and queues held."""
    held: dict[str, int] = {}
    for row in sample.rows["process_queue"]:
        if row["group"] == group and not row["dropped"]:
            held[row["client_id"]] = held.get(row["client_id"], 0) + 1
    out: dict[str, dict[str, Any]] = {}
    for row in sample.rows["consumer_status"]:
        if row["group"] != group:
            continue
        c = out.setdefault(row["client_id"], {"client_id": row["client_id"], "queues": held.get(row["client_id"], 0),
                                              "consume_ok_tps": 0.0, "consume_failed_tps": 0.0,
                                              "consume_rt_ms": 0.0, "pull_tps": 0.0})
        for key in ("consume_ok_tps", "consume_failed_tps", "pull_tps"):
            c[key] += row[key] or 0.0
        c["consume_rt_ms"] = max(c["consume_rt_ms"], row["consume_rt_ms"] or 0.0)
    return [out[k] for k in sorted(out)]


def broker_status(sample: Sample) -> list[dict[str, Any]]:
    """Per broker address the group reads from: the runtime figures the broker-side rules judge."""
    keys = ("broker", "broker_id", "addr", "version", "put_tps", "put_p99_ms", "dispatch_behind_bytes",
            "page_cache_lock_ms")
    return [{k: row.get(k) for k in keys} for row in sorted(sample.rows["broker"], key=lambda r: (r["broker"], r["broker_id"]))]


def retry_dlq(sample: Sample, group: str) -> tuple[int, int]:
    """(lag on %RETRY%<group>, messages ever written to %DLQ%<group>) at one sample."""
    retry = sum(max(0, r["broker_offset"] - r["consumer_offset"]) for r in sample.rows["consumer_queue"]
                if r["group"] == group and r["topic_kind"] == "retry")
    dlq = sum(r["max_offset"] for r in sample.rows["topic_queue"] if r["topic_kind"] == "dlq" and r["group"] == group)
    return retry, dlq
