"""RocketMQ logs as sample rows: client, store and broker logs, 4.9.x and 5.x layouts.

    kind = detect_log_kind(path)                       # "client", "store", "broker" or None
    other = detect_other_log(path)                     # "stats", "watermark", "namesrv", "remoting" or None
    result = parse_log(path, cluster="prod")           # LogParse(kind, rows by table, unknown, problems)
    parser = make_line_parser("client", "prod", "app-1")   # the same, line by line (the live collector)

Rows go to `log_event` (see daemon/collectors/logparse/client_log.py and broker_side.py for the events) and,
for store.log, to `broker` (the per-minute put-latency buckets), so the built-in rules run on them.
stats.log (kind "stats", daemon/collectors/logparse/stats_log.py) gives per-minute put/get/send-back TPS per
topic and group; it is parsed when asked for by kind, never told by detect_log_kind.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from config.zones import zone_of
from daemon.collectors.logparse.base import LineParser
from daemon.collectors.logparse.broker_side import HEAD, BrokerLogParser, StoreLogParser
from daemon.collectors.logparse.client_log import HEAD_4, HEAD_5, ClientLogParser
from daemon.collectors.logparse.lines import GMT8, Problem, open_text
from daemon.collectors.logparse.stats_log import HEAD as STATS_HEAD
from daemon.collectors.logparse.stats_log import MARK as STATS_MARK
from daemon.collectors.logparse.stats_log import StatsLogParser

__all__ = ["LogParse", "Problem", "detect_log_kind", "detect_other_log", "make_line_parser", "parse_log"]

KINDS = ("client", "store", "broker", "stats")
_SNIFF_LINES = 400
# With isolateLogEnable the broker logs live under <brokerName>_<brokerId>/ (ref §5.4).
_ISOLATED_DIR = re.compile(r"^(?P<broker>.+)_(?P<id>\d+)$")


@dataclass
class LogParse:
    """What one file gave: rows per table, lines that meant nothing, lines that could not be read."""

    path: Path
    kind: str
    rows: dict[str, list[dict[str, Any]]] = field(default_factory=dict)
    records: int = 0
    unknown_lines: int = 0
    problems: list[Problem] = field(default_factory=list)


def _head(path: Path) -> list[str]:
    lines: list[str] = []
    try:
        for i, line in enumerate(open_text(path)):
            lines.append(line)
            if i >= _SNIFF_LINES:
                break
    except (OSError, EOFError, UnicodeError):
        pass  # a truncated .gz still tells its kind by the lines before the cut
    return lines


def detect_other_log(path: Path | str) -> str | None:
    """The RocketMQ logs the live collector does not follow, from their first lines: stats, watermark,
    namesrv, remoting or None."""
    lines = _head(Path(path))
    text = "\n".join(lines)
    if text.count(STATS_MARK) and any(STATS_HEAD.match(line) for line in lines):
        return "stats"
    if text.count("[WATERMARK]") * 2 > len(lines):
        return "watermark"
    if "The Name Server boot success" in text or "kvConfigPath=" in text:
        return "namesrv"
    # remoting.log: the TLS settings at start, then one pipeline line per connection.
    if text.count("NETTY SERVER PIPELINE") * 2 > len(lines) or (
            "tls.server.need.client.auth" in text and "brokerName=" not in text and "consumer connected" not in text):
        return "remoting"
    return None


def detect_log_kind(path: Path | str) -> str | None:
    """What a file is, from its first lines (names lie after copying): client, store, broker or None."""
    lines = _head(Path(path))
    text = "\n".join(lines)
    # Only log lines count: a README or a ticket that quotes store.log is not one.
    store_lines = sum(1 for line in lines if HEAD.match(line) and ("[PAGECACHERT]" in line or "[STORETPS]" in line))
    broker_lines = sum(text.count(s) for s in ("consumer connected", "unregister a ", "create new topic", " main - ",
                                                  "send msg to DLQ"))
    if store_lines and store_lines >= broker_lines:
        return "store"
    if any(HEAD_5.match(line) for line in lines):  # `[pid] [thread] [logger#method:line]`: only 5.x clients
        return "client"
    if any(HEAD_4.match(line) for line in lines) and (
            "RocketmqClient" in text or "rebalanced result changed" in text or "so do flow control" in text
            or ".client." in text or "MQClientInstance" in text):
        return "client"
    if any(HEAD.match(line) for line in lines):
        return "broker"
    return None


def make_line_parser(
    kind: str, cluster: str, host: str, tz: str | None = None, broker: str | None = None, path: Path | None = None,
) -> LineParser:
    """A parser for one log kind. `tz`: the zone of the timestamps (broker-side and 5.x client logs
    are always GMT+8; a 4.9.x client log is in the JVM's zone, UTC unless told)."""
    if kind not in KINDS:
        raise ValueError(f"unknown log kind {kind!r}; expected one of {', '.join(KINDS)}")
    broker_name, broker_id = _broker_of(path, broker)
    if kind == "client":
        return ClientLogParser(cluster, host, zone_of(tz or "UTC"), HEAD_4)
    zone = zone_of(tz) if tz else GMT8
    if kind == "stats":
        return StatsLogParser(cluster, host, zone, STATS_HEAD, broker=broker_name)
    if kind == "store":
        return StoreLogParser(cluster, host, zone, HEAD, broker=broker_name, broker_id=broker_id)
    return BrokerLogParser(cluster, host, zone, HEAD, broker=broker_name)


def parse_log(
    path: Path | str, cluster: str, kind: str | None = None, tz: str | None = None, host: str | None = None,
    broker: str | None = None,
) -> LogParse:
    """Parse a whole file (gzip'd too); bad lines become problems naming file and line, never an exception."""
    path = Path(path)
    kind = kind or detect_log_kind(path)
    if kind is None:
        return LogParse(path, "unknown", problems=[Problem(str(path), 0, "not a RocketMQ client, store or broker log")])
    parser = make_line_parser(kind, cluster, host or path.parent.name or "local", tz, broker, path)
    result = LogParse(path, kind)
    lineno = 0
    try:
        for lineno, text in enumerate(open_text(path), start=1):
            for table, row in parser.feed(text, str(path), lineno):
                result.rows.setdefault(table, []).append(row)
    except (OSError, EOFError) as exc:  # a truncated .gz: keep what was read
        parser.problems.append(Problem(str(path), lineno + 1, f"file ends early: {exc}"))
    result.records, result.unknown_lines, result.problems = parser.records, parser.unknown_lines, parser.problems
    return result


def _broker_of(path: Path | None, broker: str | None) -> tuple[str, int]:
    match = _ISOLATED_DIR.match(path.parent.name) if path is not None else None
    if broker:
        # A name given for the directory the broker itself named keeps the id the directory tells.
        return broker, int(match["id"]) if match and match["broker"] == broker else 0
    if match:
        return match["broker"], int(match["id"])
    return "broker", 0
