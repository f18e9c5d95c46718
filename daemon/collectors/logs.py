"""The live `logs` collector: follows the configured broker and client log files and turns each
cycle's new lines into rows (log_event, and broker rows from store.log), with the same parsers
`rocketwatch analyze` uses offline."""

from __future__ import annotations

import glob
import logging
import socket
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any

from config.models import LogSource
from daemon.collectors.cluster import CollectResult
from daemon.collectors.health import with_target_figures
from daemon.collectors.logparse import detect_log_kind, make_line_parser
from daemon.collectors.logparse.base import LineParser
from daemon.collectors.tail import FileTailer

log = logging.getLogger(__name__)


@dataclass
class _Followed:
    tailer: FileTailer
    parser: LineParser | None  # None until the file has content to tell its kind from
    source: LogSource
    problems_reported: int = 0


class LogsCollector:
    """One per cluster; keeps its files' positions between cycles, so no line is read twice."""

    def __init__(self, cluster: str, sources: list[LogSource]) -> None:
        self.cluster = cluster
        self.sources = sources
        self.files: dict[str, _Followed] = {}
        self._first_look = True

    def collect(self, now: datetime) -> CollectResult:
        """New lines since the last cycle, as rows; a health row per file that could not be read."""
        rows: dict[str, list[dict[str, Any]]] = {}
        health: list[dict[str, Any]] = []
        for source in self.sources:
            for name in sorted(glob.glob(source.path)) or [source.path]:
                followed = self.files.get(name)
                if followed is None:
                    # Files there at start are followed from their end (history is `analyze`'s job);
                    # files that appear later are read from their first line.
                    followed = _Followed(FileTailer(name, from_start=not self._first_look), None, source)
                    self.files[name] = followed
                try:
                    lines = followed.tailer.read()
                except OSError as exc:
                    health.append(self._health(now, name, str(exc)))
                    continue
                if lines and followed.parser is None:
                    followed.parser = self._parser(name, source)
                for line in lines if followed.parser is not None else ():
                    for table, row in followed.parser.feed(line.text, line.file, line.lineno):
                        rows.setdefault(table, []).append(row)
                self._report(name, followed)
        self._first_look = False
        rows["collector_health"] = with_target_figures(health)
        count = sum(len(v) for k, v in rows.items() if k != "collector_health")
        return CollectResult(rows=rows, summary=f"{self.cluster}: logs: {len(self.files)} file(s), {count} row(s)",
                             calls=len(self.files), failed_calls=len(health))

    def close(self) -> None:
        """Release every open file."""
        for followed in self.files.values():
            followed.tailer.close()

    def _parser(self, name: str, source: LogSource) -> LineParser | None:
        kind = source.kind or detect_log_kind(name)
        if kind is None:
            log.warning("cluster %s: %s is not a RocketMQ client, store or broker log; set `kind` to read it",
                        self.cluster, name)
            return None
        return make_line_parser(kind, self.cluster, source.host or socket.gethostname(), source.tz, source.broker,
                                Path(name))

    def _report(self, name: str, followed: _Followed) -> None:
        if followed.parser is None:
            return
        for problem in followed.parser.problems[followed.problems_reported:]:
            log.warning("cluster %s: %s", self.cluster, problem)
        followed.problems_reported = len(followed.parser.problems)

    def _health(self, now: datetime, name: str, error: str) -> dict[str, Any]:
        return {"ts": now, "cluster": self.cluster, "target": name, "call": "read log", "ok": False,
                "error": error, "latency_ms": 0.0}
