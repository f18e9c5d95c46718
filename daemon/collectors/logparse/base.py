"""What every log parser shares: records in, (table, row) pairs out, problems and unknown lines counted."""

from __future__ import annotations

import re
from abc import ABC, abstractmethod
from dataclasses import dataclass, field
from datetime import timezone
from typing import Any
from zoneinfo import ZoneInfo

from daemon.collectors.logparse.lines import Problem, Record, parse_time, split_records

TableRow = tuple[str, dict[str, Any]]


@dataclass
class LineParser(ABC):
    """Feeds one kind of log line by line; keeps what it needs between lines (client ids, last TPS)."""

    cluster: str
    host: str
    zone: timezone | ZoneInfo
    head: re.Pattern[str]  # groups: ts, level, source, message
    problems: list[Problem] = field(default_factory=list)
    unknown_lines: int = 0
    records: int = 0

    kind = "unknown"

    def feed(self, text: str, file: str, lineno: int) -> list[TableRow]:
        """Rows for one physical line (which may hold several records)."""
        rows: list[TableRow] = []
        for part in split_records(text):
            record = self._record(part, file, lineno)
            if record is None:
                continue
            self.records += 1
            found = self.handle(record)
            if found is None:
                self.unknown_lines += 1
            else:
                rows += found
        return rows

    def _record(self, text: str, file: str, lineno: int) -> Record | None:
        match = self.head.match(text)
        if match is None:
            # Stack traces and wrapped messages continue the previous record: not a problem.
            if not text.strip() or text[:1].isspace() or text.startswith(("at ", "Caused by", "...")):
                return None
            if re.match(r"\d{4}-\d\d-\d\d", text):  # looks like a record but is cut or garbled
                self.problems.append(Problem(file, lineno, f"unreadable {self.kind} log record: {text[:120]!r}"))
            else:
                self.unknown_lines += 1
            return None
        try:
            ts = parse_time(match["ts"], self.zone)
        except ValueError as exc:
            self.problems.append(Problem(file, lineno, f"bad timestamp {match['ts']!r}: {exc}"))
            return None
        return Record(file, lineno, ts, match["level"], match["source"], match["message"])

    @abstractmethod
    def handle(self, record: Record) -> list[TableRow] | None:
        """Rows for a record; None when the record means nothing to rocketwatch."""

    def event(self, record: Record, event: str, **values: Any) -> TableRow:
        """A log_event row for `record`."""
        return ("log_event", {
            "ts": record.ts, "cluster": self.cluster, "host": self.host, "source": self.kind, "event": event,
            "group": values.get("group"), "topic": values.get("topic"), "broker": values.get("broker"),
            "queue_id": values.get("queue_id"), "client_id": values.get("client_id"), "value": values.get("value"),
            "detail": (values.get("detail") or record.message)[:2000],
        })
