"""A broker's store directory read offline (ref §5.2, §5.3, §9): consume-queue max offsets,
committed offsets and lag per group, dead-letter queue sizes, unclean shutdown and checkpoint.

Consume-queue files are preallocated (6,000,000 bytes, 300,000 slots of 20 bytes), so a file's size
says nothing: the entries end at the first all-zero slot, found by binary search.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from daemon.collectors.client_rows import topic_kind
from daemon.collectors.logparse.lines import Problem
from daemon.collectors.remoting.fastjson import FastjsonError, loads

UNIT = 20


@dataclass
class StoreDir:
    """What the directory gave: rows per table, facts for the report, problems with file names."""

    root: Path
    rows: dict[str, list[dict[str, Any]]] = field(default_factory=dict)
    facts: dict[str, Any] = field(default_factory=dict)
    problems: list[Problem] = field(default_factory=list)


def is_store_dir(path: Path) -> bool:
    """True for a directory that looks like a broker's storePathRootDir."""
    return path.is_dir() and ((path / "consumequeue").is_dir() or (path / "config" / "consumerOffset.json").exists()
                              or (path / "checkpoint").exists())


def queue_max_offset(queue_dir: Path) -> tuple[int, int]:
    """(min, max) logical offset of one consume queue from its files."""
    files = sorted(f for f in queue_dir.iterdir() if f.is_file() and f.name.isdigit())
    if not files:
        return 0, 0
    first, last = files[0], files[-1]
    return int(first.name) // UNIT, int(last.name) // UNIT + _valid_units(last)


def _valid_units(path: Path) -> int:
    size = path.stat().st_size // UNIT
    with path.open("rb") as handle:
        def empty(index: int) -> bool:
            handle.seek(index * UNIT)
            return handle.read(UNIT).strip(b"\0") == b""

        low, high = 0, size  # entries fill [0, low); the first empty slot is at `high` or beyond
        while low < high:
            middle = (low + high) // 2
            if empty(middle):
                high = middle
            else:
                low = middle + 1
        return low


def read_store_dir(root: Path, cluster: str, broker: str = "broker") -> StoreDir:
    """Rows (topic_queue, consumer_queue, log_event) and facts of one store directory."""
    result = StoreDir(root)
    checkpoint = _checkpoint(root, result)
    ts = checkpoint or datetime.fromtimestamp(root.stat().st_mtime, UTC)
    result.facts["snapshot_ts"] = ts
    maxima: dict[tuple[str, int], int] = {}
    for topic_dir in sorted((root / "consumequeue").glob("*")) if (root / "consumequeue").is_dir() else ():
        for queue_dir in sorted(topic_dir.iterdir(), key=lambda p: int(p.name) if p.name.isdigit() else -1):
            if not queue_dir.name.isdigit():
                continue
            low, high = queue_max_offset(queue_dir)
            kind, group = topic_kind(topic_dir.name)
            maxima[(topic_dir.name, int(queue_dir.name))] = high
            result.rows.setdefault("topic_queue", []).append({
                "ts": ts, "cluster": cluster, "topic": topic_dir.name, "topic_kind": kind, "group": group,
                "broker": broker, "queue_id": int(queue_dir.name), "min_offset": low, "max_offset": high,
                "last_update_ts": None,
            })
    result.facts["dlq"] = {r["group"]: r["max_offset"] for r in result.rows.get("topic_queue", [])
                           if r["topic_kind"] == "dlq"}
    offsets = _consumer_offsets(root, result)
    result.facts["committed"] = {f"{topic}@{group}": queues for (topic, group), queues in offsets.items()}
    for (topic, group), queues in sorted(offsets.items()):
        for queue_id, committed in sorted(queues.items()):
            if (topic, queue_id) not in maxima:
                continue  # the consume queue is not in this copy of the store: no lag to tell
            result.rows.setdefault("consumer_queue", []).append({
                "ts": ts, "cluster": cluster, "group": group, "topic": topic, "broker": broker, "queue_id": queue_id,
                "broker_offset": maxima[(topic, queue_id)], "consumer_offset": committed,
                "topic_kind": topic_kind(topic)[0],
            })
    if (root / "abort").exists():
        result.facts["unclean_shutdown"] = True
        result.rows.setdefault("log_event", []).append({
            "ts": ts, "cluster": cluster, "host": str(root), "source": "store", "event": "unclean_shutdown",
            "group": None, "topic": None, "broker": broker, "queue_id": None, "client_id": None, "value": None,
            "detail": "the `abort` file is present: the broker did not shut down cleanly (crash, kill -9, power "
                      "loss); at start it recovers the commitlog and rebuilds consume queues",
        })
    return result


def _checkpoint(root: Path, result: StoreDir) -> datetime | None:
    path = root / "checkpoint"
    if not path.exists():
        return None
    data = path.read_bytes()
    if len(data) < 24:
        result.problems.append(Problem(str(path), 0, f"checkpoint is {len(data)} bytes, expected 4096"))
        return None
    physic, logics, index = struct.unpack_from(">qqq", data)
    stamps = {name: datetime.fromtimestamp(ms / 1000, UTC) for name, ms in
              (("physic", physic), ("logics", logics), ("index", index)) if ms > 0}
    result.facts["checkpoint"] = stamps
    return max(stamps.values(), default=None)


def _consumer_offsets(root: Path, result: StoreDir) -> dict[tuple[str, str], dict[int, int]]:
    # The broker rewrites the file every 5 s through a .tmp/.bak dance: mid-rewrite it may be missing.
    for name in ("consumerOffset.json", "consumerOffset.json.bak"):
        path = root / "config" / name
        if not path.exists():
            continue
        try:
            table = loads(path.read_bytes()).get("offsetTable") or {}
        except (FastjsonError, AttributeError) as exc:
            result.problems.append(Problem(str(path), 0, f"consumer offsets unreadable: {exc}"))
            continue
        if name.endswith(".bak"):
            result.facts["offsets_from"] = "consumerOffset.json.bak (the main file was missing or unreadable)"
        offsets: dict[tuple[str, str], dict[int, int]] = {}
        for key, queues in table.items():
            topic, _, group = str(key).rpartition("@")
            offsets[(topic, group)] = {int(q): int(o) for q, o in queues.items()}
        return offsets
    return {}
