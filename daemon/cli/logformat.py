"""Log output for operators: readable text on a terminal, one JSON object per line for journald/Loki."""

from __future__ import annotations

import json
import logging
import sys
from datetime import UTC, datetime

# Fields a log call may bind with `extra=` (or a LoggerAdapter) so log search can filter on them.
CONTEXT_FIELDS = ("cluster", "broker", "group", "topic", "queue_id", "client_id", "receiver", "rule", "job")
TEXT_FORMAT = "%(asctime)s %(levelname)s %(name)s: %(message)s"


class JsonFormatter(logging.Formatter):
    """`{"ts", "level", "logger", "msg", <bound fields>, "exc"}` per record, one line each."""

    def format(self, record: logging.LogRecord) -> str:
        """The record as a single JSON line."""
        entry: dict[str, object] = {
            "ts": datetime.fromtimestamp(record.created, UTC).isoformat(timespec="milliseconds"),
            "level": record.levelname.lower(),
            "logger": record.name,
            "msg": record.getMessage(),
        }
        for name in CONTEXT_FIELDS:
            value = getattr(record, name, None)
            if value is not None:
                entry[name] = value
        if record.exc_info:
            entry["exc"] = self.formatException(record.exc_info)
        return json.dumps(entry, ensure_ascii=False, default=str)


def setup_logging(level: str, fmt: str = "text") -> None:
    """Configure the root logger: `fmt` is "text" or "json"; output goes to stderr (journald takes it)."""
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(JsonFormatter() if fmt == "json" else logging.Formatter(TEXT_FORMAT))
    root = logging.getLogger()
    root.handlers[:] = [handler]
    root.setLevel(getattr(logging, level.upper(), logging.INFO))
    # py4j and APScheduler are chatty at INFO; their news is rarely an operator's.
    logging.getLogger("py4j").setLevel(logging.WARNING)
    # APScheduler's warnings (a run skipped or missed) are told by the daemon in its own words
    # (Daemon._on_skipped); its errors (a job that raised) still show.
    logging.getLogger("apscheduler").setLevel(logging.ERROR)
