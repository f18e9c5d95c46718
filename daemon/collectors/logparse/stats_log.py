"""stats.log (logger RocketmqStats; GMT+8, no milliseconds, no thread): the broker's per-minute counts.

Of the many `[KEY] [item] Stats In One Minute, SUM: n TPS: x AVGPT: y` lines three are read,
each as a log_event row whose value is the minute's TPS (detail keeps the line and its SUM):
`stats_topic_put` (TOPIC_PUT_NUMS: messages stored per topic), `stats_group_get`
(GROUP_GET_NUMS, item `topic@group`: messages a group pulled) and `stats_send_back`
(SNDBCK_PUT_NUMS, item `topic@group`: messages a group sent back for a retry). Sizes, latencies,
per-queue and whole-broker lines say nothing the others do not, and count as unknown lines.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from daemon.collectors.logparse.base import LineParser, TableRow
from daemon.collectors.logparse.lines import Record

# `2026-11-22 07:36:00 INFO - [TOPIC_PUT_NUMS] ...`: the stock pattern has no thread or logger.
HEAD = re.compile(r"^(?P<ts>\d{4}-\d\d-\d\d \d\d:\d\d:\d\d) (?P<level>[A-Z]+) (?P<source>)- (?P<message>.*)$")
MARK = "Stats In One Minute"

_MINUTE = re.compile(r"^\[(?P<key>[A-Z_]+)\] \[(?P<item>[^\]]+)\] Stats In One Minute, SUM: (?P<sum>\d+) "
                     r"TPS: (?P<tps>[\d.]+)")
_EVENTS = {"TOPIC_PUT_NUMS": "stats_topic_put", "GROUP_GET_NUMS": "stats_group_get", "SNDBCK_PUT_NUMS": "stats_send_back"}


@dataclass
class StatsLogParser(LineParser):
    """stats.log of one broker: put, get and send-back counts per topic and group, once a minute."""

    kind = "stats"
    broker: str = "broker"

    def handle(self, record: Record) -> list[TableRow] | None:
        """A stats_* log_event row for the three counts read; None for any other line."""
        match = _MINUTE.match(record.message)
        if match is None or match["key"] not in _EVENTS:
            return None
        topic, _, group = match["item"].partition("@")
        return [self.event(record, _EVENTS[match["key"]], topic=topic, group=group or None, broker=self.broker,
                           value=float(match["tps"]), detail=f"{match['sum']} in the minute: {record.message}")]
