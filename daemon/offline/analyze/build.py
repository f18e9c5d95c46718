"""Turn the inputs into sample rows (written to a temporary store for the rules) and into the facts
the report shows directly: log events, offsets and lag, dead letters, stuck threads."""

from __future__ import annotations

import re
from collections import defaultdict
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

from daemon.collectors.logparse import parse_log
from daemon.collectors.logparse.lines import Problem, open_text
from daemon.collectors.threads import StuckThread, blocking_kind, parse_any, stuck_threads
from daemon.offline.analyze.identity import Names, resolve
from daemon.offline.analyze.inputs import Inputs
from daemon.offline.analyze.running_info import ClientSettings, read_consumer_status
from daemon.offline.storedir import read_store_dir
from daemon.store.writer import ParquetStore

_CONSUME_THREAD = re.compile(r"^ConsumeMessageThread_(?:(?P<group>.+)_)?\d+$")


@dataclass
class Stuck:
    """A stuck consume thread with what it waits on."""

    jvm: str
    group: str | None
    thread: StuckThread
    blocking: str


@dataclass
class Built:
    """Everything read: rows per table, what each file gave, and the problems met."""

    rows: dict[str, list[dict[str, Any]]] = field(default_factory=lambda: defaultdict(list))
    files: list[tuple[str, str, int]] = field(default_factory=list)  # (path, what, rows or records)
    problems: list[Problem] = field(default_factory=list)
    stuck: list[Stuck] = field(default_factory=list)
    idle_consume_threads: dict[str, int] = field(default_factory=dict)  # jvm -> idle threads in its last dump
    facts: dict[str, Any] = field(default_factory=dict)
    clients: list[ClientSettings] = field(default_factory=list)  # from mqadmin consumerStatus outputs
    names: Names = field(default_factory=lambda: Names("offline", False, {}))

    @property
    def span(self) -> tuple[datetime, datetime] | None:
        """First and last sample time over every table."""
        times = [r["ts"] for rows in self.rows.values() for r in rows]
        return (min(times), max(times)) if times else None

    def write(self, root: Path) -> dict[str, int]:
        """Write the rows into a Parquet store at `root`, one file per table and hour."""
        store = ParquetStore(root)
        written: dict[str, int] = {}
        for table, rows in self.rows.items():
            by_hour: dict[datetime, list[dict[str, Any]]] = defaultdict(list)
            for row in rows:
                by_hour[row["ts"].replace(minute=0, second=0, microsecond=0)].append(row)
            for hour, hour_rows in sorted(by_hour.items()):
                store.append(table, hour_rows, hour)
            written[table] = len(rows)
        return written


def build(inputs: Inputs, cluster: str | None = None, client_tz: str | None = None, broker: str | None = None) -> Built:
    """Parse every input; never raises for bad input, which becomes problems naming file and line."""
    names = resolve(inputs.stores, [p for p, kind in inputs.logs if kind != "client"], broker, cluster)
    built = Built(names=names)
    cluster = names.cluster
    for path, kind in inputs.logs:
        result = parse_log(path, cluster, kind=kind, tz=client_tz if kind == "client" else None,
                           broker=names.by_path.get(path))
        for table, rows in result.rows.items():
            built.rows[table].extend(rows)
        built.files.append((str(path), f"{kind} log", result.records))
        built.problems.extend(result.problems)
    for path in inputs.consumer_status:
        settings = read_consumer_status(path)
        built.files.append((str(path), "mqadmin consumerStatus", int(settings is not None)))
        if settings is None:
            built.problems.append(Problem(str(path), 0, "mqadmin consumerStatus output without consumerGroup "
                                                        "and maxReconsumeTimes: its properties block is cut"))
        else:
            built.clients.append(settings)
    for root in inputs.stores:
        store = read_store_dir(root, cluster, names.by_path.get(root) or "broker")
        for table, rows in store.rows.items():
            built.rows[table].extend(rows)
        built.files.append((str(root), "store directory", sum(len(r) for r in store.rows.values())))
        built.problems.extend(store.problems)
        built.facts.setdefault("stores", {})[str(root)] = store.facts
    _threads(inputs.dumps, built)
    return built


def _threads(dumps: list[Path], built: Built) -> None:
    # Dumps in one directory are taken of one JVM, seconds apart, in file-name order.
    by_jvm: dict[Path, list[Path]] = defaultdict(list)
    for path in dumps:
        by_jvm[path.parent].append(path)
    for directory, paths in sorted(by_jvm.items()):
        texts = ["\n".join(open_text(p)) for p in sorted(paths)]
        jvm = directory.name
        for path in paths:
            built.files.append((str(path), "thread dump", len(parse_any("\n".join(open_text(path))))))
        last = parse_any(texts[-1])
        for thread in stuck_threads(jvm, texts):
            match = _CONSUME_THREAD.match(thread.thread)
            built.stuck.append(Stuck(jvm, match["group"] if match else None, thread,
                                     blocking_kind(last[thread.thread].frames)))
        stuck_names = {s.thread.thread for s in built.stuck if s.jvm == jvm}
        built.idle_consume_threads[jvm] = sum(
            1 for name, t in last.items()
            if _CONSUME_THREAD.match(name) and name not in stuck_names and not any("ConsumeRequest.run" in f for f in t.frames)
        )
        if len(texts) < 2:
            built.problems.append(Problem(str(paths[0]), 0, "one thread dump: take several a few seconds apart "
                                                            "to tell a stuck thread from a busy one"))
